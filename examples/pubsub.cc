// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Pubsub: a subscription that survives a restart.
// Usage: pubsub [DIR]   (default: ./demo-data/pubsub); run it twice.
//
// Run 1 puts events 0..99 into the queue "events" and subscribes
// "recorder", whose listener takes events 0..49 and declines the others
// (an error: the subscription retries later); then it stops without
// closing the Db, as kill -9 would. Run 2 subscribes "recorder" again:
// delivery resumes at the checkpoint last written (every 16 events), so
// it receives the rest and, again, the events run 1 received after that
// checkpoint (delivery is at least once). The listener records each event
// in the queue "received" of the same Db; run 2 checks that all 100
// arrived, in order within each run, and counts the repeats. Later runs
// receive nothing new and check again. Exit status 0 when the checks pass.

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "hq/hq.h"

namespace {

constexpr int kEvents = 100;
constexpr int kRun1Takes = 50;

int Seq(std::string_view payload) {
  int seq = -1;
  (void)absl::SimpleAtoi(absl::string_view(payload.data(), payload.size()),
                         &seq);
  return seq;
}

class Recorder : public hq::MessageListener {
 public:
  Recorder(hq::Queue* received, int takes)
      : received_(received), takes_(takes) {}

  absl::Status OnMessage(const hq::MessageView& m) override {
    const int seq = Seq(m.payload);
    if (seq >= takes_) return absl::UnavailableError("not in this run");
    if (auto r = received_->Put({.payload = m.payload}); !r.ok()) {
      return r.status();  // Delivered again later.
    }
    std::lock_guard l(mu_);
    if (first_ < 0) first_ = seq;
    if (last_ >= 0 && seq != last_ + 1) ++out_of_order_;
    last_ = seq;
    ++count_;
    recorded_.notify_all();
    return absl::OkStatus();
  }
  // Waits until the event `seq` has been recorded, up to 10 s.
  bool WaitFor(int seq) {
    std::unique_lock l(mu_);
    return recorded_.wait_for(l, std::chrono::seconds(10),
                              [&] { return last_ >= seq; });
  }
  std::string Report() {
    std::lock_guard l(mu_);
    if (count_ == 0) return "received nothing new";
    return absl::StrCat("received ", count_, " events (", first_, "..", last_,
                        out_of_order_ ? ") OUT OF ORDER" : "), in order");
  }
  bool in_order() {
    std::lock_guard l(mu_);
    return out_of_order_ == 0;
  }

 private:
  hq::Queue* const received_;
  const int takes_;
  std::mutex mu_;  // std::mutex, not absl::Mutex: ThreadSanitizer sees it.
  std::condition_variable recorded_;
  int first_ = -1, last_ = -1, count_ = 0, out_of_order_ = 0;
};

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "pubsub: %s\n", s.ToString().c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "demo-data/pubsub";
  auto db = hq::Db::Open(dir);
  if (!db.ok()) return Fail(db.status());

  // Run 1 is the run that puts the events: all 100 in one atomic batch, so
  // the queue holds all of them or none. Whether the queue exists says
  // nothing: a run killed between CreateQueue and PutBatch leaves it empty,
  // and the next run must put them (and be run 1) instead of waiting forever
  // for events that were never written.
  auto events = (*db)->OpenQueue("events");
  if (absl::IsNotFound(events.status())) {
    events = (*db)->CreateQueue("events", {});
  }
  if (!events.ok()) return Fail(events.status());
  bool run1;
  {
    auto scanner = (*events)->NewScanner({});
    if (!scanner.ok()) return Fail(scanner.status());
    run1 = !(*scanner)->Next();
    if (!(*scanner)->status().ok()) return Fail((*scanner)->status());
  }
  if (run1) {
    std::vector<std::string> payloads;
    std::vector<hq::Message> batch;
    for (int i = 0; i < kEvents; ++i) payloads.push_back(absl::StrCat(i));
    for (const std::string& p : payloads) batch.push_back({.payload = p});
    if (auto s = (*events)->PutBatch(batch, nullptr); !s.ok()) return Fail(s);
  }
  auto received = (*db)->OpenQueue("received");
  if (absl::IsNotFound(received.status())) {
    received = (*db)->CreateQueue("received", {});
  }
  if (!received.ok()) return Fail(received.status());

  Recorder recorder(*received, run1 ? kRun1Takes : kEvents);
  auto sub = (*events)->Subscribe({.name = "recorder",
                                   .checkpoint_messages = 16,
                                   .checkpoint_interval = absl::Hours(1)},
                                  &recorder);
  if (!sub.ok()) return Fail(sub.status());

  if (run1) {
    if (!recorder.WaitFor(kRun1Takes - 1))
      return Fail(absl::DeadlineExceededError("waiting"));
    std::printf(
        "run 1: put %d events, %s; stopping without closing the Db, "
        "as kill -9 would: run me again on %s\n",
        kEvents, recorder.Report().c_str(), dir.c_str());
    std::fflush(stdout);
    std::_Exit(0);
  }

  // Later runs: wait for the last event unless an earlier run recorded it.
  std::vector<int> times(kEvents, 0);
  auto count = [&]() -> absl::Status {
    std::fill(times.begin(), times.end(), 0);
    auto scanner = (*received)->NewScanner({});
    if (!scanner.ok()) return scanner.status();
    while ((*scanner)->Next()) {
      const int seq = Seq((*scanner)->message().payload);
      if (seq >= 0 && seq < kEvents) ++times[seq];
    }
    return (*scanner)->status();
  };
  if (auto s = count(); !s.ok()) return Fail(s);
  if (times[kEvents - 1] == 0 && !recorder.WaitFor(kEvents - 1)) {
    return Fail(absl::DeadlineExceededError("waiting for the last event"));
  }
  if (auto s = count(); !s.ok()) return Fail(s);
  int missing = 0, repeated = 0;
  for (int n : times) {
    if (n == 0) ++missing;
    if (n > 1) repeated += n - 1;
  }
  std::printf(
      "resumed at the last checkpoint written: %s; in all, %d of %d events "
      "received, %d missing, %d "
      "delivered again after a restart (at least once)\n",
      recorder.Report().c_str(), kEvents - missing, kEvents, missing, repeated);
  return missing == 0 && recorder.in_order() ? 0 : 1;
}
