// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// An agent's membership in the fleet and its leases on the partitions it
// owns, through ZooKeeper (doc/fleet.md, "Ownership"). Layout under
// /hq-fleet/<fleet>:
//   config             "partitions=N\n", written by the first agent
//   members/<id>       ephemeral, one per live agent: "pid=<pid>\nhost=<h>\n"
//   election/n_<seq>   ephemeral sequential: the lowest is the coordinator
//   left/<id>          an agent that called Leave (skips its grace period)
//   assignment         lib/fleet/assignment.h's record
// Only the coordinator writes `assignment`, in a transaction that checks
// its own election node still exists: a coordinator whose session ended
// cannot write.
//
// Leases. A background thread reads `assignment` after a sync every
// ownership_lease / 3, and at once when a watch fires. A read sent at
// (steady) time T that shows this agent owning partition p at epoch e
// makes its lease on p valid until T + ownership_lease. A partition first
// seen owned at time S (or seen at a new epoch) is served from
// S + ownership_lease + takeover_delay on: by then the previous owner's
// lease has run out, since it could only have read its ownership before
// the change that this agent saw.

#ifndef HQ_LIB_FLEET_OWNERSHIP_H_
#define HQ_LIB_FLEET_OWNERSHIP_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "lib/fleet/assignment.h"
#include "lib/fleet/zk.h"
#include "lib/util/sync.h"

namespace hq::fleet {

using SteadyTime = std::chrono::steady_clock::time_point;

struct OwnershipOptions {
  std::string agent_id;
  std::string fleet;
  std::string zookeeper;
  uint32_t partitions = 1024;
  absl::Duration session_timeout = absl::Seconds(10);
  absl::Duration grace = absl::Seconds(30);
  absl::Duration ownership_lease = absl::Seconds(5);
  // Added to ownership_lease before a newly owned partition is served
  // (AgentOptions: the pacing interval and the fetch timeout).
  absl::Duration takeover_delay = absl::ZeroDuration();
};

class Ownership {
 public:
  struct Held {
    uint64_t epoch = 0;
    SteadyTime serve_from;
  };
  // What the agent knows of its partitions, replaced whole at every read.
  struct View {
    absl::flat_hash_map<uint32_t, Held> owned;
    SteadyTime lease_until;  // The lease of every partition in `owned`.
    bool coordinator = false;
    uint64_t reads = 0;  // Successful reads of the assignment so far.
  };

  // Joins: connects, checks the fleet's partition count (FailedPrecondition
  // when it differs), creates the member node (waiting up to two session
  // timeouts for a previous process's node of the same id to expire;
  // AlreadyExists if it does not), and reads the assignment once.
  // Unavailable when ZooKeeper cannot be reached, or does not answer, for
  // three session timeouts.
  static absl::StatusOr<std::unique_ptr<Ownership>> Start(
      const OwnershipOptions& options);

  // Stops the thread and closes the session: the member node goes, and
  // the partitions stay this agent's for `grace` (a restart keeps them).
  ~Ownership();

  std::shared_ptr<const View> view() const;

  // Whether partition p may be handed out now at `epoch`; if so
  // *valid_until (if not null) is when that stops unless renewed.
  bool Serving(uint32_t p, uint64_t epoch, SteadyTime* valid_until) const;

  // Leaves at once: marks left/<id> so the coordinator moves this agent's
  // partitions without waiting for the grace period, and closes the
  // session. Serving is false for every partition from the call on.
  absl::Status Leave();

  // The latest assignment read (for status and tests).
  Assignment assignment() const;

 private:
  explicit Ownership(const OwnershipOptions& options);
  absl::Status Join();
  absl::Status JoinMember();
  void Run();
  absl::Status Step();
  absl::Status Coordinate(const Assignment& current, int32_t version);
  void Wake();

  std::string Path(std::string_view leaf) const;

  const OwnershipOptions options_;
  const std::string root_;

  // Only the thread (and Start, before it runs) uses these.
  std::unique_ptr<ZkSession> session_;
  std::string election_node_;
  absl::flat_hash_map<std::string, SteadyTime> first_missing_;

  mutable Mutex mu_;
  CondVar wake_cv_;  // Signalled with wake_ or stop_.
  std::shared_ptr<const View> view_ ABSL_GUARDED_BY(mu_);
  Assignment assignment_ ABSL_GUARDED_BY(mu_);
  bool wake_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool left_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace hq::fleet

#endif  // HQ_LIB_FLEET_OWNERSHIP_H_
