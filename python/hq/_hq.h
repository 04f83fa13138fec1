// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// What the files of hq._hq share: the state of one open Db and the Python
// objects made from it, and the function of each file that binds one class
// (bind_<class>.cc). _hq.cc has the module's contract.
//
// - A Db, and every Queue, Group, Scanner and Subscription made from it,
//   share one DbHandle (a CallGate: every call is a Use of it). The C++ Db
//   is destroyed by Db.close() (or __exit__, or when the last Python object
//   holding the handle goes away, or at interpreter exit): close first
//   refuses new calls, waits for the calls in progress (a waiting claim
//   notices within kWaitSlice), destroys the open scanners, then the Db.
//   Every later call raises FailedPrecondition instead of touching freed
//   memory.
// - Every call that may block (storage reads and writes, a waiting claim,
//   Open, compactions, close) releases the GIL (bind.h's Call).
//   Subscription listeners run on the Db's delivery threads and take the
//   GIL to call Python; close releases the GIL while the Db stops them.

#ifndef HQ_PYTHON_HQ_HQ_H_
#define HQ_PYTHON_HQ_HQ_H_

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "bind.h"
#include "hq/hq.h"

namespace hq::python {

// ---- The shared state of one open Db.

struct ScanState {
  std::unique_ptr<hq::Scanner> scanner;  // Reset by close or by close().
};

class PyListener;

struct SubState {
  hq::Queue* queue = nullptr;
  std::string name;
  hq::Subscription* subscription = nullptr;  // Null once unsubscribed.
  PyListener* listener = nullptr;
};

class DbHandle : public CallGate {
 public:
  explicit DbHandle(std::unique_ptr<hq::Db> db)
      : CallGate("the hq.Db is closed"), db_(std::move(db)) {}
  DbHandle(const DbHandle&) = delete;
  DbHandle& operator=(const DbHandle&) = delete;
  ~DbHandle() { Close(); }

  // The Db. REQUIRES: a call in progress (a Use of this handle).
  hq::Db* db() {
    absl::MutexLock l(&mu_);
    return db_.get();
  }

  void AddScanner(const std::shared_ptr<ScanState>& s);
  // Destroys a scanner's C++ half (before the Db, whatever comes first).
  // Needs no GIL.
  void ResetScanner(ScanState& s);

  void AddSubscription(std::shared_ptr<SubState> s,
                       std::unique_ptr<PyListener> listener);
  // After Queue::Unsubscribe: forgets the subscription's states and frees
  // its listeners.
  void Unsubscribed(hq::Queue* queue, const std::string& name);

  // Refuses new calls, waits for those in progress, destroys the scanners
  // and the Db (with the GIL released, if held). Idempotent.
  void Close();

 private:
  absl::Mutex mu_;
  std::unique_ptr<hq::Db> db_ ABSL_GUARDED_BY(mu_);
  std::vector<std::weak_ptr<ScanState>> scanners_ ABSL_GUARDED_BY(mu_);
  // Only touched with the GIL held (they own Python objects).
  std::vector<std::shared_ptr<SubState>> subs_;
  std::vector<std::unique_ptr<PyListener>> listeners_;
};

// Every Db opened, for closing those still open at interpreter exit (an
// atexit hook), while Python can still run their listeners' last calls.
std::vector<std::weak_ptr<DbHandle>>& OpenHandles();

// ---- Plain data returned to Python.

// A message read by a scanner or delivered to a listener: owning copies.
struct PyMessage {
  hq::MessageId id;
  uint32_t partition = 0;
  int priority = 0;
  std::string topic;
  std::string key;
  std::string payload;
  absl::Time not_before = absl::InfinitePast();
  std::string dedup_key;

