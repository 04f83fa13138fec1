// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/fleet/records.h"

#include "absl/strings/str_cat.h"
#include "lib/format/coding.h"
#include "xxhash.h"

namespace hq::fleet {

uint64_t UrlHash(std::string_view url) {
  return XXH3_64bits(url.data(), url.size());
}

std::string UrlMessageId(std::string_view url) {
  const XXH128_hash_t h = XXH3_128bits(url.data(), url.size());
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id(32, '0');
  for (int i = 0; i < 16; ++i) {
    id[15 - i] = kHex[(h.high64 >> (4 * i)) & 0xf];
    id[31 - i] = kHex[(h.low64 >> (4 * i)) & 0xf];
  }
  return id;
}

absl::Status EncodeUrlRecord(const Url& url, std::string* dst) {
  if (url.url.empty() || url.url.size() > kMaxUrlSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("url record: the URL must have 1..", kMaxUrlSize,
                     " bytes, not ", url.url.size()));
  }
  if (url.payload.size() > kMaxPayloadSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("url record: the payload must have at most ",
                     kMaxPayloadSize, " bytes, not ", url.payload.size()));
  }
  if (url.priority < 0 || url.priority > 7) {
    return absl::InvalidArgumentError(
        absl::StrCat("url record: priority must be 0..7, not ", url.priority));
  }
  coding::PutFixed8(dst, kUrlRecordVersion);
  coding::PutLengthPrefixed(dst, url.url);
  coding::PutFixed8(dst, static_cast<uint8_t>(url.priority));
  coding::PutLengthPrefixed(dst, url.payload);
  return absl::OkStatus();
}

namespace {

absl::Status Malformed(const char* what, const std::string& detail) {
  return absl::DataLossError(absl::StrCat("malformed ", what, ": ", detail));
}

}  // namespace

absl::Status DecodeUrlRecord(std::string_view in, Url* url) {
  constexpr const char* kWhat = "url record";
  uint8_t version;
  if (!coding::GetFixed8(&in, &version)) return Malformed(kWhat, "empty");
  if (version != kUrlRecordVersion) {
    return Malformed(kWhat, absl::StrCat("unknown version ", version));
  }
  std::string_view u, payload;
  uint8_t priority;
  if (!coding::GetLengthPrefixed(&in, &u)) {
    return Malformed(kWhat, "truncated URL");
  }
  if (u.empty() || u.size() > kMaxUrlSize) {
    return Malformed(kWhat, absl::StrCat("URL of ", u.size(), " bytes"));
  }
  if (!coding::GetFixed8(&in, &priority)) {
    return Malformed(kWhat, "truncated priority");
  }
  if (priority > 7) {
    return Malformed(kWhat, absl::StrCat("priority ", priority));
  }
  if (!coding::GetLengthPrefixed(&in, &payload)) {
    return Malformed(kWhat, "truncated payload");
  }
  if (payload.size() > kMaxPayloadSize) {
    return Malformed(kWhat,
                     absl::StrCat("payload of ", payload.size(), " bytes"));
  }
  if (!in.empty()) {
    return Malformed(kWhat, absl::StrCat(in.size(), " trailing bytes"));
  }
  url->url.assign(u);
  url->priority = priority;
  url->payload.assign(payload);
  return absl::OkStatus();
}

absl::Status EncodeCompletionBatch(std::span<const uint64_t> url_hashes,
                                   std::string* dst) {
  if (url_hashes.empty() || url_hashes.size() > kMaxCompletionsPerBatch) {
    return absl::InvalidArgumentError(
        absl::StrCat("completion batch: must hold 1..", kMaxCompletionsPerBatch,
                     " hashes, not ", url_hashes.size()));
  }
  dst->reserve(dst->size() + 6 + 8 * url_hashes.size());
  coding::PutFixed8(dst, kCompletionBatchVersion);
  coding::PutVarint32(dst, static_cast<uint32_t>(url_hashes.size()));
  for (uint64_t h : url_hashes) coding::PutFixed64(dst, h);
  return absl::OkStatus();
}

absl::Status DecodeCompletionBatch(std::string_view in,
                                   std::vector<uint64_t>* url_hashes) {
  constexpr const char* kWhat = "completion batch";
  uint8_t version;
  if (!coding::GetFixed8(&in, &version)) return Malformed(kWhat, "empty");
  if (version != kCompletionBatchVersion) {
    return Malformed(kWhat, absl::StrCat("unknown version ", version));
  }
  uint32_t count;
  if (!coding::GetVarint32(&in, &count)) {
    return Malformed(kWhat, "truncated count");
  }
  if (count == 0 || count > kMaxCompletionsPerBatch) {
    return Malformed(kWhat, absl::StrCat("count ", count));
  }
  if (in.size() != size_t{8} * count) {
    return Malformed(kWhat, absl::StrCat(in.size(), " bytes for ", count,
                                         " hashes of 8 bytes"));
  }
  url_hashes->reserve(url_hashes->size() + count);
  for (uint32_t i = 0; i < count; ++i) {
    url_hashes->push_back(coding::DecodeFixed64(in.data() + 8 * i));
  }
  return absl::OkStatus();
}

}  // namespace hq::fleet
