// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq pending: a consumer group's pending tasks one by one (Redis's
// XPENDING), as ConsumerGroup::ListPending lists them.

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tools/command.h"
#include "tools/flags.h"

namespace hq::tool {
namespace {

const char* StateName(PendingTask::State s) {
  switch (s) {
    case PendingTask::State::kInFlight:
      return "in_flight";
    case PendingTask::State::kRedelivery:
      return "redelivery";
    case PendingTask::State::kDelayed:
      return "delayed";
  }
  return "unknown";
}

// "-" for a time that is not set.
std::string OptionalTime(absl::Time t) {
  return t == absl::InfinitePast() ? "-" : TimeText(t);
}

// A task's place in the listing, for --after: PARTITION/PRIORITY/ID, and
// /TOPIC in hex if the task has a topic.
std::string Cursor(const PendingTask& p) {
  std::string c =
      absl::StrCat(p.partition, "/", p.priority, "/", p.id.ToString());
  if (!p.topic.empty())
    absl::StrAppend(&c, "/", absl::BytesToHexString(p.topic));
  return c;
}

Result<PendingTask> ParseCursor(const std::string& text) {
  const std::vector<std::string> parts = absl::StrSplit(text, '/');
  PendingTask p;
  std::optional<MessageId> id;
  bool ok = (parts.size() == 3 || parts.size() == 4) &&
            absl::SimpleAtoi(parts[0], &p.partition) &&
            absl::SimpleAtoi(parts[1], &p.priority) &&
            (id = MessageId::Parse(parts[2])).has_value();
  if (ok && parts.size() == 4) {
    ok = parts[3].size() % 2 == 0 &&
         parts[3].find_first_not_of("0123456789abcdefABCDEF") ==
             std::string::npos;
    if (ok) p.topic = absl::HexStringToBytes(parts[3]);
  }
  if (!ok) {
    return Usage(absl::StrCat(
        "--after=", text,
        ": not a cursor of hq pending (PARTITION/PRIORITY/ID[/TOPIC_HEX], as "
        "its next_after prints it)"));
  }
  p.id = *id;
  return p;
}

// True if `a` comes before `b` in ListPending's order: partition, priority
// from the highest, topic, id.
bool Before(const PendingTask& a, const PendingTask& b) {
  return std::forward_as_tuple(a.partition, b.priority, a.topic, a.id) <
         std::forward_as_tuple(b.partition, a.priority, b.topic, b.id);
}

// The tasks listed: a table row each, and the JSON document with an object
// each.
class Listing {
 public:
  Listing(const std::string& queue, const std::string& group) {
    j_.BeginObject().Key("queue").String(queue).Key("group").String(group);
    j_.Key("pending").BeginArray();
  }

  void Add(const PendingTask& p) {
    t_.Add({std::to_string(p.partition), std::to_string(p.priority),
            Cell(p.topic), p.id.ToString(), StateName(p.state),
            std::to_string(p.attempt), TimeText(p.since),
            OptionalTime(p.lease_deadline),
            p.consumer.empty() ? "-" : Cell(p.consumer)});
    j_.BeginObject().Key("partition").Uint(p.partition);
    j_.Key("priority").Int(p.priority).Bytes("topic", p.topic);
    j_.Key("id").String(p.id.ToString());
    j_.Key("state").String(StateName(p.state));
    j_.Key("attempt").Uint(p.attempt);
    j_.Key(p.state == PendingTask::State::kInFlight ? "claimed_at" : "due_at")
        .String(TimeText(p.since));
    if (p.state == PendingTask::State::kInFlight) {
      j_.Key("lease_deadline").String(TimeText(p.lease_deadline));
    }
    if (!p.consumer.empty()) j_.Bytes("consumer", p.consumer);
    j_.EndObject();
  }

  // `next`: the cursor to list on from, if more follow.
  const Json& Finish(const std::optional<std::string>& next) {
    j_.EndArray().Key("next_after");
    next ? j_.String(*next) : j_.Null();
    j_.EndObject();
    return j_;
  }

