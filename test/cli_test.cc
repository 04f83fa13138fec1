// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The hq command-line tool ($HQ_CLI, tools/hq) run as a separate process
// against real Db directories made by the library (test/sample_db.h).
// The sample's messages carry ids of the simulated clock (2026-01-01);
// the tool runs on the real clock.

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pty.h>
#include <pwd.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "catch2/catch.hpp"
#include "hq/hq.h"
#include "leveldb/db.h"
#include "lib/format/live_status.h"
#include "lib/engine/queue_impl.h"
#include "lib/format/format.h"
#include "lib/format/layout_codec.h"
#include "test/sample_db.h"
#include "test/test_util.h"

namespace hq::test {
namespace {

const char* Tool() {
  const char* path = std::getenv("HQ_CLI");
  REQUIRE(path != nullptr);
  return path;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// In a child process: runs `tool` (Tool()) with `args`; never returns.
[[noreturn]] void ExecTool(const char* tool,
                           const std::vector<std::string>& args) {
  std::vector<char*> argv{const_cast<char*>(tool)};
  for (const std::string& a : args)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(argv[0], argv.data());
  _exit(127);
}

// Waits (with WaitForExit's deadline) for child `pid`, which runs hq with
// `args`; its exit code, or 128 + the signal that killed it.
int WaitForTool(pid_t pid, const std::vector<std::string>& args) {
  const int status =
      WaitForExit(pid, absl::StrCat("hq ", absl::StrJoin(args, " ")));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The name of the largest file in directory `dir` whose name ends in
// `suffix`; "" if there is none.
std::string LargestFile(const std::string& dir, const std::string& suffix) {
  std::string largest;
  uintmax_t size = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n.ends_with(suffix) && (largest.empty() || e.file_size() > size)) {
      largest = n;
      size = e.file_size();
    }
  }
  return largest;
}

struct Result {
  int code = -1;
  std::string out, err;
};

// Runs hq with `args` (and `env_db`, if not empty, as $HQ_DB; else HQ_DB
// unset), feeding `input` to its stdin. Waits for it to exit.
// With `file_size_limit` > 0, hq runs under RLIMIT_FSIZE (and SIGXFSZ
// ignored): a write past that size fails with EFBIG, as on a full disk.
Result Run(const std::vector<std::string>& args, const std::string& input = "",
           const std::string& env_db = "", rlim_t file_size_limit = 0) {
  TempDir io;
  const std::string in_path = io.Sub("in"), out_path = io.Sub("out"),
                    err_path = io.Sub("err");
  {
    std::ofstream in(in_path, std::ios::binary);
    in << input;
  }
  const char* tool = Tool();
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const int in = open(in_path.c_str(), O_RDONLY);
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    if (file_size_limit > 0) {
      signal(SIGXFSZ, SIG_IGN);
      const struct rlimit limit = {file_size_limit, file_size_limit};
      setrlimit(RLIMIT_FSIZE, &limit);
    }
    if (env_db.empty()) {
      unsetenv("HQ_DB");
    } else {
      setenv("HQ_DB", env_db.c_str(), 1);
    }
    ExecTool(tool, args);
  }
  Result r;
  r.code = WaitForTool(pid, args);
  r.out = Slurp(out_path);
  r.err = Slurp(err_path);
  return r;
}

// Every value of `key` in a JSON document: "key":"VALUE" (strings only).
std::vector<std::string> JsonStrings(const std::string& doc,
                                     const std::string& key) {
  std::vector<std::string> out;
  const std::string k = "\"" + key + "\":\"";
  for (size_t pos = doc.find(k); pos != std::string::npos;
       pos = doc.find(k, pos + 1)) {
    const size_t from = pos + k.size();
    out.push_back(doc.substr(from, doc.find('"', from) - from));
  }
  return out;
}

size_t Occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos;
       pos = text.find(what, pos + 1)) {
    ++n;
  }
  return n;
}

// A Db directory holding the sample (test/sample_db.h), closed.
class Sample {
 public:
  Sample() : f_(Storage::kDisk, NoBackgroundSweeps()) {
    PopulateSample(f_.db());
    Queue* q = ValueOrDie(f_.db()->OpenQueue("q"));
    for (const ScannedMessage& m : ScanAll(q)) ids_[m.payload] = m.id;
    f_.Close();
  }
  const std::string& path() const { return f_.path(); }
  std::string db_flag() const { return "--db=" + f_.path(); }
  MessageId id(const std::string& payload) { return ids_.at(payload); }
  DbFixture& fixture() { return f_; }

 private:
  DbFixture f_;
  std::map<std::string, MessageId> ids_;
};

