// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The examples as a user runs them: examples/pubsub twice on one directory,
// examples/crawler on a small web, and the crawler killed with SIGKILL at
// three moments and resumed. The programs are found through $HQ_CRAWLER and
// $HQ_PUBSUB (test/meson.build sets them).

#include <signal.h>
#include <sys/wait.h>

#include <cstdio>
#include <regex>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "test/test_util.h"

namespace hq {
namespace {

using test::Child;
using test::PathFromEnv;
using test::TempDir;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

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

// The first line matching `pattern`, and its groups; empty if none.
std::smatch Find(const std::vector<std::string>& lines,
                 const std::string& pattern) {
  const std::regex re(pattern);
  std::smatch m;
  for (const std::string& l : lines) {
    if (std::regex_search(l, m, re)) return m;
  }
  return std::smatch();
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
  REQUIRE(
      Find(
          run1,
          R"(^run 1: put 100 events, received 50 events \(0\.\.49\), in order)")
          .size() > 0);

  std::vector<std::string> run2 = RunToEnd(pubsub, {dir.path()}, &status);
  INFO(Joined(run2));
  REQUIRE(Exited0(status));
  // Resumed at or before event 50 (a checkpoint never runs ahead of what
  // was delivered), then everything after it, in order.
  std::smatch m = Find(
      run2,
      R"(received (\d+) events \((\d+)\.\.99\), in order; in all, 100 of 100 events received, 0 missing, (\d+) delivered again)");
  REQUIRE(m.size() == 4);
  const int count = std::stoi(m[1]), first = std::stoi(m[2]),
            again = std::stoi(m[3]);
  CHECK(first <= 50);
  CHECK(count == 100 - first);
  CHECK(again == 50 - first);

  // A third run has nothing new and checks again.
  std::vector<std::string> run3 = RunToEnd(pubsub, {dir.path()}, &status);
  INFO(Joined(run3));
  REQUIRE(Exited0(status));
  CHECK(Find(run3, "received nothing new; in all, 100 of 100 events received")
            .size() > 0);
}

// The summary's counts.
struct Counts {
  int discovered = -1, completed = -1, dead = -1;
  friend bool operator==(const Counts&, const Counts&) = default;
};

Counts Summary(const std::vector<std::string>& lines) {
  Counts c;
  std::smatch m = Find(lines, R"(^  discovered +(\d+) URLs)");
  if (m.size() > 1) c.discovered = std::stoi(m[1]);
  m = Find(lines, R"(^  completed +(\d+) )");
  if (m.size() > 1) c.completed = std::stoi(m[1]);
  m = Find(lines, R"(^  dead-lettered +(\d+) )");
  if (m.size() > 1) c.dead = std::stoi(m[1]);
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
  REQUIRE(Find(out, "^checks passed").size() > 0);
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
  CHECK(Find(again, "^the crawl in .* is finished").size() > 0);
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
  CHECK(Find(fresh, "^new crawl of a 77-page web").size() > 0);
  CHECK(Find(fresh, "in 1 run$").size() > 0);
}

TEST_CASE("crawler: killed with SIGKILL at three moments, then resumed") {
  const std::string crawler = PathFromEnv("HQ_CRAWLER");
  TempDir dir;
  const Counts expected = Uninterrupted(crawler, dir);

  const std::string path = dir.Sub("killed");
  const std::regex progress(R"(^ *(\d+) done )");
  const std::regex resuming(R"(^resuming the crawl in .*: (\d+) pages done)");
  int seen = 0;  // Pages done as last printed before a kill.
  int kills = 0;
  for (int percent : {15, 45, 75}) {
    const int target = expected.completed * percent / 100;
    Child child(crawler, CrawlerArgs(path));
    bool killed = false;
    for (std::string line = child.ReadLine(); !line.empty();
         line = child.ReadLine()) {
      std::smatch m;
      if (std::regex_search(line, m, resuming)) {
        // What was done before the kill is still done: a completion
        // recorded before its progress line was printed survives kill -9.
        CHECK(std::stoi(m[1]) >= seen);
      }
      if (std::regex_search(line, m, progress)) {
        seen = std::stoi(m[1]);
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
  REQUIRE(Find(out, "^checks passed").size() > 0);
  std::smatch m = Find(out, R"(^resuming the crawl in .*: (\d+) pages done)");
  REQUIRE(m.size() == 2);
  CHECK(std::stoi(m[1]) >= seen);
  // Resumed, not restarted: the same web, found once.
  CHECK(Summary(out) == expected);
  CHECK(Find(out, R"(in (\d+) runs$)").size() > 0);
}

}  // namespace
}  // namespace hq
