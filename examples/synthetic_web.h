// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The synthetic web of the crawler examples (crawler.cc, fleet_crawler.cc):
// pages 0..N-1, page p on site p % sites, at https://siteNN.example/page/p.
// Everything about a page follows from its number (a hash), so every run,
// and every process of a fleet, regenerates the same web: its priority, its
// links (pages 2p+1 and 2p+2, so that every page is reachable from page 0,
// and three more anywhere), how long its fetch takes, and its faults.

#ifndef HQ_EXAMPLES_SYNTHETIC_WEB_H_
#define HQ_EXAMPLES_SYNTHETIC_WEB_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"

namespace hq_example {

// splitmix64's finalizer: a page's properties are hashes of its number.
inline uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9;
  x = (x ^ (x >> 27)) * 0x94d049bb133111eb;
  return x ^ (x >> 31);
}

enum class Fault { kNone, kFailsAlways, kFailsOnce, kHangs, kSlow };

// The synthetic web: everything follows from (pages, sites) and a page's
// number.
class Web {
 public:
  Web(int pages, int sites) : pages_(pages), sites_(sites) {}
  int pages() const { return pages_; }
  int sites() const { return sites_; }

  std::string Site(int page) const { return SiteName(page % sites_); }
  std::string SiteName(int index) const {
    return absl::StrFormat("site%02d.example", index);
  }
  // The index of site `site`, or -1.
  int SiteIndex(std::string_view site) const {
    for (int i = 0; i < sites_; ++i) {
      if (SiteName(i) == site) return i;
    }
    return -1;
  }
  std::string Url(int page) const {
    return absl::StrCat("https://", Site(page), "/page/", page);
  }
  // The page of `url`, or -1 if it is not a URL of this web.
  int Page(std::string_view url) const {
    const size_t slash = url.rfind('/');
    int page;
    if (slash == std::string_view::npos ||
        !absl::SimpleAtoi(
            absl::string_view(url.data() + slash + 1, url.size() - slash - 1),
            &page) ||
        page < 0 || page >= pages_ || Url(page) != url) {
      return -1;
    }
    return page;
  }
  int Priority(int page) const {
    if (page == 0) return 2;
    const uint64_t h = Hash(page, 1) % 10;
    return h < 2 ? 2 : h < 5 ? 1 : 0;
  }
  std::vector<int> Links(int page) const {
    std::vector<int> links;
    for (int64_t child : {2 * int64_t{page} + 1, 2 * int64_t{page} + 2}) {
      if (child < pages_) links.push_back(static_cast<int>(child));
    }
    for (int i = 0; i < 3; ++i) {
      links.push_back(static_cast<int>(Hash(page, 2 + i) % pages_));
    }
    return links;
  }
  Fault FaultOf(int page) const {
    if (page == 0) return Fault::kNone;  // The seed.
    const uint64_t h = Hash(page, 5) % 1000;
    if (h < 15) return Fault::kFailsAlways;
    if (h < 30) return Fault::kFailsOnce;
    if (h < 33) return Fault::kHangs;
    if (h < 35) return Fault::kSlow;
    return Fault::kNone;
  }
  absl::Duration FetchTime(int page) const {
    return absl::Microseconds(100 + Hash(page, 6) % 900);
  }

 private:
  static uint64_t Hash(int page, int salt) {
    return Mix((static_cast<uint64_t>(page) << 8) |
               static_cast<uint64_t>(salt));
  }
  int pages_;
  int sites_;
};

}  // namespace hq_example

#endif  // HQ_EXAMPLES_SYNTHETIC_WEB_H_
