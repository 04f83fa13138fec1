// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Fuzz target: the public API driven by a byte stream, checked against a
// simple model of one queue and one consumer group.
//
// The first bytes choose the queue (partitions 1..3, priorities 1..3,
// layout, TTL) and the group's max_attempts; then each op byte picks Put,
// PutBatch, a scan, a claim, Complete / Release / Extend of a task the
// fuzzer holds, a step of the simulated clock, a reopen of the Db (a clean
// close) or a TTL sweep. The Db lives in an in-memory Env on a
// SimulatedClock, so every run is deterministic.
//
// The model keeps every message written (partition, priority, id, topic,
// key, payload, dedup key, not-before) and, for the group, each message's
// state: new, held (lease deadline), waiting (due time; released or not),
// done or dead, and its attempt count. Every result is checked against it:
//   Put/PutBatch: bad input is InvalidArgument and changes nothing; ids
//     increase per partition (also across reopens) and never run behind
//     the clock; a dedup key of a live message returns that message;
//   scans return exactly the live messages in range and filter, in the
//     documented order, byte for byte;
//   claims hand out only claimable tasks (live, not held, done or dead,
//     due, in the filter), as many as asked if there are that many, highest
//     priority first, new messages of a lane in id order, attempt counted;
//   Complete / Release / Extend succeed exactly when the task is held;
//   lease expiry redelivers (backoff 0) or dead-letters at max_attempts;
//   a reopen makes every task in flight claimable at once (or dead).
// Any divergence or unexpected status aborts.

#include <xxhash.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "hq/hq.h"
#include "leveldb/env.h"
#include "leveldb/helpers/memenv.h"
#include "test/fuzz/fuzz_util.h"

namespace hq::fuzz {
namespace {

#define FUZZ_OK(expr)                                           \
  do {                                                          \
    const absl::Status fuzz_s_ = (expr);                        \
    FUZZ_CHECK(fuzz_s_.ok(), "%s", fuzz_s_.ToString().c_str()); \
  } while (0)

constexpr const char* kTopics[] = {"", "a", "b", "cc"};
constexpr const char* kDedups[] = {"", "", "", "u1", "u2", "u3"};
constexpr uint32_t kMaxPayload = 32;

struct Msg {
  uint32_t partition = 0;
  int priority = 0;
  MessageId id;
  std::string topic, key, payload, dedup;
  int64_t not_before_ms = 0;  // 0: none.
  // The group's view.
  enum State { kNew, kHeld, kWaiting, kDone, kDead } state = kNew;
  uint32_t attempts = 0;    // Times handed out.
  int64_t due_ms = 0;       // kWaiting: claimable from then.
  int64_t deadline_ms = 0;  // kHeld: the lease deadline.
  bool released = false;    // kWaiting, no longer completable.
};

// A message to write, owning its bytes.
struct Spec {
  std::optional<uint32_t> partition;
  int priority = 0;
  std::string topic, key, payload, dedup;
  int64_t delay_ms = 0;
  bool valid = true;
};

class ApiFuzz {
 public:
  explicit ApiFuzz(Input& in) : in_(in) {}

  void Run() {
    qo_.partitions = 1 + in_.U8() % 3;
    qo_.priorities = 1 + in_.U8() % 3;
    qo_.layout = in_.Bool() ? Layout::kTopic : Layout::kTime;
    const uint8_t ttl = in_.U8();
    ttl_ms_ = ttl % 4 == 0 ? 1000 * (1 + ttl / 4 % 20) : 0;
    if (ttl_ms_ != 0) qo_.ttl = absl::Milliseconds(ttl_ms_);
    qo_.max_payload_bytes = kMaxPayload;
    go_.max_attempts = 1 + in_.U8() % 3;
    go_.lease = absl::Seconds(1);
    go_.backoff_base = absl::ZeroDuration();
    go_.backoff_cap = absl::ZeroDuration();
    go_.backoff_jitter = 0;

    env_.reset(leveldb::NewMemEnv(leveldb::Env::Default()));
    options_.env = env_.get();
    options_.clock = &clock_;
    options_.ttl_sweep_interval = absl::ZeroDuration();
    options_.write_buffer_bytes = 64 << 10;
    options_.cache_bytes = 1 << 20;
    options_.delivery_threads = 1;
    Open(/*create=*/true);

    for (int n = 0; n < 300 && !in_.empty(); ++n) {
      switch (in_.U8() % 16) {
        case 0:
        case 1:
        case 2:
        case 3:
          PutOne();
          break;
        case 4:
          PutMany();
          break;
        case 5:
        case 6:
          Scan();
          break;
        case 7:
        case 8:
        case 9:
          Claim();
          break;
        case 10:
        case 11:
          Complete();
          break;
        case 12:
          Release();
          break;
        case 13:
          Extend();
          break;
        case 14:
          Advance();
          break;
        case 15:
          if (in_.Bool()) {
            Reopen();
          } else {
            FUZZ_OK(db_->CompactExpired().status());
          }
          break;
      }
    }
    db_.reset();
  }

