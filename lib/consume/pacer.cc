// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/consume/pacer.h"

#include <algorithm>

#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {

void Pacer::OverrideChanged(std::string_view topic,
                            const std::optional<TopicPacing>& pacing) {
  if (pacing.has_value()) may_have_overrides_ = true;
  auto it = entries_.find(Av(topic));
  if (it != entries_.end()) it->second.pacing = pacing.value_or(default_);
}

absl::StatusOr<Pacer::Entry*> Pacer::Get(std::string_view topic,
                                         absl::Time now) {
  auto it = entries_.find(Av(topic));
  if (it != entries_.end()) return &it->second;
  TopicPacing pacing = default_;
  if (may_have_overrides_) {
    HQ_ASSIGN_OR_RETURN(std::optional<TopicPacing> own, lookup_(topic));
    if (own.has_value()) pacing = *own;
  }
  Entry* e = &entries_[std::string(topic)];
  e->pacing = pacing;
  // Its previous hand-out may have been as late as resume_after_.
  if (pacing.interval > absl::ZeroDuration() &&
      resume_after_ != absl::InfinitePast() &&
      now < resume_after_ + pacing.interval) {
    SetNext(topic, e, resume_after_ + pacing.interval, now);
  }
  // Usually handed out at once (HandedOut); if not, Prune forgets it.
  fresh_.emplace_back(topic);
  return e;
}

void Pacer::SetNext(std::string_view topic, Entry* e, absl::Time next,
                    absl::Time now) {
  Unindex(topic, e);
  e->next = next;
  // Only an entry due later needs Prune; one due now goes when its last
  // task ends (Ended).
  if (next > now) {
    by_next_.emplace(next, std::string(topic));
    e->indexed = true;
  }
}

void Pacer::Unindex(std::string_view topic, Entry* e) {
  if (!e->indexed) return;
  by_next_.erase({e->next, std::string(topic)});
  e->indexed = false;
}

absl::StatusOr<bool> Pacer::MayHandOut(std::string_view topic, absl::Time now) {
  HQ_ASSIGN_OR_RETURN(Entry * e, Get(topic, now));
  if (e->pacing.max_in_flight != 0 && e->in_flight >= e->pacing.max_in_flight) {
    return false;
  }
  return now >= e->next;
}

void Pacer::HandedOut(std::string_view topic, absl::Time now) {
  auto it = entries_.find(Av(topic));
  if (it == entries_.end()) return;  // MayHandOut made it; never absent.
  Entry* e = &it->second;
  ++e->in_flight;
  SetNext(topic, e, now + e->pacing.interval, now);
  latest_ = std::max(latest_, now);
}

bool Pacer::Ended(std::string_view topic, absl::Time now) {
  auto it = entries_.find(Av(topic));
  if (it == entries_.end() || it->second.in_flight == 0) return false;
  Entry* e = &it->second;
  const bool was_full =
      e->pacing.max_in_flight != 0 && e->in_flight >= e->pacing.max_in_flight;
  --e->in_flight;
  // Forgotten unless its interval runs on (indexed, for Prune). Not
  // indexed with `next` ahead only if the clock stepped back: forgotten.
  if (e->in_flight == 0 && !(e->indexed && e->next > now)) {
    Unindex(it->first, e);
    entries_.erase(it);
  }
  return was_full;
}

void Pacer::Prune(absl::Time now) {
  for (auto it = by_next_.begin(); it != by_next_.end() && it->first <= now;) {
    auto e = entries_.find(it->second);
    if (e != entries_.end()) {
      e->second.indexed = false;
      // Due, but in flight: goes when its last task ends (Ended).
      if (e->second.in_flight == 0) entries_.erase(e);
    }
    it = by_next_.erase(it);
  }
  // Entries made by MayHandOut that no hand-out followed.
  for (const std::string& topic : fresh_) {
    auto e = entries_.find(topic);
    if (e != entries_.end() && e->second.in_flight == 0 && !e->second.indexed) {
      entries_.erase(e);
    }
  }
  fresh_.clear();
}

absl::Time Pacer::NextDue(absl::Time now) const {
  auto it = by_next_.upper_bound({now, std::string()});
  // Skip entries at `now` exactly (upper_bound on the pair stops at them).
  while (it != by_next_.end() && it->first <= now) ++it;
  return it == by_next_.end() ? absl::InfiniteFuture() : it->first;
}

}  // namespace hq
