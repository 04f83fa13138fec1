// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// SiteOf and PartitionOf (hq/fleet.h).

#include <array>
#include <string>
#include <string_view>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "hq/fleet.h"
#include "lib/util/strings.h"
#include "xxhash.h"

namespace hq::fleet {
namespace {

// Second-level labels under which registries hand out names one level
// deeper ("example.co.uk"). A short list of the common ones, not the public
// suffix list: AgentOptions::site_of is the way to use that list.
constexpr std::array<std::string_view, 28> kTwoLevelSuffixes = {
    "ac.uk",  "co.uk",  "gov.uk", "org.uk", "com.au", "net.au", "org.au",
    "co.jp",  "ne.jp",  "or.jp",  "co.nz",  "org.nz", "com.br", "com.cn",
    "net.cn", "org.cn", "co.in",  "co.kr",  "com.mx", "co.za",  "com.tw",
    "com.hk", "com.sg", "com.tr", "com.ar", "co.il",  "com.my", "co.id"};

bool IsTwoLevelSuffix(std::string_view s) {
  for (std::string_view t : kTwoLevelSuffixes) {
    if (s == t) return true;
  }
  return false;
}

// The host of an absolute URL ("scheme://[user@]host[:port][/...]"),
// lower-cased, without a trailing dot; empty if there is none.
std::string HostOf(std::string_view url) {
  size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos || scheme_end == 0) return "";
  std::string_view rest = url.substr(scheme_end + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  if (size_t at = rest.rfind('@'); at != std::string_view::npos) {
    rest = rest.substr(at + 1);
  }
  if (!rest.empty() && rest.front() == '[') {  // An IPv6 literal.
    size_t close = rest.find(']');
    if (close == std::string_view::npos) return "";
    return absl::AsciiStrToLower(Av(rest.substr(0, close + 1)));
  }
  rest = rest.substr(0, rest.find(':'));
  if (!rest.empty() && rest.back() == '.') rest.remove_suffix(1);
  return absl::AsciiStrToLower(Av(rest));
}

bool IsIpv4(std::string_view host) {
  if (host.empty()) return false;
  for (char c : host) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c)) && c != '.') {
      return false;
    }
  }
  return true;
}

}  // namespace

absl::StatusOr<std::string> SiteOf(std::string_view url) {
  std::string host = HostOf(url);
  if (host.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "hq fleet: the URL has no host: \"", Av(url.substr(0, 200)), "\""));
  }
  for (char c : host) {
    unsigned char u = static_cast<unsigned char>(c);
    if (!absl::ascii_isalnum(u) && c != '-' && c != '.' && c != '_' &&
        c != '[' && c != ']' && c != ':' && u < 0x80) {
      return absl::InvalidArgumentError(absl::StrCat(
          "hq fleet: the URL's host has a character a host cannot have: \"",
          Av(url.substr(0, 200)), "\""));
    }
  }
  if (host.front() == '[' || IsIpv4(host)) return host;
  size_t last = host.rfind('.');
  if (last == std::string::npos || last == 0) return host;
  size_t second = host.rfind('.', last - 1);
  if (second == std::string::npos) return host;
  if (!IsTwoLevelSuffix(std::string_view(host).substr(second + 1))) {
    return host.substr(second + 1);
  }
  size_t third = second == 0 ? std::string::npos : host.rfind('.', second - 1);
  return third == std::string::npos ? host : host.substr(third + 1);
}

uint32_t PartitionOf(std::string_view site, uint32_t partitions) {
  return static_cast<uint32_t>(XXH3_64bits(site.data(), site.size()) %
                               partitions);
}

}  // namespace hq::fleet
