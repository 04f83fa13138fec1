// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The crash loop (issue 9): test/crash_child.cc produces, consumes through
// a consumer group and delivers through a subscription on one directory,
// and is killed with SIGKILL at a random moment, again and again. The child
// reports every acknowledged event on a pipe; this process keeps an exact
// model of them. After each kill it copies the directory as the kill left
// it (the next child recovers the original) and checks, on the copy:
//   - Db::Verify finds no problem (before and after the checks below);
//   - every acknowledged Put, sync or not, is stored with its partition,
//     priority, id, topic and payload (a kill -9 keeps the page cache, so
//     sync = false survives it too, as DESIGN.md promises); every message
//     stored at an earlier check is still stored, unchanged;
//   - MessageIds never repeat, and every id acknowledged after a restart is
//     above every id stored before it, in its partition (in half the
//     child runs the clock is up to 2 s behind the wall clock, often behind
//     the ids of the run before);
//   - the group: a completed task is never handed out again, attempts grow
//     across restarts, cursors never move back, and every message below a
//     completion cursor was completed; then a drain of the group (claim
//     everything, complete it) gets every stored message that was not
//     completed, once each, at once after the restart;
//   - the ordered group "o" (topic layout only; the child's lines OC, Od,
//     OD, OR): as for "g", no hand-out after a completion, attempts that
//     grow and cursors that never move back; ordering: within a lane, a
//     message is handed out only once every stored message before it in
//     the lane was completed (an OD line; or an Od line without its OD
//     before a kill, as that Complete may have been written), and never
//     after a later message of the lane was handed out (which also catches
//     a message the rule before took for completed being handed out
//     again); within one child run, a task is handed out only when the one
//     handed out before it in its partition was completed or released, or
//     its lease deadline had passed when the claim returned (its lease
//     timer starts after that deadline, on the same clock, so this never
//     fails on a task whose lease did expire); then a drain of "o"
//     (claiming one task per partition at a time, in order as above) gets
//     every stored message not completed before the kill, once each;
//   - the subscription: in each lane the child's deliveries started exactly
//     at the message its written checkpoint pointed to (which is at or
//     before the first message not yet delivered: no gap) and went on in
//     lane order without gaps; checkpoints never move back and never pass
//     an undelivered message; a drain delivers, in order, everything from
//     the checkpoints on.
// The loop runs twice: with the `time` layout, and with the `topic` layout
// over 12 topics with every consumer's working set (the child's and the
// checker's drains) capped at 2 lanes, so that paging, eviction and the
// lane source positions are crashed into all the time (the second run
// makes half the kills).
// Kills: 16 by default (10 under ASan, 5 under TSan), or $HQ_CRASH_KILLS. The
// seed: $HQ_CRASH_SEED, else Catch's --rng-seed, else a fixed one; it is
// printed and reproduces the kill times and the child's choices (not its
// thread interleavings). The long run:
//   HQ_CRASH_KILLS=500 meson test -C build crash_loop_test -t 100 -v
// or `meson test -C build --benchmark crash_loop_long` (300 kills).

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "lib/consume/group_test_hooks.h"
#include "test/test_util.h"

