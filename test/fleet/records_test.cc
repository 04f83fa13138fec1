// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// lib/fleet/records.h: the URL record and the completion batch round-trip,
// and every malformed input (each truncation, a changed version, trailing
// bytes, fields out of range) is DataLoss. No server.

#include "lib/fleet/records.h"

#include <random>
#include <set>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "lib/format/coding.h"

namespace hq::fleet {
namespace {

std::vector<Url> SampleUrls() {
  std::vector<Url> urls = {
      {.url = "https://example.org/"},
      {.url = "h", .payload = "", .priority = 7},
      {.url = "https://example.org/a?b=c#d",
       .payload = "depth=3",
       .priority = 2},
      {.url = std::string(300, 'u'), .payload = std::string(200, '\0')},
      {.url = "http://x/\r\nInjected: header", .payload = "\xff\x00\x80"},
      {.url = std::string(kMaxUrlSize, 'm'),
       .payload = std::string(kMaxPayloadSize, 'p'),
       .priority = 5},
  };
  std::mt19937 rng(7);
  for (int i = 0; i < 50; ++i) {
    Url u;
    u.url.resize(1 + rng() % 200);
    for (char& c : u.url) c = static_cast<char>(rng());
    u.payload.resize(rng() % 300);
    for (char& c : u.payload) c = static_cast<char>(rng());
    u.priority = static_cast<int>(rng() % 8);
    urls.push_back(std::move(u));
  }
  return urls;
}

TEST_CASE("url records round-trip") {
  for (const Url& u : SampleUrls()) {
    std::string rec = "prefix";
    REQUIRE(EncodeUrlRecord(u, &rec).ok());
    Url back{.url = "stale", .payload = "stale", .priority = 1};
    REQUIRE(DecodeUrlRecord(std::string_view(rec).substr(6), &back).ok());
    CHECK(back.url == u.url);
    CHECK(back.payload == u.payload);
    CHECK(back.priority == u.priority);
  }
}

TEST_CASE("the url record's bytes follow its grammar") {
  std::string rec;
  REQUIRE(EncodeUrlRecord({.url = "ab", .payload = "xyz", .priority = 3}, &rec)
              .ok());
  CHECK(rec == std::string("\x01\x02"
                           "ab"
                           "\x03\x03"
                           "xyz",
                           9));
}

TEST_CASE("every malformed url record is DataLoss") {
  std::string rec;
  REQUIRE(EncodeUrlRecord({.url = "https://example.org/page",
                           .payload = "payload",
                           .priority = 4},
                          &rec)
              .ok());
  Url out;
  SECTION("every truncation") {
    for (size_t n = 0; n < rec.size(); ++n) {
      INFO("kept " << n << " of " << rec.size() << " bytes");
      CHECK(absl::IsDataLoss(DecodeUrlRecord(rec.substr(0, n), &out)));
    }
  }
  SECTION("any other version") {
    for (int v = 0; v < 256; ++v) {
      if (v == kUrlRecordVersion) continue;
      std::string bad = rec;
      bad[0] = static_cast<char>(v);
      CHECK(absl::IsDataLoss(DecodeUrlRecord(bad, &out)));
    }
  }
  SECTION("trailing bytes") {
    CHECK(absl::IsDataLoss(DecodeUrlRecord(rec + '\0', &out)));
    CHECK(absl::IsDataLoss(DecodeUrlRecord(rec + rec, &out)));
  }
  SECTION("a priority above 7") {
    std::string bad;
    coding::PutFixed8(&bad, kUrlRecordVersion);
    coding::PutLengthPrefixed(&bad, "u");
    coding::PutFixed8(&bad, 8);
    coding::PutLengthPrefixed(&bad, "");
    CHECK(absl::IsDataLoss(DecodeUrlRecord(bad, &out)));
  }
  SECTION("an empty URL") {
    std::string bad;
    coding::PutFixed8(&bad, kUrlRecordVersion);
    coding::PutLengthPrefixed(&bad, "");
    coding::PutFixed8(&bad, 0);
    coding::PutLengthPrefixed(&bad, "");
    CHECK(absl::IsDataLoss(DecodeUrlRecord(bad, &out)));
  }
  SECTION("a URL over the limit") {
    std::string bad;
    coding::PutFixed8(&bad, kUrlRecordVersion);
    coding::PutLengthPrefixed(&bad, std::string(kMaxUrlSize + 1, 'u'));
    coding::PutFixed8(&bad, 0);
    coding::PutLengthPrefixed(&bad, "");
    CHECK(absl::IsDataLoss(DecodeUrlRecord(bad, &out)));
  }
  SECTION("a length past the end") {
    std::string bad;
    coding::PutFixed8(&bad, kUrlRecordVersion);
    coding::PutVarint32(&bad, 1000);
    bad += "short";
    CHECK(absl::IsDataLoss(DecodeUrlRecord(bad, &out)));
  }
}

TEST_CASE("url records reject what they cannot carry") {
  std::string rec = "keep";
  CHECK(absl::IsInvalidArgument(EncodeUrlRecord({.url = ""}, &rec)));
  CHECK(absl::IsInvalidArgument(
      EncodeUrlRecord({.url = std::string(kMaxUrlSize + 1, 'u')}, &rec)));
  CHECK(absl::IsInvalidArgument(EncodeUrlRecord(
      {.url = "u", .payload = std::string(kMaxPayloadSize + 1, 'p')}, &rec)));
  CHECK(absl::IsInvalidArgument(
      EncodeUrlRecord({.url = "u", .priority = 8}, &rec)));
  CHECK(absl::IsInvalidArgument(
      EncodeUrlRecord({.url = "u", .priority = -1}, &rec)));
  CHECK(rec == "keep");
}

TEST_CASE("completion batches round-trip") {
  std::mt19937_64 rng(3);
  for (size_t n : {size_t{1}, size_t{2}, size_t{127}, size_t{128}, size_t{1000},
                   kMaxCompletionsPerBatch}) {
    std::vector<uint64_t> hashes(n);
    for (auto& h : hashes) h = rng();
    hashes[0] = 0;
    hashes[n - 1] = UINT64_MAX;
    std::string batch;
    REQUIRE(EncodeCompletionBatch(hashes, &batch).ok());
    std::vector<uint64_t> back = {42};
    REQUIRE(DecodeCompletionBatch(batch, &back).ok());
    REQUIRE(back.size() == n + 1);
    CHECK(back[0] == 42);
    CHECK(std::equal(hashes.begin(), hashes.end(), back.begin() + 1));
  }
}

TEST_CASE("every malformed completion batch is DataLoss") {
  const std::vector<uint64_t> hashes = {1, 2, 0x0102030405060708ull};
  std::string batch;
  REQUIRE(EncodeCompletionBatch(hashes, &batch).ok());
  std::vector<uint64_t> out = {9};
  SECTION("every truncation") {
    for (size_t n = 0; n < batch.size(); ++n) {
      INFO("kept " << n << " of " << batch.size() << " bytes");
      CHECK(absl::IsDataLoss(DecodeCompletionBatch(batch.substr(0, n), &out)));
    }
  }
  SECTION("any other version") {
    for (int v = 0; v < 256; ++v) {
      if (v == kCompletionBatchVersion) continue;
      std::string bad = batch;
      bad[0] = static_cast<char>(v);
      CHECK(absl::IsDataLoss(DecodeCompletionBatch(bad, &out)));
    }
  }
  SECTION("trailing bytes") {
    CHECK(absl::IsDataLoss(DecodeCompletionBatch(batch + '\0', &out)));
    CHECK(absl::IsDataLoss(
        DecodeCompletionBatch(batch + std::string(8, 'x'), &out)));
  }
  SECTION("a count of zero or over the limit") {
    std::string bad;
    coding::PutFixed8(&bad, kCompletionBatchVersion);
    coding::PutVarint32(&bad, 0);
    CHECK(absl::IsDataLoss(DecodeCompletionBatch(bad, &out)));
    bad.clear();
    coding::PutFixed8(&bad, kCompletionBatchVersion);
    coding::PutVarint32(&bad,
                        static_cast<uint32_t>(kMaxCompletionsPerBatch + 1));
    bad.append(8 * (kMaxCompletionsPerBatch + 1), 'h');
    CHECK(absl::IsDataLoss(DecodeCompletionBatch(bad, &out)));
  }
  CHECK(out == std::vector<uint64_t>{9});
}

TEST_CASE("completion batches reject an empty or oversized batch") {
  std::string batch = "keep";
  CHECK(absl::IsInvalidArgument(EncodeCompletionBatch({}, &batch)));
  std::vector<uint64_t> too_many(kMaxCompletionsPerBatch + 1);
  CHECK(absl::IsInvalidArgument(EncodeCompletionBatch(too_many, &batch)));
  CHECK(batch == "keep");
}

TEST_CASE("the hashes that name a URL are fixed") {
  // Values agents of a fleet must agree on (records.h: DO NOT CHANGE).
  CHECK(UrlHash("") == 0x2d06800538d394c2ull);
  CHECK(UrlHash("https://example.org/") == 0x8e2c3c2914c7cb49ull);
  CHECK(UrlMessageId("") == "99aa06d3014798d86001c324468d497f");
  CHECK(UrlMessageId("https://example.org/") ==
        "9db2570db118aad0d5065686b5f20b16");
  CHECK(UrlMessageId("https://example.org/") ==
        UrlMessageId(std::string("https://example.org/")));
  std::set<std::string> ids;
  std::set<uint64_t> hashes;
  for (int i = 0; i < 10000; ++i) {
    const std::string url = "https://example.org/" + std::to_string(i);
    const std::string id = UrlMessageId(url);
    CHECK(id.find_first_not_of("0123456789abcdef") == std::string::npos);
    ids.insert(id);
    hashes.insert(UrlHash(url));
  }
  CHECK(ids.size() == 10000);
  CHECK(hashes.size() == 10000);
}

}  // namespace
}  // namespace hq::fleet
