// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The examples as a user runs them: examples/pubsub twice on one directory,
// examples/crawler on a small web, and the crawler killed with SIGKILL at
// three moments and resumed. The programs are found through $HQ_CRAWLER and
// $HQ_PUBSUB (test/meson.build sets them).

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <ostream>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "hq/hq.h"
#include "test/test_util.h"

namespace hq {
namespace {

using test::Child;
using test::PathFromEnv;
using test::TempDir;

constexpr bool kSanitized = test::kAddressSanitizer || test::kThreadSanitizer;

// A smaller web under sanitizers, which run the crawl several times slower.
const std::string kPages = kSanitized ? "--pages=300" : "--pages=1500";

// Runs `program` with `args` to its end; returns its output lines and sets
// `*status` to its wait status.
std::vector<std::string> RunToEnd(const std::string& program,
                                  const std::vector<std::string>& args,
                                  int* status) {
  Child child(program, args);
  std::vector<std::string> lines;
  for (std::string line = child.ReadLine(); !line.empty();
       line = child.ReadLine()) {
    lines.push_back(line);
  }
  *status = child.Wait();
  return lines;
}

std::string Joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

// The first line that starts with `prefix`; null if none.
const char* Line(const std::vector<std::string>& lines,
                 const std::string& prefix) {
  for (const std::string& l : lines) {
    if (l.rfind(prefix, 0) == 0) return l.c_str();
  }
  return nullptr;
}

bool Has(const std::vector<std::string>& lines, const std::string& text) {
  for (const std::string& l : lines) {
    if (l.find(text) != std::string::npos) return true;
  }
  return false;
}

// The pages done in the crawler's line "resuming the crawl in DIR: N pages
// done, ...", or -1 if `line` is not one.
int ResumedAt(const std::string& line) {
  int done = -1;
  const size_t at = line.rfind(": ");
  if (line.rfind("resuming the crawl in ", 0) != 0 || at == std::string::npos ||
      std::sscanf(line.c_str() + at, ": %d pages done", &done) != 1) {
    return -1;
  }
  return done;
}

bool Exited0(int status) {
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

TEST_CASE("pubsub: the second run receives what the first did not") {
  const std::string pubsub = PathFromEnv("HQ_PUBSUB");
  TempDir dir;
  int status;
  std::vector<std::string> run1 = RunToEnd(pubsub, {dir.path()}, &status);
  INFO(Joined(run1));
  REQUIRE(Exited0(status));
  REQUIRE(Line(run1,
               "run 1: put 100 events, received 50 events (0..49), in "
               "order") != nullptr);

  std::vector<std::string> run2 = RunToEnd(pubsub, {dir.path()}, &status);
  INFO(Joined(run2));
  REQUIRE(Exited0(status));
  // Resumed at or before event 50 (a checkpoint never runs ahead of what
  // was delivered), then everything after it, in order.
  const char* line = Line(run2, "resumed at the last checkpoint written: ");
  REQUIRE(line != nullptr);
  int count, first, again;
  REQUIRE(std::sscanf(line,
                      "resumed at the last checkpoint written: received %d "
                      "events (%d..99), in order; in all, 100 of 100 events "
                      "received, 0 missing, %d delivered again",
                      &count, &first, &again) == 3);
  CHECK(first <= 50);
  CHECK(count == 100 - first);
  CHECK(again == 50 - first);

  // A third run has nothing new and checks again.
  std::vector<std::string> run3 = RunToEnd(pubsub, {dir.path()}, &status);
  INFO(Joined(run3));
  REQUIRE(Exited0(status));
  CHECK(Has(run3, "received nothing new; in all, 100 of 100 events received"));
}

// Runs pubsub on `dir` until a run reports all 100 events received; every
// run must exit 0, and it takes at most two (run 1 and run 2).
void PubsubCompletes(const std::string& pubsub, const std::string& dir) {
  for (int run = 1; run <= 2; ++run) {
    int status;
    std::vector<std::string> lines = RunToEnd(pubsub, {dir}, &status);
    INFO("run " << run << ":\n" << Joined(lines));
    REQUIRE(Exited0(status));
    if (Has(lines, "in all, 100 of 100 events received, 0 missing")) return;
  }
  FAIL("two runs after the kill did not receive all 100 events");
}

// Issue 20: a run killed between CreateQueue("events") and its PutBatch
// left an empty queue, and every later run waited for events that were
// never written (DEADLINE_EXCEEDED after 10 s).
TEST_CASE("issue20: pubsub killed between CreateQueue and PutBatch") {
  const std::string pubsub = PathFromEnv("HQ_PUBSUB");
  TempDir dir;
  {  // The state that kill -9 at that moment leaves.
    auto db = Db::Open(dir.path());
    REQUIRE(db.ok());
    REQUIRE((*db)->CreateQueue("events", {}).ok());
  }
  int status;
  std::vector<std::string> run1 = RunToEnd(pubsub, {dir.path()}, &status);
  INFO(Joined(run1));
  REQUIRE(Exited0(status));
  CHECK(Line(run1, "run 1: put 100 events") != nullptr);
  PubsubCompletes(pubsub, dir.path());
}

TEST_CASE("pubsub killed with SIGKILL at any moment resumes correctly") {
  const std::string pubsub = PathFromEnv("HQ_PUBSUB");
  // The kills land at different points of the first run (opening, creating,
  // putting, delivering): each directory gets one, then runs to the end.
  for (int delay_ms : {0, 1, 2, 5, 10, 20, 40}) {
    TempDir dir;
    {
      Child child(pubsub, {dir.path()});
      usleep(delay_ms * 1000);
      child.Stop(SIGKILL);
    }
    INFO("killed after " << delay_ms << " ms");
    PubsubCompletes(pubsub, dir.path());
  }
}

// The summary's counts.
struct Counts {
  int discovered = -1, completed = -1, dead = -1;
  friend bool operator==(const Counts&, const Counts&) = default;
  friend std::ostream& operator<<(std::ostream& os, const Counts& c) {
    return os << "{discovered " << c.discovered << ", completed " << c.completed
              << ", dead " << c.dead << "}";
  }
};

Counts Summary(const std::vector<std::string>& lines) {
  Counts c;
  for (const std::string& l : lines) {
    if (c.discovered < 0) {
      std::sscanf(l.c_str(), "  discovered %d URLs", &c.discovered);
    }
    if (c.completed < 0)
      std::sscanf(l.c_str(), "  completed %d (", &c.completed);
    if (c.dead < 0) std::sscanf(l.c_str(), "  dead-lettered %d", &c.dead);
  }
  return c;
}

// Flags of every crawler run below: max_attempts 5 so that three kills
// cannot dead-letter a page that does not fail every fetch (it would
// change the web the crawl finds); a lease that a fetch does not outlive
// even under sanitizers.
std::vector<std::string> CrawlerArgs(const std::string& dir) {
  return {dir,
          kPages,
          "--workers=4",
          "--lease=500ms",
          "--max_attempts=5",
          "--progress_interval=10ms"};
}

Counts Uninterrupted(const std::string& crawler, const TempDir& dir) {
  int status;
  std::vector<std::string> out =
      RunToEnd(crawler, CrawlerArgs(dir.Sub("plain")), &status);
  INFO(Joined(out));
  REQUIRE(Exited0(status));
  REQUIRE(Line(out, "checks passed:") != nullptr);
  // The pacing line, with the gaps the crawler measured and checked.
  CHECK(Line(out, "  pacing: smallest gap between two fetches of a site ") !=
        nullptr);
  CHECK(Line(out,
             "  no two fetches of a site came closer than its "
             "interval") != nullptr);
  const Counts c = Summary(out);
  REQUIRE(c.discovered > 0);
  CHECK(c.completed + c.dead == c.discovered);
  CHECK(c.dead > 0);  // Some pages fail every fetch.
  return c;
}

TEST_CASE("crawler: a small web, then rerun on the finished crawl") {
  const std::string crawler = PathFromEnv("HQ_CRAWLER");
  TempDir dir;
  const Counts first = Uninterrupted(crawler, dir);

  int status;
  std::vector<std::string> again =
      RunToEnd(crawler, CrawlerArgs(dir.Sub("plain")), &status);
  INFO(Joined(again));
  REQUIRE(Exited0(status));
  CHECK(Line(again, "the crawl in ") != nullptr);
  CHECK(Has(again, " is finished"));
  CHECK(Summary(again) == first);

  // Another web on the same directory is refused; --fresh starts over.
  std::vector<std::string> args = CrawlerArgs(dir.Sub("plain"));
  args.push_back("--pages=77");
  RunToEnd(crawler, args, &status);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 2);
  args.push_back("--fresh");
  std::vector<std::string> fresh = RunToEnd(crawler, args, &status);
  INFO(Joined(fresh));
  REQUIRE(Exited0(status));
  CHECK(Line(fresh, "new crawl of a 77-page web") != nullptr);
  CHECK(Has(fresh, ", in 1 run"));
}

// SIGINT and SIGTERM are taken synchronously (sigtimedwait in the progress
// loop), so a stop is seen in every build, sanitized ones included.
TEST_CASE("crawler: SIGINT or SIGTERM stops it cleanly, then it resumes") {
  const std::string crawler = PathFromEnv("HQ_CRAWLER");
  TempDir dir;
  const Counts expected = Uninterrupted(crawler, dir);
  const std::string path = dir.Sub("stopped");
  for (int sig : {SIGINT, SIGTERM}) {
    Child child(crawler, CrawlerArgs(path));
    std::string line;
    int done = -1;
    char word[5];
    while (done < 0) {
      line = child.ReadLine();
      INFO(line);
      REQUIRE(!line.empty());  // The crawl did not finish before a stop.
      if (std::sscanf(line.c_str(), " %d %4s ", &done, word) != 2 ||
          std::string(word) != "done") {
        done = -1;
      }
    }
    CHECK(child.Stop(sig) == 130);
    std::vector<std::string> rest;
    for (line = child.ReadLine(); !line.empty(); line = child.ReadLine()) {
      rest.push_back(line);
    }
    INFO(Joined(rest));
    CHECK(Line(rest, "interrupted with ") != nullptr);
  }
  int status;
  std::vector<std::string> out = RunToEnd(crawler, CrawlerArgs(path), &status);
  INFO(Joined(out));
  REQUIRE(Exited0(status));
  REQUIRE(Line(out, "checks passed:") != nullptr);
  CHECK(Summary(out) == expected);
}

TEST_CASE("crawler: killed with SIGKILL at three moments, then resumed") {
  const std::string crawler = PathFromEnv("HQ_CRAWLER");
  TempDir dir;
  const Counts expected = Uninterrupted(crawler, dir);

  const std::string path = dir.Sub("killed");
  int seen = 0;  // Pages done as last printed before a kill.
  int kills = 0;
  for (int percent : {15, 45, 75}) {
    const int target = expected.completed * percent / 100;
    Child child(crawler, CrawlerArgs(path));
    bool killed = false;
    for (std::string line = child.ReadLine(); !line.empty();
         line = child.ReadLine()) {
      if (const int resumed = ResumedAt(line); resumed >= 0) {
        // What was done before the kill is still done: a completion
        // recorded before its progress line was printed survives kill -9.
        CHECK(resumed >= seen);
      }
      int done;
      char word[5];
      if (std::sscanf(line.c_str(), " %d %4s ", &done, word) == 2 &&
          std::string(word) == "done") {
        seen = done;
        if (seen >= target) {
          child.Kill();
          killed = true;
          break;
        }
      }
    }
    const int status = child.Wait();
    if (!killed) {
      // The crawl finished before this moment came (a fast machine).
      REQUIRE(Exited0(status));
      break;
    }
    CHECK(WIFSIGNALED(status));
    ++kills;
  }
  CHECK(kills > 0);

  int status;
  std::vector<std::string> out = RunToEnd(crawler, CrawlerArgs(path), &status);
  INFO(Joined(out));
  REQUIRE(Exited0(status));
  REQUIRE(Line(out, "checks passed:") != nullptr);
  const char* resumed = Line(out, "resuming the crawl in ");
  REQUIRE(resumed != nullptr);
  CHECK(ResumedAt(resumed) >= seen);
  // Resumed, not restarted: the same web, found once.
  CHECK(Summary(out) == expected);
  CHECK(Has(out, " runs"));
}

// Issue 38: the crawler went on without a word after Open cut a hole out
// of a damaged log.
TEST_CASE("issue38: the crawler warns of what recovery dropped") {
  const std::string crawler = PathFromEnv("HQ_CRAWLER");
  TempDir dir;
  const std::string path = dir.Sub("crawl");
  {
    auto db = test::ValueOrDie(Db::Open(path, test::NoBackgroundSweeps()));
    Queue* q = test::ValueOrDie(db->CreateQueue("other", {}));
    for (int i = 0; i < 3600; ++i) {
      if (i == 3000) HQ_REQUIRE_OK(db->CompactAll().status());
      HQ_REQUIRE_OK(
          q->Put({.payload = std::to_string(i) + std::string(90, 'p')})
              .status());
    }
  }
  std::string log;
  for (const auto& e : std::filesystem::directory_iterator(path)) {
    const std::string n = e.path().filename().string();
    if (n.ends_with(".log")) log = n;
  }
  REQUIRE(!log.empty());
  // A zeroed page in the middle of the log.
  std::string data;
  {
    std::ifstream in(path + "/" + log, std::ios::binary);
    data.assign(std::istreambuf_iterator<char>(in), {});
  }
  const size_t page = data.size() / 2 / 4096 * 4096;
  REQUIRE(page + 4096 < data.size());
  std::fill(data.begin() + page, data.begin() + page + 4096, '\0');
  std::ofstream(path + "/" + log, std::ios::binary | std::ios::trunc) << data;

  // Its stderr with its stdout.
  std::string command = crawler;
  for (const std::string& a : CrawlerArgs(path)) command += " '" + a + "'";
  command += " --pages=100 2>&1";
  int status;
  std::vector<std::string> out = RunToEnd("/bin/sh", {"-c", command}, &status);
  INFO(Joined(out));
  CHECK(Exited0(status));
  const char* warning =
      Line(out, "crawler: warning: " + path + ": recovery dropped ");
  REQUIRE(warning != nullptr);
  CHECK(std::string(warning).find("dropped/" + log + ".hole-at-") !=
        std::string::npos);
}

}  // namespace
}  // namespace hq
