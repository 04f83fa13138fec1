// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq pending: a consumer group's pending tasks one by one (Redis's
// XPENDING), as ConsumerGroup::ListPending lists them.

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
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

  const Json& Finish() {
    j_.EndArray().EndObject();
    return j_;
  }

  const Table& table() const { return t_; }

 private:
  Table t_{{"PARTITION", "PRIORITY", "TOPIC", "ID", "STATE", "ATTEMPT",
            "CLAIMED/DUE", "LEASE_DEADLINE", "CONSUMER"}};
  Json j_;
};

ExitCode PrintListing(Listing& listing, const std::string& queue,
                      const std::string& group) {
  if (absl::GetFlag(FLAGS_json)) {
    PrintJson(listing.Finish());
    return kExitOk;
  }
  if (listing.table().empty()) {
    std::printf("no pending tasks in group %s of %s\n", group.c_str(),
                queue.c_str());
    return kExitOk;
  }
  listing.table().Print(stdout);
  return kExitOk;
}

}  // namespace

ExitCode Pending(const Args& args) {
  HQ_TRY(Need(args, 2, "pending QUEUE GROUP"));
  const int64_t limit = absl::GetFlag(FLAGS_limit);
  if (limit < 0) return Usage("--limit must be >= 0");
  HQ_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, OpenDb());
  HQ_ASSIGN_OR_RETURN(Queue * q, OpenQueue(db.get(), args[0]));
  HQ_ASSIGN_OR_RETURN(const GroupInfo info, q->InspectGroup(args[1]));
  Listing listing(q->name(), info.name);
  // On a live view of a group its owner has loaded: the owner's tasks, as
  // it published them (its first kLiveStatusPending).
  if (const LiveGroupStatus* live = LiveGroup(q->name(), info.name)) {
    size_t n = 0;
    for (const PendingTask& p : live->pending) {
      if (limit != 0 && n == static_cast<size_t>(limit)) break;
      listing.Add(p);
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
    return PrintListing(listing, q->name(), info.name);
  }
  HQ_ASSIGN_OR_RETURN(ConsumerGroup * g, LoadGroup(q, info));
  HQ_TRY(ListPages<PendingTask>(
      limit,
      [&](size_t want, const PendingTask* after) {
        return g->ListPending(want, after);
      },
      [&](const std::vector<PendingTask>& page) -> Result<void> {
        for (const PendingTask& p : page) listing.Add(p);
        return {};
      }));
  return PrintListing(listing, q->name(), info.name);
}

}  // namespace hq::tool