TEST_CASE("hq ls lists the queues as a table and as JSON") {
  Sample s;
  Result r = Run({s.db_flag(), "ls"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(absl::StrContains(r.out, "QUEUE"));
  CHECK(absl::StrContains(r.out, "q.dead.g"));
  CHECK(absl::StrContains(r.out, "topic"));
  CHECK(absl::StrContains(r.out, "1h"));  // t's TTL.
  // Columns line up: every row starts its LAYOUT cell where the header does.
  const size_t col = r.out.find("LAYOUT");
  std::istringstream lines(r.out);
  std::string line;
  while (std::getline(lines, line)) {
    REQUIRE(line.size() > col);
    CHECK((line.substr(col, 4) == "time" || line.substr(col, 5) == "topic" ||
           line.substr(col, 6) == "LAYOUT"));
  }

  r = Run({"ls", "--json"}, "", s.path());  // The Db from $HQ_DB.
  REQUIRE(r.code == 0);
  CHECK(absl::StartsWith(r.out, "{\"db\":"));
  CHECK(absl::StrContains(r.out,
                          "{\"name\":\"q\",\"partitions\":2,\"priorities\":2,"
                          "\"layout\":\"time\",\"ttl_ms\":null"));
  CHECK(absl::StrContains(r.out,
                          "\"name\":\"t\",\"partitions\":3,"
                          "\"priorities\":1,\"layout\":\"topic\","
                          "\"ttl_ms\":3600000"));
  CHECK(absl::StrContains(r.out, "\"groups\":1,\"subscriptions\":1"));
  CHECK(Occurrences(r.out, "\"approximate_bytes\":") == 3);
}

TEST_CASE("hq stat shows partitions, groups and subscriptions") {
  Sample s;
  Result r = Run({s.db_flag(), "stat", "q"});
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK(absl::StrContains(r.out, "queue q: 2 partitions, 2 priorities"));
  CHECK(absl::StrContains(r.out, "FIRST"));
  CHECK(absl::StrContains(r.out, s.id("m0").ToString()));  // First of p0.
  CHECK(absl::StrContains(r.out, s.id("m9").ToString()));  // Last of p1.
  CHECK(absl::StrContains(r.out, "IN_FLIGHT"));
  CHECK(absl::StrContains(r.out, "COMPLETION"));
  CHECK(absl::StrContains(r.out, "CHECKPOINT"));

  r = Run({s.db_flag(), "stat", "q", "--json"});
  REQUIRE(r.code == 0);
  CHECK(absl::StrContains(r.out, "{\"partition\":0,\"lanes\":1,\"first\":\"" +
                                     s.id("m0").ToString() + "\",\"last\":\"" +
                                     s.id("late2").ToString() +
                                     "\",\"messages\":8,"));
  CHECK(absl::StrContains(r.out, "{\"partition\":1,\"lanes\":1,\"first\":\"" +
                                     s.id("m1").ToString() + "\",\"last\":\"" +
                                     s.id("m9").ToString() +
                                     "\",\"messages\":5,"));
  CHECK(absl::StrContains(r.out,
                          "\"groups\":[{\"name\":\"g\",\"ordered\":"
                          "false,\"topics\":[]"));
  CHECK(absl::StrContains(r.out, "\"dead_letter_queue\":\"q.dead.g\""));
  // Per partition by default; lanes' cursors only with --lanes.
  CHECK(Occurrences(r.out, "\"scan\":") == 0);
  CHECK(absl::StrContains(r.out,
                          "\"partitions\":[{\"partition\":0,"
                          "\"lanes\":1,\"min_completion\":"));
  CHECK(absl::StrContains(r.out,
                          "\"subscriptions\":[{\"name\":\"s\","
                          "\"lag\":3,\"lag_exact\":true"));
  CHECK(Occurrences(r.out, "\"checkpoint\":") == 0);
  CHECK(absl::StrContains(r.out, "\"min_checkpoint\":"));
  r = Run({s.db_flag(), "stat", "q", "--json", "--lanes=10"});
  REQUIRE(r.code == 0);
  CHECK(Occurrences(r.out, "\"scan\":") == 2);  // Two lanes' cursors.
  CHECK(Occurrences(r.out, "\"checkpoint\":") == 2);

  r = Run({s.db_flag(), "groups", "--json"});
  REQUIRE(r.code == 0);
  CHECK(absl::StrContains(r.out, "{\"queue\":\"q\",\"name\":\"g\""));
  CHECK(Occurrences(r.out, "\"name\":") == 1);
  r = Run({s.db_flag(), "groups", "q"});
  REQUIRE(r.code == 0);
  CHECK(absl::StrContains(r.out, "BACKLOG"));
  r = Run({s.db_flag(), "groups", "t"});
  REQUIRE(r.code == 0);
  CHECK(r.out == "no consumer groups\n");
}

TEST_CASE("hq groups delete deletes a group, its dead letters by option") {
  Sample s;
  // Usage errors: exit 2, nothing deleted.
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{
           {"groups", "delete", "q"},
           {"groups", "delete", "q", "g", "x"},
           {"groups", "q", "--force"},
           {"groups", "--keep_dead_letters"},
           {"groups", "delete", "q", "g", "--consumers"}}) {
    std::vector<std::string> a = args;
    a.insert(a.begin(), s.db_flag());
    const Result r = Run(a);
    INFO(absl::StrJoin(a, " ") << ": " << r.err);
    CHECK(r.code == 2);
  }
  Result r = Run({s.db_flag(), "groups", "delete", "q", "nope"});
  CHECK(r.code == 1);
  CHECK(absl::StrContains(r.err, "has no consumer group 'nope'"));
  r = Run({s.db_flag(), "groups", "delete", "nope", "g"});
  CHECK(r.code == 1);
  // Another process holds the Db: exit 4, nothing deleted.
  s.fixture().Reopen();
  r = Run({s.db_flag(), "groups", "delete", "q", "g"});
  CHECK(r.code == 4);
  s.fixture().Close();

  r = Run({s.db_flag(), "groups", "delete", "q", "g", "--keep_dead_letters",
           "--json"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out ==
        "{\"deleted\":{\"queue\":\"q\",\"group\":\"g\","
        "\"dead_letter_queue\":\"q.dead.g\",\"dead_letters_kept\":true}}\n");
  r = Run({s.db_flag(), "groups", "q"});
  REQUIRE(r.code == 0);
  CHECK(r.out == "no consumer groups\n");
  r = Run({s.db_flag(), "ls"});
  CHECK(absl::StrContains(r.out, "q.dead.g"));  // Kept.
  r = Run({s.db_flag(), "groups", "delete", "q", "g"});
  CHECK(r.code == 1);
  CHECK(absl::StrContains(r.err, "has no consumer group 'g'"));

  // A group made again under the name starts afresh; deleted without the
  // option, its dead-letter queue goes with it.
  {
    DbFixture& f = s.fixture();
    f.Reopen();
    HQ_REQUIRE_OK(f.db()->DropQueue("q.dead.g"));
    Queue* q = ValueOrDie(f.db()->OpenQueue("q"));
    ConsumerGroup* g = ValueOrDie(q->Group("g"));
    const std::vector<Task> t = ValueOrDie(g->Claim({.max = 1}));
    REQUIRE(t.size() == 1);
    HQ_REQUIRE_OK(g->Reject(t[0]));
    f.Close();
  }
  r = Run({s.db_flag(), "ls"});
  CHECK(absl::StrContains(r.out, "q.dead.g"));
  r = Run({s.db_flag(), "groups", "delete", "q", "g", "--force"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out == "deleted group g of q\n");
  r = Run({s.db_flag(), "ls"});
  CHECK_FALSE(absl::StrContains(r.out, "q.dead.g"));
  r = Run({s.db_flag(), "verify"});
  CHECK(r.code == 0);

  r = Run({"help", "groups"});
  CHECK(absl::StrContains(r.out, "groups delete QUEUE GROUP"));
  CHECK(absl::StrContains(r.out, "--keep_dead_letters"));
  CHECK(absl::StrContains(r.out, "--force"));
  r = Run({"help"});
  CHECK(absl::StrContains(r.out, "groups delete QUEUE GROUP"));
}

TEST_CASE("hq scan filters by partition, topic, id and time") {
  Sample s;
  auto payloads = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {s.db_flag(), "scan", "q", "--json"});
    const Result r = Run(args);
    INFO(r.err);
    REQUIRE(r.code == 0);
    return JsonStrings(r.out, "payload");
  };
  using V = std::vector<std::string>;
  CHECK(payloads({}).size() == 13);
  CHECK(payloads({"--partitions=1"}) == V{"m1", "m3", "m5", "m7", "m9"});
  CHECK(payloads({"--topics=a", "--lane_order"}) ==
        V{"m0", "m2", "m4", "m6", "m8"});
  CHECK(payloads({"--partitions=0", "--from=" + s.id("m6").ToString()}) ==
        V{"m6", "m8", "late0", "late1", "late2"});
  CHECK(payloads({"--partitions=0", "--to=" + s.id("m4").ToString()}) ==
        V{"m0", "m2"});
  CHECK(payloads({"--partitions=0", "--limit=2"}) == V{"m0", "m2"});
  CHECK(payloads({"--until=2025-06-01T00:00:00Z"}).empty());
  CHECK(payloads({"--since=2025-06-01T00:00:00Z"}).size() == 13);
  CHECK(payloads({"--since=1m"}).empty());  // Written in simulated 2026-01.

  Result r = Run({s.db_flag(), "scan", "q", "--partitions=1"});
  REQUIRE(r.code == 0);
  CHECK(absl::StartsWith(r.out, "PARTITION  PRIORITY  ID"));
  CHECK(absl::StrContains(r.out, "k3"));
  CHECK(Occurrences(r.out, "\n") == 6);
}

TEST_CASE("hq reports bad arguments with exit code 2 and a usage line") {
  Sample s;
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  const std::vector<Case> cases = {
      {{s.db_flag()}, "no subcommand"},
      {{s.db_flag(), "frobnicate"}, "unknown subcommand 'frobnicate'"},
      {{s.db_flag(), "stat"}, "missing arguments: hq stat QUEUE"},
      {{s.db_flag(), "ls", "extra"}, "too many arguments: hq ls"},
      {{s.db_flag(), "dead", "q"}, "missing arguments: hq dead QUEUE GROUP"},
      {{s.db_flag(), "--bogus", "ls"}, "unknown flag --bogus"},
      {{s.db_flag(), "scan", "q", "--limit=many"}, "--limit=many"},
      {{s.db_flag(), "scan", "q", "--from=yesterday"},
       "--from: 'yesterday' is not a message id"},
      {{s.db_flag(), "scan", "q", "--since=someday"},
       "--since: 'someday' is neither"},
      {{s.db_flag(), "scan", "q", "--partitions=0,x"},
       "--partitions: 'x' is not a partition number"},
      {{s.db_flag(), "scan", "q", "--partitions=7"}, "7 is out of range"},
      {{s.db_flag(), "scan", "q", "--follow", "--limit=3"},
       "--follow cannot be combined"},
      {{s.db_flag(), "scan", "q", "--poll"}, "--poll needs a value"},
      {{"ls"}, "no database given: pass --db=DIR or set HQ_DB"},
  };
  for (const Case& c : cases) {
    const Result r = Run(c.args);
    INFO(c.message << "\n" << r.err);
    CHECK(r.code == 2);
    CHECK(absl::StrContains(r.err, c.message));
    CHECK(absl::StrContains(r.err, "usage: hq"));
    CHECK(r.out.empty());
  }
  Result r = Run({"help"});
  CHECK(r.code == 0);
  for (const char* cmd :
       {"ls", "stat QUEUE", "put QUEUE", "scan QUEUE", "groups [QUEUE]",
        "dead QUEUE GROUP", "compact", "verify"}) {
    CHECK(absl::StrContains(r.out, cmd));
  }
  CHECK(Run({"--help"}).out == r.out);

  // Failures of the operation itself: exit code 1, no usage line.
  r = Run({s.db_flag(), "stat", "nope"});
  CHECK(r.code == 1);
  CHECK(r.err == "hq: no queue named 'nope'\n");
  r = Run({s.db_flag(), "dead", "q", "nope"});
  CHECK(r.code == 1);
  CHECK(absl::StrContains(r.err, "has no consumer group 'nope'"));
  TempDir empty;
  r = Run({"--db=" + empty.Sub("none"), "ls"});
  CHECK(r.code == 1);
  CHECK(r.err == "hq: no hq database at " + empty.Sub("none") + "\n");
  CHECK_FALSE(std::filesystem::exists(empty.Sub("none")));  // Not created.
}

TEST_CASE("hq refuses to change a Db another process has open") {
  Sample s;
  s.fixture().Reopen();  // This test process holds it.
  const std::string pid = std::to_string(getpid());
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{
           {s.db_flag(), "put", "q"},
           {s.db_flag(), "create", "r"},
           {s.db_flag(), "compact", "--lock_wait=100ms"},
           {s.db_flag(), "dead", "q", "g", "--requeue"}}) {
    const Result r = Run(args, "x\n");
    INFO(absl::StrJoin(args, " "));
    CHECK(r.code == 4);
    CHECK(absl::StartsWith(r.err, "hq: hq database directory '" + s.path() +
                                      "' is in use by another process"));
    CHECK(absl::EndsWith(r.err, "; its LOCK is held by pid " + pid + "\n"));
    CHECK(r.out.empty());
  }
  Result r = Run({s.db_flag(), "put", "q", "--json"}, "x\n");
  CHECK(absl::StrContains(r.out, "\"exit_code\":4,"));
  CHECK(absl::StrContains(r.out, "\"owner_pid\":" + pid + "}}"));
  s.fixture().Close();
  r = Run({s.db_flag(), "put", "q"}, "x\n");
  CHECK(r.code == 0);
}

// Names, sizes and modification times of the files in `dir`.
std::map<std::string, std::pair<uintmax_t, int64_t>> Listing(
    const std::string& dir) {
  std::map<std::string, std::pair<uintmax_t, int64_t>> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    out[e.path().filename().string()] = {
        e.is_directory() ? 0 : e.file_size(),
        e.last_write_time().time_since_epoch().count()};
  }
  return out;
}

