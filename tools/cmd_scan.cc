// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq scan: a queue's messages, merged in id order or lane by lane, within
// partitions, topics and an id or time range; with --follow, then new
// messages as other processes write them.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "tools/command.h"
#include "tools/flags.h"
#include "tools/stop_signals.h"

namespace hq::tool {
namespace {

// --------------------------------------------------------------- flags

Result<std::vector<uint32_t>> ParsePartitions(const std::string& text) {
  std::vector<uint32_t> out;
  if (text.empty()) return out;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    uint32_t p;
    if (!absl::SimpleAtoi(part, &p)) {
      return Usage(absl::StrCat("--partitions: '", Sv(part),
                                "' is not a partition number"));
    }
    out.push_back(p);
  }
  return out;
}

std::vector<std::string> ParseTopics(const std::string& text) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  for (absl::string_view t : absl::StrSplit(text, ',')) out.push_back(Sv(t));
  return out;
}

Result<MessageId> ParseId(const char* flag, const std::string& text) {
  if (std::optional<MessageId> id = MessageId::Parse(text)) return *id;
  uint64_t ms;
  if (absl::SimpleAtoi(text, &ms) && ms <= MessageId::kMaxMs) {
    return MessageId{ms, 0};
  }
  return Usage(absl::StrCat("--", flag, ": '", text,
                            "' is not a message id (ms-seq, or ms)"));
}

Result<absl::Time> ParseTime(const char* flag, const std::string& text) {
  absl::Time t;
  std::string err;
  if (absl::ParseTime(absl::RFC3339_full, text, &t, &err)) return t;
  absl::Duration ago;
  if (absl::ParseDuration(text, &ago) && ago >= absl::ZeroDuration()) {
    return absl::Now() - ago;
  }
  return Usage(absl::StrCat("--", flag, ": '", text,
                            "' is neither an RFC 3339 time "
                            "(2026-01-01T12:00:00Z) nor a duration (10m)"));
}

// The range --from, --to, --since and --until give, into `o`.
Result<void> ParseRange(ScanOptions& o) {
  if (!absl::GetFlag(FLAGS_from).empty()) {
    HQ_ASSIGN_OR_RETURN(o.from, ParseId("from", absl::GetFlag(FLAGS_from)));
  }
  if (!absl::GetFlag(FLAGS_to).empty()) {
    HQ_ASSIGN_OR_RETURN(o.to, ParseId("to", absl::GetFlag(FLAGS_to)));
  }
  if (!absl::GetFlag(FLAGS_since).empty()) {
    HQ_ASSIGN_OR_RETURN(const absl::Time since,
                        ParseTime("since", absl::GetFlag(FLAGS_since)));
    o.from = std::max(o.from, MessageId::AtTime(since));
  }
  if (!absl::GetFlag(FLAGS_until).empty()) {
    HQ_ASSIGN_OR_RETURN(const absl::Time until,
                        ParseTime("until", absl::GetFlag(FLAGS_until)));
    o.to = std::min(o.to, MessageId::AtTime(until));
  }
  if (o.to < o.from) return Usage("the range is empty: --to < --from");
  return {};
}

// The scan the flags ask for (before the queue is known).
Result<ScanOptions> ScanFlags() {
  ScanOptions o;
  HQ_ASSIGN_OR_RETURN(o.partitions,
                      ParsePartitions(absl::GetFlag(FLAGS_partitions)));
  o.topics = ParseTopics(absl::GetFlag(FLAGS_topics));
  o.order = absl::GetFlag(FLAGS_lane_order) ? ScanOptions::Order::kLane
                                            : ScanOptions::Order::kMerged;
  HQ_TRY(ParseRange(o));
  if (absl::GetFlag(FLAGS_follow) &&
      (o.to != MessageId::Max() || absl::GetFlag(FLAGS_limit) > 0)) {
    return Usage("--follow cannot be combined with --to, --until or --limit");
  }
  return o;
}

Result<void> CheckPartitions(const Queue& q, const ScanOptions& o) {
  const uint32_t partitions = q.options().partitions;
  for (uint32_t p : o.partitions) {
    if (p >= partitions) {
      return Usage(
          absl::StrFormat("--partitions: queue %s has partitions "
                          "0..%d; %d is out of range",
                          q.name(), partitions - 1, p));
    }
  }
  return {};
}

// -------------------------------------------------------------- output

void MessageJson(Json& j, const MessageView& m) {
  j.BeginObject().Key("partition").Uint(m.partition);
  j.Key("priority").Int(m.priority).Key("id").String(m.id.ToString());
  j.Key("time").String(TimeText(m.id.time()));
  j.Bytes("topic", m.topic).Bytes("key", m.key).Bytes("payload", m.payload);
  if (!m.dedup_key.empty()) j.Bytes("dedup_key", m.dedup_key);
  if (m.not_before != absl::InfinitePast()) {
    j.Key("not_before").String(TimeText(m.not_before));
  }
  j.EndObject();
}

std::vector<std::string> MessageRow(const MessageView& m) {
  return {std::to_string(m.partition),
          std::to_string(m.priority),
          m.id.ToString(),
          TimeText(m.id.time()),
          Cell(m.topic),
          Cell(m.key),
          m.dedup_key.empty() ? "-" : Cell(m.dedup_key),
          Cell(m.payload)};
}