 private:
  int64_t Now() const { return absl::ToUnixMillis(clock_.Now()); }
  bool Live(const Msg& m) const {
    return ttl_ms_ == 0 || static_cast<int64_t>(m.id.ms) >= Now() - ttl_ms_;
  }
  bool TopicLayout() const { return qo_.layout == Layout::kTopic; }
  auto Lane(const Msg& m) const {
    return std::make_tuple(m.partition, m.priority,
                           TopicLayout() ? m.topic : std::string());
  }
  Msg* Find(uint32_t partition, MessageId id) {
    auto it = index_.find({partition, id});
    return it == index_.end() ? nullptr : &msgs_[it->second];
  }

  void Open(bool create) {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open("/fuzz/db", options_);
    FUZZ_OK(db.status());
    db_ = std::move(*db);
    absl::StatusOr<Queue*> q =
        create ? db_->CreateQueue("q", qo_) : db_->OpenQueue("q");
    FUZZ_OK(q.status());
    q_ = *q;
    absl::StatusOr<ConsumerGroup*> g = q_->Group("g", go_);
    FUZZ_OK(g.status());
    g_ = *g;
  }

  void Reopen() {
    db_.reset();
    held_.clear();
    // Every task in flight (held, or whose lease expired without it being
    // handed out again) is claimable at once, or dead at max_attempts.
    for (Msg& m : msgs_) {
      if (m.state == Msg::kHeld || (m.state == Msg::kWaiting && !m.released)) {
        if (m.attempts >= go_.max_attempts) {
          m.state = Msg::kDead;
        } else {
          m.state = Msg::kWaiting;
          m.due_ms = 0;
          m.released = true;
        }
      }
    }
    Open(/*create=*/false);
  }

  void Advance() {
    static constexpr int64_t kSteps[] = {1,    10,   499,  500,   999,
                                         1000, 1001, 2500, 10000, 60000};
    clock_.Advance(absl::Milliseconds(kSteps[in_.U8() % 10]));
    // Advance returns after the expiry actions due have run.
    for (Msg& m : msgs_) {
      if (m.state != Msg::kHeld || m.deadline_ms > Now()) continue;
      if (m.attempts >= go_.max_attempts) {
        m.state = Msg::kDead;
      } else {
        m.state = Msg::kWaiting;
        m.due_ms = Now();
        m.released = false;  // Still completable by its holder.
      }
    }
  }

  Spec MakeSpec() {
    Spec s;
    const uint8_t p = in_.U8();
    if (p % 4 != 0) {
      s.partition = p < 240 ? in_.U8() % qo_.partitions : qo_.partitions;
      if (*s.partition >= qo_.partitions) s.valid = false;
    }
    const uint8_t prio = in_.U8();
    s.priority = prio < 240 ? prio % qo_.priorities : qo_.priorities;
    if (s.priority >= qo_.priorities) s.valid = false;
    s.topic = kTopics[in_.U8() % 4];
    const uint8_t k = in_.U8();
    if (k % 4 == 0) s.key = "k" + std::to_string(k / 4 % 5);
    s.dedup = kDedups[in_.U8() % 6];
    static constexpr int64_t kDelays[] = {0, 0, 0, 0, 1, 500, 1000, 2500};
    s.delay_ms = kDelays[in_.U8() % 8];
    s.payload = in_.Bytes(kMaxPayload);
    if (in_.U8() == 0xff) {
      s.payload.assign(kMaxPayload + 1, 'x');
      s.valid = false;
    }
    return s;
  }