  static PyMessage From(const hq::MessageView& m) {
    return PyMessage{m.id,
                     m.partition,
                     m.priority,
                     std::string(m.topic),
                     std::string(m.key),
                     std::string(m.payload),
                     m.not_before,
                     std::string(m.dedup_key)};
  }
};

// A new hq.PutResult (bind_message.cc; a plain CPython type), or a list of
// them. REQUIRES: BindMessage ran.
py::object NewPutResult(const hq::PutResult& r);
py::list NewPutResults(const std::vector<hq::PutResult>& results);

// What put_many returns: the PutResults of one PutBatch, each made into a
// Python object only when read.
struct PyPutResults {
  std::vector<hq::PutResult> results;
};

// Delivers to a Python callable, on the Db's delivery threads: takes the
// GIL for each message. A listener that raises is reported through
// sys.unraisablehook and counted; its message comes again after a backoff.
class PyListener final : public hq::MessageListener {
 public:
  PyListener(py::object fn, std::string name)
      : fn_(std::move(fn)), name_(std::move(name)) {}
  ~PyListener() override = default;

  absl::Status OnMessage(const hq::MessageView& view) override;

  uint64_t errors();
  std::optional<std::string> last_error();

 private:
  py::object fn_;  // Called, copied and destroyed with the GIL held.
  const std::string name_;
  absl::Mutex mu_;
  uint64_t errors_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<std::string> last_error_ ABSL_GUARDED_BY(mu_);
};

// ---- The Python classes' C++ halves.

struct PyDb {
  std::shared_ptr<DbHandle> h;
};

struct PyQueue {
  std::shared_ptr<DbHandle> h;
  hq::Queue* q;
};

struct PyGroup {
  std::shared_ptr<DbHandle> h;
  hq::ConsumerGroup* g;
};

struct PyScanner {
  std::shared_ptr<DbHandle> h;
  std::shared_ptr<ScanState> s;
};

struct PySubscription {
  std::shared_ptr<DbHandle> h;
  std::shared_ptr<SubState> s;
  // The live subscription; FailedPrecondition once unsubscribed or closed.
  hq::Subscription* Get() const;
};

// ---- Conversions more than one class uses.

// Sets o->start, start_id and start_time (SubscribeOptions or GroupOptions)
// from Python's `start`: "earliest", "latest", a MessageId or a Unix time.
template <typename O>
void SetStart(const py::object& start, O* o) {
  using Start = typename O::Start;
  if (py::isinstance<py::str>(start)) {
    const std::string s = start.cast<std::string>();
    if (s == "earliest") {
      o->start = Start::kEarliest;
    } else if (s == "latest") {
      o->start = Start::kLatest;
    } else {
      Raise(absl::InvalidArgumentError(
          "start must be 'earliest', 'latest', a MessageId or a Unix time, "
          "not '" +
          s + "'"));
    }
  } else if (py::isinstance<hq::MessageId>(start)) {
    o->start = Start::kId;
    o->start_id = start.cast<hq::MessageId>();
  } else {
    o->start = Start::kTime;
    o->start_time = ToTime(start.cast<double>());
  }
}

// The name Python uses for a Start.
template <typename Start>
py::object StartName(Start start) {
  switch (start) {
    case Start::kEarliest:
      return py::str("earliest");
    case Start::kLatest:
      return py::str("latest");
    case Start::kId:
      return py::str("id");
    case Start::kTime:
      return py::str("time");
  }
  return py::str("unknown");
}

// hq.SubscriptionStats.
py::object SubscriptionStatsToPy(const hq::SubscriptionStats& s);

// ---- The classes, one file each; _hq.cc calls them in this order (a
// class's methods name the classes bound before it in their signatures).

void BindErrors(py::module_& m);        // bind_errors.cc
void BindMessage(py::module_& m);       // bind_message.cc
void BindGroup(py::module_& m);         // bind_group.cc
void BindScanner(py::module_& m);       // bind_scanner.cc
void BindSubscription(py::module_& m);  // bind_subscription.cc
void BindQueue(py::module_& m);         // bind_queue.cc
void BindDb(py::module_& m);            // bind_db.cc

}  // namespace hq::python

#endif  // HQ_PYTHON_HQ_HQ_H_