namespace hq {
namespace {

using test::ValueOrDie;

// Kills of the default run: fewer in sanitizer builds, which run slower
// (ThreadSanitizer most).
constexpr int kDefaultKills = test::kThreadSanitizer    ? 5
                              : test::kAddressSanitizer ? 10
                                                        : 16;
constexpr bool kSanitized = kDefaultKills < 16;

// As in test/crash_child.cc.
constexpr uint32_t kPartitions = 3;

// A message within its queue: (partition, id).
using Key = std::pair<uint32_t, MessageId>;
// A lane: (partition, priority, topic), the topic empty in the `time`
// layout.
using Lane = std::tuple<uint32_t, int, std::string>;

std::string LaneString(const Lane& lane) {
  return absl::StrCat(std::get<0>(lane), "/", std::get<1>(lane), "/",
                      std::get<2>(lane));
}

std::string KeyString(const Key& k) {
  return absl::StrCat(k.first, " ", k.second.ToString());
}

// What the child acknowledged of one consumer group.
struct GroupModel {
  std::set<Key> completed;          // D (OD) lines.
  std::set<Key> maybe_completed;    // d (Od) without D (OD) before a kill.
  std::map<Key, uint32_t> attempt;  // Highest attempt handed out.
  std::map<Lane, std::pair<MessageId, MessageId>> cursors;  // scan, compl.
  int64_t claims = 0, completions = 0, releases = 0, drained = 0;
};

struct Stored {
  int priority = 0;
  std::string topic;
  std::string payload;
  bool operator==(const Stored&) const = default;
};

// What the child acknowledged (its lines), over all runs.
struct Model {
  bool topic_layout = false;
  Lane LaneOf(uint32_t partition, int priority, std::string_view topic) const {
    return {partition, priority, topic_layout ? std::string(topic) : ""};
  }
  std::map<Key, Stored> acked;  // P lines.
  int64_t acked_sync = 0;
  std::map<Key, Stored> stored;          // At the last check.
  std::map<uint32_t, MessageId> max_id;  // Of `stored`, by partition.
  GroupModel g;                          // Group "g".
  GroupModel o;                          // The ordered group "o".
  // Group "o", by lane: the highest id handed out (OC lines), and the id
  // below which every stored message was found completed at a hand-out.
  std::map<Lane, MessageId> o_last, o_checked;
  std::set<Key> delivered;                // M lines.
  std::map<Lane, MessageId> checkpoints;  // Written, at the last check.
  // Totals for the report.
  int64_t deliveries = 0, drained_messages = 0;
};

// REQUIRE for the checks made per message and per line: it formats
// `what` only when `cond` fails (INFO and REQUIRE cost a string each pass,
// which a long run repeats hundreds of millions of times).
#define MODEL_REQUIRE(cond, what)               \
  do {                                          \
    if (!(cond)) FAIL(#cond << "\n  " << what); \
  } while (0)

uint64_t EnvNumber(const char* name, uint64_t otherwise) {
  const char* v = std::getenv(name);
  uint64_t n = 0;
  if (v == nullptr || !absl::SimpleAtoi(v, &n)) return otherwise;
  return n;
}

MessageId ParseId(std::string_view s) {
  std::optional<MessageId> id = MessageId::Parse(s);
  MODEL_REQUIRE(id.has_value(), "id " << s);
  return *id;
}

uint32_t ParseU32(std::string_view s) {
  uint32_t n = 0;
  MODEL_REQUIRE(absl::SimpleAtoi(absl::string_view(s.data(), s.size()), &n),
                "number " << s);
  return n;
}

// Runs the child for `delay`, then kills it with SIGKILL and returns
// every line it printed. Fails the test if it exited by itself.
std::vector<std::string> RunAndKill(const std::string& child,
                                    const std::string& dir, int run,
                                    uint64_t seed, const char* layout,
                                    absl::Duration delay) {
  int out[2];
  REQUIRE(pipe(out) == 0);
  const std::string run_s = std::to_string(run), seed_s = std::to_string(seed);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    dup2(out[1], 1);
    close(out[0]);
    close(out[1]);
    execl(child.c_str(), child.c_str(), dir.c_str(), run_s.c_str(),
          seed_s.c_str(), layout, static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  const absl::Time kill_at = absl::Now() + delay;
  std::string buf;
  bool killed = false;
  for (;;) {
    int timeout_ms = -1;
    if (!killed) {
      const absl::Duration left = kill_at - absl::Now();
      if (left <= absl::ZeroDuration()) {
        kill(pid, SIGKILL);
        killed = true;
      } else {
        timeout_ms = static_cast<int>(absl::ToInt64Milliseconds(left)) + 1;
      }
    }
    pollfd p{.fd = out[0], .events = POLLIN, .revents = 0};
    const int r = poll(&p, 1, timeout_ms);
    if (r == 0) continue;
    if (r < 0 && errno == EINTR) continue;
    REQUIRE(r > 0);
    char chunk[65536];
    const ssize_t n = read(out[0], chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    REQUIRE(n >= 0);
    if (n == 0) break;  // EOF: the child is gone.
    buf.append(chunk, static_cast<size_t>(n));
  }
  close(out[0]);
  const int status =
      test::WaitForExit(pid, absl::StrCat(child, " ", dir, " ", run));
  std::vector<std::string> lines = absl::StrSplit(buf, '\n');
  // Each line is one write(2), so a line is whole; the last piece is "".
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  INFO("the child's last line: " << (lines.empty() ? "" : lines.back()));
  INFO("its wait status: " << status);
  REQUIRE(WIFSIGNALED(status));
  REQUIRE(WTERMSIG(status) == SIGKILL);
  return lines;
}

// One run's lines, as TakeLines leaves them for CheckCopy.
struct RunLines {
  std::map<Lane, std::vector<MessageId>> delivered;  // By lane, in order.
  // The lines of group "o", split, in order: checked by CheckCopy, which
  // knows every stored message's lane.
  std::vector<std::vector<std::string>> ordered;
};

// Feeds one run's lines into the model, checking each against it (those of
// group "o" are only collected).
RunLines TakeLines(const std::vector<std::string>& lines, Model* m) {
  RunLines run;
  std::map<Lane, std::vector<MessageId>>& delivered = run.delivered;
  std::set<Key> intents;
  for (const std::string& line : lines) {
    const std::vector<std::string> f = absl::StrSplit(line, ' ');
    MODEL_REQUIRE(!f.empty(), "child line: " << line);
    MODEL_REQUIRE(f[0] != "ERROR", "child line: " << line);
    if (f[0] == "P") {
      MODEL_REQUIRE(f.size() == 7, "child line: " << line);
      const Key k{ParseU32(f[2]), ParseId(f[4])};
      MODEL_REQUIRE(k.first < kPartitions, "child line: " << line);
      // Ids never repeat, and those assigned after the restart are above
      // every id stored before it.
      MODEL_REQUIRE(!m->acked.contains(k), "child line: " << line);
      if (m->max_id.contains(k.first))
        MODEL_REQUIRE(k.second > m->max_id[k.first], "child line: " << line);
      m->acked[k] = {.priority = static_cast<int>(ParseU32(f[3])),
                     .topic = f[5] == "-" ? "" : f[5],
                     .payload = f[6]};
      if (f[1] == "1") ++m->acked_sync;
    } else if (f[0] == "C") {
      MODEL_REQUIRE(f.size() == 4, "child line: " << line);
      const Key k{ParseU32(f[1]), ParseId(f[2])};
      const uint32_t attempt = ParseU32(f[3]);
      // A completed task is never handed out again; attempts only grow,
      // also across restarts.
      MODEL_REQUIRE(!m->g.completed.contains(k), "child line: " << line);
      if (m->g.attempt.contains(k))
        MODEL_REQUIRE(attempt > m->g.attempt[k], "child line: " << line);
      m->g.attempt[k] = attempt;
      ++m->g.claims;
    } else if (f[0] == "d" || f[0] == "D" || f[0] == "R") {
      MODEL_REQUIRE(f.size() == 3, "child line: " << line);
      const Key k{ParseU32(f[1]), ParseId(f[2])};
      // It was handed out.
      MODEL_REQUIRE(m->g.attempt.contains(k), "child line: " << line);
      if (f[0] == "d") {
        intents.insert(k);
      } else if (f[0] == "D") {
        MODEL_REQUIRE(m->g.completed.insert(k).second, "child line: " << line);
        intents.erase(k);
        ++m->g.completions;
      } else {
        ++m->g.releases;
      }
    } else if (f[0] == "OC" || f[0] == "Od" || f[0] == "OD" || f[0] == "OR") {
      MODEL_REQUIRE(m->topic_layout, "child line: " << line);
      run.ordered.push_back(f);
    } else if (f[0] == "M") {
      MODEL_REQUIRE(f.size() == 5, "child line: " << line);
      const Lane lane =
          m->LaneOf(ParseU32(f[1]), static_cast<int>(ParseU32(f[2])),
                    f[4] == "-" ? "" : f[4]);
      delivered[lane].push_back(ParseId(f[3]));
      ++m->deliveries;
    } else {
      FAIL("unknown child line: " << line);
    }
  }
  // A Complete in progress at the kill may or may not have been written.
  m->g.maybe_completed.insert(intents.begin(), intents.end());
  return run;
}

// A stored message of `lane` below `id` that was not completed for group
// "o" (done() says which were), checking those from `*checked` on, then
// moving `*checked` to `id`; "" if none.
template <typename Done>
std::string FirstNotDone(const std::vector<MessageId>& lane_ids,
                         uint32_t partition, MessageId id, MessageId* checked,
                         const Done& done) {
  for (auto it = std::lower_bound(lane_ids.begin(), lane_ids.end(), *checked);
       it != lane_ids.end() && *it < id; ++it) {
    if (!done(Key{partition, *it})) return it->ToString();
  }
  *checked = std::max(*checked, id);
  return "";
}

// Checks the lines of group "o" of one run (RunLines::ordered) against the
// model and the messages stored after the kill (`stored`, and their ids by
// lane in `lanes`), and feeds them into the model.
void TakeOrderedLines(const std::vector<std::vector<std::string>>& lines,
                      const std::map<Key, Stored>& stored,
                      const std::map<Lane, std::vector<MessageId>>& lanes,
                      Model* m) {
  static const std::vector<MessageId> kNone;
  GroupModel& o = m->o;
  auto done = [&](const Key& k) {
    return o.completed.contains(k) || o.maybe_completed.contains(k);
  };
  // By partition: the task handed out last in this run, until its OD or
  // OR line, with its lease deadline and its line. (An Od line without its
  // OD in this run is a Complete that failed: the task stays in flight.)
  struct Held {
    Key key;
    int64_t deadline_us = 0;
    std::string line;
  };
  std::map<uint32_t, Held> held;
  std::set<Key> intents;
  for (const std::vector<std::string>& f : lines) {
    const std::string line = absl::StrJoin(f, " ");
    if (f[0] == "OC") {
      MODEL_REQUIRE(f.size() == 7, "child line: " << line);
      const Key k{ParseU32(f[1]), ParseId(f[2])};
      const uint32_t attempt = ParseU32(f[3]);
      MODEL_REQUIRE(f[4] == "o1" || f[4] == "o2", "child line: " << line);
      int64_t deadline_us = 0, now_us = 0;
      MODEL_REQUIRE(absl::SimpleAtoi(f[5], &deadline_us) &&
                        absl::SimpleAtoi(f[6], &now_us),
                    "child line: " << line);
      // As for "g": never again once completed; attempts only grow.
      MODEL_REQUIRE(!o.completed.contains(k), "child line: " << line);
      if (o.attempt.contains(k))
        MODEL_REQUIRE(attempt > o.attempt[k], "child line: " << line);
      o.attempt[k] = attempt;
      ++o.claims;
      auto s = stored.find(k);
      MODEL_REQUIRE(s != stored.end(), "handed out, not stored: " << line);
      const Lane lane = m->LaneOf(k.first, s->second.priority, s->second.topic);
      // Ordering: nothing handed out in the lane after a later message...
      auto last = m->o_last.find(lane);
      if (last != m->o_last.end()) {
        MODEL_REQUIRE(k.second >= last->second,
                      "handed out after a later message of its lane "
                          << LaneString(lane) << " (" << last->second.ToString()
                          << "): " << line);
      }
      m->o_last[lane] = k.second;
      // ...and every earlier message of the lane completed before.
      auto ids = lanes.find(lane);
      const std::string early =
          FirstNotDone(ids == lanes.end() ? kNone : ids->second, k.first,
                       k.second, &m->o_checked[lane], done);
      MODEL_REQUIRE(early.empty(), "handed out before "
                                       << early << " of its lane "
                                       << LaneString(lane)
                                       << " was completed: " << line);
      // One task in flight per partition: the one handed out before in
      // this partition is done, or its lease ended before this claim
      // returned (its lease timer starts after the deadline the task
      // reports, on the same clock).
      auto h = held.find(k.first);
      if (h != held.end()) {
        MODEL_REQUIRE(h->second.deadline_us <= now_us,
                      "handed out while " << h->second.line
                                          << " was in flight (lease not "
                                             "expired): "
                                          << line);
      }
      held[k.first] = {k, deadline_us, line};
    } else {
      MODEL_REQUIRE(f.size() == 3, "child line: " << line);
      const Key k{ParseU32(f[1]), ParseId(f[2])};
      MODEL_REQUIRE(o.attempt.contains(k), "child line: " << line);
      if (f[0] == "Od") {
        intents.insert(k);
        continue;
      }
      if (f[0] == "OD") {
        MODEL_REQUIRE(o.completed.insert(k).second, "child line: " << line);
        intents.erase(k);
        ++o.completions;
      } else {
        ++o.releases;
      }
      auto h = held.find(k.first);
      if (h != held.end() && h->second.key == k) held.erase(h);
    }
  }
  o.maybe_completed.insert(intents.begin(), intents.end());
}

void RequireVerified(Db* db) {
  const VerifyReport report = ValueOrDie(db->Verify());
  std::string problems;
  for (const VerifyProblem& p : report.problems) {
    absl::StrAppend(&problems, p.key_hex, ": ", p.description, "\n");
  }
  INFO("Verify: " << problems);
  REQUIRE(report.ok());
}

class Collector : public MessageListener {
 public:
  explicit Collector(const Model* m) : model_(m) {}
  absl::Status OnMessage(const MessageView& m) override {
    std::lock_guard<std::mutex> l(mu_);
    got_[model_->LaneOf(m.partition, m.priority, m.topic)].push_back(m.id);
    ++count_;
    return absl::OkStatus();
  }
  size_t count() {
    std::lock_guard<std::mutex> l(mu_);
    return count_;
  }
  std::map<Lane, std::vector<MessageId>> got() {
    std::lock_guard<std::mutex> l(mu_);
    return got_;
  }

 private:
  const Model* const model_;
  std::mutex mu_;
  std::map<Lane, std::vector<MessageId>> got_;
  size_t count_ = 0;
};

// Checks the cursors of group `name` against its model (never backwards;
// every message below a completion cursor completed) and returns them.
std::map<Lane, std::pair<MessageId, MessageId>> CheckCursors(
    Queue* q, const std::string& name,
    const std::map<Lane, std::vector<MessageId>>& lanes, GroupModel* gm) {
  std::map<Lane, std::pair<MessageId, MessageId>> cursors;
  INFO("group " << name);
  auto info = q->InspectGroup(name);
  if (!info.ok()) {
    REQUIRE(info.status().code() == absl::StatusCode::kNotFound);
    REQUIRE(gm->attempt.empty());
    return cursors;
  }
  const bool topic_layout = q->options().layout == Layout::kTopic;
  for (const GroupInfo::LaneCursor& c : info->cursors) {
    const Lane lane{c.partition, c.priority, topic_layout ? c.topic : ""};
    INFO("cursors of lane " << LaneString(lane) << ": " << c.scan.ToString()
                            << " " << c.completion.ToString());
    REQUIRE(c.completion <= c.scan);
    cursors[lane] = {c.scan, c.completion};
    if (gm->cursors.contains(lane)) {  // Never backwards.
      REQUIRE(c.scan >= gm->cursors[lane].first);
      REQUIRE(c.completion >= gm->cursors[lane].second);
    }
    auto ids = lanes.find(lane);
    if (ids == lanes.end()) continue;
    for (const MessageId& id : ids->second) {
      if (id >= c.completion) break;
      const Key k{std::get<0>(lane), id};
      MODEL_REQUIRE(
          (gm->completed.contains(k) || gm->maybe_completed.contains(k)),
          "below the completion cursor: " << id.ToString());
    }
  }
  return cursors;
}

// Whether a drain of `g` that just claimed nothing is done.
bool Drained(ConsumerGroup* g) {
  const GroupStats st = ValueOrDie(g->Stats());
  INFO("backlog " << st.backlog << " redelivery " << st.redelivery);
  REQUIRE(st.in_flight == 0);
  REQUIRE(st.dead_letters == 0);
  return st.backlog == 0 && st.redelivery == 0 && st.delayed == 0;
}

// Drains the ordered group "o" of the copy: its claims, one task per
// partition at a time, go on from the child's in every lane (never below
// a message handed out before, every message before them completed), and
// get every stored message not completed before the kill, once each.
void DrainOrdered(Queue* q, const std::map<Key, Stored>& stored,
                  const std::map<Lane, std::vector<MessageId>>& lanes,
                  Model* m) {
  static const std::vector<MessageId> kNone;
  const GroupModel& o = m->o;
  ConsumerGroup* g =
      ValueOrDie(q->Group("o", {.ordered = true,
                                .lease = absl::Hours(1),
                                .max_attempts = 1000000,
                                .backoff_base = absl::Milliseconds(10),
                                .backoff_cap = absl::Milliseconds(50)}));
  // The copy's drain does not go back into the model: the child goes on
  // from the original.
  std::map<Lane, MessageId> last = m->o_last, checked = m->o_checked;
  std::set<Key> drained;
  auto done = [&](const Key& k) {
    return o.completed.contains(k) || o.maybe_completed.contains(k) ||
           drained.contains(k);
  };
  const absl::Time give_up = absl::Now() + absl::Seconds(120);
  for (bool first = true;; first = false) {
    REQUIRE(absl::Now() < give_up);  // A liveness bound.
    std::vector<Task> tasks = ValueOrDie(
        g->Claim({.max = 10000,
                  .wait = first ? absl::ZeroDuration() : absl::Milliseconds(50),
                  .consumer = "drain"}));
    if (tasks.empty()) {
      if (Drained(g)) break;
      continue;
    }
    std::set<uint32_t> partitions;
    for (const Task& t : tasks) {
      const Key k{t.partition, t.id};
      const Lane lane = m->LaneOf(t.partition, t.priority, t.topic);
#define DRAIN_REQUIRE(cond)                                           \
  MODEL_REQUIRE(cond, "drained task of group o "                      \
                          << KeyString(k) << " attempt " << t.attempt \
                          << " lane " << LaneString(lane))
      DRAIN_REQUIRE(!o.completed.contains(k));
      DRAIN_REQUIRE(!drained.contains(k));  // Once each.
      DRAIN_REQUIRE(partitions.insert(t.partition).second);
      if (o.attempt.contains(k)) DRAIN_REQUIRE(t.attempt > o.attempt.at(k));
      auto it = stored.find(k);
      DRAIN_REQUIRE(it != stored.end());
      DRAIN_REQUIRE((Stored{t.priority, t.topic, t.payload} == it->second));
      // In order, going on from the child's hand-outs.
      if (last.contains(lane)) DRAIN_REQUIRE(t.id >= last[lane]);
      last[lane] = t.id;
      auto ids = lanes.find(lane);
      const std::string early =
          FirstNotDone(ids == lanes.end() ? kNone : ids->second, t.partition,
                       t.id, &checked[lane], done);
      MODEL_REQUIRE(early.empty(), "drained task of group o "
                                       << KeyString(k) << " before " << early
                                       << " of its lane was completed");
#undef DRAIN_REQUIRE
    }
    HQ_REQUIRE_OK(g->Complete(tasks));
    for (const Task& t : tasks) drained.insert({t.partition, t.id});
  }
  for (const auto& [k, s] : stored) {
    MODEL_REQUIRE(done(k),
                  "stored, never completed in group o: " << KeyString(k));
  }
  m->o.drained += static_cast<int64_t>(drained.size());
}

// Checks the Db at `path` (a copy of the killed child's directory) against
// the model and the child's last run, then drains its group and its
// subscription. Updates the model's view of the stored state.
void CheckCopy(const std::string& path, const RunLines& run, Model* m) {
  const std::map<Lane, std::vector<MessageId>>& run_delivered = run.delivered;
  // The subscription's listener, declared before the Db: it must outlive
  // the subscription, which lives until the Db is destroyed.
  Collector c(m);
  auto db = ValueOrDie(Db::Open(path, {}));
  RequireVerified(db.get());
  auto opened = db->OpenQueue("q");
  if (!opened.ok()) {
    // Killed before the queue was created: nothing was acknowledged.
    REQUIRE(opened.status().code() == absl::StatusCode::kNotFound);
    REQUIRE(m->acked.empty());
    REQUIRE(run_delivered.empty());
    REQUIRE(run.ordered.empty());
    return;
  }
  Queue* q = *opened;

  // ---- Messages.
  std::map<Key, Stored> stored;
  std::map<Lane, std::vector<MessageId>> lanes;  // In id order.
  std::set<std::string> payloads;
  for (const test::ScannedMessage& s :
       test::ScanAll(q, {.order = ScanOptions::Order::kLane})) {
    const Key k{s.partition, s.id};
    MODEL_REQUIRE(
        stored.emplace(k, Stored{s.priority, s.topic, s.payload}).second,
        "stored message " << KeyString(k) << " " << s.payload);
    MODEL_REQUIRE(payloads.insert(s.payload).second,  // Written once.
                  "stored message " << KeyString(k) << " " << s.payload);
    lanes[m->LaneOf(s.partition, s.priority, s.topic)].push_back(s.id);
  }
  for (auto& [lane, ids] : lanes) {
    REQUIRE(std::is_sorted(ids.begin(), ids.end()));
  }
  for (const auto& [k, want] : m->acked) {
    auto it = stored.find(k);
    MODEL_REQUIRE(it != stored.end(),
                  "acknowledged Put " << KeyString(k) << " " << want.payload);
    MODEL_REQUIRE(it->second == want,
                  "acknowledged Put " << KeyString(k) << " " << want.payload);
  }
  for (const auto& [k, before] : m->stored) {
    auto it = stored.find(k);
    MODEL_REQUIRE(it != stored.end(),
                  "stored at the previous check: " << KeyString(k));
    MODEL_REQUIRE(it->second == before,
                  "stored at the previous check: " << KeyString(k));
  }
  for (const auto& [k, attempt] : m->g.attempt) {
    MODEL_REQUIRE(stored.contains(k), "handed out: " << KeyString(k));
  }
  TakeOrderedLines(run.ordered, stored, lanes, m);

  // ---- The subscription's deliveries in the run that was killed.
  auto lane_of = [&](const Lane& lane) -> const std::vector<MessageId>& {
    static const std::vector<MessageId> kNone;
    auto it = lanes.find(lane);
    return it == lanes.end() ? kNone : it->second;
  };
  for (const auto& [lane, ids] : run_delivered) {
    INFO("lane " << LaneString(lane));
    const std::vector<MessageId>& all = lane_of(lane);
    const MessageId cp =
        m->checkpoints.contains(lane) ? m->checkpoints[lane] : MessageId::Min();
    // It resumed at the first message at or past its written checkpoint...
    const size_t start =
        std::lower_bound(all.begin(), all.end(), cp) - all.begin();
    // ...which is at or before the first one not yet delivered: no gap.
    for (size_t i = 0; i < start; ++i) {
      MODEL_REQUIRE(m->delivered.contains({std::get<0>(lane), all[i]}),
                    "below the checkpoint " << all[i].ToString());
    }
    for (size_t i = 0; i < ids.size(); ++i) {
      MODEL_REQUIRE(start + i < all.size(),
                    "delivery " << i << " of the run: " << ids[i].ToString());
      MODEL_REQUIRE(ids[i] == all[start + i],
                    "delivery " << i << " of the run: " << ids[i].ToString());
    }
    for (const MessageId& id : ids) {
      m->delivered.insert({std::get<0>(lane), id});
    }
  }

  // ---- The subscription's written checkpoints, then a drain.
  std::map<Lane, MessageId> checkpoints;
  if (auto info = q->InspectSubscription("s"); info.ok()) {
    for (const LaneCheckpoint& c : info->lanes) {
      const Lane lane = m->LaneOf(c.partition, c.priority, c.topic);
      INFO("checkpoint of lane " << LaneString(lane) << ": "
                                 << c.written.ToString());
      checkpoints[lane] = c.written;
      if (m->checkpoints.contains(lane)) {
        REQUIRE(c.written >= m->checkpoints[lane]);  // Never backwards.
      }
      for (const MessageId& id : lane_of(lane)) {
        if (id >= c.written) break;
        MODEL_REQUIRE(m->delivered.contains({std::get<0>(lane), id}),
                      "undelivered " << id.ToString());
      }
    }
  } else {
    REQUIRE(info.status().code() == absl::StatusCode::kNotFound);
    REQUIRE(m->delivered.empty());
  }
  {
    size_t want = 0;
    for (const auto& [lane, ids] : lanes) {
      const MessageId cp =
          checkpoints.contains(lane) ? checkpoints[lane] : MessageId::Min();
      want += ids.end() - std::lower_bound(ids.begin(), ids.end(), cp);
    }
    Subscription* s = ValueOrDie(q->Subscribe({.name = "s"}, &c));
    const absl::Time give_up = absl::Now() + absl::Seconds(120);
    while (c.count() < want) {
      INFO("drained " << c.count() << " of " << want);
      REQUIRE(absl::Now() < give_up);  // A liveness bound, no timing check.
      absl::SleepFor(absl::Milliseconds(2));
    }
    // A delivery leaves the lag once its listener has returned, after the
    // collector counted it: wait for the subscription to count them all.
    while (ValueOrDie(s->Stats()).delivered < want) {
      REQUIRE(absl::Now() < give_up);  // A liveness bound, no timing check.
      absl::SleepFor(absl::Milliseconds(2));
    }
    // Nothing more comes: the lag is zero.
    REQUIRE(ValueOrDie(s->Stats()).lag == 0);
    std::map<Lane, std::vector<MessageId>> got = c.got();
    for (const auto& [lane, ids] : lanes) {
      INFO("drained lane " << LaneString(lane));
      const MessageId cp =
          checkpoints.contains(lane) ? checkpoints[lane] : MessageId::Min();
      const std::vector<MessageId> expect(
          std::lower_bound(ids.begin(), ids.end(), cp), ids.end());
      REQUIRE(got[lane] == expect);
      got.erase(lane);
    }
    REQUIRE(got.empty());
    m->drained_messages += static_cast<int64_t>(want);
  }

  // ---- The groups: cursors, then a drain.
  std::map<Lane, std::pair<MessageId, MessageId>> cursors =
      CheckCursors(q, "g", lanes, &m->g);
  {
    ConsumerGroup* g = ValueOrDie(
        q->Group("g", {.lease = absl::Hours(1), .max_attempts = 1000000}));
    std::set<Key> drained;
    // The child's releases ask for at most 20 ms before the retry.
    absl::SleepFor(absl::Milliseconds(25));
    const absl::Time give_up = absl::Now() + absl::Seconds(120);
    for (bool first = true;; first = false) {
      REQUIRE(absl::Now() < give_up);  // A liveness bound.
      constexpr uint32_t kMax = 10000;
      std::vector<Task> tasks = ValueOrDie(g->Claim(
          {.max = kMax,
           .wait = first ? absl::ZeroDuration() : absl::Milliseconds(50)}));
      if (first && tasks.size() < kMax) {
        // Every task handed out before the kill and not completed is
        // claimable at once: in flight, lease expired, or released.
        std::set<Key> now;
        for (const Task& t : tasks) now.insert({t.partition, t.id});
        for (const auto& [k, attempt] : m->g.attempt) {
          MODEL_REQUIRE(now.contains(k) || m->g.completed.contains(k) ||
                            m->g.maybe_completed.contains(k),
                        "handed out before the kill, not claimable at once: "
                            << KeyString(k) << " attempt " << attempt);
        }
      }
      if (tasks.empty()) {
        if (Drained(g)) break;
        continue;
      }
      for (const Task& t : tasks) {
        const Key k{t.partition, t.id};
        INFO("drained task " << KeyString(k) << " attempt " << t.attempt);
        REQUIRE(!m->g.completed.contains(k));
        REQUIRE(drained.insert(k).second);
        if (m->g.attempt.contains(k)) REQUIRE(t.attempt > m->g.attempt[k]);
        auto it = stored.find(k);
        REQUIRE(it != stored.end());
        REQUIRE(Stored{t.priority, t.topic, t.payload} == it->second);
      }
      HQ_REQUIRE_OK(g->Complete(tasks));
    }
    // Every stored message was completed before the kill or drained now.
    for (const auto& [k, s] : stored) {
      MODEL_REQUIRE((m->g.completed.contains(k) ||
                     m->g.maybe_completed.contains(k) || drained.contains(k)),
                    "stored, never completed: " << KeyString(k));
    }
    m->g.drained += static_cast<int64_t>(drained.size());
  }
  std::map<Lane, std::pair<MessageId, MessageId>> o_cursors;
  if (m->topic_layout) {
    o_cursors = CheckCursors(q, "o", lanes, &m->o);
    DrainOrdered(q, stored, lanes, m);
  }
  RequireVerified(db.get());

  m->max_id.clear();
  for (const auto& [k, s] : stored) {
    m->max_id[k.first] = std::max(m->max_id[k.first], k.second);
  }
  m->stored = std::move(stored);
  m->checkpoints = std::move(checkpoints);
  m->g.cursors = std::move(cursors);
  m->o.cursors = std::move(o_cursors);
}

// The loop: `kills` runs of the child, each killed and checked.
void CrashLoop(bool topic_layout, int kills) {
  const std::string child = test::PathFromEnv("HQ_CRASH_CHILD");
  const uint64_t seed = EnvNumber("HQ_CRASH_SEED", test::Seed(9));
  const char* layout = topic_layout ? "topic" : "time";
  std::printf(
      "crash loop, %s layout: %d kills, seed %llu (HQ_CRASH_SEED=%llu "
      "HQ_CRASH_KILLS=%d reproduces the run)\n",
      layout, kills, static_cast<unsigned long long>(seed),
      static_cast<unsigned long long>(seed), kills);
  std::fflush(stdout);
  INFO("HQ_CRASH_SEED=" << seed);
  std::mt19937_64 rng(seed);
  test::TempDir dir;
  const std::string path = dir.Sub("db"), copy = dir.Sub("copy");
  Model m;
  m.topic_layout = topic_layout;
  const absl::Time start = absl::Now();
  for (int run = 0; run < kills; ++run) {
    INFO("kill " << run + 1 << " of " << kills);
    // One kill in seven comes early, often during Open's recovery.
    // Sanitizer builds run slower: the same moments, stretched.
    const absl::Duration delay =
        (rng() % 7 == 0 ? absl::Milliseconds(rng() % 15)
                        : absl::Milliseconds(30 + rng() % 370)) *
        (kSanitized ? 3 : 1);
    INFO("after " << absl::FormatDuration(delay));
    const std::vector<std::string> lines =
        RunAndKill(child, path, run, rng(), layout, delay);
    const RunLines run_lines = TakeLines(lines, &m);
    std::filesystem::remove_all(copy);
    // A child killed before its Open made the directory leaves none.
    if (std::filesystem::exists(path)) {
      std::filesystem::copy(path, copy,
                            std::filesystem::copy_options::recursive);
    }
    CheckCopy(copy, run_lines, &m);
    if ((run + 1) % 50 == 0) {  // Progress of a long run.
      std::printf("crash loop: %d kills survived, %zu puts acknowledged\n",
                  run + 1, m.acked.size());
      std::fflush(stdout);
    }
  }
  std::printf(
      "crash loop: %d kills survived in %s; checked %zu acknowledged puts "
      "(%lld sync), %zu stored messages, %lld claims, %lld completions, "
      "%lld releases, %lld subscription deliveries; drained %lld tasks and "
      "%lld messages from the copies\n",
      kills, absl::FormatDuration(absl::Now() - start).c_str(), m.acked.size(),
      static_cast<long long>(m.acked_sync), m.stored.size(),
      static_cast<long long>(m.g.claims),
      static_cast<long long>(m.g.completions),
      static_cast<long long>(m.g.releases),
      static_cast<long long>(m.deliveries), static_cast<long long>(m.g.drained),
      static_cast<long long>(m.drained_messages));
  if (topic_layout) {
    std::printf(
        "crash loop: ordered group: %lld claims, %lld completions, %lld "
        "releases; drained %lld tasks from the copies\n",
        static_cast<long long>(m.o.claims),
        static_cast<long long>(m.o.completions),
        static_cast<long long>(m.o.releases),
        static_cast<long long>(m.o.drained));
  }
  std::fflush(stdout);
  // The loop did what it is for (not a timing check: a run this short
  // with no acknowledged Put would make every check above vacuous).
  CHECK(!m.acked.empty());
}

int Kills() {
  return static_cast<int>(EnvNumber("HQ_CRASH_KILLS", kDefaultKills));
}

TEST_CASE("crash loop: kill -9 at random moments loses nothing acknowledged") {
  CrashLoop(/*topic_layout=*/false, Kills());
}

TEST_CASE("crash loop: the topic layout, working sets of 2 lanes") {
  // Also the checker's drains page (hq::TEST_SetMaxActiveLanes).
  TEST_SetMaxActiveLanes(2);
  CrashLoop(/*topic_layout=*/true, std::max(1, Kills() / 2));
  TEST_SetMaxActiveLanes(0);
}

}  // namespace
}  // namespace hq