  static Message ToMessage(const Spec& s) {
    Message m;
    m.partition = s.partition;
    m.priority = s.priority;
    m.topic = s.topic;
    m.key = s.key;
    m.payload = s.payload;
    m.dedup_key = s.dedup;
    m.delay = absl::Milliseconds(s.delay_ms);
    return m;
  }

  // Checks the result of writing `s` and adds it to the model.
  void Apply(const Spec& s, const PutResult& r) {
    if (!s.dedup.empty()) {
      auto it = dedup_.find(s.dedup);
      if (it != dedup_.end() && Live(msgs_[it->second])) {
        const Msg& first = msgs_[it->second];
        FUZZ_CHECK(
            r.duplicate && r.partition == first.partition && r.id == first.id,
            "dedup key %s", s.dedup.c_str());
        return;
      }
    }
    FUZZ_CHECK(!r.duplicate);
    FUZZ_CHECK(r.partition < qo_.partitions);
    if (s.partition) {
      FUZZ_CHECK(r.partition == *s.partition);
    } else if (!s.key.empty()) {
      FUZZ_CHECK(r.partition ==
                 XXH3_64bits(s.key.data(), s.key.size()) % qo_.partitions);
    } else if (TopicLayout()) {
      FUZZ_CHECK(r.partition ==
                 XXH3_64bits(s.topic.data(), s.topic.size()) % qo_.partitions);
    }
    const uint64_t now = static_cast<uint64_t>(Now());
    auto last = last_.find(r.partition);
    FUZZ_CHECK(r.id.ms >= now, "id %s behind the clock",
               r.id.ToString().c_str());
    if (last != last_.end()) {
      FUZZ_CHECK(last->second < r.id, "id %s after %s", r.id.ToString().c_str(),
                 last->second.ToString().c_str());
      FUZZ_CHECK(r.id.ms <= std::max(now, last->second.ms + 1),
                 "id %s runs ahead", r.id.ToString().c_str());
    } else {
      FUZZ_CHECK(r.id.ms == now);
    }
    last_[r.partition] = r.id;
    Msg m;
    m.partition = r.partition;
    m.priority = s.priority;
    m.id = r.id;
    m.topic = s.topic;
    m.key = s.key;
    m.payload = s.payload;
    m.dedup = s.dedup;
    m.not_before_ms = s.delay_ms > 0 ? Now() + s.delay_ms : 0;
    index_[{m.partition, m.id}] = msgs_.size();
    if (!s.dedup.empty()) dedup_[s.dedup] = msgs_.size();
    msgs_.push_back(std::move(m));
  }

  void PutOne() {
    const Spec s = MakeSpec();
    absl::StatusOr<PutResult> r = q_->Put(ToMessage(s));
    if (!s.valid) {
      FUZZ_CHECK(absl::IsInvalidArgument(r.status()), "%s",
                 r.status().ToString().c_str());
      return;
    }
    FUZZ_OK(r.status());
    Apply(s, *r);
  }

  void PutMany() {
    std::vector<Spec> specs(1 + in_.U8() % 4);
    bool valid = true;
    for (Spec& s : specs) {
      s = MakeSpec();
      valid = valid && s.valid;
    }
    std::vector<Message> ms;
    for (const Spec& s : specs) ms.push_back(ToMessage(s));
    std::vector<PutResult> results;
    const absl::Status st = q_->PutBatch(ms, &results);
    if (!valid) {
      FUZZ_CHECK(absl::IsInvalidArgument(st), "%s", st.ToString().c_str());
      return;
    }
    FUZZ_OK(st);
    FUZZ_CHECK(results.size() == specs.size());
    for (size_t i = 0; i < specs.size(); ++i) Apply(specs[i], results[i]);
  }

