// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The fleet crawler's crawl log and its end-of-crawl checks
// (fleet_crawler.cc).
//
// Each agent appends to DIR/<agent id>.log, one line per event, each line
// written by one write(2) on a file opened with O_APPEND, so that a line
// is whole or absent whatever moment the agent is killed at:
//   F page attempt partition epoch handout start end ok|fail
//       a fetch; times in microseconds since the Unix epoch: the hand-out
//       (the group's clock at the claim: the task's lease deadline less its
//       lease), the fetch's start and end;
//   C page    its Complete returned OK;
//   r page    Reject about to be called (the page fails every fetch);
//   R page    Reject returned OK;
//   V page    handed out but not fetched: its FleetTask::valid_until had
//             passed when the fetch was to start (released);
//   P page    the page's links could not be Put (released, not completed);
//   c page    Complete about to be called;
//   X page    its Complete failed (its lease had run out: it is handed out
//             again).
//
// The checks (CheckCrawl) read every agent's log of DIR and the web:
//   - lost: pages reachable from page 0 (through pages that can be
//     fetched) that were neither completed nor, for a page that fails every
//     fetch, rejected. A page whose agent logged c and then neither C nor X
//     counts as completed (completed_unlogged): the agent died in the call,
//     and a Complete that landed is not logged; one that did not land left
//     the page's task claimed, and the page is handed out again (then
//     completed and logged, or counted lost);
//   - fetched twice: pages with more than one successful fetch, and the
//     fetches beyond the first (delivery is at least once);
//   - two at once: two fetches of one site by two agents that overlap in
//     time. A fetch counts from its start to its end or to its hand-out
//     plus the task lease, whichever comes first (past its lease a task is
//     no longer in flight, in the fleet as in a group); same-agent overlaps
//     are counted apart (the fleet paces sites with max_in_flight 1);
//   - pacing violations: two hand-outs of one site, by any agents, closer
//     than the site interval;
//   - stale epochs: a fetch of a partition at an epoch older than one
//     already handed out (an agent serving a partition it lost);
//   - misrouted: a fetch handed out by a partition that is not its site's
//     (hq::fleet::PartitionOf of the site's name);
//   - completed failing: a page that fails every fetch, completed.
// Times come from each agent's clock: the checks assume one machine (or
// clocks in step well within the site interval).

#ifndef HQ_EXAMPLES_FLEET_CRAWL_LOG_H_
#define HQ_EXAMPLES_FLEET_CRAWL_LOG_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "synthetic_web.h"

namespace hq_example {

struct CrawlReport {
  int64_t reachable = 0;
  int64_t completed = 0;      // Distinct pages completed.
  int64_t dead_lettered = 0;  // Distinct failing pages rejected.
  int64_t lost = 0;
  int64_t fetches = 0;  // Every fetch logged, successful or not.
  int64_t fetched_twice = 0;
  int64_t extra_fetches = 0;
  int64_t two_at_once = 0;
  int64_t same_agent_overlap = 0;
  int64_t pacing_violations = 0;
  int64_t stale_epochs = 0;
  int64_t misrouted = 0;
  int64_t completed_failing = 0;
  int64_t expired_unfetched = 0;  // V lines.
  int64_t put_failures = 0;       // P lines.
  int64_t complete_refused = 0;   // X lines.
  // Pages with c and neither C nor X: completed by an agent that died in
  // its Complete call.
  int64_t completed_unlogged = 0;
  absl::Duration smallest_gap = absl::InfiniteDuration();
  // Fetches by agent (the log's name less ".log").
  std::map<std::string, int64_t> fetches_by_agent;
  // The last hand-out logged, by agent.
  std::map<std::string, absl::Time> last_handout_by_agent;
  // The first violations found (two at once, same-agent overlaps, pacing,
  // stale epochs), each described with both fetches: at most 20.
  std::vector<std::string> violations;

  bool finished() const { return lost == 0; }
  bool clean() const {
    return two_at_once == 0 && same_agent_overlap == 0 &&
           pacing_violations == 0 && stale_epochs == 0 &&
           completed_failing == 0;
  }
};

// Reads DIR/*.log against `web`. `partitions`, `site_interval` and
// `task_lease` are the crawl's. Errors: NotFound (no DIR), DataLoss (a line
// that does not parse, naming file and line; a last line without its newline is
// not one: the agent may be writing it).
absl::StatusOr<CrawlReport> CheckCrawl(const std::string& dir, const Web& web,
                                       uint32_t partitions,
                                       absl::Duration site_interval,
                                       absl::Duration task_lease);

// The report as "name value" lines, one per field (the fleet crawler's
// output; crawl_test parses it).
std::string FormatReport(const CrawlReport& r);

}  // namespace hq_example

#endif  // HQ_EXAMPLES_FLEET_CRAWL_LOG_H_
