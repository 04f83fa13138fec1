// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// A program outside hq that uses it as a user would: only <hq/hq.h>, built
// against an installed hq (test/consumer/run.sh builds it each way the README
// gives). It touches each kind of exported symbol: a factory, virtual
// classes, a struct's member function and a free function.
// Usage: consumer DIR   (DIR must not exist yet)

#include <hq/hq.h>

#include <cstdio>
#include <string>

namespace {

int Fail(const char* what, const absl::Status& status) {
  std::fprintf(stderr, "consumer: %s: %s\n", what, status.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return std::fprintf(stderr, "usage: consumer DIR\n"), 2;
  auto db = hq::Db::Open(argv[1]);
  if (!db.ok()) return Fail("open", db.status());
  auto queue = (*db)->CreateQueue(
      "q", {.partitions = 2, .layout = *hq::ParseLayout("topic")});
  if (!queue.ok()) return Fail("create", queue.status());
  for (const char* url : {"https://a.example/", "https://b.example/"}) {
    auto put = (*queue)->Put({.topic = "t", .payload = url});
    if (!put.ok()) return Fail("put", put.status());
  }
  auto scanner = (*queue)->NewScanner({});
  if (!scanner.ok()) return Fail("scan", scanner.status());
  int scanned = 0;
  while ((*scanner)->Next()) {
    if ((*scanner)->message().id.ToString().empty()) return 1;
    ++scanned;
  }
  if (!(*scanner)->status().ok()) return Fail("scan", (*scanner)->status());
  scanner->reset();

  auto group = (*queue)->Group("workers");
  if (!group.ok()) return Fail("group", group.status());
  auto tasks = (*group)->Claim({.max = 10});
  if (!tasks.ok()) return Fail("claim", tasks.status());
  if (absl::Status s = (*group)->Complete(*tasks); !s.ok())
    return Fail("complete", s);
  std::printf("consumer: scanned %d, completed %zu\n", scanned, tasks->size());
  return scanned == 2 && tasks->size() == 2 ? 0 : 1;
}