  MessageId PickId() {
    const uint32_t k = in_.Below(static_cast<uint32_t>(msgs_.size()) + 2);
    if (k == msgs_.size()) return MessageId::Min();
    if (k == msgs_.size() + 1) return MessageId::Max();
    return in_.Bool() ? msgs_[k].id : msgs_[k].id.Next();
  }

  std::vector<uint32_t> PickPartitions() {
    std::vector<uint32_t> ps;
    if (in_.U8() % 3 != 0) return ps;
    for (int n = 1 + in_.U8() % 3; n > 0; --n) {
      ps.push_back(in_.U8() % qo_.partitions);
    }
    return ps;
  }
  std::vector<std::string> PickTopics() {
    std::vector<std::string> ts;
    if (in_.U8() % 3 != 0) return ts;
    for (int n = 1 + in_.U8() % 3; n > 0; --n)
      ts.push_back(kTopics[in_.U8() % 4]);
    return ts;
  }
  template <typename T>
  static bool In(const std::vector<T>& v, const T& x) {
    return v.empty() || std::find(v.begin(), v.end(), x) != v.end();
  }

  void Scan() {
    ScanOptions o;
    o.partitions = PickPartitions();
    o.topics = PickTopics();
    o.from = PickId();
    o.to = PickId();
    if (o.to < o.from) std::swap(o.from, o.to);
    o.order =
        in_.Bool() ? ScanOptions::Order::kLane : ScanOptions::Order::kMerged;
    std::vector<const Msg*> want;
    for (const Msg& m : msgs_) {
      if (Live(m) && In(o.partitions, m.partition) && In(o.topics, m.topic) &&
          o.from <= m.id && m.id < o.to) {
        want.push_back(&m);
      }
    }
    if (o.order == ScanOptions::Order::kMerged) {
      std::sort(want.begin(), want.end(), [](const Msg* a, const Msg* b) {
        return std::tie(a->id, a->partition) < std::tie(b->id, b->partition);
      });
    } else {
      const bool topic = TopicLayout();
      auto key = [topic](const Msg* m) {
        return std::make_tuple(m->partition, -m->priority,
                               topic ? m->topic.size() : 0,
                               topic ? m->topic : std::string(), m->id);
      };
      std::sort(want.begin(), want.end(),
                [&](const Msg* a, const Msg* b) { return key(a) < key(b); });
    }
    absl::StatusOr<std::unique_ptr<Scanner>> s = q_->NewScanner(o);
    FUZZ_OK(s.status());
    size_t i = 0;
    while ((*s)->Next()) {
      FUZZ_CHECK(i < want.size(), "scan returned more than %zu", want.size());
      const MessageView& v = (*s)->message();
      const Msg& m = *want[i++];
      FUZZ_CHECK(v.id == m.id && v.partition == m.partition,
                 "scan gave %s/%u, want %s/%u", v.id.ToString().c_str(),
                 v.partition, m.id.ToString().c_str(), m.partition);
      FUZZ_CHECK(v.priority == m.priority && v.topic == m.topic &&
                 v.key == m.key && v.payload == m.payload);
      FUZZ_CHECK(v.not_before == (m.not_before_ms == 0
                                      ? absl::InfinitePast()
                                      : absl::FromUnixMillis(m.not_before_ms)));
    }
    FUZZ_OK((*s)->status());
    FUZZ_CHECK(i == want.size(), "scan returned %zu of %zu", i, want.size());
  }

  bool Claimable(const Msg& m, const ClaimOptions& o) const {
    if (!Live(m) || !In(o.partitions, m.partition) || !In(o.topics, m.topic)) {
      return false;
    }
    switch (m.state) {
      case Msg::kNew:
        return m.not_before_ms <= Now();
      case Msg::kWaiting:
        return m.due_ms <= Now();
      default:
        return false;
    }
  }

