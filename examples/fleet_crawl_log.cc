// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "fleet_crawl_log.h"

#include <algorithm>
#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "hq/fleet.h"

namespace hq_example {
namespace {

struct Fetch {
  int agent = 0;  // Index into the agents' names.
  int page = 0;
  uint32_t partition = 0;
  uint64_t epoch = 0;
  int64_t handout = 0;  // Microseconds since the Unix epoch.
  int64_t start = 0;
  int64_t end = 0;
  bool ok = false;
};

struct PageLog {
  int ok_fetches = 0;
  bool completed = false;
  bool completing = false;  // c seen, and no X after it.
  bool rejecting = false;   // r or R seen.
};

struct Logs {
  std::vector<std::string> agents;
  std::vector<Fetch> fetches;
  std::vector<PageLog> pages;
  int64_t expired_unfetched = 0;
  int64_t put_failures = 0;
  int64_t complete_refused = 0;
};

absl::Status ParseLine(const std::string& line, int agent, const Web& web,
                       Logs* logs) {
  std::istringstream in(line);
  std::string kind;
  int page = -1;
  in >> kind >> page;
  if (!in || page < 0 || page >= web.pages()) {
    return absl::DataLossError("no event and page");
  }
  PageLog& p = logs->pages[page];
  if (kind == "F") {
    Fetch f{.agent = agent, .page = page};
    int attempt;
    std::string outcome;
    in >> attempt >> f.partition >> f.epoch >> f.handout >> f.start >> f.end >>
        outcome;
    if (!in || (outcome != "ok" && outcome != "fail")) {
      return absl::DataLossError("a fetch line that does not parse");
    }
    f.ok = outcome == "ok";
    if (f.ok) ++p.ok_fetches;
    logs->fetches.push_back(f);
  } else if (kind == "C") {
    p.completed = true;
  } else if (kind == "c") {
    p.completing = true;
  } else if (kind == "r" || kind == "R") {
    p.rejecting = true;
  } else if (kind == "V") {
    ++logs->expired_unfetched;
  } else if (kind == "P") {
    ++logs->put_failures;
  } else if (kind == "X") {
    ++logs->complete_refused;
    p.completing = false;
  } else {
    return absl::DataLossError(absl::StrCat("unknown event '", kind, "'"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Logs> ReadLogs(const std::string& dir, const Web& web) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return absl::NotFoundError(absl::StrCat(dir, ": no such directory"));
  }
  Logs logs;
  logs.pages.resize(web.pages());
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".log") files.push_back(e.path());
  }
  if (ec) return absl::InternalError(absl::StrCat(dir, ": ", ec.message()));
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    const int agent = static_cast<int>(logs.agents.size());
    logs.agents.push_back(path.stem().string());
    std::ifstream in(path, std::ios::binary);
    std::stringstream buf;
    buf << in.rdbuf();
    const std::string text = buf.str();
    size_t line_no = 0;
    for (size_t pos = 0; pos < text.size();) {
      const size_t nl = text.find('\n', pos);
      if (nl == std::string::npos) break;  // Being written.
      ++line_no;
      absl::Status s = ParseLine(text.substr(pos, nl - pos), agent, web, &logs);
      if (!s.ok()) {
        return absl::DataLossError(
            absl::StrCat(path.string(), ":", line_no, ": ", s.message()));
      }
      pos = nl + 1;
    }
  }
  return logs;
}

// Pages reachable from page 0 through pages whose fetch can succeed.
std::vector<bool> Reachable(const Web& web) {
  std::vector<bool> seen(web.pages(), false);
  std::deque<int> todo = {0};
  seen[0] = true;
  while (!todo.empty()) {
    const int p = todo.front();
    todo.pop_front();
    if (web.FaultOf(p) == Fault::kFailsAlways) continue;
    for (int l : web.Links(p)) {
      if (!seen[l]) {
        seen[l] = true;
        todo.push_back(l);
      }
    }
  }
  return seen;
}

std::string Describe(const Logs& logs, const Fetch& f) {
  return absl::StrFormat(
      "%s page %d partition %d epoch %d handout %d start %d end %d%s",
      logs.agents[f.agent], f.page, f.partition, f.epoch, f.handout, f.start,
      f.end, f.ok ? "" : " (failed)");
}

void NoteViolation(const Logs& logs, const char* what, const Fetch& a,
                   const Fetch& b, CrawlReport* r) {
  if (r->violations.size() >= 20) return;
  r->violations.push_back(absl::StrCat(what, ": ", Describe(logs, a),
                                       " | then ", Describe(logs, b)));
}

// Overlaps and pacing, per site, over every agent's fetches.
void CheckSites(const Web& web, const Logs& logs, int64_t interval_us,
                int64_t lease_us, CrawlReport* r) {
  std::vector<std::vector<const Fetch*>> by_site(web.sites());
  for (const Fetch& f : logs.fetches) {
    by_site[f.page % web.sites()].push_back(&f);
  }
  for (auto& fetches : by_site) {
    std::sort(
        fetches.begin(), fetches.end(),
        [](const Fetch* a, const Fetch* b) { return a->handout < b->handout; });
    const Fetch* busiest = nullptr;  // The fetch in flight the longest.
    int64_t busy_until = 0;
    for (size_t i = 0; i < fetches.size(); ++i) {
      const Fetch& f = *fetches[i];
      if (i > 0) {
        const int64_t gap = f.handout - fetches[i - 1]->handout;
        r->smallest_gap = std::min(r->smallest_gap, absl::Microseconds(gap));
        if (gap < interval_us) {
          ++r->pacing_violations;
          NoteViolation(logs, "pacing", *fetches[i - 1], f, r);
        }
      }
      if (busiest != nullptr && f.start < busy_until) {
        const bool same = busiest->agent == f.agent;
        ++(same ? r->same_agent_overlap : r->two_at_once);
        NoteViolation(logs, same ? "same agent at once" : "two agents at once",
                      *busiest, f, r);
      }
      const int64_t until = std::min(f.end, f.handout + lease_us);
      if (until > busy_until) {
        busy_until = until;
        busiest = &f;
      }
    }
  }
}

// Fetches of a partition at an epoch older than one already handed out.
int64_t StaleEpochs(const Logs& logs, CrawlReport* r) {
  std::map<uint32_t, std::vector<const Fetch*>> by_partition;
  for (const Fetch& f : logs.fetches) by_partition[f.partition].push_back(&f);
  int64_t stale = 0;
  for (auto& [p, fetches] : by_partition) {
    std::sort(
        fetches.begin(), fetches.end(),
        [](const Fetch* a, const Fetch* b) { return a->handout < b->handout; });
    const Fetch* newest = nullptr;
    for (const Fetch* f : fetches) {
      if (newest != nullptr && f->epoch < newest->epoch) {
        ++stale;
        NoteViolation(logs, "stale epoch", *newest, *f, r);
      }
      if (newest == nullptr || f->epoch > newest->epoch) newest = f;
    }
  }
  return stale;
}

}  // namespace

