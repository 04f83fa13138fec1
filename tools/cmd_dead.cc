// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq dead: a consumer group's dead letters; with --requeue, put back into
// the group's queue as they are listed.

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "tools/command.h"
#include "tools/flags.h"

namespace hq::tool {
namespace {

const char* ReasonName(DeadLetterReason r) {
  switch (r) {
    case DeadLetterReason::kLeaseExpired:
      return "lease_expired";
    case DeadLetterReason::kReleased:
      return "released";
    case DeadLetterReason::kInterrupted:
      return "interrupted";
    case DeadLetterReason::kRejected:
      return "rejected";
  }
  return "unknown";
}

// The dead letters listed: a table row each, and the JSON document with
// an object each.
class Listing {
 public:
  Listing(const std::string& queue, const GroupInfo& info) {
    j_.BeginObject().Key("queue").String(queue).Key("group").String(info.name);
    j_.Key("dead_letter_queue").String(info.dead_letter_queue);
    j_.Key("dead_letters").BeginArray();
  }

  void Add(const DeadLetter& d) {
    t_.Add({std::to_string(d.partition), d.id.ToString(),
            absl::StrCat(d.original_partition, "/", d.original_id.ToString()),
            std::to_string(d.priority), std::to_string(d.attempts),
            ReasonName(d.reason), TimeText(d.dead_at), Cell(d.topic),
            Cell(d.key), Cell(d.payload)});
    j_.BeginObject().Key("partition").Uint(d.partition);
    j_.Key("id").String(d.id.ToString());
    j_.Key("original_partition").Uint(d.original_partition);
    j_.Key("original_id").String(d.original_id.ToString());
    j_.Key("priority").Int(d.priority).Key("attempts").Uint(d.attempts);
    j_.Key("reason").String(ReasonName(d.reason));
    j_.Key("dead_at").String(TimeText(d.dead_at));
    j_.Bytes("topic", d.topic).Bytes("key", d.key).Bytes("payload", d.payload);
    j_.EndObject();
  }

  // Ends the JSON document; with --requeue it says how many were requeued.
  const Json& Finish(bool requeue, int64_t n) {
    j_.EndArray();
    if (requeue) j_.Key("requeued").Uint(static_cast<uint64_t>(n));
    j_.EndObject();
    return j_;
  }

  const Table& table() const { return t_; }

 private:
  Table t_{{"PARTITION", "ID", "ORIGINAL", "PRIORITY", "ATTEMPTS", "REASON",
            "DEAD_AT", "TOPIC", "KEY", "PAYLOAD"}};
  Json j_;
};

// Lists up to `limit` dead letters of `g` (0: all) into `listing`, and
// with `requeue` puts them back a page at a time. Returns how many.
Result<int64_t> ListDead(ConsumerGroup* g, int64_t limit, bool requeue,
                         Listing& listing) {
  return ListPages<DeadLetter>(
      limit,
      [&](size_t want, const DeadLetter* after) {
        // Requeued letters leave the list: page from the start then.
        return g->ListDeadLetters(want, requeue ? nullptr : after);
      },
      [&](const std::vector<DeadLetter>& page) -> Result<void> {
        for (const DeadLetter& d : page) listing.Add(d);
        if (requeue) {
          std::vector<PutResult> results;
          HQ_TRY(g->Requeue(page, &results));
        }
        return {};
      });
}

}  // namespace

ExitCode Dead(const Args& args) {
  HQ_TRY(Need(args, 2, "dead QUEUE GROUP"));
  const int64_t limit = absl::GetFlag(FLAGS_limit);
  if (limit < 0) return Usage("--limit must be >= 0");
  const bool requeue = absl::GetFlag(FLAGS_requeue);
  HQ_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, OpenDb());
  HQ_ASSIGN_OR_RETURN(Queue * q, OpenQueue(db.get(), args[0]));
  HQ_ASSIGN_OR_RETURN(const GroupInfo info, q->InspectGroup(args[1]));
  HQ_ASSIGN_OR_RETURN(ConsumerGroup * g, LoadGroup(q, info));
  Listing listing(q->name(), info);
  HQ_ASSIGN_OR_RETURN(const int64_t n, ListDead(g, limit, requeue, listing));
  if (absl::GetFlag(FLAGS_json)) {
    PrintJson(listing.Finish(requeue, n));
    return kExitOk;
  }
  if (listing.table().empty()) {
    std::printf("no dead letters in group %s of %s\n", info.name.c_str(),
                q->name().c_str());
    return kExitOk;
  }
  listing.table().Print(stdout);
  if (requeue) {
    std::printf("requeued %lld dead letter%s to %s\n",
                static_cast<long long>(n), n == 1 ? "" : "s",
                q->name().c_str());
  }
  return kExitOk;
}

}  // namespace hq::tool