  void Claim() {
    ClaimOptions o;
    o.max = 1 + in_.U8() % 5;
    static constexpr int64_t kLeases[] = {0, 1, 500, 1000, 3000};
    const int64_t lease_ms = kLeases[in_.U8() % 5];
    o.lease = absl::Milliseconds(lease_ms);
    o.partitions = PickPartitions();
    o.topics = PickTopics();
    if (!o.topics.empty()) topic_claims_ = true;
    std::set<size_t> can;
    for (size_t i = 0; i < msgs_.size(); ++i) {
      if (Claimable(msgs_[i], o)) can.insert(i);
    }
    absl::StatusOr<std::vector<Task>> got = g_->Claim(o);
    FUZZ_OK(got.status());
    FUZZ_CHECK(got->size() == std::min<size_t>(o.max, can.size()),
               "claimed %zu, max %u, claimable %zu", got->size(), o.max,
               can.size());
    std::set<size_t> out;
    for (const Task& t : *got) {
      Msg* m = Find(t.partition, t.id);
      FUZZ_CHECK(m != nullptr, "claimed unknown %s", t.id.ToString().c_str());
      const size_t i = static_cast<size_t>(m - msgs_.data());
      FUZZ_CHECK(can.count(i) == 1, "claimed %s/%u in state %d",
                 t.id.ToString().c_str(), t.partition, m->state);
      FUZZ_CHECK(out.insert(i).second, "claimed twice");
      FUZZ_CHECK(t.priority == m->priority && t.topic == m->topic &&
                 t.key == m->key && t.payload == m->payload);
      FUZZ_CHECK(t.attempt == m->attempts + 1, "attempt %u, want %u", t.attempt,
                 m->attempts + 1);
      FUZZ_CHECK(t.not_before ==
                 (m->not_before_ms == 0
                      ? absl::InfinitePast()
                      : absl::FromUnixMillis(m->not_before_ms)));
      const int64_t lease = lease_ms == 0 ? 1000 : lease_ms;
      FUZZ_CHECK(t.lease_deadline == absl::FromUnixMillis(Now() + lease));
    }
    // Highest priority first.
    if (out.size() < can.size() && !out.empty()) {
      int lowest = INT32_MAX, left = -1;
      for (size_t i : out) lowest = std::min(lowest, msgs_[i].priority);
      for (size_t i : can) {
        if (!out.count(i)) left = std::max(left, msgs_[i].priority);
      }
      FUZZ_CHECK(lowest >= left, "priority %d handed out before %d", lowest,
                 left);
    }
    // New messages of a lane go in id order.
    if (!topic_claims_) {
      for (size_t i : out) {
        const Msg& m = msgs_[i];
        if (m.attempts != 0 || m.not_before_ms != 0) continue;
        for (size_t j : can) {
          const Msg& e = msgs_[j];
          if (e.attempts == 0 && e.not_before_ms == 0 && Lane(e) == Lane(m) &&
              e.id < m.id) {
            FUZZ_CHECK(out.count(j) == 1, "%s handed out before %s",
                       m.id.ToString().c_str(), e.id.ToString().c_str());
          }
        }
      }
    }
    for (const Task& t : *got) {
      Msg& m = *Find(t.partition, t.id);
      m.attempts = t.attempt;
      m.state = Msg::kHeld;
      m.deadline_ms = absl::ToUnixMillis(t.lease_deadline);
      m.released = false;
      held_.push_back(t);
    }
    absl::StatusOr<GroupStats> stats = g_->Stats();
    FUZZ_OK(stats.status());
    uint64_t in_flight = 0;
    for (const Msg& m : msgs_) in_flight += m.state == Msg::kHeld;
    FUZZ_CHECK(stats->in_flight == in_flight, "in_flight %lu, want %lu",
               static_cast<unsigned long>(stats->in_flight),
               static_cast<unsigned long>(in_flight));
  }

  // Whether `t` is held: Complete may take it (`expired_ok`: also after its
  // lease expired, if not handed out again), Release and Extend only under
  // its lease. Nullopt when the model cannot tell: a task whose lease
  // expired and whose message is past the TTL may have been dropped by a
  // claim that passed it.
  std::optional<bool> Held(const Task& t, bool expired_ok) {
    const Msg* m = Find(t.partition, t.id);
    FUZZ_CHECK(m != nullptr);
    if (m->attempts != t.attempt) return false;
    if (m->state == Msg::kHeld) return true;
    if (m->state == Msg::kWaiting && !m->released) {
      if (!expired_ok) return false;
      if (!Live(*m)) return std::nullopt;
      return true;
    }
    return false;
  }