  const Table& table() const { return t_; }

 private:
  Table t_{{"PARTITION", "PRIORITY", "TOPIC", "ID", "STATE", "ATTEMPT",
            "CLAIMED/DUE", "LEASE_DEADLINE", "CONSUMER"}};
  Json j_;
};

ExitCode PrintListing(Listing& listing, const std::string& queue,
                      const std::string& group,
                      const std::optional<std::string>& next) {
  if (absl::GetFlag(FLAGS_json)) {
    PrintJson(listing.Finish(next));
    return kExitOk;
  }
  if (listing.table().empty()) {
    std::printf("no pending tasks in group %s of %s%s\n", group.c_str(),
                queue.c_str(),
                absl::GetFlag(FLAGS_after).empty() ? "" : " after --after");
  } else {
    listing.table().Print(stdout);
  }
  if (next)
    std::fprintf(stderr, "hq: more follow: --after=%s\n", next->c_str());
  return kExitOk;
}

}  // namespace

ExitCode Pending(const Args& args) {
  HQ_TRY(Need(args, 2, "pending QUEUE GROUP"));
  const int64_t limit = absl::GetFlag(FLAGS_limit);
  if (limit < 0) return Usage("--limit must be >= 0");
  std::optional<PendingTask> first_after;
  if (!absl::GetFlag(FLAGS_after).empty()) {
    HQ_ASSIGN_OR_RETURN(first_after, ParseCursor(absl::GetFlag(FLAGS_after)));
  }
  HQ_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, OpenDb());
  HQ_ASSIGN_OR_RETURN(Queue * q, OpenQueue(db.get(), args[0]));
  HQ_ASSIGN_OR_RETURN(const GroupInfo info, q->InspectGroup(args[1]));
  Listing listing(q->name(), info.name);
  // On a live view of a group its owner has loaded: the owner's tasks, as
  // it published them (its first kLiveStatusPending).
  if (const LiveGroupStatus* live = LiveGroup(q->name(), info.name)) {
    size_t n = 0;
    std::optional<std::string> next;
    const PendingTask* last = nullptr;
    for (const PendingTask& p : live->pending) {
      if (first_after && !Before(*first_after, p)) continue;
      if (limit != 0 && n == static_cast<size_t>(limit)) {
        next = Cursor(*last);
        break;
      }
      listing.Add(p);
      last = &p;
      ++n;
    }
    if (!live->pending_complete && live->pending.empty()) {
      std::fprintf(stderr,
                   "hq: the owner could not list its pending tasks (see its "
                   "Stats: hq groups); none are shown\n");
    } else if (!live->pending_complete && n == live->pending.size() &&
               !absl::GetFlag(FLAGS_json)) {
      std::fprintf(stderr,
                   "hq: the owner publishes its first %zu pending tasks; "
                   "more are not listed\n",
                   kLiveStatusPending);
    }
    return PrintListing(listing, q->name(), info.name, next);
  }
  HQ_ASSIGN_OR_RETURN(ConsumerGroup * g, LoadGroup(q, info));
  std::optional<PendingTask> last;
  HQ_TRY(ListPages<PendingTask>(
      limit,
      [&](size_t want, const PendingTask* after) {
        return g->ListPending(
            want,
            after != nullptr ? after : (first_after ? &*first_after : nullptr));
      },
      [&](const std::vector<PendingTask>& page) -> Result<void> {
        for (const PendingTask& p : page) listing.Add(p);
        last = page.back();
        return {};
      }));
  // The end marker: whether a task follows the last one listed.
  std::optional<std::string> next;
  if (last) {
    HQ_ASSIGN_OR_RETURN(const std::vector<PendingTask> more,
                        g->ListPending(1, &*last));
    if (!more.empty()) next = Cursor(*last);
  }
  return PrintListing(listing, q->name(), info.name, next);
}

}  // namespace hq::tool
