// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/format.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/coding.h"
#include "lib/strings.h"

namespace hq::format {
namespace {

constexpr uint8_t kQueueRecordVersion = 1;
constexpr uint8_t kMessageValueVersion = 1;
constexpr uint8_t kFlagHasKey = 0x01;

std::string Tagged(char tag, std::string_view rest) {
  std::string s(1, tag);
  s.append(rest);
  return s;
}

// tag fixed32 queue_id: the start of every per-queue key.
std::string TaggedQueue(char tag, uint32_t queue_id) {
  std::string s(1, tag);
  coding::PutFixed32(&s, queue_id);
  return s;
}

}  // namespace

std::string MetaKey(std::string_view name) { return Tagged(kMetaTag, name); }
std::string CatalogKey(std::string_view queue_name) {
  return Tagged(kCatalogTag, queue_name);
}
std::string CatalogPrefix() { return std::string(1, kCatalogTag); }

std::string ReserveKey(uint32_t queue_id, uint32_t partition) {
  std::string s = ReservePrefix(queue_id);
  coding::PutFixed16(&s, static_cast<uint16_t>(partition));
  return s;
}
std::string ReservePrefix(uint32_t queue_id) {
  return TaggedQueue(kReserveTag, queue_id);
}

std::string DropKey(uint32_t queue_id) {
  return TaggedQueue(kDropTag, queue_id);
}
std::string DropPrefix() { return std::string(1, kDropTag); }

std::string MessagePrefix(uint32_t queue_id) {
  return TaggedQueue(kMessageTag, queue_id);
}

void AppendLaneDirKey(std::string* dst, std::string_view lane_prefix) {
  dst->push_back(kLaneDirTag);
  dst->append(lane_prefix.substr(1));
}
std::string LaneDirPrefix(uint32_t queue_id) {
  return TaggedQueue(kLaneDirTag, queue_id);
}
std::string LaneDirPrefix(uint32_t queue_id, uint32_t partition) {
  std::string s = LaneDirPrefix(queue_id);
  coding::PutFixed16(&s, static_cast<uint16_t>(partition));
  return s;
}

std::string TtlKey(uint32_t queue_id) { return TaggedQueue(kTtlTag, queue_id); }
std::string TtlPrefix() { return std::string(1, kTtlTag); }

absl::Status ValidateQueueName(std::string_view name) {
  if (name.empty()) {
    return absl::InvalidArgumentError("queue name is empty");
  }
  if (name.size() > kMaxQueueNameBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "queue name of %d bytes is longer than the limit of %d bytes",
        name.size(), kMaxQueueNameBytes));
  }
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9');
  };
  if (!alnum(name[0])) {
    return absl::InvalidArgumentError(
        absl::StrCat("queue name '", Printable(name),
                     "' must start with a letter or a digit"));
  }
  for (char c : name) {
    if (!alnum(c) && c != '.' && c != '_' && c != '-') {
      return absl::InvalidArgumentError(
          absl::StrCat("queue name '", Printable(name),
                       "' holds a character outside [A-Za-z0-9._-]"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateQueueOptions(const QueueOptions& o) {
  if (o.partitions < 1 || o.partitions > kMaxPartitions) {
    return absl::InvalidArgumentError(
        absl::StrFormat("QueueOptions::partitions is %d; it must be in 1..%d",
                        o.partitions, kMaxPartitions));
  }
  if (o.priorities < 1 || o.priorities > kMaxPriorities) {
    return absl::InvalidArgumentError(
        absl::StrFormat("QueueOptions::priorities is %d; it must be in 1..%d",
                        o.priorities, kMaxPriorities));
  }
  if (o.ttl != absl::InfiniteDuration()) {
    if (o.ttl < absl::Milliseconds(1) ||
        o.ttl != absl::Milliseconds(absl::ToInt64Milliseconds(o.ttl))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "QueueOptions::ttl is ", absl::FormatDuration(o.ttl),
          "; it must be a whole number of milliseconds >= 1ms, or infinite"));
    }
  }
  if (o.layout != Layout::kTime && o.layout != Layout::kTopic) {
    return absl::InvalidArgumentError(
        absl::StrFormat("QueueOptions::layout %d is not a known layout",
                        static_cast<int>(o.layout)));
  }
  if (o.max_payload_bytes < 1 || o.max_payload_bytes > kMaxPayloadLimit) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "QueueOptions::max_payload_bytes is %d; it must be in 1..%d",
        o.max_payload_bytes, kMaxPayloadLimit));
  }
  return absl::OkStatus();
}

