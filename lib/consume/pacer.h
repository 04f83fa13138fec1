// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Pacer: a consumer group's per-topic pacing (hq::TopicPacing): which
// topics may have a task handed out now. It holds state only for topics
// with a task in flight or handed out within their interval; an idle topic
// costs nothing. A topic's own pacing (ConsumerGroup::SetTopicPacing) is
// looked up when the topic gets state, and kept while it has some.
//
// Not thread-safe: the group calls it under its lock.

#ifndef HQ_LIB_CONSUME_PACER_H_
#define HQ_LIB_CONSUME_PACER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hq/group.h"

namespace hq {

class Pacer {
 public:
  // Reads a topic's own pacing (nullopt: none).
  using Lookup = std::function<absl::StatusOr<std::optional<TopicPacing>>(
      std::string_view topic)>;

  explicit Pacer(Lookup lookup) : lookup_(std::move(lookup)) {}

  // The pacing of topics without their own. Entries keep the pacing they
  // were created with until they go.
  void SetDefault(const TopicPacing& pacing) { default_ = pacing; }
  // Whether any topic may have its own pacing (false: no lookups).
  void SetMayHaveOverrides(bool may) { may_have_overrides_ = may; }
  // The latest paced hand-out before a restart: a topic without state is
  // due no sooner than this plus its interval.
  void SetResumeAfter(absl::Time t) { resume_after_ = t; }
  // `topic`'s own pacing was set (or cleared: nullopt).
  void OverrideChanged(std::string_view topic,
                       const std::optional<TopicPacing>& pacing);

  // Pacing is on: a default limit or interval, or topics with their own.
  bool on() const {
    return may_have_overrides_ || default_.max_in_flight != 0 ||
           default_.interval != absl::ZeroDuration();
  }

  // Whether a task of `topic` may be handed out at `now`. Errors: the
  // lookup's.
  absl::StatusOr<bool> MayHandOut(std::string_view topic, absl::Time now);
  // A task of `topic` was handed out at `now` (after MayHandOut said yes).
  void HandedOut(std::string_view topic, absl::Time now);
  // A task of `topic` handed out stopped being in flight. Returns whether
  // the topic was at its in-flight limit (a claim may now take it).
  bool Ended(std::string_view topic, absl::Time now);

  // Forgets topics with nothing in flight whose interval is over, and those
  // MayHandOut looked at that were not handed out. The group calls it at
  // the start of each claim.
  void Prune(absl::Time now);
  // The earliest time after `now` at which a topic's interval ends
  // (InfiniteFuture if none).
  absl::Time NextDue(absl::Time now) const;
  // The latest hand-out recorded (InfinitePast if none).
  absl::Time latest() const { return latest_; }
  size_t topics() const { return entries_.size(); }

 private:
  struct Entry {
    TopicPacing pacing;
    uint32_t in_flight = 0;
    absl::Time next = absl::InfinitePast();  // Due from then.
    bool indexed = false;                    // In by_next_.
  };
  // The entry of `topic`, created if absent.
  absl::StatusOr<Entry*> Get(std::string_view topic, absl::Time now);
  void SetNext(std::string_view topic, Entry* e, absl::Time next,
               absl::Time now);
  void Unindex(std::string_view topic, Entry* e);

  const Lookup lookup_;
  TopicPacing default_;
  bool may_have_overrides_ = false;
  absl::Time resume_after_ = absl::InfinitePast();
  absl::Time latest_ = absl::InfinitePast();
  absl::flat_hash_map<std::string, Entry> entries_;
  // The entries due later than when their `next` was set, by `next`
  // (Entry::indexed): Prune walks it from the front. Others go in Ended.
  std::set<std::pair<absl::Time, std::string>> by_next_;
  // Topics whose entry MayHandOut made since the last Prune.
  std::vector<std::string> fresh_;
};

}  // namespace hq

#endif  // HQ_LIB_CONSUME_PACER_H_