  void Complete() {
    if (held_.empty()) return;
    std::vector<Task> ts;
    for (int n = 1 + in_.U8() % 3; n > 0; --n) {
      ts.push_back(held_[in_.Below(static_cast<uint32_t>(held_.size()))]);
    }
    // Expected: the first task not held fails the call
    // (FailedPrecondition), else a second copy of a task (InvalidArgument).
    absl::StatusCode want = absl::StatusCode::kOk;
    std::set<const Msg*> seen;
    for (const Task& t : ts) {
      const std::optional<bool> held = Held(t, /*expired_ok=*/true);
      if (!held) return;  // Not modelled: do not call.
      if (!*held) {
        want = absl::StatusCode::kFailedPrecondition;
        break;
      }
      if (!seen.insert(Find(t.partition, t.id)).second) {
        want = absl::StatusCode::kInvalidArgument;
        break;
      }
    }
    const absl::Status s = g_->Complete(ts);
    FUZZ_CHECK(s.code() == want, "Complete: %s, want code %d",
               s.ToString().c_str(), static_cast<int>(want));
    if (!s.ok()) return;
    for (const Task& t : ts) Find(t.partition, t.id)->state = Msg::kDone;
  }

  void Release() {
    if (held_.empty()) return;
    const Task& t = held_[in_.Below(static_cast<uint32_t>(held_.size()))];
    static constexpr int64_t kRetry[] = {0, 1, 1000, 5000};
    const int64_t retry = kRetry[in_.U8() % 4];
    const bool held = *Held(t, /*expired_ok=*/false);
    const absl::Status s = g_->Release(t, absl::Milliseconds(retry));
    if (!held) {
      FUZZ_CHECK(absl::IsFailedPrecondition(s), "Release: %s",
                 s.ToString().c_str());
      return;
    }
    FUZZ_OK(s);
    Msg& m = *Find(t.partition, t.id);
    if (m.attempts >= go_.max_attempts) {
      m.state = Msg::kDead;
    } else {
      m.state = Msg::kWaiting;
      m.due_ms = Now() + retry;
      m.released = true;
    }
  }

  void Extend() {
    if (held_.empty()) return;
    Task& t = held_[in_.Below(static_cast<uint32_t>(held_.size()))];
    static constexpr int64_t kLeases[] = {1, 500, 1000, 5000};
    const int64_t lease = kLeases[in_.U8() % 4];
    const bool held = *Held(t, /*expired_ok=*/false);
    const absl::Status s = g_->Extend(&t, absl::Milliseconds(lease));
    if (!held) {
      FUZZ_CHECK(absl::IsFailedPrecondition(s), "Extend: %s",
                 s.ToString().c_str());
      return;
    }
    FUZZ_OK(s);
    FUZZ_CHECK(t.lease_deadline == absl::FromUnixMillis(Now() + lease));
    Find(t.partition, t.id)->deadline_ms = Now() + lease;
  }

  Input& in_;
  std::unique_ptr<leveldb::Env> env_;
  SimulatedClock clock_;
  Options options_;
  QueueOptions qo_;
  GroupOptions go_;
  int64_t ttl_ms_ = 0;  // 0: infinite.
  std::unique_ptr<Db> db_;
  Queue* q_ = nullptr;
  ConsumerGroup* g_ = nullptr;

  std::vector<Msg> msgs_;  // In write order.
  std::map<std::pair<uint32_t, MessageId>, size_t> index_;
  std::map<uint32_t, MessageId> last_;   // Per partition.
  std::map<std::string, size_t> dedup_;  // Key -> last message.
  std::vector<Task> held_;     // Tasks handed out since the last reopen.
  bool topic_claims_ = false;  // A claim had a topic filter.
};

}  // namespace
}  // namespace hq::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hq::fuzz::Input in(data, size);
  hq::fuzz::ApiFuzz(in).Run();
  return 0;
}
