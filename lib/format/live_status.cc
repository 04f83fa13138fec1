// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/format/live_status.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "lib/format/coding.h"
#include "xxhash.h"

namespace hq {
namespace {

constexpr std::string_view kMagic = "hqstatus";
constexpr uint32_t kVersion = 3;

// A time as unix ms + 1; 0 for InfinitePast (and anything before 1970).
void PutTime(std::string* out, absl::Time t) {
  const int64_t ms = t == absl::InfinitePast() ? -1 : absl::ToUnixMillis(t);
  coding::PutVarint64(out, ms < 0 ? 0 : static_cast<uint64_t>(ms) + 1);
}
bool GetTime(std::string_view* in, absl::Time* t) {
  uint64_t v;
  if (!coding::GetVarint64(in, &v) || v > static_cast<uint64_t>(INT64_MAX)) {
    return false;
  }
  *t = v == 0 ? absl::InfinitePast()
              : absl::FromUnixMillis(static_cast<int64_t>(v - 1));
  return true;
}

void PutMs(std::string* out, absl::Duration d) {
  const int64_t ms = absl::ToInt64Milliseconds(d);
  coding::PutVarint64(out, ms < 0 ? 0 : static_cast<uint64_t>(ms));
}
bool GetMs(std::string_view* in, absl::Duration* d) {
  uint64_t v;
  if (!coding::GetVarint64(in, &v) || v > static_cast<uint64_t>(INT64_MAX)) {
    return false;
  }
  *d = absl::Milliseconds(static_cast<int64_t>(v));
  return true;
}

// A rate in thousandths.
void PutRate(std::string* out, double r) {
  coding::PutVarint64(
      out, std::isfinite(r) && r > 0 ? static_cast<uint64_t>(r * 1000) : 0);
}
bool GetRate(std::string_view* in, double* r) {
  uint64_t v;
  if (!coding::GetVarint64(in, &v)) return false;
  *r = static_cast<double>(v) / 1000;
  return true;
}

void PutBool(std::string* out, bool b) { coding::PutFixed8(out, b ? 1 : 0); }
bool GetBool(std::string_view* in, bool* b) {
  uint8_t v;
  if (!coding::GetFixed8(in, &v) || v > 1) return false;
  *b = v == 1;
  return true;
}

bool GetString(std::string_view* in, std::string* s) {
  std::string_view v;
  if (!coding::GetLengthPrefixed(in, &v)) return false;
  s->assign(v);
  return true;
}

void PutStats(std::string* out, const GroupStats& st) {
  coding::PutVarint64(out, st.backlog);
  PutBool(out, st.backlog_exact);
  for (uint64_t v :
       {st.in_flight, st.redelivery, st.delayed, st.dead_letters}) {
    coding::PutVarint64(out, v);
  }
  PutMs(out, st.oldest_in_flight);
  PutMs(out, st.max_cursor_lag);
  for (uint64_t v :
       {st.window_records, st.lanes, st.consumers, st.paced_topics}) {
    coding::PutVarint64(out, v);
  }
}
bool GetStats(std::string_view* in, GroupStats* st) {
  return coding::GetVarint64(in, &st->backlog) &&
         GetBool(in, &st->backlog_exact) &&
         coding::GetVarint64(in, &st->in_flight) &&
         coding::GetVarint64(in, &st->redelivery) &&
         coding::GetVarint64(in, &st->delayed) &&
         coding::GetVarint64(in, &st->dead_letters) &&
         GetMs(in, &st->oldest_in_flight) && GetMs(in, &st->max_cursor_lag) &&
         coding::GetVarint64(in, &st->window_records) &&
         coding::GetVarint64(in, &st->lanes) &&
         coding::GetVarint64(in, &st->consumers) &&
         coding::GetVarint64(in, &st->paced_topics);
}

void PutPending(std::string* out, const PendingTask& t) {
  coding::PutVarint32(out, t.partition);
  coding::PutVarint32(out, static_cast<uint32_t>(t.priority));
  coding::PutLengthPrefixed(out, t.topic);
  coding::PutVarint64(out, t.id.ms);
  coding::PutVarint32(out, t.id.seq);
  coding::PutVarint32(out, t.attempt);
  coding::PutFixed8(out, static_cast<uint8_t>(t.state));
  PutTime(out, t.since);
  PutTime(out, t.lease_deadline);
  coding::PutLengthPrefixed(out, t.consumer);
}
bool GetPending(std::string_view* in, PendingTask* t) {
  uint32_t priority, seq;
  uint8_t state;
  if (!coding::GetVarint32(in, &t->partition) ||
      !coding::GetVarint32(in, &priority) || priority > 255 ||
      !GetString(in, &t->topic) || !coding::GetVarint64(in, &t->id.ms) ||
      !coding::GetVarint32(in, &seq) || seq > UINT16_MAX ||
      !coding::GetVarint32(in, &t->attempt) || !coding::GetFixed8(in, &state) ||
      state > static_cast<uint8_t>(PendingTask::State::kDelayed) ||
      !GetTime(in, &t->since) || !GetTime(in, &t->lease_deadline) ||
      !GetString(in, &t->consumer)) {
    return false;
  }
  t->priority = static_cast<int>(priority);
  t->id.seq = static_cast<uint16_t>(seq);
  t->state = static_cast<PendingTask::State>(state);
  return true;
}

void PutGroup(std::string* out, const LiveGroupStatus& g) {
  coding::PutLengthPrefixed(out, g.queue);
  coding::PutLengthPrefixed(out, g.name);
  PutStats(out, g.stats);
  PutRate(out, g.claimed_per_s);
  PutRate(out, g.completed_per_s);
  coding::PutVarint64(out, g.claimed_total);
  coding::PutVarint64(out, g.completed_total);
  coding::PutVarint32(out, static_cast<uint32_t>(g.pending.size()));
  for (const PendingTask& t : g.pending) PutPending(out, t);
  PutBool(out, g.pending_complete);
  coding::PutVarint32(out, static_cast<uint32_t>(g.consumers.size()));
  for (const ConsumerInfo& c : g.consumers) {
    coding::PutLengthPrefixed(out, c.name);
    PutTime(out, c.lease_deadline);
    coding::PutVarint32(out, static_cast<uint32_t>(c.partitions.size()));
    for (uint32_t p : c.partitions) coding::PutVarint32(out, p);
  }
}
bool GetGroup(std::string_view* in, LiveGroupStatus* g) {
  uint32_t n;
  if (!GetString(in, &g->queue) || !GetString(in, &g->name) ||
      !GetStats(in, &g->stats) || !GetRate(in, &g->claimed_per_s) ||
      !GetRate(in, &g->completed_per_s) ||
      !coding::GetVarint64(in, &g->claimed_total) ||
      !coding::GetVarint64(in, &g->completed_total) ||
      !coding::GetVarint32(in, &n) || n > kLiveStatusPending) {
    return false;
  }
  g->pending.resize(n);
  for (PendingTask& t : g->pending) {
    if (!GetPending(in, &t)) return false;
  }
  if (!GetBool(in, &g->pending_complete) || !coding::GetVarint32(in, &n) ||
      n > kLiveStatusConsumers) {
    return false;
  }
  g->consumers.resize(n);
  for (ConsumerInfo& c : g->consumers) {
    uint32_t partitions;
    if (!GetString(in, &c.name) || !GetTime(in, &c.lease_deadline) ||
        !coding::GetVarint32(in, &partitions) || partitions > 65536) {
      return false;
    }
    c.partitions.resize(partitions);
    for (uint32_t& p : c.partitions) {
      if (!coding::GetVarint32(in, &p)) return false;
    }
  }
  return true;
}

void PutSubscription(std::string* out, const LiveSubscriptionStatus& s) {
  coding::PutLengthPrefixed(out, s.queue);
  coding::PutLengthPrefixed(out, s.name);
  coding::PutVarint64(out, s.lag);
  PutBool(out, s.lag_exact);
  coding::PutVarint64(out, s.delivered);
  coding::PutVarint64(out, s.failed_attempts);
  coding::PutVarint64(out, s.buffered);
  coding::PutVarint32(out, s.listeners);
  coding::PutVarint64(out, s.resident_lanes);
  coding::PutVarint64(out, s.active_lanes);
}
bool GetSubscription(std::string_view* in, LiveSubscriptionStatus* s) {
  return GetString(in, &s->queue) && GetString(in, &s->name) &&
         coding::GetVarint64(in, &s->lag) && GetBool(in, &s->lag_exact) &&
         coding::GetVarint64(in, &s->delivered) &&
         coding::GetVarint64(in, &s->failed_attempts) &&
         coding::GetVarint64(in, &s->buffered) &&
         coding::GetVarint32(in, &s->listeners) &&
         coding::GetVarint64(in, &s->resident_lanes) &&
         coding::GetVarint64(in, &s->active_lanes);
}

bool GetBody(std::string_view in, LiveStatus* s) {
  uint64_t pid;
  uint32_t groups, subs;
  if (!coding::GetVarint64(&in, &pid) || pid > INT64_MAX ||
      !GetTime(&in, &s->written) || !GetMs(&in, &s->interval) ||
      !coding::GetVarint32(&in, &groups) || groups > in.size()) {
    return false;
  }
  s->pid = static_cast<int64_t>(pid);
  s->groups.resize(groups);
  for (LiveGroupStatus& g : s->groups) {
    if (!GetGroup(&in, &g)) return false;
  }
  if (!coding::GetVarint32(&in, &subs) || subs > in.size()) return false;
  s->subscriptions.resize(subs);
  for (LiveSubscriptionStatus& sub : s->subscriptions) {
    if (!GetSubscription(&in, &sub)) return false;
  }
  return in.empty();
}

}  // namespace

const LiveGroupStatus* LiveStatus::FindGroup(std::string_view queue,
                                             std::string_view name) const {
  for (const LiveGroupStatus& g : groups) {
    if (g.queue == queue && g.name == name) return &g;
  }
  return nullptr;
}

const LiveSubscriptionStatus* LiveStatus::FindSubscription(
    std::string_view queue, std::string_view name) const {
  for (const LiveSubscriptionStatus& s : subscriptions) {
    if (s.queue == queue && s.name == name) return &s;
  }
  return nullptr;
}

std::string EncodeLiveStatus(const LiveStatus& s) {
  std::string body;
  coding::PutVarint64(&body, static_cast<uint64_t>(s.pid));
  PutTime(&body, s.written);
  PutMs(&body, s.interval);
  coding::PutVarint32(&body, static_cast<uint32_t>(s.groups.size()));
  for (const LiveGroupStatus& g : s.groups) PutGroup(&body, g);
  coding::PutVarint32(&body, static_cast<uint32_t>(s.subscriptions.size()));
  for (const LiveSubscriptionStatus& sub : s.subscriptions) {
    PutSubscription(&body, sub);
  }
  std::string out(kMagic);
  coding::PutFixed32(&out, kVersion);
  coding::PutFixed64(&out, XXH3_64bits(body.data(), body.size()));
  out.append(body);
  return out;
}

absl::StatusOr<LiveStatus> DecodeLiveStatus(std::string_view data) {
  if (!data.starts_with(kMagic)) {
    return absl::DataLossError("not an hq live status file (no magic)");
  }
  data.remove_prefix(kMagic.size());
  uint32_t version = 0;
  uint64_t sum;
  if (!coding::GetFixed32(&data, &version)) {
    return absl::DataLossError("hq live status file: truncated");
  }
  if (version != kVersion) {
    return absl::DataLossError(absl::StrCat("hq live status file of version ",
                                            version, "; this hq reads version ",
                                            kVersion));
  }
  if (!coding::GetFixed64(&data, &sum) ||
      sum != XXH3_64bits(data.data(), data.size())) {
    return absl::DataLossError("hq live status file: checksum mismatch");
  }
  LiveStatus s;
  if (!GetBody(data, &s)) {
    return absl::DataLossError("hq live status file: malformed");
  }
  return s;
}

}  // namespace hq
