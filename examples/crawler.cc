// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Crawler: a crawl of a synthetic web through a consumer group, checked end
// to end. What `./hq.sh demo` runs.
//
// Usage: crawler [DIR] [--pages=N] [--sites=N] [--workers=N] [--lease=D]
//                [--max_attempts=N] [--site_interval=D] [--slow_sites=N]
//                [--slow_interval=D] [--fresh] [--progress_interval=D]
//   DIR (or --dir) defaults to ./demo-data/crawler.
//
// The web: pages 0..N-1, page p on site p % sites, at
// https://siteNN.example/page/p. Everything about a page follows from its
// number (a hash), so every run regenerates the same web: its priority
// (0..2), its links (pages 2p+1 and 2p+2, so that every page is reachable
// from page 0, and three more anywhere), how long its fetch takes, and its
// faults: about 1.5% of the pages fail every fetch, 1.5% fail the first
// one, 0.3% hang on the first one past their lease, and 0.2% are slow
// (their fetch lasts as long as a hang, but extends its lease).
//
// The frontier is the queue "frontier" (topic layout: one topic per site,
// 8 partitions, 3 priorities). A URL's message has the URL as payload and
// as Message::dedup_key, so a URL enters the frontier once however many
// pages link to it. A pool of worker threads claims pages from the consumer
// group "fetchers" under a lease (--lease), fetches each one, puts the
// URLs it links to, and completes it. A failed fetch is released and tried
// again; after --max_attempts it goes to the dead-letter queue. A hung
// fetch outlives its lease: the group hands the page out again, and the
// hung worker's late Complete is refused. A slow fetch calls Extend as it
// goes, and keeps its page.
//
// Politeness. The group paces every site (GroupOptions::pacing): one fetch
// of a site in flight at a time, and at least --site_interval between two
// fetches of one site; the first --slow_sites sites get a longer crawl
// delay, --slow_interval, set at run time (ConsumerGroup::SetTopicPacing,
// as a crawler does when it reads a site's robots.txt). Workers never wait
// for a site: the group hands out pages of the sites that are due. The
// summary shows the smallest gap measured between two hand-outs of one site
// in this run, next to the configured interval, and checks it.
//
// The crawl log. Each worker records, in the queue "crawl.log" of the same
// Db (key: the URL, payload: the attempt), "fetched" before it calls
// Complete and "completed" once Complete returned OK ("refused" if it
// failed). At the end the crawler reads the frontier, the dead letters, the
// log and the group's stats and checks that every URL in the frontier was
// completed exactly once (one successful Complete) or dead-lettered, that
// nothing is left unclaimed or in flight, and that every link of every
// fetched page is in the frontier. Delivery is at least once, so a page's
// fetch may run twice (a hung fetch, or a process killed between a fetch
// and its Complete); the summary counts those.
//
// Interrupting. Ctrl-C (SIGINT) or SIGTERM stops claiming, lets the workers
// finish their pages and closes the Db; kill -9 just stops. Either way,
// running the crawler again on the same directory resumes the crawl: the
// pages in flight are delivered again (their attempt one higher) and the
// others are where they were. Running it on a finished crawl prints the
// summary again (the checks run again); --fresh deletes the crawl and
// starts over. The web's shape (--pages, --sites) is stored with the crawl:
// a resumed crawl keeps it, and a different value is an error. If Open
// had to cut damage out of a log (Db::recovery()), the crawler says on
// stderr what was dropped and where the bytes are kept, then goes on.
//
// Exit status: 0 when the crawl is finished and every check passed, 1 if a
// check failed, 2 for a bad flag or a storage error, 130 when interrupted.

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "hq/hq.h"
#include "synthetic_web.h"

ABSL_FLAG(std::string, dir, "demo-data/crawler",
          "The crawl's directory (also the first positional argument).");
ABSL_FLAG(int, pages, 0,
          "Pages in the web of a new crawl (0: 10000). A resumed crawl keeps "
          "its own.");
ABSL_FLAG(int, sites, 0,
          "Sites (topics) of a new crawl, 1..1000 (0: 16). A resumed crawl "
          "keeps its own.");
ABSL_FLAG(int, workers, 8, "Worker threads, 1..256.");
// Durations are string flags parsed with absl::ParseDuration ("200ms"):
// absl::Duration flags use a sequence lock that ThreadSanitizer builds warn
// about.
ABSL_FLAG(std::string, lease, "200ms",
          "A claimed page's lease, 10ms..1h. A hung fetch lasts 1.5 leases.");
ABSL_FLAG(int, max_attempts, 3,
          "Deliveries of a page before it is dead-lettered, 1..100.");
ABSL_FLAG(std::string, site_interval, "1ms",
          "Politeness: the least time between two fetches of one site, "
          "0..10s.");
ABSL_FLAG(int, slow_sites, 2,
          "Sites (the first ones) given a longer crawl delay at run time, "
          "0..1000.");
