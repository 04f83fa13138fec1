// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq pacing: a consumer group's per-topic pacing overrides
// (ConsumerGroup::SetTopicPacing, GetTopicPacing, ClearTopicPacing and
// ListTopicPacing): read one, set one (durable), clear one, or list them
// a page at a time.

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "tools/command.h"
#include "tools/flags.h"

namespace hq::tool {
namespace {

std::string IntervalText(absl::Duration d) {
  return d == absl::ZeroDuration() ? "0" : absl::FormatDuration(d);
}

void PacingJson(Json& j, const TopicPacing& p) {
  j.Key("max_in_flight").Uint(p.max_in_flight);
  j.Key("interval_ms").Int(absl::ToInt64Milliseconds(p.interval));
}

// One topic's override, or that it has none: a line, or a JSON document.
void PrintOne(const std::string& queue, const std::string& group,
              const std::string& topic, const std::optional<TopicPacing>& p) {
  if (absl::GetFlag(FLAGS_json)) {
    Json j;
    j.BeginObject().Key("queue").String(queue).Key("group").String(group);
    j.Bytes("topic", topic).Key("pacing");
    if (p) {
      j.BeginObject();
      PacingJson(j, *p);
      j.EndObject();
    } else {
      j.Null();
    }
    j.EndObject();
    PrintJson(j);
  } else if (p) {
    std::printf("topic %s of group %s: max_in_flight %u, interval %s\n",
                Cell(topic).c_str(), group.c_str(), p->max_in_flight,
                IntervalText(p->interval).c_str());
  } else {
    std::printf(
        "topic %s of group %s: no pacing of its own (the group's applies)\n",
        Cell(topic).c_str(), group.c_str());
  }
}

// The overrides of `g`: --limit of them (0: all) after --after.
ExitCode List(ConsumerGroup* g, const std::string& queue,
              const std::string& group) {
  const int64_t limit = absl::GetFlag(FLAGS_limit);
  const std::string first_after = absl::GetFlag(FLAGS_after);
  using Override = std::pair<std::string, TopicPacing>;
  Table t({"TOPIC", "MAX_IN_FLIGHT", "INTERVAL"});
  Json j;
  j.BeginObject().Key("queue").String(queue).Key("group").String(group);
  j.Key("overrides").BeginArray();
  std::optional<std::string> last;
  HQ_TRY(ListPages<Override>(
      limit,
      [&](size_t want, const Override* after) {
        const std::string* from = after != nullptr      ? &after->first
                                  : first_after.empty() ? nullptr
                                                        : &first_after;
        return g->ListTopicPacing(want, from);
      },
      [&](const std::vector<Override>& page) -> Result<void> {
        for (const auto& [topic, p] : page) {
          t.Add({Cell(topic), std::to_string(p.max_in_flight),
                 IntervalText(p.interval)});
          j.BeginObject().Bytes("topic", topic);
          PacingJson(j, p);
          j.EndObject();
        }
        last = page.back().first;
        return {};
      }));
  // Whether more follow the last one listed: the page's end marker.
  bool more = false;
  if (last) {
    HQ_ASSIGN_OR_RETURN(const std::vector<Override> next,
                        g->ListTopicPacing(1, &*last));
    more = !next.empty();
  }
  j.EndArray().Key("next_after");
  more ? j.String(*last) : j.Null();
  j.EndObject();
  if (absl::GetFlag(FLAGS_json)) {
    PrintJson(j);
    return kExitOk;
  }
  if (t.empty()) {
    std::printf("no topic of group %s of %s has pacing of its own%s\n",
                group.c_str(), queue.c_str(),
                first_after.empty() ? "" : " after --after");
  } else {
    t.Print(stdout);
  }
  if (more) {
    std::fprintf(stderr, "hq: more follow: --after=%s\n", last->c_str());
  }
  return kExitOk;
}

}  // namespace

ExitCode Pacing(const Args& args) {
  if (args.size() < 2 || args.size() > 3) {
    return Usage(absl::StrCat(
        args.size() < 2 ? "missing arguments" : "too many arguments",
        ": hq pacing QUEUE GROUP [TOPIC]"));
  }
  const int64_t max_in_flight = absl::GetFlag(FLAGS_max_in_flight);
  const absl::Duration interval = absl::GetFlag(FLAGS_interval);
  const bool clear = absl::GetFlag(FLAGS_clear);
  const bool set = max_in_flight >= 0 || interval != absl::InfiniteDuration();
  if (clear && set) {
    return Usage("--clear takes no --max_in_flight or --interval");
  }
  if (args.size() == 2 && (clear || set)) {
    return Usage("--clear, --max_in_flight and --interval need a TOPIC");
  }
  if (args.size() == 3 && (absl::GetFlag(FLAGS_limit) != 0 ||
                           !absl::GetFlag(FLAGS_after).empty())) {
    return Usage("--limit and --after list the overrides: give no TOPIC");
  }
  HQ_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, OpenDb());
  HQ_ASSIGN_OR_RETURN(Queue * q, OpenQueue(db.get(), args[0]));
  HQ_ASSIGN_OR_RETURN(const GroupInfo info, q->InspectGroup(args[1]));
  HQ_ASSIGN_OR_RETURN(ConsumerGroup * g, LoadGroup(q, info));
  if (args.size() == 2) return List(g, q->name(), info.name);
  const std::string& topic = args[2];
  if (clear) {
    HQ_TRY(g->ClearTopicPacing(topic));
    PrintOne(q->name(), info.name, topic, std::nullopt);
    return kExitOk;
  }
  if (set) {
    // A flag not given keeps the override's value (0 if there is none).
    HQ_ASSIGN_OR_RETURN(std::optional<TopicPacing> p, g->GetTopicPacing(topic));
    TopicPacing want = p.value_or(TopicPacing{});
    if (max_in_flight >= 0) {
      want.max_in_flight = static_cast<uint32_t>(max_in_flight);
    }
    if (interval != absl::InfiniteDuration()) want.interval = interval;
    HQ_TRY(g->SetTopicPacing(topic, want));
  }
  HQ_ASSIGN_OR_RETURN(const std::optional<TopicPacing> now,
                      g->GetTopicPacing(topic));
  PrintOne(q->name(), info.name, topic, now);
  return kExitOk;
}

}  // namespace hq::tool