TEST_CASE("issue20: hq reads a Db another process has open from a copy") {
  Sample s;
  s.fixture().Reopen();  // This test process is the owner.
  Queue* q = ValueOrDie(s.fixture().db()->OpenQueue("q"));
  // Written by the owner and not synced: in its log only.
  ValueOrDie(q->Put({.payload = "live1", .partition = 1}));
  const std::string pid = std::to_string(getpid());
  const std::string parent =
      std::filesystem::path(s.path()).parent_path().string();
  const auto files = Listing(s.path());
  const auto beside = Listing(parent);

  Result r = Run({s.db_flag(), "scan", "q", "--json", "--partitions=1"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(absl::StartsWith(r.out,
                         "{\"view\":{\"kind\":\"live_copy\","
                         "\"owner_pid\":" +
                             pid + ",\"taken\":\""));
  CHECK(absl::StrContains(r.out,
                          "\"in_flight_visible\":false},"
                          "\"messages\":["));
  CHECK(absl::StrContains(r.out, "\"payload\":\"live1\""));
  CHECK(r.err.empty());

  r = Run({s.db_flag(), "stat", "q"});
  REQUIRE(r.code == 0);
  CHECK(absl::StartsWith(r.err, "hq: live view: " + s.path() +
                                    " is open in process " + pid +
                                    "; this is a copy taken at "));
  CHECK(absl::StrContains(r.out, "queue q: 2 partitions"));
  for (const char* cmd : {"ls", "groups", "verify"}) {
    r = Run({s.db_flag(), cmd});
    INFO(cmd << ": " << r.err);
    CHECK(r.code == 0);
  }
  r = Run({s.db_flag(), "dead", "q", "g", "--json"});
  CHECK(r.code == 0);
  CHECK(absl::StrContains(r.out, "\"dead_letters\":[{"));

  // The live directory is as it was, and no copy is left beside it.
  auto describe = [](const auto& listing) {
    std::string out;
    for (const auto& [name, st] : listing)
      out += absl::StrCat(name, " ", st.first, " ", st.second, "\n");
    return out;
  };
  INFO("before:\n"
       << describe(files) << "after:\n"
       << describe(Listing(s.path())));
  CHECK(Listing(s.path()) == files);
  CHECK(Listing(parent) == beside);
  // The owner goes on.
  ValueOrDie(q->Put({.payload = "live2", .partition = 1}));
  s.fixture().Close();
  r = Run({s.db_flag(), "scan", "q", "--partitions=1"});
  CHECK(absl::StrContains(r.out, "live1"));
  CHECK(absl::StrContains(r.out, "live2"));
  CHECK(r.err.empty());  // Not a view now.
}

TEST_CASE("issue20: the live view shows the owner's own group figures") {
  Options o = NoBackgroundSweeps();
  o.status_interval = absl::Seconds(1);
  DbFixture f(Storage::kDisk, o);
  const std::string db = "--db=" + f.path();
  const std::string file = f.path() + "/" + kLiveStatusFile;
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  for (int i = 0; i < 5; ++i) ValueOrDie(q->Put({.payload = "m"}));
  ConsumerGroup* g = ValueOrDie(q->Group("g", {.lease = absl::Minutes(10)}));
  REQUIRE(ValueOrDie(g->Claim({.max = 2})).size() == 2);
  f.clock().Advance(absl::Seconds(1));
  const absl::Time give_up = absl::Now() + absl::Seconds(60);
  while (!std::filesystem::exists(file)) {
    REQUIRE(absl::Now() < give_up);  // A liveness bound only.
    absl::SleepFor(absl::Milliseconds(1));
  }

  Result r = Run({db, "groups", "--json"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(absl::StrContains(r.out,
                          "\"in_flight_visible\":true,"
                          "\"status\":{\"written\":"));
  CHECK(absl::StrContains(r.out, "\"backlog\":3,"));
  CHECK(absl::StrContains(r.out, "\"in_flight\":2,\"redelivery\":0,"));
  CHECK(absl::StrContains(r.out, "\"live\":{\"claimed_per_s\":"));
  CHECK(absl::StrContains(r.out, "\"claimed_total\":2,"));

  r = Run({db, "groups"});
  REQUIRE(r.code == 0);
  CHECK(absl::StrContains(r.err, "except for the 1 groups loaded in process " +
                                     std::to_string(getpid()) +
                                     ", shown with its own figures"));
  r = Run({db, "pending", "q", "g", "--json"});
  REQUIRE(r.code == 0);
  CHECK(Occurrences(r.out, "\"state\":\"in_flight\"") == 2);
  CHECK(Occurrences(r.out, "\"lease_deadline\":") == 2);
  CHECK(Occurrences(r.out, "redelivery") == 0);

  // A status file of another process than the lock's owner is stale: the
  // view is the copy's alone. Open deletes one left over.
  f.Close();
  CHECK_FALSE(std::filesystem::exists(file));  // Removed at the close.
  LiveStatus stale;
  stale.pid = getpid() + 1;
  stale.written = absl::Now();
  auto write_stale = [&] {
    std::ofstream out(file, std::ios::binary);
    out << EncodeLiveStatus(stale);
  };
  write_stale();
  Options quiet = NoBackgroundSweeps();
  quiet.status_interval = absl::ZeroDuration();
  auto owner = ValueOrDie(Db::Open(f.path(), quiet));
  CHECK_FALSE(std::filesystem::exists(file));
  write_stale();
  r = Run({db, "groups", "--json"});
  REQUIRE(r.code == 0);
  CHECK(absl::StrContains(r.out, "\"in_flight_visible\":false}"));
  CHECK(absl::StrContains(r.out, "\"in_flight\":0,\"redelivery\":2,"));
}

TEST_CASE("issue20: the live view of a Db being written and compacted") {
  Options options = NoBackgroundSweeps();
  options.write_buffer_bytes = 64 << 10;  // Flushes and compactions.
  DbFixture f(Storage::kDisk, options);
  Queue* q = ValueOrDie(f.db()->CreateQueue("w", {.partitions = 2}));
  std::atomic<bool> stop{false};
  std::atomic<int64_t> committed{0};
  std::thread writer([&] {
    const std::string pad(200, 'x');
    for (int64_t i = 0; !stop.load(); ++i) {
      if (!q->Put({.payload = absl::StrCat(i, pad)}).ok()) return;
      committed.store(i + 1);
    }
  });
  // Every run answers, and sees at least what was written before it began:
  // the copy is of the Db as of a moment after that.
  for (int run = 0; run < 8; ++run) {
    const int64_t before = committed.load();
    const Result r = Run({"--db=" + f.path(), "scan", "w", "--json"});
    INFO("run " << run << ": " << r.err);
    CHECK(r.code == 0);
    CHECK(absl::StartsWith(r.out, "{\"view\":{\"kind\":\"live_copy\""));
    CHECK(static_cast<int64_t>(Occurrences(r.out, "\"payload\":")) >= before);
  }
  stop.store(true);
  writer.join();
  CHECK(committed.load() > 0);
}

TEST_CASE("hq put writes stdin lines or files as messages") {
  Sample s;
  Result r = Run({s.db_flag(), "put", "t", "--topic=news", "--key=k1",
                  "--priority=0", "--json"},
                 "first line\nsecond \"line\"\n\nlast");
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(Occurrences(r.out, "\"id\":") == 4);
  TempDir files;
  {
    std::ofstream(files.Sub("a"), std::ios::binary) << "file\none";
    std::ofstream(files.Sub("b"), std::ios::binary) << std::string(
        "b\xff"
        "b",
        3);
  }
  r = Run({s.db_flag(), "put", "q", files.Sub("a"), files.Sub("b"),
           "--partition=1", "--priority=1", "--delay=1h"});
  REQUIRE(r.code == 0);
  CHECK(r.out == "put 2 messages to q\n");
  r = Run({s.db_flag(), "put", "q", files.Sub("missing")});
  CHECK(r.code == 1);
  CHECK(absl::StrContains(r.err, "cannot read '" + files.Sub("missing")));
  r = Run({s.db_flag(), "put", "q", "--priority=9"}, "x\n");
  CHECK(r.code == 1);
  CHECK(absl::StrContains(r.err, "priority"));

  s.fixture().Reopen();
  Queue* t = ValueOrDie(s.fixture().db()->OpenQueue("t"));
  std::vector<std::string> news;
  for (const ScannedMessage& m : ScanAll(t, {.topics = {"news"}})) {
    CHECK(m.key == "k1");
    news.push_back(m.payload);
  }
  CHECK(news ==
        std::vector<std::string>{"first line", "second \"line\"", "", "last"});
  Queue* q = ValueOrDie(s.fixture().db()->OpenQueue("q"));
  std::vector<ScannedMessage> high;
  for (const ScannedMessage& m : ScanAll(q, {.partitions = {1}})) {
    if (m.priority == 1) high.push_back(m);
  }
  REQUIRE(high.size() == 2);
  CHECK(high[0].payload == "file\none");
  CHECK(high[1].payload == std::string("b\xff"
                                       "b",
                                       3));
  // Payloads that are not UTF-8 come out of scan --json as base64.
  s.fixture().Close();
  r = Run({s.db_flag(), "scan", "q", "--partitions=1", "--json"});
  CHECK(absl::StrContains(r.out, "\"payload\":\"file\\none\""));
  CHECK(absl::StrContains(r.out, "\"payload_base64\":\"Yv9i\""));
  CHECK(Occurrences(r.out, "\"not_before\":") == 2);
}

TEST_CASE("hq dead lists dead letters and --requeue puts them back") {
  Sample s;
  Result r = Run({s.db_flag(), "dead", "q", "g", "--json"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  // The released task. (The one in flight when the sample closed is
  // delivered again: the tool loads groups with the default max_attempts.)
  CHECK(Occurrences(r.out, "\"original_id\":") == 1);
  CHECK(absl::StrContains(r.out, "\"reason\":\"released\""));
  const size_t at = r.out.find("\"payload\":\"");
  REQUIRE(at != std::string::npos);
  const std::string payload =
      r.out.substr(at + 11, r.out.find('"', at + 11) - at - 11);
  r = Run({s.db_flag(), "dead", "q", "g"});
  REQUIRE(r.code == 0);
  CHECK(absl::StrContains(r.out, "released"));

  r = Run({s.db_flag(), "dead", "q", "g", "--requeue"});
  REQUIRE(r.code == 0);
  CHECK(absl::StrContains(r.out, "requeued 1 dead letter to q"));
  r = Run({s.db_flag(), "dead", "q", "g"});
  REQUIRE(r.code == 0);
  CHECK(r.out == "no dead letters in group g of q\n");

  s.fixture().Reopen();
  Queue* q = ValueOrDie(s.fixture().db()->OpenQueue("q"));
  size_t copies = 0;
  for (const ScannedMessage& m : ScanAll(q)) copies += m.payload == payload;
  CHECK(copies == 2);  // The original and the requeued message.
}

// Issue 19: hq pending lists a group's tasks one by one. The tool loads
// the group as a restart would, so the tasks in flight when the owner
// closed are listed as redelivery.
TEST_CASE("issue19: hq pending lists a group's pending tasks") {
  DbFixture f(Storage::kDisk, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("p", {.partitions = 2}));
  for (int i = 0; i < 5; ++i) {
    HQ_REQUIRE_OK(
        q->Put({.topic = absl::StrCat("t", i), .payload = "x"}).status());
  }
  const std::vector<Task> held =
      ValueOrDie(ValueOrDie(q->Group("w"))->Claim({.max = 3}));
  REQUIRE(held.size() == 3);
  ValueOrDie(q->Group("idle"));
  ValueOrDie(q->Group("fresh", {.start = GroupOptions::Start::kLatest}));
  f.Close();
  const std::string db = "--db=" + f.path();

  Result r = Run({db, "pending", "p", "w", "--json"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(Occurrences(r.out, "\"state\":\"redelivery\"") == 3);
  CHECK(Occurrences(r.out, "\"attempt\":1") == 3);
  for (const Task& t : held) {
    CHECK(absl::StrContains(r.out,
                            absl::StrCat("\"id\":\"", t.id.ToString(), "\"")));
    CHECK(absl::StrContains(r.out, absl::StrCat("\"topic\":\"", t.topic)));
  }
  r = Run({db, "pending", "p", "w", "--limit=2", "--json"});
  REQUIRE(r.code == 0);
  CHECK(Occurrences(r.out, "\"state\":") == 2);
  r = Run({db, "pending", "p", "w"});
  REQUIRE(r.code == 0);
  CHECK(absl::StrContains(r.out, "STATE"));
  CHECK(Occurrences(r.out, "redelivery") == 3);
  r = Run({db, "pending", "p", "idle"});
  REQUIRE(r.code == 0);
  CHECK(r.out == "no pending tasks in group idle of p\n");
  r = Run({db, "pending", "p", "nope"});
  CHECK(r.code != 0);
  r = Run({db, "pending", "p"});
  CHECK(r.code == 2);
  // hq groups reports where each group started.
  r = Run({db, "groups", "p", "--json"});
  REQUIRE(r.code == 0);
  CHECK(Occurrences(r.out, "\"start\":\"earliest\"") == 2);
  CHECK(Occurrences(r.out, "\"start\":\"latest\",\"start_ids\":[\"") == 1);
}

// A running `hq scan --follow` with a pipe from its stdout.
class Follower : public test::Child {
 public:
  explicit Follower(const std::vector<std::string>& args)
      : test::Child(Tool(), args) {}
};

TEST_CASE("hq scan --follow shows what is written while it polls") {
  Sample s;
  Follower f({s.db_flag(), "scan", "q", "--partitions=1", "--follow",
              "--poll=20ms", "--json"});
  for (const char* p : {"m1", "m3", "m5", "m7", "m9"}) {
    const std::string line = f.ReadLine();
    INFO(line);
    CHECK(absl::StrContains(line, std::string("\"payload\":\"") + p + "\""));
  }
  // The follower holds the Db only while it polls: another process (here,
  // hq put, which waits for the lock) gets in between.
  Result r = Run({s.db_flag(), "put", "q", "--partition=1", "--lock_wait=30s"},
                 "new1\n");
  REQUIRE(r.code == 0);
  std::string line = f.ReadLine();
  CHECK(absl::StrContains(line, "\"payload\":\"new1\""));
  // So does the library, retrying its Open.
  {
    std::unique_ptr<Db> db;
    const absl::Time give_up = absl::Now() + absl::Seconds(30);
    while (db == nullptr) {
      auto opened = Db::Open(s.path(), NoBackgroundSweeps());
      if (opened.ok()) {
        db = std::move(opened).value();
      } else {
        REQUIRE(absl::IsFailedPrecondition(opened.status()));
        REQUIRE(absl::Now() < give_up);  // A liveness bound only.
        absl::SleepFor(absl::Milliseconds(5));
      }
    }
    Queue* q = ValueOrDie(db->OpenQueue("q"));
    ValueOrDie(q->Put({.payload = "new2", .partition = 1}));
    ValueOrDie(q->Put({.payload = "other partition", .partition = 0}));
  }
  line = f.ReadLine();
  CHECK(absl::StrContains(line, "\"payload\":\"new2\""));
  CHECK(f.Stop(SIGINT) == 0);

  // --follow_for ends it by itself; SIGTERM stops it cleanly too.
  Result timed = Run({s.db_flag(), "scan", "q", "--partitions=1", "--follow",
                      "--follow_for=100ms"});
  CHECK(timed.code == 0);
  CHECK(Occurrences(timed.out, "new") == 2);
  Follower term({s.db_flag(), "scan", "q", "--follow"});
  int lines = 0;
  while (term.ReadLine() != "-- following q (Ctrl-C to stop) --") {
    REQUIRE(++lines <= 16);  // 16 messages of q, one line each.
  }
  CHECK(lines == 16);
  CHECK(term.Stop(SIGTERM) == 0);
}

TEST_CASE("hq verify passes a clean Db and names a corrupted record") {
  Sample s;
  Result r = Run({s.db_flag(), "verify"});
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK(absl::StrContains(r.out, "3 queues, 20 messages, "));
  CHECK(absl::StrContains(r.out, "no problems"));

  // Damage one message value through raw LevelDB.
  std::string key;
  {
    leveldb::DB* raw = nullptr;
    REQUIRE(leveldb::DB::Open(leveldb::Options(), s.path(), &raw).ok());
    std::unique_ptr<leveldb::DB> owned(raw);
    std::string v;
    REQUIRE(raw->Get({}, format::CatalogKey("q"), &v).ok());
    format::QueueRecord rec;
    HQ_REQUIRE_OK(format::DecodeQueueRecord(v, &rec));
    LayoutCodec::For(Layout::kTime)
        .AppendMessageKey(&key, rec.id, 1, 0, "b", s.id("m3"));
    REQUIRE(raw->Get({}, key, &v).ok());
    REQUIRE(raw->Put({}, key, "\x05garbage").ok());
  }
  const std::string hex = absl::BytesToHexString(key);
  r = Run({s.db_flag(), "verify"});
  CHECK(r.code == 3);
  CHECK(absl::StrContains(r.out, hex + "  malformed message value"));
  CHECK(absl::StrContains(r.out, ": 1 problem\n"));
  r = Run({s.db_flag(), "verify", "--json"});
  CHECK(r.code == 3);
  CHECK(absl::StrContains(r.out, "\"ok\":false"));
  CHECK(absl::StrContains(r.out, "{\"key_hex\":\"" + hex +
                                     "\",\"description\":\"malformed message "
                                     "value\",\"file\":\"\"}"));
}

void Spit(const std::string& path, const std::string& data) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << data;
}

TEST_CASE("hq names damaged files: a table block, a log hole, no CURRENT") {
  TempDir dir;
  const std::string path = dir.Sub("db");
  {
    auto db = ValueOrDie(Db::Open(path, NoBackgroundSweeps()));
    Queue* q = ValueOrDie(db->CreateQueue("q", {}));
    for (int i = 0; i < 3600; ++i) {
      if (i == 3000) HQ_REQUIRE_OK(db->CompactAll().status());
      HQ_REQUIRE_OK(
          q->Put({.payload = absl::StrCat(i, std::string(90, 'p'))}).status());
    }
  }
  const std::string table = LargestFile(path, ".ldb");
  const std::string log = LargestFile(path, ".log");
  REQUIRE(!table.empty());
  REQUIRE(!log.empty());
  const std::string flag = "--db=" + path;

  // A zeroed page in the middle of the log: Open warns what it dropped.
  std::string data = Slurp(path + "/" + log);
  const size_t page = data.size() / 2 / 4096 * 4096;
  std::fill(data.begin() + page, data.begin() + page + 4096, '\0');
  Spit(path + "/" + log, data);
  Result r = Run({flag, "ls"});
  INFO(r.out << r.err);
  CHECK(r.code == 0);
  CHECK(absl::StrContains(r.err, "hq: warning: "));
  CHECK(absl::StrContains(r.err, "recovery dropped"));
  CHECK(absl::StrContains(r.err, "dropped/" + log + ".hole-at-"));
  r = Run({flag, "verify", "--json"});
  CHECK(r.code == 3);
  CHECK(absl::StrContains(r.out, "\"file\":\"dropped/" + log + ".hole-at-"));

  // A flipped block of the table: verify names the file, exit 3.
  data = Slurp(path + "/" + table);
  for (size_t i = data.size() / 2; i < data.size() / 2 + 16; ++i) data[i] ^= 1;
  Spit(path + "/" + table, data);
  r = Run({flag, "scan", "q"});
  CHECK(r.code == 3);
  CHECK(absl::StrContains(r.err, table));
  CHECK(absl::StrContains(r.err, "checksum mismatch"));
  r = Run({flag, "verify", "--json"});
  CHECK(r.code == 3);
  CHECK(absl::StrContains(r.out, "\"file\":\"" + table + "\""));
  // The table names the file in a column of its own.
  r = Run({flag, "verify"});
  CHECK(r.code == 3);
  CHECK(absl::StrContains(r.out, "FILE"));
  CHECK(absl::StrContains(r.out, "\n" + table + " "));

  // No CURRENT: DataLoss (exit 3) saying what to run, not "no database".
  std::filesystem::remove(path + "/CURRENT");
  r = Run({flag, "ls"});
  CHECK(r.code == 3);
  CHECK(absl::StrContains(r.err, "no CURRENT"));
  CHECK(absl::StrContains(r.err, "hq repair"));
  CHECK(std::filesystem::exists(path + "/" + table));
}

TEST_CASE("hq compact sweeps expired messages and compacts") {
  Sample s;
  // t's messages have simulated 2026-01-01 ids and a 1 h TTL: expired by
  // the tool's real clock.
  Result r = Run({s.db_flag(), "compact", "--json"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(absl::StrContains(r.out, "\"expired_deleted\":6"));
  r = Run({s.db_flag(), "compact"});
  REQUIRE(r.code == 0);
  CHECK(absl::StartsWith(r.out, "TTL sweep: 0 expired messages deleted"));
  r = Run({s.db_flag(), "verify"});
  CHECK(r.code == 0);
}

// ---- issue 15: repair and backup.

// Writes `key` -> `value` into the closed Db at `path` through raw LevelDB.
void RawPut(const std::string& path, const std::string& key,
            const std::string& value) {
  leveldb::DB* raw = nullptr;
  REQUIRE(leveldb::DB::Open(leveldb::Options(), path, &raw).ok());
  std::unique_ptr<leveldb::DB> owned(raw);
  REQUIRE(raw->Put({}, key, value).ok());
}

TEST_CASE("issue15: hq repair mends a damaged Db and says what it did") {
  Sample s;
  RawPut(s.path(),
         "\x7f"
         "unknown",
         "v");
  Result r = Run({s.db_flag(), "verify"});
  REQUIRE(r.code == 3);

  // Held by another process (this one): refused, the holder named.
  s.fixture().Reopen();
  r = Run({"repair", s.path()});
  CHECK(r.code == 4);
  CHECK(absl::StrContains(r.err, "in use by another process"));
  CHECK(absl::StrContains(r.err, "held by pid " + std::to_string(getpid())));
  s.fixture().Close();

  r = Run({"repair", s.path()});
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK(absl::StrContains(r.out, "copied " + s.path() + " aside to " +
                                     s.path() + ".before-repair-"));
  CHECK(absl::StrContains(r.out, "hq records changed:"));
  CHECK(absl::StrContains(r.out, "7f756e6b6e6f776e  1      moved aside"));
  CHECK(absl::StrContains(r.out, "unknown record tag 0x7f: moved aside"));
  CHECK(absl::StrContains(r.out, "1 records moved aside"));
  CHECK(absl::StrContains(r.out, "LevelDB's repair log:"));
  CHECK(absl::StrContains(r.out, "MESSAGES_BEFORE  MESSAGES_AFTER"));
  CHECK(absl::StrContains(
      r.out, "repaired " + s.path() + ": verifies clean; see above"));
  r = Run({s.db_flag(), "verify"});
  CHECK(r.code == 0);

  // A missing CURRENT: Open refuses and says what to run; that works.
  REQUIRE(std::filesystem::remove(s.path() + "/CURRENT"));
  r = Run({s.db_flag(), "ls"});
  CHECK(r.code == 3);
  CHECK(absl::StrContains(r.err, "run `hq repair " + s.path() + "`"));
  r = Run({s.db_flag(), "repair", "--json"});
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK(absl::StrContains(r.out,
                          "\"damage\":[{\"file\":\"CURRENT\","
                          "\"what\":\"missing\""));
  CHECK(absl::StrContains(r.out, "\"clean\":true"));
  CHECK(absl::StrContains(r.out,
                          "\"messages_before\":20,"
                          "\"messages_after\":20"));
  r = Run({s.db_flag(), "scan", "q", "--json"});
  CHECK(r.code == 0);
  CHECK(Occurrences(r.out, "\"payload\":") == 13);

  // Usage errors.
  CHECK(Run({"--db=/elsewhere", "repair", s.path()}).code == 2);
  CHECK(Run({"repair", s.path(), "extra"}).code == 2);
  CHECK(Run({"repair"}).code == 2);  // No database at all.
}

TEST_CASE("issue15: hq backup copies a Db, also one another process holds") {
  Sample s;
  TempDir out;
  Result r = Run({s.db_flag(), "backup", out.Sub("b1"), "--verify"});
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK(absl::StartsWith(
      r.out, "backup of " + s.path() + " in " + out.Sub("b1") + ": "));
  CHECK(absl::StrContains(r.out, "verify: "));
  CHECK(absl::StrContains(r.out, "20 messages: no problems"));
  r = Run({"--db=" + out.Sub("b1"), "scan", "q", "--json"});
  CHECK(Occurrences(r.out, "\"payload\":") == 13);

  // Held by this process, which keeps writing: copied from outside.
  s.fixture().Reopen();
  Queue* q = ValueOrDie(s.fixture().db()->OpenQueue("q"));
  ValueOrDie(q->Put({.payload = "live", .partition = 1}));
  r = Run({"backup", s.path(), out.Sub("b2"), "--json", "--verify"});
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK(absl::StrContains(r.out,
                          "\"method\":\"live_copy\","
                          "\"owner_pid\":" +
                              std::to_string(getpid())));
  CHECK(absl::StrContains(r.out, "\"verify\":{\"ok\":true"));
  r = Run({"backup", s.path(), out.Sub("b3")});
  CHECK(r.code == 0);
  CHECK(absl::StrContains(r.err,
                          "is open in process " + std::to_string(getpid())));
  r = Run({"backup", s.path(), s.path() + "/inside"});
  CHECK(r.code == 1);
  CHECK(absl::StrContains(r.err, "inside the database directory"));
  s.fixture().Close();
  r = Run({"--db=" + out.Sub("b2"), "scan", "q", "--partitions=1"});
  CHECK(absl::StrContains(r.out, "live"));

  // Errors: a destination that exists, bad arguments.
  r = Run({s.db_flag(), "backup", out.Sub("b1")});
  CHECK(r.code == 1);
  CHECK(absl::StrContains(r.err, "is not empty"));
  CHECK(Run({s.db_flag(), "backup"}).code == 2);
  CHECK(Run({s.db_flag(), "backup", "a", "b", "c"}).code == 2);
  CHECK(Run({s.db_flag(), "ls", "--verify"}).code == 2);
}

}  // namespace
}  // namespace hq::test

namespace hq::test {
namespace {

// The number of messages `hq scan QUEUE --json` prints, and the last payload.
std::pair<size_t, std::string> ScanCount(const std::string& db_flag,
                                         const std::string& queue) {
  const Result r = Run({db_flag, "scan", queue, "--json"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  const size_t n = Occurrences(r.out, "\"payload\":\"");
  std::string last;
  if (const size_t pos = r.out.rfind("\"payload\":\"");
      pos != std::string::npos) {
    last = r.out.substr(pos + 11, r.out.find('"', pos + 11) - pos - 11);
  }
  return {n, last};
}

TEST_CASE("issue20: a put that fails part way says how much was stored") {
  Sample s;
  const size_t before = ScanCount(s.db_flag(), "t").first;
  std::string input;
  for (int i = 1; i <= 5000; ++i) input += absl::StrFormat("%080d\n", i);
  // 200 KiB per file: the log fills after a few batches of 1000 lines.
  const Result r =
      Run({s.db_flag(), "put", "t", "--json"}, input, "", 200 << 10);
  INFO(r.out << r.err);
  REQUIRE(r.code == 1);
  CHECK(absl::StrContains(r.err, "File too large"));
  const size_t at = r.out.find("\"stored\":");
  REQUIRE(at != std::string::npos);
  const int stored = std::atoi(r.out.c_str() + at + 9);
  CHECK(stored > 0);
  CHECK(stored < 5000);
  CHECK(stored % 1000 == 0);  // Whole batches: each is atomic.
  CHECK(absl::StrContains(r.out, "\"total\":5000"));
  CHECK(absl::StrContains(r.out, "\"code\":\"INTERNAL\""));
  CHECK(absl::StrContains(
      r.err,
      absl::StrCat("stored the first ", stored, " of 5000 messages, lines 1..",
                   stored, "; nothing after them: resume with line ",
                   stored + 1, ", as tail -n +", stored + 1)));
  // Exactly what it said is stored: lines 1..stored.
  const auto [n, last] = ScanCount(s.db_flag(), "t");
  CHECK(n == before + stored);
  CHECK(last == absl::StrFormat("%080d", stored));
}

TEST_CASE("issue20: a directory given to put is an error and stores nothing") {
  Sample s;
  TempDir dir;
  const size_t before = ScanCount(s.db_flag(), "t").first;
  const Result r = Run({s.db_flag(), "put", "t", dir.path()});
  CHECK(r.code == 1);
  CHECK(r.err == "hq: cannot read '" + dir.path() + "': Is a directory\n");
  CHECK(ScanCount(s.db_flag(), "t").first == before);
}

TEST_CASE("issue20: bad flag values and flags a subcommand ignores") {
  Sample s;
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{s.db_flag(), "scan", "q", "--follow", "--follow_for=-1s"},
       "--follow_for=-1s: must be >= 0"},
      {{s.db_flag(), "ls", "--lock_wait=-1s"}, "--lock_wait=-1s: must be >= 0"},
      {{s.db_flag(), "scan", "q", "--width=-3"}, "--width=-3: must be 0.."},
      {{s.db_flag(), "scan", "q", "--poll=0s"}, "--poll=0: must be >= 1ms"},
      {{s.db_flag(), "stat", "q", "--lanes=-1"},
       "--lanes=-1: must be 0..100000"},
      {{s.db_flag(), "ls", "--limit=1"},
       "--limit does not apply to hq ls (hq ls --help lists its flags)"},
      {{s.db_flag(), "ls", "--topics=x"}, "--topics does not apply to hq ls"},
      {{s.db_flag(), "ls", "--requeue"}, "--requeue does not apply to hq ls"},
      {{s.db_flag(), "stat", "q", "--limit=3"},
       "--limit does not apply to hq stat"},
      {{s.db_flag(), "create", "r", "--num_partitions=0"},
       "--num_partitions=0: must be 1..65535"},
      {{s.db_flag(), "create", "r", "--num_priorities=1000000"},
       "--num_priorities=1000000: must be 1..256"},
      {{s.db_flag(), "create", "r", "--ttl=-5m"}, "--ttl=-5m: must be >= 1ms"},
      {{s.db_flag(), "put", "t", "--priority=-1"}, "--priority=-1: must be 0"},
      {{s.db_flag(), "put", "t", "--dedup_key=k"},
       "--dedup_key names one message; the input has 2"},
  };
  for (const Case& c : cases) {
    const Result r = Run(c.args, "a\nb\n");
    INFO(absl::StrJoin(c.args, " ") << "\n" << r.err);
    CHECK(r.code == 2);
    CHECK(absl::StrContains(r.err, c.message));
    CHECK(r.out.empty());
  }
  CHECK_FALSE(absl::StrContains(Run({s.db_flag(), "ls"}).out, "\nr "));
}

TEST_CASE("issue20: --json gives errors as a JSON object too") {
  Sample s;
  Result r = Run({s.db_flag(), "stat", "nope", "--json"});
  CHECK(r.code == 1);
  CHECK(r.out ==
        "{\"error\":{\"exit_code\":1,\"code\":\"NOT_FOUND\",\"message\":"
        "\"no queue named 'nope'\"}}\n");
  CHECK(r.err == "hq: no queue named 'nope'\n");  // And as text.
  r = Run({"--json", s.db_flag(), "scan", "q", "--limit=x"});
  CHECK(r.code == 2);
  CHECK(absl::StrContains(r.out,
                          "{\"error\":{\"exit_code\":2,"
                          "\"code\":\"INVALID_ARGUMENT\""));
  r = Run({"help", "--json"});
  CHECK(r.code == 0);
  CHECK(absl::StartsWith(r.out, "{\"usage\":\"usage: hq "));
  CHECK(absl::StrContains(r.out, "{\"name\":\"put\",\"synopsis\":"));
}

TEST_CASE("issue20: an unreadable database path is an error, not an abort") {
  // ENAMETOOLONG fails the lookup for every user, root included.
  const std::string long_name(300, 'x');
  Result r = Run({"--db=" + long_name, "ls"});
  CHECK(r.code == 1);
  CHECK(r.err == "hq: cannot read " + long_name + ": File name too long\n");
  if (geteuid() != 0) {  // Root reads a mode 000 directory anyway.
    TempDir dir;
    std::filesystem::create_directory(dir.Sub("db"));
    chmod(dir.Sub("db").c_str(), 0);
    r = Run({"--db=" + dir.Sub("db"), "ls"});
    chmod(dir.Sub("db").c_str(), 0700);
    CHECK(r.code == 1);
    CHECK(absl::StrContains(r.err, "Permission denied"));
  }
}

TEST_CASE("issue20: --version, per-subcommand help, put --dedup_key") {
  Result r = Run({"--version"});
  CHECK(r.code == 0);
  CHECK(absl::StartsWith(r.out, "hq "));
  r = Run({"put", "--help"});
  CHECK(r.code == 0);
  CHECK(absl::StartsWith(r.out,
                         "usage: hq [--db=DIR] [--json] put QUEUE [FILE...]"));
  CHECK(absl::StrContains(r.out, "--dedup_key"));
  CHECK_FALSE(absl::StrContains(r.out, "--requeue"));
  CHECK(Run({"help", "put"}).out == r.out);

  Sample s;
  r = Run({s.db_flag(), "put", "t", "--dedup_key=https://a.example/"},
          "https://a.example/\n");
  REQUIRE(r.code == 0);
  r = Run({s.db_flag(), "put", "t", "--dedup_key=https://a.example/"},
          "again\n");
  REQUIRE(r.code == 0);
  CHECK(absl::StartsWith(r.out,
                         "not written: a live message of t has "
                         "dedup key 'https://a.example/'"));
  r = Run({s.db_flag(), "scan", "t", "--json"});
  CHECK(Occurrences(r.out, "\"dedup_key\":\"https://a.example/\"") == 1);
  CHECK_FALSE(absl::StrContains(r.out, "again"));
  r = Run({s.db_flag(), "scan", "t"});
  CHECK(absl::StrContains(r.out, "DEDUP_KEY"));
}

TEST_CASE("issue20: stat summarises per partition, lanes only on request") {
  Sample s;
  Result r = Run({s.db_flag(), "stat", "q"});
  REQUIRE(r.code == 0);
  CHECK(absl::StrContains(r.out, "FIRST_TIME"));
  CHECK(absl::StrContains(r.out, "2026-01-01T"));  // The sample's clock.
  CHECK(absl::StrContains(r.out, "CURSOR_LAG"));
  CHECK(absl::StrContains(r.out, "MIN_COMPLETION"));
  CHECK_FALSE(absl::StrContains(r.out, "SCAN  "));  // No lane rows.
  r = Run({s.db_flag(), "stat", "q", "--lanes=1"});
  REQUIRE(r.code == 0);
  CHECK(absl::StrContains(r.out, "(1 more lanes' cursors not listed"));
  CHECK(absl::StrContains(r.out, "(1 more lanes' checkpoints not listed"));
}

// Runs hq as `Run` does, but as an unprivileged user: as nobody:nogroup
// when this test runs as root (root ignores file modes), else as itself.
// Fails the test, never skips it, if privileges cannot be dropped.
Result RunUnprivileged(const std::vector<std::string>& args) {
  TempDir io;
  const std::string out_path = io.Sub("out"), err_path = io.Sub("err");
  const char* tool = Tool();
  const struct passwd* nobody = getpwnam("nobody");
  REQUIRE(nobody != nullptr);
  const uid_t uid = nobody->pw_uid;
  const gid_t gid = nobody->pw_gid;
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const int in = open("/dev/null", O_RDONLY);
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    if (geteuid() == 0 && (setgroups(0, nullptr) != 0 || setgid(gid) != 0 ||
                           setuid(uid) != 0 || setuid(0) == 0)) {
      std::fprintf(stderr, "cannot drop root privileges: %s\n",
                   std::strerror(errno));
      _exit(125);
    }
    unsetenv("HQ_DB");
    ExecTool(tool, args);
  }
  Result r;
  r.code = WaitForTool(pid, args);
  r.out = Slurp(out_path);
  r.err = Slurp(err_path);
  INFO(r.err);
  REQUIRE(r.code != 125);  // The environment must let the test drop root.
  return r;
}

// Sets the mode of `path` and everything under it: `dirs` on directories,
// `files` on the rest.
void ChmodTree(const std::string& path, mode_t dirs, mode_t files) {
  for (const auto& e : std::filesystem::recursive_directory_iterator(path)) {
    chmod(e.path().c_str(), e.is_directory() ? dirs : files);
  }
  chmod(path.c_str(), dirs);
}

TEST_CASE("issue 38: a read-only Db directory is PermissionDenied, exit 1") {
  TempDir dir;
  chmod(dir.path().c_str(), 0755);  // nobody may enter it.
  const std::string path = dir.Sub("db");
  {
    auto db = ValueOrDie(Db::Open(path, NoBackgroundSweeps()));
    Queue* q = ValueOrDie(db->CreateQueue("q", {}));
    HQ_REQUIRE_OK(q->Put({.payload = "m"}).status());
  }
  ChmodTree(path, 0555, 0444);  // chmod -R a-w
  const std::string flag = "--db=" + path;
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{flag, "ls"},
                                             {flag, "put", "q"},
                                             {flag, "repair"},
                                             {flag, "groups", "q"}}) {
    const Result r = RunUnprivileged(args);
    INFO(absl::StrJoin(args, " ") << ": " << r.out << r.err);
    CHECK(r.code == 1);
    CHECK(absl::StrContains(r.err, path + "/LOCK"));
    CHECK(absl::StrContains(r.err, "EACCES"));
    CHECK_FALSE(absl::StrContains(r.err, "in use by another process"));
    CHECK_FALSE(absl::StrContains(r.err, "live view"));
  }
  const Result r = RunUnprivileged({flag, "ls", "--json"});
  INFO(r.out << r.err);
  CHECK(r.code == 1);
  CHECK_FALSE(absl::StrContains(r.out + r.err, "owner_pid"));
  CHECK(absl::StrContains(r.out + r.err, "PERMISSION_DENIED"));
  ChmodTree(path, 0755, 0644);
}

TEST_CASE("issue 38: hq compact on a damaged table exits 3, naming it") {
  TempDir dir;
  const std::string path = dir.Sub("db");
  {
    auto db = ValueOrDie(Db::Open(path, NoBackgroundSweeps()));
    Queue* q = ValueOrDie(db->CreateQueue("q", QueueOptions{.partitions = 2}));
    for (int i = 0; i < 3000; ++i) {
      HQ_REQUIRE_OK(
          q->Put({.payload = absl::StrCat(i, std::string(90, 'p'))}).status());
    }
    HQ_REQUIRE_OK(db->CompactAll().status());
  }
  const std::string table = LargestFile(path, ".ldb");
  REQUIRE(!table.empty());
  std::string data = Slurp(path + "/" + table);
  for (size_t i = data.size() / 2; i < data.size() / 2 + 16; ++i) data[i] ^= 1;
  Spit(path + "/" + table, data);
  const std::string flag = "--db=" + path;
  // New tables over the same key range.
  std::string lines;
  for (int i = 0; i < 500; ++i) lines += absl::StrCat("new-", i, "\n");
  Result r = Run({flag, "put", "q"}, lines);
  REQUIRE(r.code == 0);
  r = Run({flag, "compact"});
  INFO(r.out << r.err);
  CHECK(r.code == 3);
  CHECK_FALSE(absl::StrContains(r.out, "database compacted"));
  CHECK(absl::StrContains(r.err, table));
  CHECK(absl::StrContains(r.err, "checksum mismatch"));
  r = Run({flag, "compact", "--json"});
  CHECK(r.code == 3);
  CHECK(absl::StrContains(r.out + r.err, "DATA_LOSS"));
}

TEST_CASE("issue 38: create under a missing parent names the parent") {
  TempDir dir;
  const std::string parent = dir.Sub("no/such");
  const Result r = Run({"--db=" + parent + "/db", "create", "q"});
  INFO(r.out << r.err);
  CHECK(r.code == 1);
  CHECK(absl::StrContains(r.err, "parent directory '" + parent + "'"));
  CHECK(absl::StrContains(r.err, "does not exist"));
  CHECK_FALSE(absl::StrContains(r.err, "no hq database at"));
  CHECK_FALSE(std::filesystem::exists(dir.Sub("no")));
  const Result j = Run({"--db=" + parent + "/db", "create", "q", "--json"});
  CHECK(j.code == 1);
  CHECK(absl::StrContains(j.out + j.err, "NOT_FOUND"));
}

TEST_CASE("issue38: every subcommand is in hq --help and hq help") {
  Result r = Run({"help", "--json"});
  REQUIRE(r.code == 0);
  std::vector<std::string> names;
  for (size_t pos = r.out.find("{\"name\":\""); pos != std::string::npos;
       pos = r.out.find("{\"name\":\"", pos + 1)) {
    const size_t from = pos + 9;
    names.push_back(r.out.substr(from, r.out.find('"', from) - from));
  }
  CHECK(names.size() >= 13);
  CHECK(std::find(names.begin(), names.end(), "pending") != names.end());
  CHECK(std::find(names.begin(), names.end(), "pacing") != names.end());
  const Result help = Run({"--help"}), help_cmd = Run({"help"});
  REQUIRE(help.code == 0);
  REQUIRE(help_cmd.code == 0);
  CHECK(help.out == help_cmd.out);
  for (const std::string& name : names) {
    INFO(name);
    CHECK(absl::StrContains(help.out, "\n  " + name + " "));
    CHECK(absl::StrContains(help_cmd.out, "\n  " + name + " "));
    CHECK(Run({"help", name}).code == 0);
  }
}

TEST_CASE("issue38: hq pending --after pages without overlap or gap") {
  DbFixture f(Storage::kDisk, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue(
      "p", {.partitions = 2, .priorities = 2, .layout = Layout::kTopic}));
  for (int i = 0; i < 23; ++i) {
    HQ_REQUIRE_OK(q->Put({.topic = absl::StrCat("t", i % 5),
                          .payload = "x",
                          .priority = i % 2})
                      .status());
  }
  const std::vector<Task> held =
      ValueOrDie(ValueOrDie(q->Group("w"))->Claim({.max = 100}));
  REQUIRE(held.size() == 23);
  f.Close();
  const std::string db = "--db=" + f.path();
  const std::vector<std::string> all =
      JsonStrings(Run({db, "pending", "p", "w", "--json"}).out, "id");
  REQUIRE(all.size() == 23);

  std::vector<std::string> paged;
  std::string after;
  int pages = 0;
  for (;; ++pages) {
    REQUIRE(pages < 10);
    std::vector<std::string> args = {db,  "pending",   "p",
                                     "w", "--limit=5", "--json"};
    if (!after.empty()) args.push_back("--after=" + after);
    const Result r = Run(args);
    INFO(r.err);
    REQUIRE(r.code == 0);
    const std::vector<std::string> ids = JsonStrings(r.out, "id");
    paged.insert(paged.end(), ids.begin(), ids.end());
    const std::vector<std::string> next = JsonStrings(r.out, "next_after");
    if (next.empty()) {
      CHECK(absl::StrContains(r.out, "\"next_after\":null"));  // The end.
      break;
    }
    CHECK(ids.size() == 5);
    after = next[0];
  }
  CHECK(pages == 4);
  CHECK(paged == all);  // Same order: no overlap, no gap.

  // As a table: the cursor on stderr while more follow.
  Result r = Run({db, "pending", "p", "w", "--limit=20"});
  REQUIRE(r.code == 0);
  CHECK(absl::StrContains(r.err, "hq: more follow: --after="));
  r = Run({db, "pending", "p", "w", "--limit=23"});
  CHECK_FALSE(absl::StrContains(r.err, "more follow"));
  for (const std::string bad : {"x", "0/0", "0/0/1-2/zz", "0/a/1-2"}) {
    r = Run({db, "pending", "p", "w", "--after=" + bad});
    INFO(bad);
    CHECK(r.code == 2);
    CHECK(absl::StrContains(r.err, "not a cursor of hq pending"));
  }
}

TEST_CASE("issue38: hq pacing reads, sets, lists, pages and clears") {
  DbFixture f(Storage::kDisk, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  ValueOrDie(q->Group("g"));
  f.Close();
  const std::string db = "--db=" + f.path();

  Result r = Run({db, "pacing", "q", "g", "site-a"});
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(absl::StrContains(r.out, "no pacing of its own"));
  r = Run({db, "pacing", "q", "g", "site-a", "--json"});
  CHECK(absl::StrContains(r.out, "\"topic\":\"site-a\",\"pacing\":null"));

  // Set: both, then one (the other kept).
  r = Run({db, "pacing", "q", "g", "site-a", "--max_in_flight=2",
           "--interval=1500ms"});
  REQUIRE(r.code == 0);
  CHECK(r.out == "topic site-a of group g: max_in_flight 2, interval 1.5s\n");
  r = Run({db, "pacing", "q", "g", "site-a", "--interval=3s", "--json"});
  REQUIRE(r.code == 0);
  CHECK(absl::StrContains(
      r.out, "\"pacing\":{\"max_in_flight\":2,\"interval_ms\":3000}"));
  for (int i = 0; i < 7; ++i) {
    REQUIRE(Run({db, "pacing", "q", "g", absl::StrCat("site-", i),
                 "--max_in_flight=1"})
                .code == 0);
  }
  // A group opened afterwards sees the overrides.
  {
    auto owner = ValueOrDie(Db::Open(f.path(), NoBackgroundSweeps()));
    ConsumerGroup* g =
        ValueOrDie(ValueOrDie(owner->OpenQueue("q"))->Group("g"));
    const std::optional<TopicPacing> p =
        ValueOrDie(g->GetTopicPacing("site-a"));
    REQUIRE(p.has_value());
    CHECK(p->max_in_flight == 2);
    CHECK(p->interval == absl::Seconds(3));
    CHECK(ValueOrDie(g->GetTopicPacing("site-3"))->max_in_flight == 1);
  }

  // List all, then page by 3: no overlap, no gap, an end marker.
  r = Run({db, "pacing", "q", "g", "--json"});
  REQUIRE(r.code == 0);
  const std::vector<std::string> all = JsonStrings(r.out, "topic");
  CHECK(all == std::vector<std::string>{"site-0", "site-1", "site-2", "site-3",
                                        "site-4", "site-5", "site-6",
                                        "site-a"});
  CHECK(absl::StrContains(r.out, "\"next_after\":null"));
  std::vector<std::string> paged;
  std::string after;
  for (int page = 0;; ++page) {
    REQUIRE(page < 5);
    std::vector<std::string> args = {db,  "pacing",    "q",
                                     "g", "--limit=3", "--json"};
    if (!after.empty()) args.push_back("--after=" + after);
    r = Run(args);
    REQUIRE(r.code == 0);
    const std::vector<std::string> topics = JsonStrings(r.out, "topic");
    paged.insert(paged.end(), topics.begin(), topics.end());
    const std::vector<std::string> next = JsonStrings(r.out, "next_after");
    if (next.empty()) break;
    after = next[0];
  }
  CHECK(paged == all);
  r = Run({db, "pacing", "q", "g"});
  REQUIRE(r.code == 0);
  CHECK(absl::StrContains(r.out, "MAX_IN_FLIGHT"));
  CHECK(Occurrences(r.out, "site-") == 8);

  // Clear.
  r = Run({db, "pacing", "q", "g", "site-a", "--clear"});
  REQUIRE(r.code == 0);
  r = Run({db, "pacing", "q", "g", "site-a", "--json"});
  CHECK(absl::StrContains(r.out, "\"pacing\":null"));
  CHECK(Occurrences(Run({db, "pacing", "q", "g"}).out, "site-") == 7);

  // Bad inputs.
  struct Bad {
    std::vector<std::string> args;
    int code;
  };
  for (const Bad& b : std::vector<Bad>{
           {{"pacing", "q", "g", "t", "--interval=-1s"}, 2},
           {{"pacing", "q", "g", "t", "--interval=721h"}, 2},
           {{"pacing", "q", "g", "t", "--max_in_flight=-1"}, 2},
           {{"pacing", "q", "g", "t", "--max_in_flight=1000001"}, 2},
           {{"pacing", "q", "g", "t", "--clear", "--max_in_flight=1"}, 2},
           {{"pacing", "q", "g", "--clear"}, 2},
           {{"pacing", "q", "g", "t", "--limit=2"}, 2},
           {{"pacing", "q"}, 2},
           {{"pacing", "q", "g", "t", "u"}, 2},
           {{"pacing", "q", "nope", "t"}, 1},
           {{"pacing", "nope", "g", "t", "--max_in_flight=1"}, 1},
           {{"pacing", "q", "nope"}, 1}}) {
    std::vector<std::string> args = {db};
    args.insert(args.end(), b.args.begin(), b.args.end());
    r = Run(args);
    INFO(absl::StrJoin(args, " ") << "\n" << r.err);
    CHECK(r.code == b.code);
  }
  CHECK(Occurrences(Run({db, "pacing", "q", "g"}).out, "site-") == 7);

  // Writing refuses a Db another process holds; reading takes a live view.
  auto owner = ValueOrDie(Db::Open(f.path(), NoBackgroundSweeps()));
  r = Run({db, "pacing", "q", "g", "site-0", "--max_in_flight=5"});
  CHECK(r.code == 4);
  CHECK(absl::StrContains(r.err, "is in use by another process"));
  r = Run({db, "pacing", "q", "g", "site-0", "--clear"});
  CHECK(r.code == 4);
  r = Run({db, "pacing", "q", "g", "site-0"});
  CHECK(r.code == 0);
  CHECK(absl::StrContains(r.out, "max_in_flight 1, interval 0"));
}

TEST_CASE("issue38: hq groups --consumers, and the live rates in the table") {
  Options o = NoBackgroundSweeps();
  o.status_interval = absl::Hours(1);  // Only the early publications.
  DbFixture f(Storage::kDisk, o);
  const std::string db = "--db=" + f.path();
  const std::string file = f.path() + "/" + kLiveStatusFile;
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.partitions = 2}));
  for (int i = 0; i < 6; ++i) {
    HQ_REQUIRE_OK(
        q->Put({.payload = "m", .partition = static_cast<uint32_t>(i % 2)})
            .status());
  }
  ValueOrDie(q->Group("plain"));
  ConsumerGroup* g =
      ValueOrDie(q->Group("o", {.ordered = true, .lease = absl::Minutes(10)}));
  f.clock().Advance(absl::Seconds(1));
  const std::vector<Task> held = ValueOrDie(
      g->Claim({.max = 2, .lease = absl::Minutes(10), .consumer = "c1"}));
  REQUIRE(!held.empty());
  // The first claim is published at once (written at the claim's time, as
  // the clock stays there); wait (with a deadline) for it.
  const absl::Time give_up = absl::Now() + absl::Seconds(60);
  for (;;) {
    std::string data = Slurp(file);
    absl::StatusOr<LiveStatus> st = DecodeLiveStatus(data);
    if (st.ok() && st->FindGroup("q", "o") != nullptr &&
        st->FindGroup("q", "o")->claimed_total == held.size()) {
      break;
    }
    REQUIRE(absl::Now() < give_up);  // A liveness bound only.
    absl::SleepFor(absl::Milliseconds(1));
  }
  const std::vector<ConsumerInfo> consumers = ValueOrDie(g->Consumers());
  REQUIRE(consumers.size() == 1);
  std::string partitions;
  for (uint32_t p : consumers[0].partitions) {
    absl::StrAppend(&partitions, partitions.empty() ? "" : ",", p);
  }

  Result r = Run({db, "groups", "--consumers", "--json"});
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK(absl::StrContains(
      r.out,
      "{\"queue\":\"q\",\"group\":\"o\",\"ordered\":true,"
      "\"source\":\"live\",\"in_flight_complete\":true,\"consumers\":"
      "[{\"name\":\"c1\",\"in_flight\":" +
          std::to_string(held.size()) + ",\"idle_ms\":0,"));
  CHECK(absl::StrContains(
      r.out, "\"live\":true,\"partitions\":[" + partitions + "]}"));
  CHECK(absl::StrContains(r.out,
                          "{\"queue\":\"q\",\"group\":\"plain\",\"ordered\":"
                          "false,\"source\":\"live\",\"in_flight_complete\":"
                          "true,\"consumers\":[]}"));
  r = Run({db, "groups", "--consumers"});
  REQUIRE(r.code == 0);
  CHECK(absl::StrContains(r.out, "CONSUMER"));
  CHECK(absl::StrContains(r.out, "PARTITIONS"));
  CHECK(Occurrences(r.out, "c1") == 1);
  CHECK(absl::StrContains(r.out, " " + partitions + " "));
  CHECK(absl::StrContains(r.out, "live"));
  CHECK(absl::StrContains(r.err, "SOURCE live:"));

  // The table carries the live rates: claims over the second since load.
  r = Run({db, "groups"});
  REQUIRE(r.code == 0);
  CHECK(absl::StrContains(r.out, "CLAIMED/S"));
  CHECK(absl::StrContains(r.out, "COMPLETED/S"));
  CHECK(absl::StrContains(r.out, absl::StrFormat(" %.1f ", 1.0 * held.size())));

  // From the stored state once the owner is gone: no consumer is live.
  f.Close();
  r = Run({db, "groups", "q", "--consumers", "--json"});
  REQUIRE(r.code == 0);
  CHECK(absl::StrContains(r.out,
                          "\"group\":\"o\",\"ordered\":true,\"source\":"
                          "\"stored\",\"in_flight_complete\":true,"
                          "\"consumers\":[]}"));
  r = Run({db, "groups", "q"});
  REQUIRE(r.code == 0);
  CHECK(Occurrences(r.out, " - ") >= 2);  // No live rates.
  r = Run({db, "groups", "--consumers", "--lanes=1"});
  CHECK(r.code == 2);
}

}  // namespace
}  // namespace hq::test

namespace hq::test {
namespace {

// ---- issue 38: repair of a Db that needs none; an interrupted repair.

TEST_CASE("issue38: hq repair on a clean Db says there is nothing to repair") {
  Sample s;
  // What a repair killed while copying aside leaves.
  const std::string partial =
      s.path() + ".before-repair-20260101T000000Z.partial";
  std::filesystem::create_directories(partial + "/lost");
  std::ofstream(partial + "/CURRENT") << "MANIFEST-000001\n";
  Result r = Run({"repair", s.path()});
  INFO(r.out << r.err);
  CHECK(r.code == 0);
  CHECK(absl::StrContains(r.out,
                          "removed " + partial + ": an unfinished copy aside"));
  CHECK(absl::StrContains(r.out, "nothing to repair: " + s.path() +
                                     " verifies clean (20 messages"));
  CHECK(absl::StrContains(r.out, "nothing was changed"));
  CHECK_FALSE(absl::StrContains(r.out, "Some data may have been lost"));
  CHECK_FALSE(absl::StrContains(r.out, "aside to"));
  const std::filesystem::path db(s.path());
  for (const auto& e : std::filesystem::directory_iterator(db.parent_path())) {
    CHECK_FALSE(
        absl::StrContains(e.path().filename().string(), "before-repair"));
  }
  r = Run({s.db_flag(), "repair", "--json"});
  CHECK(r.code == 0);
  CHECK(absl::StrContains(r.out, "\"nothing_to_repair\":true"));
  CHECK(absl::StrContains(r.out, "\"copied_to\":\"\""));
  CHECK(Run({s.db_flag(), "verify"}).code == 0);
}

}  // namespace
}  // namespace hq::test

namespace hq::test {
namespace {

// ---- issue 38: progress of long commands on a terminal.

// Runs hq with `args`, its stderr a terminal (a pseudo-terminal whose
// output is returned in `err`), its stdout a file. Reads for at most
// kChildDeadline.
Result RunOnTerminal(const std::vector<std::string>& args) {
  int master = -1, slave = -1;
  REQUIRE(openpty(&master, &slave, nullptr, nullptr, nullptr) == 0);
  TempDir io;
  const std::string out_path = io.Sub("out");
  const char* tool = Tool();
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int in = open("/dev/null", O_RDONLY);
    dup2(in, 0);
    dup2(out, 1);
    dup2(slave, 2);
    close(master);
    unsetenv("HQ_DB");
    ExecTool(tool, args);
  }
  close(slave);
  Result r;
  // The terminal's output ends (EIO) once the child has exited.
  const absl::Time give_up = absl::Now() + kChildDeadline;
  for (;;) {
    pollfd p = {.fd = master, .events = POLLIN};
    const int ready = poll(&p, 1, 100);
    if (ready == 0) {
      if (absl::Now() >= give_up) break;
      continue;
    }
    char buf[4096];
    const ssize_t n = read(master, buf, sizeof buf);
    if (n <= 0) break;
    r.err.append(buf, static_cast<size_t>(n));
  }
  close(master);
  r.code = WaitForTool(pid, args);
  r.out = Slurp(out_path);
  return r;
}

TEST_CASE(
    "issue38: verify, backup and repair show progress on a terminal "
    "only") {
  Sample s;
  TempDir out;
  struct Case {
    std::vector<std::string> args;
    std::vector<std::string> phases;
  };
  const std::vector<Case> cases = {
      {{s.db_flag(), "verify"},
       {"hq verify: checking tables ", "hq verify: checking records "}},
      {{s.db_flag(), "compact"}, {"hq compact: compacting "}},
      {{s.db_flag(), "backup", out.Sub("b"), "--verify"},
       {"hq backup: copying ", "hq backup: checking records "}},
      // Forced to copy aside: an unknown record to move aside.
      {{"repair", s.path()},
       {"hq repair: copying aside ", "hq repair: checking records "}},
  };
  for (const Case& c : cases) {
    const std::string command = absl::StrJoin(c.args, " ");
    INFO(command);
    if (c.args[0] == "repair")
      RawPut(s.path(),
             "\x7f"
             "unknown",
             "v");
    Result r = RunOnTerminal(c.args);
    INFO(r.out << r.err);
    REQUIRE(r.code == 0);
    for (const std::string& phase : c.phases) {
      CHECK(absl::StrContains(r.err, phase));
    }
    CHECK(absl::StrContains(r.err, "(100%)"));
    CHECK(absl::StrContains(r.err, "\r"));
    CHECK_FALSE(absl::StrContains(r.out, "(100%)"));
  }
  // Not on a terminal, and not with --json: nothing of it.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{s.db_flag(), "verify"},
        std::vector<std::string>{s.db_flag(), "backup", out.Sub("b2")}}) {
    const Result r = Run(args);
    CHECK(r.code == 0);
    CHECK_FALSE(absl::StrContains(r.err, "%)"));
    CHECK_FALSE(absl::StrContains(r.out, "%)"));
  }
  const Result j = RunOnTerminal({s.db_flag(), "verify", "--json"});
  CHECK(j.code == 0);
  CHECK_FALSE(absl::StrContains(j.err, "%)"));
  CHECK(absl::StrContains(j.out, "\"ok\":true"));
}

}  // namespace
}  // namespace hq::test