absl::Status ValidateOptions(const Options& o) {
  if (o.cache_bytes > (size_t{1} << 40)) {
    return absl::InvalidArgumentError("Options::cache_bytes is over 1 TiB");
  }
  if (o.bloom_bits_per_key < 0 || o.bloom_bits_per_key > 40) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Options::bloom_bits_per_key is %d; it must be in 0..40",
        o.bloom_bits_per_key));
  }
  if (o.write_buffer_bytes < (size_t{64} << 10) ||
      o.write_buffer_bytes > (size_t{1} << 30)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Options::write_buffer_bytes is %d; it must be in 64 KiB..1 GiB",
        o.write_buffer_bytes));
  }
  if (o.scanner_lease < absl::Milliseconds(1) ||
      o.scanner_lease > absl::Hours(24 * 30)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Options::scanner_lease is ", absl::FormatDuration(o.scanner_lease),
        "; it must be in 1ms..720h"));
  }
  if (o.ttl_sweep_interval != absl::ZeroDuration() &&
      (o.ttl_sweep_interval < absl::Milliseconds(1) ||
       o.ttl_sweep_interval > absl::Hours(24 * 30))) {
    return absl::InvalidArgumentError(
        absl::StrCat("Options::ttl_sweep_interval is ",
                     absl::FormatDuration(o.ttl_sweep_interval),
                     "; it must be 0 or in 1ms..720h"));
  }
  if (o.ttl_sweep_batch < 1 || o.ttl_sweep_batch > 100000) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Options::ttl_sweep_batch is %d; it must be in 1..100000",
        o.ttl_sweep_batch));
  }
  if (o.max_open_scanners < 1 || o.max_open_scanners > 1000000) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Options::max_open_scanners is %d; it must be in 1..1000000",
        o.max_open_scanners));
  }
  if (o.max_open_files < 64 || o.max_open_files > 1000000) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Options::max_open_files is %d; it must be in 64..1000000",
        o.max_open_files));
  }
  return absl::OkStatus();
}

std::string EncodeQueueRecord(const QueueRecord& r) {
  std::string s;
  coding::PutFixed8(&s, kQueueRecordVersion);
  coding::PutFixed32(&s, r.id);
  coding::PutFixed16(&s, static_cast<uint16_t>(r.options.partitions));
  coding::PutFixed16(&s, static_cast<uint16_t>(r.options.priorities));
  coding::PutFixed8(&s, static_cast<uint8_t>(r.options.layout));
  const uint64_t ttl_ms =
      r.options.ttl == absl::InfiniteDuration()
          ? 0
          : static_cast<uint64_t>(absl::ToInt64Milliseconds(r.options.ttl));
  coding::PutVarint64(&s, ttl_ms);
  coding::PutVarint32(&s, r.options.max_payload_bytes);
  coding::PutVarint64(&s, static_cast<uint64_t>(absl::ToUnixMillis(r.created)));
  return s;
}

absl::Status DecodeQueueRecord(std::string_view in, QueueRecord* r) {
  uint8_t version, layout;
  uint16_t partitions, priorities;
  uint64_t ttl_ms, created_ms;
  uint32_t max_payload;
  if (!coding::GetFixed8(&in, &version) || version != kQueueRecordVersion ||
      !coding::GetFixed32(&in, &r->id) ||
      !coding::GetFixed16(&in, &partitions) ||
      !coding::GetFixed16(&in, &priorities) ||
      !coding::GetFixed8(&in, &layout) || !coding::GetVarint64(&in, &ttl_ms) ||
      !coding::GetVarint32(&in, &max_payload) ||
      !coding::GetVarint64(&in, &created_ms) || !in.empty() ||
      ttl_ms > static_cast<uint64_t>(INT64_MAX) ||
      created_ms > static_cast<uint64_t>(INT64_MAX)) {
    return absl::DataLossError("malformed queue record in the catalog");
  }
  r->options.partitions = partitions;
  r->options.priorities = priorities;
  r->options.layout = static_cast<Layout>(layout);
  r->options.ttl = ttl_ms == 0
                       ? absl::InfiniteDuration()
                       : absl::Milliseconds(static_cast<int64_t>(ttl_ms));
  r->options.max_payload_bytes = max_payload;
  r->created = absl::FromUnixMillis(static_cast<int64_t>(created_ms));
  absl::Status s = ValidateQueueOptions(r->options);
  if (!s.ok()) {
    return absl::DataLossError(
        absl::StrCat("queue record in the catalog is invalid: ", s.message()));
  }
  return absl::OkStatus();
}

void AppendMessageValue(std::string* dst, std::string_view key,
                        std::string_view payload) {
  coding::PutFixed8(dst, kMessageValueVersion);
  if (key.empty()) {
    coding::PutFixed8(dst, 0);
  } else {
    coding::PutFixed8(dst, kFlagHasKey);
    coding::PutLengthPrefixed(dst, key);
  }
  dst->append(payload);
}

bool DecodeMessageValue(std::string_view in, std::string_view* key,
                        std::string_view* payload) {
  uint8_t version, flags;
  if (!coding::GetFixed8(&in, &version) || version != kMessageValueVersion ||
      !coding::GetFixed8(&in, &flags) || (flags & ~kFlagHasKey) != 0) {
    return false;
  }
  *key = std::string_view();
  if ((flags & kFlagHasKey) != 0 && !coding::GetLengthPrefixed(&in, key)) {
    return false;
  }
  *payload = in;
  return true;
}

}  // namespace hq::format
