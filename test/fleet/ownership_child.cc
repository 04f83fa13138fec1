// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// A fleet agent reduced to its ownership, for ownership_test's fencing
// case: it joins, then every millisecond asks Ownership::Serving about
// every partition and logs each streak of serving to a file:
//   joined
//   on <partition> <epoch> <steady ns>
//   off <partition> <epoch> <end, steady ns> <steady ns>
// where a streak's end is the later of the latest valid_until it was given
// and its last check that said yes: until then a fetch may start.
// The steady clock is CLOCK_MONOTONIC, one clock for every process of the
// machine. SIGTERM ends the open streaks and exits 0.
//
// Usage: ownership_child LOG ZOOKEEPER AGENT_ID PARTITIONS SESSION_MS
//                        GRACE_MS LEASE_MS

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "lib/fleet/ownership.h"

namespace {

volatile std::sig_atomic_t g_stop = 0;

int64_t Ns(hq::fleet::SteadyTime t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             t.time_since_epoch())
      .count();
}

struct Streak {
  bool on = false;
  uint64_t epoch = 0;
  hq::fleet::SteadyTime valid_until;  // The latest it was given.
  hq::fleet::SteadyTime last_true;    // The last check that said yes.
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 8) {
    std::fprintf(stderr,
                 "usage: %s LOG ZOOKEEPER ID PARTITIONS SESSION_MS "
                 "GRACE_MS LEASE_MS\n",
                 argv[0]);
    return 2;
  }
  std::signal(SIGTERM, [](int) { g_stop = 1; });
  FILE* log = std::fopen(argv[1], "w");
  if (log == nullptr) return 2;
  hq::fleet::OwnershipOptions o;
  o.zookeeper = argv[2];
  o.agent_id = argv[3];
  o.fleet = "fencing";
  o.partitions = static_cast<uint32_t>(std::atoi(argv[4]));
  o.session_timeout = absl::Milliseconds(std::atoi(argv[5]));
  o.grace = absl::Milliseconds(std::atoi(argv[6]));
  o.ownership_lease = absl::Milliseconds(std::atoi(argv[7]));
  auto own = hq::fleet::Ownership::Start(o);
  if (!own.ok()) {
    std::fprintf(stderr, "%s\n", own.status().ToString().c_str());
    return 1;
  }
  std::fprintf(log, "joined\n");
  std::fflush(log);
  std::vector<Streak> streaks(o.partitions);
  auto end_streak = [&](uint32_t p) {
    Streak& s = streaks[p];
    std::fprintf(
        log, "off %u %llu %lld %lld\n", p,
        static_cast<unsigned long long>(s.epoch),
        static_cast<long long>(Ns(std::max(s.valid_until, s.last_true))),
        static_cast<long long>(Ns(std::chrono::steady_clock::now())));
    s.on = false;
  };
  while (!g_stop) {
    // Taken before the checks: a streak is logged from no later than its
    // first check.
    const auto t0 = std::chrono::steady_clock::now();
    std::shared_ptr<const hq::fleet::Ownership::View> v = (*own)->view();
    for (uint32_t p = 0; p < o.partitions; ++p) {
      auto it = v->owned.find(p);
      hq::fleet::SteadyTime until;
      const bool serving =
          it != v->owned.end() && (*own)->Serving(p, it->second.epoch, &until);
      Streak& s = streaks[p];
      if (s.on && (!serving || it->second.epoch != s.epoch)) end_streak(p);
      if (serving && !s.on) {
        s = Streak{.on = true,
                   .epoch = it->second.epoch,
                   .valid_until = until,
                   .last_true = t0};
        std::fprintf(log, "on %u %llu %lld\n", p,
                     static_cast<unsigned long long>(s.epoch),
                     static_cast<long long>(Ns(t0)));
      } else if (serving) {
        s.valid_until = std::max(s.valid_until, until);
        s.last_true = t0;
      }
    }
    std::fflush(log);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  for (uint32_t p = 0; p < o.partitions; ++p) {
    if (streaks[p].on) end_streak(p);
  }
  std::fclose(log);
  return 0;
}