const std::vector<std::string> kMessageHeader = {"PARTITION", "PRIORITY", "ID",
                                                 "TIME",      "TOPIC",    "KEY",
                                                 "DEDUP_KEY", "PAYLOAD"};

// Shows the messages a scan finds: collected into one table or JSON
// document, or with --follow a line each, at once.
class Shown {
 public:
  Shown(uint32_t partitions, MessageId from)
      : json_(absl::GetFlag(FLAGS_json)),
        follow_(absl::GetFlag(FLAGS_follow)),
        next_(partitions, from) {
    if (!follow_) j_.BeginObject().Key("messages").BeginArray();
  }

  void Add(const MessageView& m) {
    next_[m.partition] = std::max(next_[m.partition], m.id.Next());
    ++count_;
    if (follow_) {
      if (json_) {
        Json line;
        MessageJson(line, m);
        PrintJson(line);
      } else {
        // No alignment across polls: one tab-free line per message.
        std::printf("%s\n", absl::StrJoin(MessageRow(m), "  ").c_str());
      }
      std::fflush(stdout);
    } else if (json_) {
      MessageJson(j_, m);
    } else {
      t_.Add(MessageRow(m));
    }
  }

  // Without --follow: prints what was collected.
  void Print() {
    j_.EndArray().EndObject();
    if (json_) {
      PrintJson(j_);
    } else if (t_.empty()) {
      std::printf("no messages\n");
    } else {
      t_.Print(stdout);
    }
  }

  int64_t count() const { return count_; }
  // The next id to show in partition `p` (--follow).
  MessageId next(uint32_t p) const { return next_[p]; }

 private:
  const bool json_;
  const bool follow_;
  Table t_{kMessageHeader};
  Json j_;
  int64_t count_ = 0;
  std::vector<MessageId> next_;
};

// Shows what `o` finds in `q`, up to `limit` messages (0: all).
Result<void> ScanInto(Queue* q, const ScanOptions& o, int64_t limit,
                      Shown& shown) {
  HQ_ASSIGN_OR_RETURN(std::unique_ptr<Scanner> s, q->NewScanner(o));
  while ((limit == 0 || shown.count() < limit) && s->Next()) {
    shown.Add(s->message());
  }
  return AsResult(s->status());
}

// --follow: polls queue `name` for new messages until --follow_for has
// passed or SIGINT or SIGTERM comes. The database is released between
// polls, so other processes can open it meanwhile (it is locked while
// open).
Result<void> Follow(const std::string& name, const ScanOptions& base,
                    std::vector<uint32_t> scope, Shown& shown) {
  if (!absl::GetFlag(FLAGS_json)) {
    std::printf("-- following %s (Ctrl-C to stop) --\n", name.c_str());
    std::fflush(stdout);
  }
  const absl::Duration follow_for = absl::GetFlag(FLAGS_follow_for);
  const absl::Time end = follow_for > absl::ZeroDuration()
                             ? absl::Now() + follow_for
                             : absl::InfiniteFuture();
  const absl::Duration poll =
      std::max(absl::GetFlag(FLAGS_poll), absl::Milliseconds(1));
  HQ_ASSIGN_OR_RETURN(const std::string path, DbPath());
  while (absl::Now() < end) {
    if (SleepUnlessStopped(std::min(poll, end - absl::Now()))) break;
    Options options;
    options.create_if_missing = false;
    options.ttl_sweep_interval = absl::ZeroDuration();
    absl::StatusOr<std::unique_ptr<Db>> opened = OpenUnlessHeld(path, options);
    if (!opened.ok()) {
      Failure f = FromStatus(opened.status());
      if (f.code == kExitLocked) continue;  // Someone is writing: later.
      return f;
    }
    HQ_ASSIGN_OR_RETURN(Queue * q, (*opened)->OpenQueue(name));
    for (uint32_t p : scope) {
      ScanOptions o = base;
      o.partitions = {p};
      o.from = shown.next(p);
      o.order = ScanOptions::Order::kMerged;
      HQ_TRY(ScanInto(q, o, 0, shown));
    }
  }
  return {};
}

}  // namespace

ExitCode Scan(const Args& args) {
  HQ_TRY(Need(args, 1, "scan QUEUE"));
  const int64_t limit = absl::GetFlag(FLAGS_limit);
  if (limit < 0) return Usage("--limit must be >= 0");
  HQ_ASSIGN_OR_RETURN(const ScanOptions base, ScanFlags());
  HQ_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, OpenDb());
  HQ_ASSIGN_OR_RETURN(Queue * q, OpenQueue(db.get(), args[0]));
  HQ_TRY(CheckPartitions(*q, base));
  const std::string name = q->name();
  const uint32_t partitions = q->options().partitions;
  Shown shown(partitions, base.from);
  HQ_TRY(ScanInto(q, base, limit, shown));
  if (!absl::GetFlag(FLAGS_follow)) {
    shown.Print();
    return kExitOk;
  }
  db.reset();
  std::vector<uint32_t> scope = base.partitions;
  if (scope.empty()) {
    for (uint32_t p = 0; p < partitions; ++p) scope.push_back(p);
  }
  HQ_TRY(Follow(name, base, std::move(scope), shown));
  return kExitOk;
}

}  // namespace hq::tool