ABSL_FLAG(std::string, slow_interval, "5ms",
          "The slow sites' crawl delay, 0..10s.");
ABSL_FLAG(bool, fresh, false,
          "Delete the crawl in the directory and start a new one.");
ABSL_FLAG(std::string, progress_interval, "0",
          "Time between progress lines (0: 100ms on a terminal, where the "
          "line is redrawn, 1s otherwise).");

namespace {

using hq_example::Fault;
using hq_example::Web;

constexpr char kFrontier[] = "frontier";
constexpr char kGroup[] = "fetchers";
constexpr char kLog[] = "crawl.log";
constexpr char kConfig[] = "crawl.config";
constexpr int kDefaultPages = 10000;
constexpr int kDefaultSites = 16;

// --------------------------------------------------------------- storage

// Says on stderr what Open's recovery cut out of a damaged log (the writes
// it dropped are gone from the Db; the bytes are kept aside): the crawl
// goes on from what was kept, but its owner should know.
void WarnRecovery(const hq::RecoveryReport& report, const std::string& dir) {
  for (const hq::RecoveryReport::Dropped& d : report.dropped) {
    std::fprintf(
        stderr,
        "crawler: warning: %s: recovery dropped %" PRIu64
        " bytes of %s from offset %" PRIu64 " (%s)%s; kept in %s/%s\n",
        dir.c_str(), d.bytes, d.file.c_str(), d.offset, d.damage.c_str(),
        d.torn_tail
            ? ", a torn tail: no intact record lost"
            : absl::StrCat(", ", d.records, " intact records among them")
                  .c_str(),
        dir.c_str(), d.saved_as.c_str());
  }
}

absl::StatusOr<hq::Queue*> OpenOrCreate(hq::Db* db, const char* name,
                                        const hq::QueueOptions& options) {
  absl::StatusOr<hq::Queue*> q = db->OpenQueue(name);
  if (absl::IsNotFound(q.status())) q = db->CreateQueue(name, options);
  return q;
}

absl::Status DropIfPresent(hq::Db* db, const char* name) {
  absl::Status s = db->DropQueue(name);
  return absl::IsNotFound(s) ? absl::OkStatus() : s;
}

// The web stored with the crawl in `db`, if there is one.
absl::StatusOr<std::optional<Web>> StoredWeb(hq::Db* db) {
  absl::StatusOr<hq::Queue*> q = db->OpenQueue(kConfig);
  if (absl::IsNotFound(q.status())) return std::nullopt;
  if (!q.ok()) return q.status();
  auto scanner = (*q)->NewScanner({});
  if (!scanner.ok()) return scanner.status();
  if (!(*scanner)->Next()) {
    // Empty: a crash came between creating the queue and writing to it.
    if (!(*scanner)->status().ok()) return (*scanner)->status();
    return std::nullopt;
  }
  int pages, sites;
  const std::string config((*scanner)->message().payload);
  if (std::sscanf(config.c_str(), "pages=%d sites=%d", &pages, &sites) != 2 ||
      pages < 1 || sites < 1) {
    return absl::DataLossError(
        absl::StrCat("queue ", kConfig, " holds '", config, "'"));
  }
  return Web(pages, sites);
}

// ------------------------------------------------------------- the crawl

// Nothing left: no page unclaimed, in flight or waiting to be delivered
// again. Stable once true, since only a page in flight can add pages.
bool Finished(const hq::GroupStats& st) {
  return st.backlog == 0 && st.in_flight == 0 && st.redelivery == 0 &&
         st.delayed == 0;
}

// Ctrl-C and SIGTERM. They stay blocked in every thread (main blocks them
// before any thread starts), and the progress loop takes them with
// sigtimedwait as its sleep: no asynchronous handler, so a stop is seen
// within one sleep in every build, sanitized ones included.
sigset_t StopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

// Sleeps for `d` or until SIGINT or SIGTERM arrives; true if one did.
bool SleepUnlessStopped(absl::Duration d) {
  const sigset_t set = StopSignals();
  const absl::Time end = absl::Now() + d;
  for (absl::Duration left = d; left > absl::ZeroDuration();
       left = end - absl::Now()) {
    const timespec ts = absl::ToTimespec(left);
    const int sig = sigtimedwait(&set, nullptr, &ts);
    if (sig == SIGINT || sig == SIGTERM) return true;
    if (sig < 0 && errno == EAGAIN) return false;
  }
  return false;
}

// Gives the signals their default action again in the calling thread:
// after the first stop, a second Ctrl-C ends the process at once.
void UnblockStopSignals() {
  const sigset_t set = StopSignals();
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

std::atomic<bool> interrupted{false};

struct Flags {
  std::string dir;
  int workers;
  absl::Duration lease;
  int max_attempts;
  absl::Duration site_interval;
  int slow_sites;
  absl::Duration slow_interval;
};

// The gaps between two hand-outs of one site measured in a run.
struct Gaps {
  int claims = 0;  // Hand-outs seen (0: nothing measured).
  absl::Duration smallest = absl::InfiniteDuration();
  absl::Duration smallest_slow = absl::InfiniteDuration();
};

class Crawler {
 public:
  Crawler(const Flags& flags, const Web& web, hq::Queue* frontier,
          hq::Queue* log, hq::ConsumerGroup* group)
      : flags_(flags),
        web_(web),
        frontier_(frontier),
        log_(log),
        group_(group) {}

  // Runs the workers until the crawl is finished, an error, or an
  // interrupt, printing progress; `done` is the number of pages completed
  // by earlier runs.
  absl::Status Run(int64_t done, absl::Duration progress_interval) {
    done_.store(done);
    const bool tty = isatty(fileno(stdout));
    if (progress_interval == absl::ZeroDuration()) {
      progress_interval = tty ? absl::Milliseconds(100) : absl::Seconds(1);
    }
    std::vector<std::thread> workers;
    for (int i = 0; i < flags_.workers; ++i) {
      workers.emplace_back([this] { Work(); });
    }
    const absl::Time start = absl::Now();
    absl::Time last_line = start;
    int64_t last_done = done;
    absl::Status status;
    for (;;) {
      if (SleepUnlessStopped(absl::Milliseconds(20))) {
        interrupted.store(true);
        UnblockStopSignals();
        break;
      }
      if (!(status = error()).ok()) break;
      absl::StatusOr<hq::GroupStats> st = group_->Stats();
      if (!st.ok()) {
        status = st.status();
        break;
      }
      const bool finished = Finished(*st);
      const absl::Time now = absl::Now();
      if (finished || now - last_line >= progress_interval) {
        const int64_t d = done_.load();
        const double rate =
            static_cast<double>(d - last_done) /
            std::max(absl::ToDoubleSeconds(now - last_line), 1e-3);
        // At most 79 columns, so that \r redraws it on a terminal.
        std::printf("%s%6" PRId64 " done %3" PRIu64 " in flight %6" PRIu64
                    "%s backlog %3" PRIu64 " waiting %4" PRIu64
                    " dead %6.0f pages/s%s",
                    tty ? "\r" : "", d, st->in_flight, st->backlog,
                    st->backlog_exact ? "" : "+", st->redelivery,
                    st->dead_letters, rate, tty ? "" : "\n");
        std::fflush(stdout);
        last_line = now;
        last_done = d;
      }
      if (finished) break;
    }
    if (tty) std::printf("\n");
    stop_.store(true);
    for (std::thread& t : workers) t.join();
    if (status.ok()) status = error();
    return status;
  }

  // Pages completed, by this run and the earlier ones.
  int64_t done() const { return done_.load(); }

  // The smallest gaps between two hand-outs of one site in this run, from
  // the claim times (each task's lease deadline less its lease: the group's
  // own clock reading at the hand-out).
  Gaps MeasuredGaps() {
    std::lock_guard l(mu_);
    Gaps g;
    for (auto& [site, times] : claimed_at_) {
      std::sort(times.begin(), times.end());
      g.claims += static_cast<int>(times.size());
      const bool slow = web_.SiteIndex(site) < flags_.slow_sites;
      for (size_t i = 1; i < times.size(); ++i) {
        absl::Duration& smallest = slow ? g.smallest_slow : g.smallest;
        smallest = std::min(smallest, times[i] - times[i - 1]);
      }
    }
    return g;
  }

 private:
  void Work() {
    while (!stop_.load()) {
      absl::StatusOr<std::vector<hq::Task>> tasks =
          group_->Claim({.max = 1, .wait = absl::Milliseconds(50)});
      if (!tasks.ok()) return Fail(tasks.status());
      {
        std::lock_guard l(mu_);
        for (const hq::Task& task : *tasks) {
          claimed_at_[task.topic].push_back(task.lease_deadline - flags_.lease);
        }
      }
      for (hq::Task& task : *tasks) {
        if (absl::Status s = Fetch(task); !s.ok()) return Fail(s);
      }
    }
  }

  absl::Status Fetch(hq::Task& task) {
    const int page = web_.Page(task.payload);
    if (page < 0) {
      return absl::DataLossError(
          absl::StrCat("not a URL of this web: '", task.payload, "'"));
    }
    absl::SleepFor(web_.FetchTime(page));
    const Fault fault = web_.FaultOf(page);
    if (fault == Fault::kFailsAlways ||
        (fault == Fault::kFailsOnce && task.attempt == 1)) {
      // Try again soon; at max_attempts this dead-letters it.
      absl::Status s = group_->Release(task, absl::Milliseconds(20));
      // FailedPrecondition: the fetch outlived the lease, so the page is on
      // its way back already.
      return absl::IsFailedPrecondition(s) ? absl::OkStatus() : s;
    }
    if (fault == Fault::kHangs && task.attempt == 1) {
      absl::SleepFor(flags_.lease * 1.5);  // Past the lease.
    }
    if (fault == Fault::kSlow) {
      // As long as a hung fetch, but alive: it extends its lease as it goes.
      for (int i = 0; i < 3; ++i) {
        absl::SleepFor(flags_.lease / 2);
        absl::Status s = group_->Extend(&task, flags_.lease);
        // FailedPrecondition: too late (on a very busy machine), the lease
        // expired; the page will be delivered again.
        if (absl::IsFailedPrecondition(s)) return absl::OkStatus();
        if (!s.ok()) return s;
      }
    }

    // The page's links: one batch, one write. dedup_key keeps each URL once
    // in the frontier, however many pages link to it.
    const std::vector<int> links = web_.Links(page);
    std::vector<std::string> urls, sites;
    std::vector<hq::Message> batch;
    urls.reserve(links.size());
    sites.reserve(links.size());
    for (int link : links) {
      urls.push_back(web_.Url(link));
      sites.push_back(web_.Site(link));
    }
    for (size_t i = 0; i < links.size(); ++i) {
      batch.push_back({.topic = sites[i],
                       .payload = urls[i],
                       .priority = web_.Priority(links[i]),
                       .dedup_key = urls[i]});
    }
    if (absl::Status s = frontier_->PutBatch(batch, nullptr); !s.ok()) return s;

    const std::string attempt = absl::StrCat(task.attempt);
    if (absl::Status s = Record("fetched", task.payload, attempt); !s.ok()) {
      return s;
    }
    absl::Status s = group_->Complete({&task, 1});
    if (s.ok()) {
      if (s = Record("completed", task.payload, attempt); !s.ok()) return s;
      done_.fetch_add(1);
      return absl::OkStatus();
    }
    // The page was handed out again while this fetch hung.
    if (absl::IsFailedPrecondition(s)) {
      return Record("refused", task.payload, attempt);
    }
    return s;
  }

  absl::Status Record(std::string_view what, std::string_view url,
                      std::string_view attempt) {
    return log_->Put({.topic = what, .payload = attempt, .key = url}).status();
  }

  void Fail(const absl::Status& s) {
    std::lock_guard l(mu_);
    if (error_.ok()) error_ = s;
    stop_.store(true);
  }
  absl::Status error() {
    std::lock_guard l(mu_);
    return error_;
  }

  const Flags flags_;
  const Web web_;
  hq::Queue* const frontier_;
  hq::Queue* const log_;
  hq::ConsumerGroup* const group_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> done_{0};
  std::mutex mu_;       // std::mutex, not absl::Mutex: ThreadSanitizer sees it.
  absl::Status error_;  // Guarded by mu_.
  // Guarded by mu_: each site's hand-out times in this run.
  std::map<std::string, std::vector<absl::Time>> claimed_at_;
};

// ------------------------------------------------------------ the audit

// Everything stored about the crawl, read back after it.
struct Audit {
  std::map<std::string, int> frontier;  // URL -> times it is in the frontier
  std::map<std::string, int> priority;  // URL -> its message's priority
  std::map<std::string, hq::DeadLetter> dead;
  int dead_twice = 0;  // Dead letters of a URL already dead.
  // Log records by URL: how many, and the attempt of the last one.
  std::map<std::string, int> fetched, completed, refused;
  std::map<std::string, uint32_t> completed_attempt;
  std::vector<std::string> completion_order;
  int runs = 0;
  hq::GroupStats stats;
};

absl::StatusOr<Audit> Read(hq::Queue* frontier, hq::Queue* log,
                           hq::ConsumerGroup* group) {
  Audit a;
  {
    auto scanner =
        frontier->NewScanner({.order = hq::ScanOptions::Order::kLane});
    if (!scanner.ok()) return scanner.status();
    while ((*scanner)->Next()) {
      const hq::MessageView& m = (*scanner)->message();
      const std::string url(m.payload);
      ++a.frontier[url];
      a.priority[url] = m.priority;
    }
    if (!(*scanner)->status().ok()) return (*scanner)->status();
  }
  const hq::DeadLetter* after = nullptr;
  std::vector<hq::DeadLetter> letters;
  for (;;) {
    auto page = group->ListDeadLetters(1000, after);
    if (!page.ok()) return page.status();
    if (page->empty()) break;
    letters = std::move(*page);
    for (const hq::DeadLetter& d : letters) {
      if (!a.dead.emplace(d.payload, d).second) ++a.dead_twice;
    }
    after = &letters.back();
  }
  {
    auto scanner = log->NewScanner({});
    if (!scanner.ok()) return scanner.status();
    while ((*scanner)->Next()) {
      const hq::MessageView& m = (*scanner)->message();
      const std::string url(m.key);
      if (m.topic == "run") {
        ++a.runs;
      } else if (m.topic == "fetched") {
        ++a.fetched[url];
      } else if (m.topic == "completed") {
        ++a.completed[url];
        uint32_t attempt = 0;
        (void)absl::SimpleAtoi(
            absl::string_view(m.payload.data(), m.payload.size()), &attempt);
        a.completed_attempt[url] = attempt;
        a.completion_order.push_back(url);
      } else if (m.topic == "refused") {
        ++a.refused[url];
      }
    }
    if (!(*scanner)->status().ok()) return (*scanner)->status();
  }
  absl::StatusOr<hq::GroupStats> st = group->Stats();
  if (!st.ok()) return st.status();
  a.stats = *st;
  return a;
}

int Sum(const std::map<std::string, int>& m) {
  int n = 0;
  for (const auto& [url, count] : m) n += count;
  return n;
}

// Prints the pacing line of the summary and checks the measured gaps.
void SummarizePacing(
    const Flags& flags, const Gaps& gaps,
    const std::function<void(bool, const std::string&)>& check) {
  auto ms = [](absl::Duration d) {
    return absl::FormatDuration(absl::Trunc(d, absl::Microseconds(10)));
  };
  if (gaps.claims == 0) {
    std::printf(
        "  pacing: nothing measured in this run (site interval %s, "
        "%d slow sites %s)\n",
        ms(flags.site_interval).c_str(), flags.slow_sites,
        ms(flags.slow_interval).c_str());
    return;
  }
  std::printf(
      "  pacing: smallest gap between two fetches of a site %s "
      "(interval %s)",
      gaps.smallest == absl::InfiniteDuration() ? "none"
                                                : ms(gaps.smallest).c_str(),
      ms(flags.site_interval).c_str());
  if (flags.slow_sites > 0) {
    std::printf(";\n          of a slow site %s (crawl delay %s, %d sites)",
                gaps.smallest_slow == absl::InfiniteDuration()
                    ? "none"
                    : ms(gaps.smallest_slow).c_str(),
                ms(flags.slow_interval).c_str(), flags.slow_sites);
  }
  std::printf("\n");
  check(gaps.smallest >= flags.site_interval,
        absl::StrCat("two fetches of a site came ", ms(gaps.smallest),
                     " apart; the interval is ", ms(flags.site_interval)));
  check(gaps.smallest_slow >= flags.slow_interval,
        absl::StrCat("two fetches of a slow site came ", ms(gaps.smallest_slow),
                     " apart; its crawl delay is ", ms(flags.slow_interval)));
}

// Prints the summary and checks it; returns the number of failed checks.
int Summarize(const Web& web, const Audit& a, const std::string& dir,
              const Flags& flags, const Gaps& gaps) {
  std::vector<std::string> failed;
  auto check = [&](bool ok, const std::string& what) {
    if (!ok) failed.push_back(what);
  };
  const int discovered = static_cast<int>(a.frontier.size());

  // The frontier: each URL once, each one of this web.
  for (const auto& [url, n] : a.frontier) {
    check(n == 1, absl::StrCat(url, " is ", n, " times in the frontier"));
    check(web.Page(url) >= 0, absl::StrCat(url, " is not a URL of the web"));
  }
  // The group: nothing left.
  check(a.stats.backlog == 0 && a.stats.in_flight == 0 &&
            a.stats.redelivery == 0 && a.stats.delayed == 0,
        absl::StrFormat("the group still has %d unclaimed, %d in flight, %d "
                        "waiting",
                        a.stats.backlog, a.stats.in_flight,
                        a.stats.redelivery + a.stats.delayed));
  check(a.dead_twice == 0,
        absl::StrCat(a.dead_twice, " URLs are dead-lettered twice"));
  // Every URL: completed once or dead-lettered, not both.
  int completed = 0, unrecorded = 0, later_attempt = 0, fetched_twice = 0;
  int dead_fetched = 0, slow = 0, slow_twice = 0;
  std::map<int, int> by_priority;
  std::map<Fault, int> later_by_fault;
  int links = 0;
  for (const auto& [url, n] : a.frontier) {
    const int page = web.Page(url);
    const bool dead = a.dead.contains(url);
    const auto c = a.completed.find(url);
    const int records = c == a.completed.end() ? 0 : c->second;
    const auto f = a.fetched.find(url);
    const int fetches = f == a.fetched.end() ? 0 : f->second;
    if (fetches > 1) ++fetched_twice;
    check(records <= 1,
          absl::StrCat(url, ": Complete succeeded ", records, " times"));
    if (dead) {
      check(records == 0,
            absl::StrCat(url, " is dead-lettered and was completed"));
      if (fetches > 0) ++dead_fetched;
      continue;
    }
    ++completed;  // The group holds nothing back (checked above).
    ++by_priority[a.priority.at(url)];
    if (records == 0) ++unrecorded;
    check(fetches > 0, absl::StrCat(url, " was completed but never fetched"));
    if (page >= 0) {
      check(web.FaultOf(page) != Fault::kFailsAlways,
            absl::StrCat(url, " fails every fetch but was completed"));
    }
    const bool later = records == 1 && a.completed_attempt.at(url) > 1;
    if (later) {
      ++later_attempt;
      if (page >= 0) ++later_by_fault[web.FaultOf(page)];
    }
    if (page >= 0 && web.FaultOf(page) == Fault::kSlow) {
      ++slow;
      if (later || fetches > 1) ++slow_twice;
    }
  }
  for (const auto& [url, d] : a.dead) {
    check(a.frontier.contains(url),
          absl::StrCat("dead letter ", url, " is not in the frontier"));
  }
  // No link lost: every link of every fetched page is in the frontier; and
  // nothing invented: every URL in it is the seed or a link of a page in it.
  std::map<int, bool> linked;
  for (const auto& [url, n] : a.frontier) {
    const int page = web.Page(url);
    if (page < 0) continue;
    for (int link : web.Links(page)) linked[link] = true;
    if (!a.fetched.contains(url)) continue;
    for (int link : web.Links(page)) {
      ++links;
      check(a.frontier.contains(web.Url(link)),
            absl::StrCat("a link of ", url, " to ", web.Url(link),
                         " is not in the frontier"));
    }
  }
  for (const auto& [url, n] : a.frontier) {
    const int page = web.Page(url);
    check(page == 0 || linked.contains(page),
          absl::StrCat(url, " is in the frontier but no page links to it"));
  }
  int dead_failing = 0;
  for (const auto& [url, d] : a.dead) {
    const int page = web.Page(url);
    if (page >= 0 && web.FaultOf(page) == Fault::kFailsAlways) ++dead_failing;
  }

  // Where each priority's pages came in the crawl (0% first, 100% last).
  std::map<int, double> rank;
  const size_t total = a.completion_order.size();
  for (size_t i = 0; i < total; ++i) {
    const auto p = a.priority.find(a.completion_order[i]);
    if (p != a.priority.end()) {
      rank[p->second] += 100.0 * static_cast<double>(i) /
                         static_cast<double>(std::max<size_t>(total - 1, 1));
    }
  }

  auto mean_place = [&](int p) {
    return by_priority[p] ? rank[p] / by_priority[p] : 0.0;
  };
  uint32_t min_attempts = UINT32_MAX, max_attempts = 0;
  for (const auto& [url, d] : a.dead) {
    min_attempts = std::min(min_attempts, d.attempts);
    max_attempts = std::max(max_attempts, d.attempts);
  }
  std::printf("crawl of a %d-page web on %d sites in %s, in %d run%s\n",
              web.pages(), web.sites(), dir.c_str(), a.runs,
              a.runs == 1 ? "" : "s");
  std::printf(
      "  discovered    %6d URLs through %d links, each once in the "
      "frontier\n",
      discovered, links);
  std::printf(
      "  completed     %6d (priority 2: %d, 1: %d, 0: %d), on "
      "average\n"
      "                       at %.0f%%, %.0f%% and %.0f%% of the "
      "crawl\n",
      completed, by_priority[2], by_priority[1], by_priority[0], mean_place(2),
      mean_place(1), mean_place(0));
  std::printf("  dead-lettered %6zu", a.dead.size());
  if (!a.dead.empty()) {
    std::printf(min_attempts == max_attempts ? " after %u attempts"
                                             : " after %u..%u attempts",
                min_attempts, max_attempts);
  }
  std::printf(" (%d fail every fetch, %zu others)\n", dead_failing,
              a.dead.size() - dead_failing);
  std::printf(
      "  completed on a later attempt: %d (%d failed once, %d hung, "
      "%d others)\n",
      later_attempt, later_by_fault[Fault::kFailsOnce],
      later_by_fault[Fault::kHangs],
      later_attempt - later_by_fault[Fault::kFailsOnce] -
          later_by_fault[Fault::kHangs]);
  std::printf(
      "  slow fetches that kept their lease with Extend: %d (%d "
      "delivered again)\n",
      slow, slow_twice);
  std::printf(
      "  fetched more than once: %d pages (delivery is at least "
      "once)\n",
      fetched_twice);
  std::printf(
      "  late Completes refused: %d (their page had been handed out "
      "again)\n",
      Sum(a.refused));
  if (unrecorded > 0) {
    std::printf("  completions whose record a kill cut off: %d\n", unrecorded);
  }
  if (dead_fetched > 0) {
    std::printf("  pages fetched, then dead-lettered by restarts: %d\n",
                dead_fetched);
  }
  SummarizePacing(flags, gaps, check);
  for (const std::string& f : failed) std::printf("FAILED: %s\n", f.c_str());
  if (failed.empty()) {
    std::printf(
        "checks passed:\n"
        "  each of the %d URLs is in the frontier once, and was completed by\n"
        "  exactly one successful Complete (%d) or dead-lettered (%zu), never "
        "both\n"
        "  nothing is left unclaimed, waiting or in flight\n"
        "  every link of every fetched page is in the frontier\n"
        "  no two fetches of a site came closer than its interval\n",
        discovered, completed, a.dead.size());
  } else {
    std::printf("checks FAILED: %zu\n", failed.size());
  }
  return static_cast<int>(failed.size());
}

int Fatal(const absl::Status& s) {
  std::fprintf(stderr, "crawler: %s\n", s.ToString().c_str());
  return 2;
}

int Main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "crawls a synthetic web through an hq consumer group and checks the "
      "result.\nUsage: crawler [DIR] [flags]; see the top of "
      "examples/crawler.cc.");
  const std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() > 2) {
    std::fprintf(stderr, "crawler: one directory at most; --help for usage\n");
    return 2;
  }
  absl::Duration lease, progress_interval, site_interval, slow_interval;
  const bool lease_parsed =
      absl::ParseDuration(absl::GetFlag(FLAGS_lease), &lease);
  const bool site_interval_parsed =
      absl::ParseDuration(absl::GetFlag(FLAGS_site_interval), &site_interval);
  const bool slow_interval_parsed =
      absl::ParseDuration(absl::GetFlag(FLAGS_slow_interval), &slow_interval);
  const bool interval_parsed = absl::ParseDuration(
      absl::GetFlag(FLAGS_progress_interval), &progress_interval);
  const Flags flags{
      .dir = args.size() == 2 ? args[1] : absl::GetFlag(FLAGS_dir),
      .workers = absl::GetFlag(FLAGS_workers),
      .lease = lease,
      .max_attempts = absl::GetFlag(FLAGS_max_attempts),
      .site_interval = site_interval,
      .slow_sites = absl::GetFlag(FLAGS_slow_sites),
      .slow_interval = slow_interval,
  };
  const int pages_flag = absl::GetFlag(FLAGS_pages);
  const int sites_flag = absl::GetFlag(FLAGS_sites);
  const struct {
    bool ok;
    const char* flag;
    const char* range;
  } limits[] = {
      {pages_flag >= 0 && pages_flag <= 10000000, "pages", "0..10000000"},
      {sites_flag >= 0 && sites_flag <= 1000, "sites", "0..1000"},
      {flags.workers >= 1 && flags.workers <= 256, "workers", "1..256"},
      {lease_parsed && flags.lease >= absl::Milliseconds(10) &&
           flags.lease <= absl::Hours(1),
       "lease", "10ms..1h (a duration: 200ms, 1.5s)"},
      {flags.max_attempts >= 1 && flags.max_attempts <= 100, "max_attempts",
       "1..100"},
      {interval_parsed && progress_interval >= absl::ZeroDuration(),
       "progress_interval", "0.. (a duration: 0, 100ms, 2s)"},
      {site_interval_parsed && site_interval >= absl::ZeroDuration() &&
           site_interval <= absl::Seconds(10),
       "site_interval", "0..10s (a duration: 1ms)"},
      {slow_interval_parsed && slow_interval >= absl::ZeroDuration() &&
           slow_interval <= absl::Seconds(10),
       "slow_interval", "0..10s (a duration: 5ms)"},
      {flags.slow_sites >= 0 && flags.slow_sites <= 1000, "slow_sites",
       "0..1000"},
  };
  for (const auto& l : limits) {
    if (!l.ok) {
      std::fprintf(stderr, "crawler: --%s must be in %s\n", l.flag, l.range);
      return 2;
    }
  }

  absl::StatusOr<std::unique_ptr<hq::Db>> db = hq::Db::Open(flags.dir);
  if (!db.ok()) return Fatal(db.status());
  WarnRecovery((*db)->recovery(), flags.dir);

  if (absl::GetFlag(FLAGS_fresh)) {
    // The config first: without it, what is left is a crawl to delete.
    for (const char* name : {kConfig, kFrontier, kLog}) {
      if (absl::Status s = DropIfPresent(db->get(), name); !s.ok()) {
        return Fatal(s);
      }
    }
  }
  absl::StatusOr<std::optional<Web>> stored = StoredWeb(db->get());
  if (!stored.ok()) return Fatal(stored.status());
  const bool resumed = stored->has_value();
  if (!resumed) {
    // A new crawl: delete what an interrupted --fresh left, then store the
    // web's shape.
    for (const char* name : {kFrontier, kLog}) {
      if (absl::Status s = DropIfPresent(db->get(), name); !s.ok()) {
        return Fatal(s);
      }
    }
    const Web web(pages_flag ? pages_flag : kDefaultPages,
                  sites_flag ? sites_flag : kDefaultSites);
    absl::StatusOr<hq::Queue*> config = OpenOrCreate(db->get(), kConfig, {});
    if (!config.ok()) return Fatal(config.status());
    const std::string text =
        absl::StrCat("pages=", web.pages(), " sites=", web.sites());
    if (auto r = (*config)->Put({.payload = text}); !r.ok()) {
      return Fatal(r.status());
    }
    stored->emplace(web);
  }
  const Web web = **stored;
  if ((pages_flag && pages_flag != web.pages()) ||
      (sites_flag && sites_flag != web.sites())) {
    std::fprintf(stderr,
                 "crawler: %s holds a crawl of a %d-page web on %d sites; "
                 "resume it without --pages and --sites, or start over "
                 "with --fresh\n",
                 flags.dir.c_str(), web.pages(), web.sites());
    return 2;
  }

  absl::StatusOr<hq::Queue*> frontier = OpenOrCreate(
      db->get(), kFrontier,
      {.partitions = 8, .priorities = 3, .layout = hq::Layout::kTopic});
  if (!frontier.ok()) return Fatal(frontier.status());
  absl::StatusOr<hq::Queue*> log = OpenOrCreate(db->get(), kLog, {});
  if (!log.ok()) return Fatal(log.status());
  absl::StatusOr<hq::ConsumerGroup*> group = (*frontier)->Group(
      kGroup,
      {.lease = flags.lease,
       .max_attempts = static_cast<uint32_t>(flags.max_attempts),
       .backoff_base = absl::Milliseconds(10),
       .backoff_cap = absl::Milliseconds(100),
       .pacing = {.max_in_flight = 1, .interval = flags.site_interval}});
  if (!group.ok()) return Fatal(group.status());
  // The slow sites' crawl delay, as read from their robots.txt at run time.
  for (int i = 0; i < std::min(flags.slow_sites, web.sites()); ++i) {
    if (absl::Status s = (*group)->SetTopicPacing(
            web.SiteName(i),
            {.max_in_flight = 1, .interval = flags.slow_interval});
        !s.ok()) {
      return Fatal(s);
    }
  }

  // The seed: a no-op (a duplicate) when resuming.
  const std::string seed = web.Url(0);
  const std::string seed_site = web.Site(0);
  if (auto r = (*frontier)->Put({.topic = seed_site,
                                 .payload = seed,
                                 .priority = web.Priority(0),
                                 .dedup_key = seed});
      !r.ok()) {
    return Fatal(r.status());
  }
  absl::StatusOr<Audit> before = Read(*frontier, *log, *group);
  if (!before.ok()) return Fatal(before.status());
  const int64_t done = Sum(before->completed);
  if (Finished(before->stats)) {
    UnblockStopSignals();  // Nothing to stop cleanly: Ctrl-C ends it.
    std::printf("the crawl in %s is finished (--fresh starts it over)\n",
                flags.dir.c_str());
    return Summarize(web, *before, flags.dir, flags, Gaps()) == 0 ? 0 : 1;
  }
  if (resumed) {
    std::printf("resuming the crawl in %s: %" PRId64
                " pages done, %zu URLs discovered\n",
                flags.dir.c_str(), done, before->frontier.size());
  } else {
    std::printf(
        "new crawl of a %d-page web on %d sites in %s: %d workers, "
        "lease %s, %d attempts\n",
        web.pages(), web.sites(), flags.dir.c_str(), flags.workers,
        absl::FormatDuration(flags.lease).c_str(), flags.max_attempts);
  }
  std::fflush(stdout);
  if (auto r = (*log)->Put({.topic = "run"}); !r.ok()) return Fatal(r.status());

  const absl::Time start = absl::Now();
  Crawler crawler(flags, web, *frontier, *log, *group);
  absl::Status run = crawler.Run(done, progress_interval);
  UnblockStopSignals();  // From here on, Ctrl-C ends the process at once.
  if (!run.ok()) return Fatal(run);
  if (interrupted.load()) {
    std::printf("interrupted with %" PRId64
                " pages done: run the crawler again on %s to resume\n",
                crawler.done(), flags.dir.c_str());
    return 130;
  }
  std::printf("finished in %s\n",
              absl::FormatDuration(
                  absl::Trunc(absl::Now() - start, absl::Milliseconds(1)))
                  .c_str());
  absl::StatusOr<Audit> after = Read(*frontier, *log, *group);
  if (!after.ok()) return Fatal(after.status());
  return Summarize(web, *after, flags.dir, flags, crawler.MeasuredGaps()) == 0
             ? 0
             : 1;
}

}  // namespace

int main(int argc, char** argv) {
  // Before any thread starts, so that every thread inherits the mask. A
  // signal that arrives before the crawl's loop waits there, pending.
  const sigset_t set = StopSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return Main(argc, argv);
}
