// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// SiteOf and PartitionOf (hq/fleet.h), without a fleet.

#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "catch2/catch.hpp"
#include "hq/fleet.h"

namespace hq::fleet {
namespace {

std::string Site(std::string_view url) {
  absl::StatusOr<std::string> s = SiteOf(url);
  REQUIRE(s.ok());
  return *s;
}

TEST_CASE("SiteOf: the registered domain of the URL's host") {
  CHECK(Site("https://www.example.org/a/b?c#d") == "example.org");
  CHECK(Site("http://example.org") == "example.org");
  CHECK(Site("http://A.B.Example.ORG./x") == "example.org");
  CHECK(Site("http://user:pw@shop.example.com:8080/") == "example.com");
  CHECK(Site("http://news.bbc.co.uk/") == "bbc.co.uk");
  CHECK(Site("http://bbc.co.uk/") == "bbc.co.uk");
  CHECK(Site("http://a.b.example.com.au/") == "example.com.au");
  CHECK(Site("http://localhost:8000/") == "localhost");
  CHECK(Site("http://127.0.0.1:8000/x") == "127.0.0.1");
  CHECK(Site("http://[::1]:8000/x") == "[::1]");
  CHECK(Site("http://site-7.test/page/3") == "site-7.test");
}

TEST_CASE("SiteOf: a URL without a host is InvalidArgument") {
  for (std::string_view bad :
       {"", "example.org/x", "://example.org", "http://", "http:///x",
        "http://:80/", "http://[::1/", "http://exa mple.org/"}) {
    INFO(bad);
    absl::StatusOr<std::string> s = SiteOf(bad);
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().code() == absl::StatusCode::kInvalidArgument);
  }
}

TEST_CASE("PartitionOf: stable, in range, and spread") {
  // Pinned: every agent of a fleet, of any build, must agree (XXH3_64bits,
  // seed 0, modulo the count).
  CHECK(PartitionOf("example.org", 1024) == 837);
  CHECK(PartitionOf("bbc.co.uk", 1024) == 692);
  CHECK(PartitionOf("site-7.test", 1024) == 1002);
  std::set<uint32_t> seen;
  for (int i = 0; i < 10000; ++i) {
    uint32_t p = PartitionOf(absl::StrCat("site-", i, ".test"), 64);
    CHECK(p < 64);
    seen.insert(p);
  }
  CHECK(seen.size() == 64);
  CHECK(PartitionOf("anything", 1) == 0);
}

}  // namespace
}  // namespace hq::fleet