absl::StatusOr<CrawlReport> CheckCrawl(const std::string& dir, const Web& web,
                                       uint32_t partitions,
                                       absl::Duration site_interval,
                                       absl::Duration task_lease) {
  absl::StatusOr<Logs> logs = ReadLogs(dir, web);
  if (!logs.ok()) return logs.status();
  CrawlReport r;
  const std::vector<bool> reachable = Reachable(web);
  for (int p = 0; p < web.pages(); ++p) {
    const PageLog& log = logs->pages[p];
    const bool failing = web.FaultOf(p) == Fault::kFailsAlways;
    if (log.completed) ++r.completed;
    if (failing && log.rejecting) ++r.dead_lettered;
    if (failing && log.completed) ++r.completed_failing;
    if (log.ok_fetches > 1) {
      ++r.fetched_twice;
      r.extra_fetches += log.ok_fetches - 1;
    }
    const bool unlogged = !log.completed && log.completing;
    if (unlogged) ++r.completed_unlogged;
    if (!reachable[p]) continue;
    ++r.reachable;
    if (!log.completed && !unlogged && !(failing && log.rejecting)) ++r.lost;
  }
  r.fetches = static_cast<int64_t>(logs->fetches.size());
  std::vector<uint32_t> site_partition(web.sites());
  for (int i = 0; i < web.sites(); ++i) {
    site_partition[i] = hq::fleet::PartitionOf(web.SiteName(i), partitions);
  }
  for (const Fetch& f : logs->fetches) {
    if (f.partition != site_partition[f.page % web.sites()]) {
      ++r.misrouted;
      NoteViolation(*logs, "misrouted", f, f, &r);
    }
    const std::string& agent = logs->agents[f.agent];
    ++r.fetches_by_agent[agent];
    absl::Time& last = r.last_handout_by_agent[agent];
    last = std::max(last, absl::FromUnixMicros(f.handout));
  }
  r.expired_unfetched = logs->expired_unfetched;
  r.put_failures = logs->put_failures;
  r.complete_refused = logs->complete_refused;
  CheckSites(web, *logs, absl::ToInt64Microseconds(site_interval),
             absl::ToInt64Microseconds(task_lease), &r);
  r.stale_epochs = StaleEpochs(*logs, &r);
  return r;
}

std::string FormatReport(const CrawlReport& r) {
  std::string out;
  auto line = [&out](const char* name, int64_t v) {
    absl::StrAppendFormat(&out, "%-20s %d\n", name, v);
  };
  line("reachable", r.reachable);
  line("completed", r.completed);
  line("dead_lettered", r.dead_lettered);
  line("lost", r.lost);
  line("fetches", r.fetches);
  line("fetched_twice", r.fetched_twice);
  line("extra_fetches", r.extra_fetches);
  line("two_at_once", r.two_at_once);
  line("same_agent_overlap", r.same_agent_overlap);
  line("pacing_violations", r.pacing_violations);
  line("stale_epochs", r.stale_epochs);
  line("misrouted", r.misrouted);
  line("completed_failing", r.completed_failing);
  line("expired_unfetched", r.expired_unfetched);
  line("put_failures", r.put_failures);
  line("complete_refused", r.complete_refused);
  line("completed_unlogged", r.completed_unlogged);
  line("smallest_gap_us", r.smallest_gap == absl::InfiniteDuration()
                              ? -1
                              : absl::ToInt64Microseconds(r.smallest_gap));
  for (const auto& [agent, n] : r.fetches_by_agent) {
    absl::StrAppendFormat(&out, "fetches_by:%-10s %d\n", agent, n);
  }
  for (const std::string& v : r.violations) {
    absl::StrAppend(&out, "violation ", v, "\n");
  }
  for (const auto& [agent, t] : r.last_handout_by_agent) {
    absl::StrAppendFormat(&out, "last_handout_us:%-5s %d\n", agent,
                          absl::ToUnixMicros(t));
  }
  return out;
}

}  // namespace hq_example
