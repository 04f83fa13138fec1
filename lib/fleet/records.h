// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The records hq fleet carries in NATS JetStream messages, and the hashes
// that name a URL on the wire. Pure functions: no NATS, no Db.
//
// URL record: the payload of a message on subject hqf.<fleet>.u.<p>
// (DO NOT CHANGE the grammar of a published version; add a version):
//
//   url_record := version:fixed8 (= 1)
//                 url:length_prefixed      (1..kMaxUrlSize bytes)
//                 priority:fixed8          (0..7, as Url::priority)
//                 payload:length_prefixed  (0..kMaxPayloadSize bytes)
//
// Completion batch: the payload of a message on subject hqf.<fleet>.d.<p>:
//
//   completion_batch := version:fixed8 (= 1)
//                       count:varint32     (1..kMaxCompletionsPerBatch)
//                       url_hash:fixed64 * count   (UrlHash, big-endian)
//
// length_prefixed and varint32 are lib/format/coding.h's (a varint32
// length, then the bytes). Nothing may follow the last field.
//
// A completion carries the URL's 64-bit hash, not the URL: 8 bytes instead
// of a URL's ~80, so the completion subjects stay small and a rebuild holds
// a set of integers, not of strings. The price is a hash collision: a URL
// whose hash equals that of a completed URL of its partition is skipped by
// a rebuild. With n completed and m pending URLs in a partition the
// expected number of such URLs is n*m/2^64: about 5e-4 for n = m = 1e8 in
// one partition, far less spread over many partitions.

#ifndef HQ_LIB_FLEET_RECORDS_H_
#define HQ_LIB_FLEET_RECORDS_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "hq/fleet.h"

namespace hq::fleet {

// Versions of the records above. DO NOT CHANGE the value of a version once
// records of it were published.
inline constexpr uint8_t kUrlRecordVersion = 1;
inline constexpr uint8_t kCompletionBatchVersion = 1;

// Limits the codecs check, so that a record always fits in one NATS message
// under the server's default max_payload (1 MiB).
inline constexpr size_t kMaxUrlSize = 64 * 1024;
inline constexpr size_t kMaxPayloadSize = 512 * 1024;
inline constexpr size_t kMaxCompletionsPerBatch = 64 * 1024;  // 512 KiB.

// The 64-bit hash of a URL that completion batches carry: XXH3_64bits of
// the URL's bytes, seed 0. DO NOT CHANGE: every agent of a fleet and every
// completion already published must agree on it.
uint64_t UrlHash(std::string_view url);

// The JetStream message id (header Nats-Msg-Id) of a URL's record: the 32
// lower-case hex digits of XXH3_128bits of the URL, seed 0. JetStream drops
// a second message with the same id within the stream's duplicate window,
// so a URL published twice is stored once. A hash rather than the URL
// itself: the server keeps every id of its window in memory (a fixed 32
// bytes instead of a URL of up to kMaxUrlSize), and header values may not
// hold CR or LF, which a malformed URL can. Two distinct URLs share an id
// with probability about 2^-128 per pair. DO NOT CHANGE (as UrlHash).
std::string UrlMessageId(std::string_view url);

// Appends the url_record of `url` to `*dst`. InvalidArgument (and `*dst`
// unchanged) when the URL is empty or longer than kMaxUrlSize, the payload
// longer than kMaxPayloadSize, or the priority outside 0..7.
absl::Status EncodeUrlRecord(const Url& url, std::string* dst);

// Decodes a whole url_record into `*url`. DataLoss when `in` is not exactly
// one valid record: empty, truncated, an unknown version, a length or a
// priority out of range, or bytes after the payload. `*url` is unspecified
// after an error.
absl::Status DecodeUrlRecord(std::string_view in, Url* url);

// Appends the completion_batch of `url_hashes` to `*dst`. InvalidArgument
// (and `*dst` unchanged) when there are none or more than
// kMaxCompletionsPerBatch.
absl::Status EncodeCompletionBatch(std::span<const uint64_t> url_hashes,
                                   std::string* dst);

// Decodes a whole completion_batch and appends its hashes to `*url_hashes`.
// DataLoss when `in` is not exactly one valid batch (as DecodeUrlRecord);
// then `*url_hashes` is left as it was.
absl::Status DecodeCompletionBatch(std::string_view in,
                                   std::vector<uint64_t>* url_hashes);

}  // namespace hq::fleet

#endif  // HQ_LIB_FLEET_RECORDS_H_
