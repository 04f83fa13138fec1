// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq._hq: the pybind11 extension under the Python package `hq`. It maps the
// C++ API (include/hq/) one to one; hq/__init__.py re-exports it, and
// hq/_types.py holds the Python side: the exception classes the statuses
// map to and the dataclasses the stats are returned as. The contract of
// every method is in hq/_hq.pyi; the lifetimes are decided here:
//
// - A Db, and every Queue, Group, Scanner and Subscription made from it,
//   share one DbHandle. The C++ Db is destroyed by Db.close() (or __exit__,
//   or when the last Python object holding the handle goes away, or at
//   interpreter exit): close first refuses new calls, waits for the calls in
//   progress (a waiting claim notices within kWaitSlice), destroys the open
//   scanners, then the Db. Every later call raises FailedPrecondition
//   instead of touching freed memory.
// - Every call that may block (storage reads and writes, a waiting claim,
//   Open, compactions, close) releases the GIL. Subscription listeners run
//   on the Db's delivery threads and take the GIL to call Python; close
//   releases the GIL while the Db stops them.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "hq/hq.h"

namespace py = pybind11;

namespace {

// A waiting claim wakes at least this often (with the GIL released in
// between) to notice Db.close() and pending signals (Ctrl-C). Its work is
// still woken by the write path, never found by polling.
constexpr absl::Duration kWaitSlice = absl::Milliseconds(200);

// hq._types, imported once and never released (it outlives every call).
py::handle Types() {
  static py::handle types = py::module_::import("hq._types").release();
  return types;
}

// Raises the hq.Error subclass of status's code, its `detail` the name of
// the status's hq::ErrorDetail (None if none). REQUIRES: the GIL.
[[noreturn]] void Raise(const absl::Status& status) {
  py::object cls = Types().attr(
      "_ERRORS_BY_CODE")[py::int_(static_cast<int>(status.code()))];
  std::string message(status.message());
  py::object text = py::reinterpret_steal<py::object>(PyUnicode_DecodeUTF8(
      message.data(), static_cast<Py_ssize_t>(message.size()), "replace"));
  py::object error = cls(text);
  const hq::ErrorDetail detail = hq::GetErrorDetail(status);
  if (detail != hq::ErrorDetail::kNone) {
    error.attr("detail") = py::str(hq::ErrorDetailName(detail));
  }
  PyErr_SetObject(cls.ptr(), error.ptr());
  throw py::error_already_set();
}

void Check(const absl::Status& status) {
  if (!status.ok()) Raise(status);
}

template <typename T>
T Check(absl::StatusOr<T> v) {
  if (!v.ok()) Raise(v.status());
  return *std::move(v);
}

// Builds the dataclass `name` of hq._types from keyword arguments.
template <typename... Args>
py::object Make(const char* name, Args&&... args) {
  return Types().attr(name)(std::forward<Args>(args)...);
}

// ---- Conversions.

absl::Duration ToDuration(double seconds, const char* what) {
  if (!std::isfinite(seconds)) {
    Raise(absl::InvalidArgumentError(std::string(what) +
                                     " must be a finite number of seconds"));
  }
  return absl::Seconds(seconds);
}

double FromDuration(absl::Duration d) { return absl::ToDoubleSeconds(d); }

double UnixSeconds(absl::Time t) {
  return absl::ToDoubleSeconds(t - absl::UnixEpoch());
}

// absl::Time as Unix seconds; None for an infinite time.
py::object FromTime(absl::Time t) {
  if (t == absl::InfinitePast() || t == absl::InfiniteFuture()) {
    return py::none();
  }
  return py::float_(UnixSeconds(t));
}

absl::Time ToTime(double unix_seconds) {
  if (!std::isfinite(unix_seconds)) {
    Raise(absl::InvalidArgumentError("a time must be finite Unix seconds"));
  }
  return absl::FromUnixNanos(static_cast<int64_t>(unix_seconds * 1e9));
}

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

// bytes, bytearray or str (UTF-8) as bytes. Views into `h` when it is
// bytes (immutable, and kept alive by the caller); else copies to `store`.
std::string_view Bytes(py::handle h, std::string& store, const char* what) {
  if (PyBytes_Check(h.ptr())) {
    return std::string_view(PyBytes_AS_STRING(h.ptr()),
                            static_cast<size_t>(PyBytes_GET_SIZE(h.ptr())));
  }
  if (PyUnicode_Check(h.ptr())) {
    Py_ssize_t n = 0;
    const char* s = PyUnicode_AsUTF8AndSize(h.ptr(), &n);
    if (s == nullptr) throw py::error_already_set();
    return std::string_view(s, static_cast<size_t>(n));
  }
  if (PyByteArray_Check(h.ptr())) {
    store.assign(PyByteArray_AS_STRING(h.ptr()),
                 static_cast<size_t>(PyByteArray_GET_SIZE(h.ptr())));
    return store;
  }
  throw py::type_error(std::string(what) + " must be bytes or str, not " +
                       std::string(py::str(py::type::of(h).attr("__name__"))));
}

py::bytes PyBytes(std::string_view s) { return py::bytes(s.data(), s.size()); }

py::str PyText(std::string_view s) {
  return py::reinterpret_steal<py::str>(PyUnicode_DecodeUTF8(
      s.data(), static_cast<Py_ssize_t>(s.size()), "surrogateescape"));
}

std::vector<std::string> TextList(const py::iterable& items, const char* what) {
  std::vector<std::string> out;
  for (py::handle h : items) {
    std::string store;
    out.emplace_back(Bytes(h, store, what));
  }
  return out;
}

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

class DbHandle {
 public:
  explicit DbHandle(std::unique_ptr<hq::Db> db) : db_(std::move(db)) {}
  DbHandle(const DbHandle&) = delete;
  DbHandle& operator=(const DbHandle&) = delete;
  ~DbHandle() { Close(); }

  // Starts a call: returns the Db, or raises FailedPrecondition once closed.
  // REQUIRES: the GIL. Pair with Leave (the Use guard does).
  hq::Db* Enter() {
    absl::MutexLock l(&mu_);
    if (closing_) {
      Raise(absl::FailedPreconditionError("the hq.Db is closed"));
    }
    ++active_;
    return db_.get();
  }
  void Leave() {
    absl::MutexLock l(&mu_);
    --active_;
  }
  bool closing() const { return closing_flag_.load(); }

  void AddScanner(const std::shared_ptr<ScanState>& s) {
    absl::MutexLock l(&mu_);
    std::erase_if(scanners_, [](const auto& w) { return w.expired(); });
    scanners_.push_back(s);
  }
  // Destroys a scanner's C++ half (before the Db, whatever comes first).
  void ResetScanner(ScanState& s) {
    std::unique_ptr<hq::Scanner> doomed;
    absl::MutexLock l(&mu_);
    doomed = std::move(s.scanner);
  }

  void AddSubscription(std::shared_ptr<SubState> s,
                       std::unique_ptr<PyListener> listener);
  // After Queue::Unsubscribe: forgets the subscription's states and frees
  // its listeners. REQUIRES: the GIL.
  void Unsubscribed(hq::Queue* queue, const std::string& name);

  // REQUIRES: the GIL (it is released while waiting and destroying).
  void Close();

 private:
  absl::Mutex mu_;
  std::unique_ptr<hq::Db> db_ ABSL_GUARDED_BY(mu_);
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<bool> closing_flag_{false};
  int active_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::weak_ptr<ScanState>> scanners_ ABSL_GUARDED_BY(mu_);
  // Only touched with the GIL held (they own Python objects).
  std::vector<std::shared_ptr<SubState>> subs_;
  std::vector<std::unique_ptr<PyListener>> listeners_;
};

// A call in progress on a DbHandle.
class Use {
 public:
  explicit Use(DbHandle& h) : h_(h), db_(h.Enter()) {}
  ~Use() { h_.Leave(); }
  Use(const Use&) = delete;
  Use& operator=(const Use&) = delete;
  hq::Db* db() const { return db_; }

 private:
  DbHandle& h_;
  hq::Db* db_;
};

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

// Delivers to a Python callable. See the top of this file for the GIL.
class PyListener final : public hq::MessageListener {
 public:
  PyListener(py::object fn, std::string name)
      : fn_(std::move(fn)), name_(std::move(name)) {}
  ~PyListener() override = default;

  absl::Status OnMessage(const hq::MessageView& view) override {
    PyMessage m = PyMessage::From(view);
    py::gil_scoped_acquire gil;
    try {
      fn_(std::move(m));
      return absl::OkStatus();
    } catch (py::error_already_set& e) {
      // Reported through sys.unraisablehook (printed by default, a warning
      // under pytest), and the message comes again after a backoff.
      std::string what = e.what();
      {
        absl::MutexLock l(&mu_);
        ++errors_;
        last_error_ = what;
      }
      e.discard_as_unraisable(
          ("hq subscription " + name_ + " listener").c_str());
      return absl::InternalError("listener raised: " + what);
    }
  }

  uint64_t errors() {
    absl::MutexLock l(&mu_);
    return errors_;
  }
  std::optional<std::string> last_error() {
    absl::MutexLock l(&mu_);
    return last_error_;
  }

 private:
  py::object fn_;  // Called, copied and destroyed with the GIL held.
  const std::string name_;
  absl::Mutex mu_;
  uint64_t errors_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<std::string> last_error_ ABSL_GUARDED_BY(mu_);
};

void DbHandle::AddSubscription(std::shared_ptr<SubState> s,
                               std::unique_ptr<PyListener> listener) {
  subs_.push_back(std::move(s));
  listeners_.push_back(std::move(listener));
}

void DbHandle::Unsubscribed(hq::Queue* queue, const std::string& name) {
  std::vector<PyListener*> gone;
  for (auto& s : subs_) {
    if (s->queue == queue && s->name == name) {
      s->subscription = nullptr;
      gone.push_back(s->listener);
      s->listener = nullptr;
    }
  }
  std::erase_if(subs_,
                [](const auto& s) { return s->subscription == nullptr; });
  std::erase_if(listeners_, [&](const auto& l) {
    return std::find(gone.begin(), gone.end(), l.get()) != gone.end();
  });
}

void DbHandle::Close() {
  std::unique_ptr<hq::Db> doomed;
  {
    absl::MutexLock l(&mu_);
    if (closing_) return;
    closing_ = true;
    closing_flag_ = true;
  }
  {
    // Listeners need the GIL to return, and the Db waits for them.
    std::optional<py::gil_scoped_release> release;
    if (Py_IsInitialized() && PyGILState_Check()) release.emplace();
    std::vector<std::unique_ptr<hq::Scanner>> scanners;
    {
      absl::MutexLock l(&mu_);
      mu_.Await(absl::Condition(
          +[](int* active) { return *active == 0; }, &active_));
      for (auto& w : scanners_) {
        if (auto s = w.lock()) scanners.push_back(std::move(s->scanner));
      }
      scanners_.clear();
      doomed = std::move(db_);
    }
    scanners.clear();
    doomed.reset();
  }
  for (auto& s : subs_) {
    s->subscription = nullptr;
    s->listener = nullptr;
  }
  subs_.clear();
  listeners_.clear();
}

// ---- The Python classes.

// Every Db opened, for closing those still open at interpreter exit (an
// atexit hook), while Python can still run their listeners' last calls.
// Touched with the GIL held.
std::vector<std::weak_ptr<DbHandle>>& OpenHandles() {
  static auto* handles = new std::vector<std::weak_ptr<DbHandle>>;
  std::erase_if(*handles, [](const auto& w) { return w.expired(); });
  return *handles;
}

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
  hq::Subscription* Get() const {
    if (s->subscription == nullptr) {
      Raise(absl::FailedPreconditionError("subscription " + s->name +
                                          " was unsubscribed or closed"));
    }
    return s->subscription;
  }
};

py::object QueueOptionsToPy(const hq::QueueOptions& o) {
  return Make(
      "QueueOptions", py::arg("partitions") = o.partitions,
      py::arg("priorities") = o.priorities,
      py::arg("ttl") = o.ttl == absl::InfiniteDuration()
                           ? py::object(py::none())
                           : py::object(py::float_(FromDuration(o.ttl))),
      py::arg("layout") = std::string(hq::LayoutName(o.layout)),
      py::arg("max_payload_bytes") = o.max_payload_bytes);
}

py::object SweepToPy(const hq::SweepStats& s) {
  return Make("SweepStats", py::arg("queues") = s.queues,
              py::arg("lanes") = s.lanes, py::arg("deleted") = s.deleted,
              py::arg("examined") = s.examined,
              py::arg("hints_trimmed") = s.hints_trimmed);
}

py::object SubscriptionStatsToPy(const hq::SubscriptionStats& s) {
  py::list lanes;
  for (const auto& l : s.lanes) {
    lanes.append(Make(
        "LaneCheckpoint", py::arg("partition") = l.partition,
        py::arg("priority") = l.priority, py::arg("topic") = PyText(l.topic),
        py::arg("next") = l.next, py::arg("written") = l.written));
  }
  return Make("SubscriptionStats", py::arg("lanes") = lanes,
              py::arg("lag") = s.lag, py::arg("lag_exact") = s.lag_exact,
              py::arg("delivered") = s.delivered,
              py::arg("failed_attempts") = s.failed_attempts,
              py::arg("buffered") = s.buffered,
              py::arg("buffered_bytes") = s.buffered_bytes,
              py::arg("listeners") = s.listeners);
}

// One message of put / put_batch, from bytes/str (a payload), a dict, or an
// object with the attributes of hq.Message. `store` keeps copies alive.
hq::Message ToMessage(py::handle item, std::vector<std::string>& store) {
  hq::Message m;
  auto field = [&](const char* name) -> py::object {
    if (PyDict_Check(item.ptr())) {
      return py::reinterpret_borrow<py::dict>(item).attr("get")(name);
    }
    return py::getattr(item, name, py::none());
  };
  auto text = [&](py::object v, const char* what) -> std::string_view {
    if (v.is_none()) return {};
    store.emplace_back();
    std::string_view s = Bytes(v, store.back(), what);
    if (s.data() != store.back().data()) store.back().assign(s);
    return store.back();
  };
  if (PyBytes_Check(item.ptr()) || PyUnicode_Check(item.ptr()) ||
      PyByteArray_Check(item.ptr())) {
    m.payload = text(py::reinterpret_borrow<py::object>(item), "payload");
    return m;
  }
  py::object payload = field("payload");
  if (payload.is_none()) throw py::type_error("a message needs a payload");
  m.payload = text(payload, "payload");
  m.topic = text(field("topic"), "topic");
  m.key = text(field("key"), "key");
  m.dedup_key = text(field("dedup_key"), "dedup_key");
  if (py::object p = field("partition"); !p.is_none()) {
    m.partition = p.cast<uint32_t>();
  }
  if (py::object p = field("priority"); !p.is_none()) {
    m.priority = p.cast<int>();
  }
  if (py::object d = field("delay"); !d.is_none()) {
    m.delay = ToDuration(d.cast<double>(), "delay");
  }
  if (py::object t = field("not_before"); !t.is_none()) {
    m.not_before = ToTime(t.cast<double>());
  }
  return m;
}

hq::PutOptions ToPutOptions(std::optional<bool> sync) {
  hq::PutOptions o;
  o.sync = sync;
  return o;
}

std::vector<hq::Task> TaskList(py::handle tasks) {
  std::vector<hq::Task> out;
  if (py::isinstance<hq::Task>(tasks)) {
    out.push_back(tasks.cast<hq::Task>());
    return out;
  }
  for (py::handle t : tasks) out.push_back(t.cast<hq::Task>());
  return out;
}

}  // namespace

PYBIND11_MODULE(_hq, m) {
  m.doc() = "hq's C++ API (include/hq/); use it through the package hq.";
  py::module_::import("atexit").attr("register")(py::cpp_function([] {
    for (const auto& w : OpenHandles()) {
      if (auto h = w.lock()) h->Close();
    }
  }));

  // For the binding's tests: raises what a call failing with the
  // absl::Status of code `code_name` (absl::StatusCodeToString's spelling,
  // "NOT_FOUND") raises.
  m.def(
      "_raise_status",
      [](const std::string& code_name, const std::string& message) {
        for (int c = 1; c <= 16; ++c) {
          const auto code = static_cast<absl::StatusCode>(c);
          if (absl::StatusCodeToString(code) == code_name) {
            Raise(absl::Status(code, message));
          }
        }
        throw py::value_error("no absl::StatusCode named " + code_name);
      },
      py::arg("code_name"), py::arg("message"));

  // ---- MessageId, PutResult, Message, Task, DeadLetter.
  py::class_<hq::MessageId>(m, "MessageId")
      .def(py::init([](uint64_t ms, uint16_t seq) {
             if (ms > hq::MessageId::kMaxMs) {
               throw py::value_error("MessageId ms must be < 2**48");
             }
             return hq::MessageId{ms, seq};
           }),
           py::arg("ms"), py::arg("seq") = 0)
      .def_readonly("ms", &hq::MessageId::ms)
      .def_readonly("seq", &hq::MessageId::seq)
      .def_static("min", &hq::MessageId::Min)
      .def_static("max", &hq::MessageId::Max)
      .def_static("at_time",
                  [](double t) { return hq::MessageId::AtTime(ToTime(t)); })
      .def_static("parse",
                  [](std::string_view text) {
                    std::optional<hq::MessageId> id =
                        hq::MessageId::Parse(text);
                    if (!id) {
                      Raise(absl::InvalidArgumentError("not a MessageId: " +
                                                       std::string(text)));
                    }
                    return *id;
                  })
      .def("next", &hq::MessageId::Next)
      .def_property_readonly("time",
                             [](const hq::MessageId& id) -> double {
                               return UnixSeconds(id.time());
                             })
      .def("__str__", &hq::MessageId::ToString)
      .def("__repr__",
           [](const hq::MessageId& id) {
             return "MessageId(" + std::to_string(id.ms) + ", " +
                    std::to_string(id.seq) + ")";
           })
      .def("__hash__",
           [](const hq::MessageId& id) {
             return py::hash(py::make_tuple(id.ms, id.seq));
           })
      .def("__eq__", [](const hq::MessageId& a,
                        const hq::MessageId& b) { return a == b; })
      .def("__ne__", [](const hq::MessageId& a,
                        const hq::MessageId& b) { return a != b; })
      .def("__lt__",
           [](const hq::MessageId& a, const hq::MessageId& b) { return a < b; })
      .def("__le__", [](const hq::MessageId& a,
                        const hq::MessageId& b) { return a <= b; })
      .def("__gt__",
           [](const hq::MessageId& a, const hq::MessageId& b) { return a > b; })
      .def("__ge__", [](const hq::MessageId& a, const hq::MessageId& b) {
        return a >= b;
      });

  py::class_<hq::PutResult>(m, "PutResult")
      .def_readonly("partition", &hq::PutResult::partition)
      .def_readonly("id", &hq::PutResult::id)
      .def_readonly("duplicate", &hq::PutResult::duplicate)
      .def("__repr__", [](const hq::PutResult& r) {
        return "PutResult(partition=" + std::to_string(r.partition) +
               ", id=" + r.id.ToString() +
               ", duplicate=" + (r.duplicate ? "True" : "False") + ")";
      });

  py::class_<PyMessage>(m, "ReceivedMessage")
      .def_readonly("id", &PyMessage::id)
      .def_readonly("partition", &PyMessage::partition)
      .def_readonly("priority", &PyMessage::priority)
      .def_property_readonly("topic",
                             [](const PyMessage& x) { return PyText(x.topic); })
      .def_property_readonly("key",
                             [](const PyMessage& x) { return PyBytes(x.key); })
      .def_property_readonly(
          "payload", [](const PyMessage& x) { return PyBytes(x.payload); })
      .def_property_readonly(
          "not_before",
          [](const PyMessage& x) { return FromTime(x.not_before); })
      .def_property_readonly("dedup_key",
                             [](const PyMessage& x) -> py::object {
                               if (x.dedup_key.empty()) return py::none();
                               return PyBytes(x.dedup_key);
                             })
      .def("__repr__", [](const PyMessage& x) {
        return "ReceivedMessage(partition=" + std::to_string(x.partition) +
               ", id=" + x.id.ToString() + ", " +
               std::to_string(x.payload.size()) + " bytes)";
      });

  py::class_<hq::Task>(m, "Task")
      .def_readonly("partition", &hq::Task::partition)
      .def_readonly("priority", &hq::Task::priority)
      .def_readonly("id", &hq::Task::id)
      .def_property_readonly("topic",
                             [](const hq::Task& t) { return PyText(t.topic); })
      .def_property_readonly("key",
                             [](const hq::Task& t) { return PyBytes(t.key); })
      .def_property_readonly(
          "payload", [](const hq::Task& t) { return PyBytes(t.payload); })
      .def_readonly("attempt", &hq::Task::attempt)
      .def_property_readonly(
          "lease_deadline",
          [](const hq::Task& t) { return FromTime(t.lease_deadline); })
      .def_property_readonly(
          "not_before",
          [](const hq::Task& t) { return FromTime(t.not_before); })
      .def_readonly("consumer", &hq::Task::consumer)
      .def("__repr__", [](const hq::Task& t) {
        return "Task(partition=" + std::to_string(t.partition) +
               ", id=" + t.id.ToString() +
               ", attempt=" + std::to_string(t.attempt) + ")";
      });

  py::class_<hq::DeadLetter>(m, "DeadLetter")
      .def_readonly("partition", &hq::DeadLetter::partition)
      .def_readonly("id", &hq::DeadLetter::id)
      .def_readonly("original_partition", &hq::DeadLetter::original_partition)
      .def_readonly("original_id", &hq::DeadLetter::original_id)
      .def_readonly("priority", &hq::DeadLetter::priority)
      .def_property_readonly(
          "topic", [](const hq::DeadLetter& d) { return PyText(d.topic); })
      .def_property_readonly(
          "key", [](const hq::DeadLetter& d) { return PyBytes(d.key); })
      .def_property_readonly(
          "payload", [](const hq::DeadLetter& d) { return PyBytes(d.payload); })
      .def_readonly("attempts", &hq::DeadLetter::attempts)
      .def_property_readonly("reason",
                             [](const hq::DeadLetter& d) -> std::string {
                               switch (d.reason) {
                                 case hq::DeadLetterReason::kLeaseExpired:
                                   return "lease_expired";
                                 case hq::DeadLetterReason::kReleased:
                                   return "released";
                                 case hq::DeadLetterReason::kInterrupted:
                                   return "interrupted";
                                 case hq::DeadLetterReason::kRejected:
                                   return "rejected";
                               }
                               return "unknown";
                             })
      .def_property_readonly(
          "dead_at",
          [](const hq::DeadLetter& d) { return FromTime(d.dead_at); })
      .def("__repr__", [](const hq::DeadLetter& d) {
        return "DeadLetter(original_partition=" +
               std::to_string(d.original_partition) +
               ", original_id=" + d.original_id.ToString() +
               ", attempts=" + std::to_string(d.attempts) + ")";
      });

  py::class_<hq::PendingTask>(m, "PendingTask")
      .def_readonly("partition", &hq::PendingTask::partition)
      .def_readonly("priority", &hq::PendingTask::priority)
      .def_property_readonly(
          "topic", [](const hq::PendingTask& p) { return PyText(p.topic); })
      .def_readonly("id", &hq::PendingTask::id)
      .def_readonly("attempt", &hq::PendingTask::attempt)
      .def_property_readonly("state",
                             [](const hq::PendingTask& p) -> std::string {
                               switch (p.state) {
                                 case hq::PendingTask::State::kInFlight:
                                   return "in_flight";
                                 case hq::PendingTask::State::kRedelivery:
                                   return "redelivery";
                                 case hq::PendingTask::State::kDelayed:
                                   return "delayed";
                               }
                               return "unknown";
                             })
      .def_property_readonly(
          "since", [](const hq::PendingTask& p) { return FromTime(p.since); })
      .def_property_readonly(
          "lease_deadline",
          [](const hq::PendingTask& p) { return FromTime(p.lease_deadline); })
      .def_readonly("consumer", &hq::PendingTask::consumer)
      .def("__repr__", [](const hq::PendingTask& p) {
        return "PendingTask(partition=" + std::to_string(p.partition) +
               ", id=" + p.id.ToString() +
               ", attempt=" + std::to_string(p.attempt) + ")";
      });

  // ---- Scanner.
  py::class_<PyScanner>(m, "Scanner",
                        "Iterates a snapshot of a queue taken by Queue.scan.")
      .def("__iter__", [](PyScanner& s) -> PyScanner& { return s; })
      .def(
          "__next__",
          [](PyScanner& s) {
            Use use(*s.h);
            hq::Scanner* scanner = s.s->scanner.get();
            if (scanner == nullptr) throw py::stop_iteration();
            std::optional<PyMessage> m;
            absl::Status status;
            {
              py::gil_scoped_release release;
              if (scanner->Next()) {
                m = PyMessage::From(scanner->message());
              } else {
                status = scanner->status();
              }
            }
            if (m) return *std::move(m);
            s.h->ResetScanner(*s.s);
            Check(status);
            throw py::stop_iteration();
          },
          "The next message. Raises hq.DataLoss on a damaged record: a scan "
          "never ends short in silence.")
      .def(
          "close", [](PyScanner& s) { s.h->ResetScanner(*s.s); },
          "Frees the scanner now (also on leaving a `with` block).")
      .def("__enter__", [](PyScanner& s) -> PyScanner& { return s; })
      .def("__exit__", [](PyScanner& s, py::args) {
        s.h->ResetScanner(*s.s);
        return false;
      });

  // ---- Subscription.
  py::class_<PySubscription>(m, "Subscription",
                             "A live subscription (Queue.subscribe).")
      .def_property_readonly("name",
                             [](const PySubscription& s) { return s.s->name; })
      .def(
          "stats",
          [](PySubscription& s) {
            Use use(*s.h);
            hq::Subscription* sub = s.Get();
            absl::StatusOr<hq::SubscriptionStats> st;
            {
              py::gil_scoped_release release;
              st = sub->Stats();
            }
            return SubscriptionStatsToPy(Check(std::move(st)));
          },
          "Delivered, checkpointed and lag (hq.SubscriptionStats). "
          "FailedPrecondition once unsubscribed or the Db closed.")
      .def(
          "checkpoint",
          [](PySubscription& s) {
            Use use(*s.h);
            hq::Subscription* sub = s.Get();
            absl::Status st;
            {
              py::gil_scoped_release release;
              st = sub->Checkpoint();
            }
            Check(st);
          },
          "Writes the checkpoints of what was delivered, now.")
      .def_property_readonly("listener_errors",
                             [](const PySubscription& s) -> uint64_t {
                               return s.s->listener ? s.s->listener->errors()
                                                    : 0;
                             })
      .def_property_readonly(
          "last_error",
          [](const PySubscription& s) -> std::optional<std::string> {
            if (s.s->listener == nullptr) return std::nullopt;
            return s.s->listener->last_error();
          });

  // ---- Group.
  py::class_<PyGroup>(m, "Group",
                      "A durable consumer group: at-least-once tasks under a "
                      "lease, completed once or dead-lettered.")
      .def_property_readonly("name",
                             [](const PyGroup& g) { return g.g->name(); })
      .def_property_readonly(
          "dead_letter_queue",
          [](const PyGroup& g) { return g.g->dead_letter_queue(); })
      .def(
          "claim",
          [](PyGroup& g, uint32_t max, std::optional<double> lease, double wait,
             const py::iterable& topics, std::vector<uint32_t> partitions,
             std::string consumer) {
            hq::ClaimOptions o;
            o.max = max;
            if (lease) o.lease = ToDuration(*lease, "lease");
            o.topics = TextList(topics, "topic");
            o.partitions = std::move(partitions);
            o.consumer = std::move(consumer);
            absl::Duration total = ToDuration(wait, "wait");
            absl::Time deadline = absl::Now() + total;
            for (;;) {
              Use use(*g.h);
              absl::Duration left =
                  std::max(deadline - absl::Now(), absl::ZeroDuration());
              o.wait = std::min(left, kWaitSlice);
              absl::StatusOr<std::vector<hq::Task>> tasks;
              {
                py::gil_scoped_release release;
                tasks = g.g->Claim(o);
              }
              if (!tasks.ok() || !tasks->empty() || left <= kWaitSlice) {
                return Check(std::move(tasks));
              }
              if (g.h->closing()) {
                Raise(absl::FailedPreconditionError("the hq.Db is closed"));
              }
              if (PyErr_CheckSignals() != 0) throw py::error_already_set();
            }
          },
          py::arg("max") = 1, py::kw_only(), py::arg("lease") = py::none(),
          py::arg("wait") = 0.0, py::arg("topics") = py::tuple(),
          py::arg("partitions") = std::vector<uint32_t>{},
          py::arg("consumer") = "",
          "Hands out up to `max` (1..10000) tasks under a lease (None: the "
          "group's). With `wait`, blocks (GIL released) until something is "
          "claimable or the wait ends; returns [] if nothing is. Ordered "
          "groups need `consumer`.")
      .def(
          "complete",
          [](PyGroup& g, py::handle tasks) {
            std::vector<hq::Task> list = TaskList(tasks);
            Use use(*g.h);
            absl::Status st;
            {
              py::gil_scoped_release release;
              st = g.g->Complete(list);
            }
            Check(st);
          },
          py::arg("tasks"),
          "Completes tasks: all or nothing, one write. FailedPrecondition if a "
          "task is no longer held.")
      .def(
          "release",
          [](PyGroup& g, const hq::Task& t, double retry_after) {
            absl::Duration d = ToDuration(retry_after, "retry_after");
            Use use(*g.h);
            absl::Status st;
            {
              py::gil_scoped_release release;
              st = g.g->Release(t, d);
            }
            Check(st);
          },
          py::arg("task"), py::arg("retry_after") = 0.0,
          "Gives a held task back, to come again after `retry_after` seconds, "
          "or be dead-lettered if it used max_attempts.")
      .def(
          "reject",
          [](PyGroup& g, const hq::Task& t) {
            Use use(*g.h);
            absl::Status st;
            {
              py::gil_scoped_release release;
              st = g.g->Reject(t);
            }
            Check(st);
          },
          py::arg("task"),
          "Dead-letters a held task at once (reason 'rejected'), whatever "
          "its attempts: for a task that will never succeed. "
          "FailedPrecondition if it is not held.")
      .def(
          "extend",
          [](PyGroup& g, hq::Task& t, double lease) {
            absl::Duration d = ToDuration(lease, "lease");
            Use use(*g.h);
            absl::Status st;
            {
              py::gil_scoped_release release;
              st = g.g->Extend(&t, d);
            }
            Check(st);
          },
          py::arg("task"), py::arg("lease"),
          "Moves a held task's lease deadline to `lease` seconds from now; "
          "updates task.lease_deadline.")
      .def(
          "stats",
          [](PyGroup& g) {
            Use use(*g.h);
            absl::StatusOr<hq::GroupStats> st;
            {
              py::gil_scoped_release release;
              st = g.g->Stats();
            }
            hq::GroupStats s = Check(std::move(st));
            return Make(
                "GroupStats", py::arg("backlog") = s.backlog,
                py::arg("backlog_exact") = s.backlog_exact,
                py::arg("in_flight") = s.in_flight,
                py::arg("redelivery") = s.redelivery,
                py::arg("delayed") = s.delayed,
                py::arg("dead_letters") = s.dead_letters,
                py::arg("oldest_in_flight") = FromDuration(s.oldest_in_flight),
                py::arg("max_cursor_lag") = FromDuration(s.max_cursor_lag),
                py::arg("window_records") = s.window_records,
                py::arg("lanes") = s.lanes, py::arg("consumers") = s.consumers,
                py::arg("paced_topics") = s.paced_topics);
          },
          "Backlog, in flight, redelivery, delayed, dead letters, lag "
          "(hq.GroupStats).")
      .def(
          "consumers",
          [](PyGroup& g) {
            Use use(*g.h);
            absl::StatusOr<std::vector<hq::ConsumerInfo>> st;
            {
              py::gil_scoped_release release;
              st = g.g->Consumers();
            }
            py::list out;
            for (const auto& c : Check(std::move(st))) {
              out.append(
                  Make("ConsumerInfo", py::arg("name") = c.name,
                       py::arg("partitions") = c.partitions,
                       py::arg("lease_deadline") = FromTime(c.lease_deadline)));
            }
            return out;
          },
          "Ordered groups: the live consumers and their partitions.")
      .def(
          "set_topic_pacing",
          [](PyGroup& g, const py::object& topic, uint32_t max_in_flight,
             double interval) {
            std::string store;
            const std::string_view t = Bytes(topic, store, "topic");
            const hq::TopicPacing pacing{
                .max_in_flight = max_in_flight,
                .interval = ToDuration(interval, "interval")};
            Use use(*g.h);
            absl::Status st;
            {
              py::gil_scoped_release release;
              st = g.g->SetTopicPacing(t, pacing);
            }
            Check(st);
          },
          py::arg("topic"), py::kw_only(), py::arg("max_in_flight") = 0,
          py::arg("interval") = 0.0,
          "Sets `topic`'s own pacing (at most max_in_flight in flight, 0: no "
          "limit; at least `interval` seconds between hand-outs), durably, "
          "in place of the group's.")
      .def(
          "get_topic_pacing",
          [](PyGroup& g, const py::object& topic) -> py::object {
            std::string store;
            const std::string_view t = Bytes(topic, store, "topic");
            Use use(*g.h);
            absl::StatusOr<std::optional<hq::TopicPacing>> r;
            {
              py::gil_scoped_release release;
              r = g.g->GetTopicPacing(t);
            }
            std::optional<hq::TopicPacing> p = Check(std::move(r));
            if (!p.has_value()) return py::none();
            return Make("TopicPacing",
                        py::arg("max_in_flight") = p->max_in_flight,
                        py::arg("interval") = FromDuration(p->interval));
          },
          py::arg("topic"),
          "`topic`'s own pacing (hq.TopicPacing), or None if it follows the "
          "group's.")
      .def(
          "clear_topic_pacing",
          [](PyGroup& g, const py::object& topic) {
            std::string store;
            const std::string_view t = Bytes(topic, store, "topic");
            Use use(*g.h);
            absl::Status st;
            {
              py::gil_scoped_release release;
              st = g.g->ClearTopicPacing(t);
            }
            Check(st);
          },
          py::arg("topic"), "Removes `topic`'s own pacing (none: OK).")
      .def(
          "leave",
          [](PyGroup& g, const std::string& consumer) {
            Use use(*g.h);
            absl::Status st;
            {
              py::gil_scoped_release release;
              st = g.g->Leave(consumer);
            }
            Check(st);
          },
          py::arg("consumer"),
          "Ordered groups: `consumer` leaves now; its partitions go to the "
          "others.")
      .def(
          "dead_letters",
          [](PyGroup& g, size_t max, const hq::DeadLetter* after) {
            Use use(*g.h);
            absl::StatusOr<std::vector<hq::DeadLetter>> st;
            {
              py::gil_scoped_release release;
              st = g.g->ListDeadLetters(max, after);
            }
            return Check(std::move(st));
          },
          py::arg("max") = 1000, py::kw_only(), py::arg("after") = nullptr,
          "The group's dead letters, at most `max` (1..10000), after `after`.")
      .def(
          "pending",
          [](PyGroup& g, size_t max, const hq::PendingTask* after) {
            Use use(*g.h);
            absl::StatusOr<std::vector<hq::PendingTask>> st;
            {
              py::gil_scoped_release release;
              st = g.g->ListPending(max, after);
            }
            return Check(std::move(st));
          },
          py::arg("max") = 1000, py::kw_only(), py::arg("after") = nullptr,
          "The group's pending tasks one by one (in flight, redelivery, "
          "delayed), at most `max` (1..10000), in key order, after `after`.")
      .def(
          "requeue",
          [](PyGroup& g, std::vector<hq::DeadLetter> letters) {
            Use use(*g.h);
            std::vector<hq::PutResult> results;
            absl::Status st;
            {
              py::gil_scoped_release release;
              st = g.g->Requeue(letters, &results);
            }
            Check(st);
            return results;
          },
          py::arg("letters"),
          "Puts dead letters back into the queue as new messages, atomically; "
          "returns their PutResults.");

  // ---- Queue.
  py::class_<PyQueue>(m, "Queue",
                      "A queue of a Db. Valid while its Db is open.")
      .def_property_readonly("name",
                             [](const PyQueue& q) { return q.q->name(); })
      .def_property_readonly(
          "options",
          [](const PyQueue& q) { return QueueOptionsToPy(q.q->options()); })
      .def(
          "put",
          [](PyQueue& q, py::object payload, py::object topic, py::object key,
             std::optional<uint32_t> partition, int priority, double delay,
             std::optional<double> not_before, py::object dedup_key,
             std::optional<bool> sync) {
            py::dict d;
            d["payload"] = payload;
            d["topic"] = topic;
            d["key"] = key;
            d["dedup_key"] = dedup_key;
            std::vector<std::string> store;
            store.reserve(4);
            hq::Message m = ToMessage(d, store);
            m.partition = partition;
            m.priority = priority;
            m.delay = ToDuration(delay, "delay");
            if (not_before) m.not_before = ToTime(*not_before);
            Use use(*q.h);
            absl::StatusOr<hq::PutResult> r;
            {
              py::gil_scoped_release release;
              r = q.q->Put(m, ToPutOptions(sync));
            }
            return Check(std::move(r));
          },
          py::arg("payload"), py::kw_only(), py::arg("topic") = py::none(),
          py::arg("key") = py::none(), py::arg("partition") = py::none(),
          py::arg("priority") = 0, py::arg("delay") = 0.0,
          py::arg("not_before") = py::none(), py::arg("dedup_key") = py::none(),
          py::arg("sync") = py::none(),
          "Writes one message; returns its PutResult (partition, id, "
          "duplicate). sync=None: the Db's sync_writes.")
      .def(
          "put_batch",
          [](PyQueue& q, const py::iterable& messages,
             std::optional<bool> sync) {
            std::vector<py::object> items;
            for (py::handle h : messages) {
              items.push_back(py::reinterpret_borrow<py::object>(h));
            }
            std::vector<std::string> store;
            store.reserve(items.size() * 4);  // No reallocation: views stay.
            std::vector<hq::Message> batch;
            batch.reserve(items.size());
            for (const py::object& item : items) {
              batch.push_back(ToMessage(item, store));
            }
            Use use(*q.h);
            std::vector<hq::PutResult> results;
            absl::Status st;
            {
              py::gil_scoped_release release;
              st = q.q->PutBatch(batch, &results, ToPutOptions(sync));
            }
            Check(st);
            return results;
          },
          py::arg("messages"), py::kw_only(), py::arg("sync") = py::none(),
          "Writes all messages or none, in one write. An item is a payload, an "
          "hq.Message or a dict of Message's fields.")
      .def(
          "scan",
          [](PyQueue& q, std::vector<uint32_t> partitions,
             const py::iterable& topics, std::optional<hq::MessageId> start,
             std::optional<hq::MessageId> end, const std::string& order) {
            hq::ScanOptions o;
            o.partitions = std::move(partitions);
            o.topics = TextList(topics, "topic");
            if (start) o.from = *start;
            if (end) o.to = *end;
            if (order == "merged") {
              o.order = hq::ScanOptions::Order::kMerged;
            } else if (order == "lane") {
              o.order = hq::ScanOptions::Order::kLane;
            } else {
              Raise(absl::InvalidArgumentError(
                  "order must be 'merged' or 'lane', not '" + order + "'"));
            }
            Use use(*q.h);
            absl::StatusOr<std::unique_ptr<hq::Scanner>> s;
            {
              py::gil_scoped_release release;
              s = q.q->NewScanner(o);
            }
            auto state = std::make_shared<ScanState>();
            state->scanner = Check(std::move(s));
            q.h->AddScanner(state);
            return PyScanner{q.h, state};
          },
          py::kw_only(), py::arg("partitions") = std::vector<uint32_t>{},
          py::arg("topics") = py::tuple(), py::arg("start") = py::none(),
          py::arg("end") = py::none(), py::arg("order") = "merged",
          "A snapshot iterator over ids [start, end) of the chosen partitions "
          "and topics; order 'merged' or 'lane'.")
      .def(
          "group",
          [](PyQueue& q, const std::string& name, const py::iterable& topics,
             bool ordered, double lease, uint32_t max_attempts,
             double backoff_base, double backoff_cap, double backoff_jitter,
             double ownership_lease, size_t max_active_lanes,
             const py::object& start, uint32_t topic_max_in_flight,
             double topic_interval) {
            hq::GroupOptions o;
            o.topics = TextList(topics, "topic");
            o.ordered = ordered;
            SetStart(start, &o);
            o.lease = ToDuration(lease, "lease");
            o.max_attempts = max_attempts;
            o.backoff_base = ToDuration(backoff_base, "backoff_base");
            o.backoff_cap = ToDuration(backoff_cap, "backoff_cap");
            o.backoff_jitter = backoff_jitter;
            o.ownership_lease = ToDuration(ownership_lease, "ownership_lease");
            o.max_active_lanes = max_active_lanes;
            o.pacing.max_in_flight = topic_max_in_flight;
            o.pacing.interval = ToDuration(topic_interval, "topic_interval");
            Use use(*q.h);
            absl::StatusOr<hq::ConsumerGroup*> g;
            {
              py::gil_scoped_release release;
              g = q.q->Group(name, o);
            }
            return PyGroup{q.h, Check(std::move(g))};
          },
          py::arg("name"), py::kw_only(), py::arg("topics") = py::tuple(),
          py::arg("ordered") = false, py::arg("lease") = 30.0,
          py::arg("max_attempts") = 10, py::arg("backoff_base") = 1.0,
          py::arg("backoff_cap") = 300.0, py::arg("backoff_jitter") = 0.2,
          py::arg("ownership_lease") = 10.0,
          py::arg("max_active_lanes") = hq::GroupOptions().max_active_lanes,
          py::arg("start") = "earliest", py::arg("topic_max_in_flight") = 0,
          py::arg("topic_interval") = 0.0,
          "The consumer group `name`, created on first use (topics, ordered "
          "and start are taken then; the rest from each call). "
          "topic_max_in_flight and topic_interval (seconds) pace every "
          "topic (0: no limit).")
      .def(
          "list_groups",
          [](PyQueue& q) {
            Use use(*q.h);
            absl::StatusOr<std::vector<std::string>> r;
            {
              py::gil_scoped_release release;
              r = q.q->ListGroups();
            }
            return Check(std::move(r));
          },
          "The names of the queue's consumer groups.")
      .def(
          "subscribe",
          [](PyQueue& q, const std::string& name, py::function listener,
             std::vector<uint32_t> partitions, const py::iterable& topics,
             py::object start, uint32_t checkpoint_messages,
             double checkpoint_interval, uint32_t buffer_messages,
             uint64_t buffer_bytes, double retry_base, double retry_cap,
             size_t max_active_lanes) {
            hq::SubscribeOptions o;
            o.name = name;
            o.partitions = std::move(partitions);
            o.topics = TextList(topics, "topic");
            SetStart(start, &o);
            o.checkpoint_messages = checkpoint_messages;
            o.checkpoint_interval =
                ToDuration(checkpoint_interval, "checkpoint_interval");
            o.buffer_messages = buffer_messages;
            o.buffer_bytes = buffer_bytes;
            o.retry_base = ToDuration(retry_base, "retry_base");
            o.retry_cap = ToDuration(retry_cap, "retry_cap");
            o.max_active_lanes = max_active_lanes;
            auto l = std::make_unique<PyListener>(listener, name);
            Use use(*q.h);
            absl::StatusOr<hq::Subscription*> sub;
            {
              py::gil_scoped_release release;
              sub = q.q->Subscribe(o, l.get());
            }
            auto state = std::make_shared<SubState>();
            state->queue = q.q;
            state->name = name;
            state->subscription = Check(std::move(sub));
            state->listener = l.get();
            q.h->AddSubscription(state, std::move(l));
            return PySubscription{q.h, state};
          },
          py::arg("name"), py::arg("listener"), py::kw_only(),
          py::arg("partitions") = std::vector<uint32_t>{},
          py::arg("topics") = py::tuple(), py::arg("start") = "earliest",
          py::arg("checkpoint_messages") = 1000,
          py::arg("checkpoint_interval") = 1.0,
          py::arg("buffer_messages") = 1024,
          py::arg("buffer_bytes") = uint64_t{4} << 20,
          py::arg("retry_base") = 0.1, py::arg("retry_cap") = 30.0,
          py::arg("max_active_lanes") = hq::SubscribeOptions().max_active_lanes,
          "Delivers the queue's messages to `listener` on a delivery thread, "
          "in order per lane, at least once; resumes from its checkpoints.")
      .def(
          "unsubscribe",
          [](PyQueue& q, const std::string& name) {
            {
              Use use(*q.h);
              absl::Status st;
              {
                py::gil_scoped_release release;
                st = q.q->Unsubscribe(name);
              }
              Check(st);
            }
            q.h->Unsubscribed(q.q, name);
          },
          py::arg("name"),
          "Stops the subscription `name` and deletes its checkpoints.")
      .def(
          "list_subscriptions",
          [](PyQueue& q) {
            Use use(*q.h);
            absl::StatusOr<std::vector<std::string>> r;
            {
              py::gil_scoped_release release;
              r = q.q->ListSubscriptions();
            }
            return Check(std::move(r));
          },
          "The names of the queue's subscriptions.")
      .def(
          "inspect_subscription",
          [](PyQueue& q, const std::string& name) {
            Use use(*q.h);
            absl::StatusOr<hq::SubscriptionStats> r;
            {
              py::gil_scoped_release release;
              r = q.q->InspectSubscription(name);
            }
            return SubscriptionStatsToPy(Check(std::move(r)));
          },
          py::arg("name"),
          "A subscription's stored checkpoints and lag, whether or not it is "
          "live.")
      .def(
          "inspect_group",
          [](PyQueue& q, const std::string& name) {
            Use use(*q.h);
            absl::StatusOr<hq::GroupInfo> r;
            {
              py::gil_scoped_release release;
              r = q.q->InspectGroup(name);
            }
            hq::GroupInfo info = Check(std::move(r));
            py::list cursors;
            for (const auto& c : info.cursors) {
              cursors.append(Make(
                  "LaneCursor", py::arg("partition") = c.partition,
                  py::arg("priority") = c.priority,
                  py::arg("topic") = PyText(c.topic), py::arg("scan") = c.scan,
                  py::arg("completion") = c.completion));
            }
            return Make("GroupInfo", py::arg("name") = info.name,
                        py::arg("topics") = info.topics,
                        py::arg("ordered") = info.ordered,
                        py::arg("dead_letter_queue") = info.dead_letter_queue,
                        py::arg("cursors") = cursors,
                        py::arg("start") = StartName(info.start),
                        py::arg("start_ids") = info.start_ids);
          },
          py::arg("name"),
          "A group's stored options, start and cursors (hq.GroupInfo).")
      .def(
          "stats",
          [](PyQueue& q) {
            Use use(*q.h);
            absl::StatusOr<hq::QueueStats> r;
            {
              py::gil_scoped_release release;
              r = q.q->Stats();
            }
            hq::QueueStats s = Check(std::move(r));
            py::list parts;
            for (const auto& p : s.partitions) {
              parts.append(Make(
                  "PartitionStats", py::arg("partition") = p.partition,
                  py::arg("lanes") = p.lanes, py::arg("first") = p.first,
                  py::arg("last") = p.last, py::arg("messages") = p.messages,
                  py::arg("messages_exact") = p.messages_exact,
                  py::arg("approximate_bytes") = p.approximate_bytes));
            }
            return Make("QueueStats", py::arg("partitions") = parts,
                        py::arg("approximate_bytes") = s.approximate_bytes);
          },
          "Messages, bytes and ids per partition, and the queue's groups and "
          "subscriptions (hq.QueueStats).")
      .def(
          "approximate_bytes",
          [](PyQueue& q) {
            Use use(*q.h);
            absl::StatusOr<uint64_t> r;
            {
              py::gil_scoped_release release;
              r = q.q->ApproximateBytes();
            }
            return Check(std::move(r));
          },
          "The queue's approximate size on disk, in bytes.");

  // ---- Db.
  py::class_<PyDb>(m, "Db",
                   "One LevelDB directory holding any number of queues.")
      .def_static(
          "open",
          [](py::object path_like, bool create_if_missing, bool error_if_exists,
             bool sync_writes, const std::string& recovery,
             double scanner_lease, int max_open_scanners,
             double ttl_sweep_interval, int ttl_sweep_batch, size_t cache_bytes,
             int bloom_bits_per_key, size_t write_buffer_bytes,
             int max_open_files, int delivery_threads, double status_interval) {
            // str, bytes or os.PathLike.
            py::object fs_path =
                py::module_::import("os").attr("fspath")(path_like);
            std::string store;
            std::string path(Bytes(fs_path, store, "path"));
            hq::Options o;
            o.create_if_missing = create_if_missing;
            o.error_if_exists = error_if_exists;
            o.sync_writes = sync_writes;
            if (recovery == "point_in_time") {
              o.recovery = hq::Options::Recovery::kPointInTime;
            } else if (recovery == "absolute_consistency") {
              o.recovery = hq::Options::Recovery::kAbsoluteConsistency;
            } else {
              throw py::value_error(
                  "recovery must be 'point_in_time' or "
                  "'absolute_consistency', not '" +
                  recovery + "'");
            }
            o.scanner_lease = ToDuration(scanner_lease, "scanner_lease");
            o.max_open_scanners = max_open_scanners;
            o.ttl_sweep_interval =
                ToDuration(ttl_sweep_interval, "ttl_sweep_interval");
            o.ttl_sweep_batch = ttl_sweep_batch;
            o.cache_bytes = cache_bytes;
            o.bloom_bits_per_key = bloom_bits_per_key;
            o.write_buffer_bytes = write_buffer_bytes;
            o.max_open_files = max_open_files;
            o.delivery_threads = delivery_threads;
            o.status_interval = ToDuration(status_interval, "status_interval");
            absl::StatusOr<std::unique_ptr<hq::Db>> db;
            {
              py::gil_scoped_release release;
              db = hq::Db::Open(path, o);
            }
            auto h = std::make_shared<DbHandle>(Check(std::move(db)));
            OpenHandles().push_back(h);
            return PyDb{std::move(h)};
          },
          py::arg("path"), py::kw_only(), py::arg("create_if_missing") = true,
          py::arg("error_if_exists") = false, py::arg("sync_writes") = false,
          py::arg("recovery") = "point_in_time",
          py::arg("scanner_lease") = 60.0, py::arg("max_open_scanners") = 10000,
          py::arg("ttl_sweep_interval") = 60.0,
          py::arg("ttl_sweep_batch") = 1000,
          py::arg("cache_bytes") = size_t{64} << 20,
          py::arg("bloom_bits_per_key") = 10,
          py::arg("write_buffer_bytes") = size_t{64} << 20,
          py::arg("max_open_files") = 1000, py::arg("delivery_threads") = 2,
          py::arg("status_interval") = 5.0,
          "Opens or creates the Db at `path` (keyword options as "
          "hq/options.h). Usable as a context manager.")
      .def(
          "close", [](PyDb& d) { d.h->Close(); },
          "Waits for calls in progress, stops subscriptions, frees scanners "
          "and closes. Idempotent.")
      .def_property_readonly("closed",
                             [](const PyDb& d) { return d.h->closing(); })
      .def_property_readonly("path",
                             [](PyDb& d) {
                               Use use(*d.h);
                               return use.db()->path();
                             })
      .def("__enter__", [](PyDb& d) -> PyDb& { return d; })
      .def("__exit__",
           [](PyDb& d, py::args) {
             d.h->Close();
             return false;
           })
      .def(
          "create_queue",
          [](PyDb& d, const std::string& name, uint32_t partitions,
             int priorities, std::optional<double> ttl,
             const std::string& layout, uint32_t max_payload_bytes) {
            hq::QueueOptions o;
            o.partitions = partitions;
            o.priorities = priorities;
            if (ttl) o.ttl = ToDuration(*ttl, "ttl");
            std::optional<hq::Layout> l = hq::ParseLayout(layout);
            if (!l) {
              Raise(absl::InvalidArgumentError(
                  "layout must be 'time' or 'topic', not '" + layout + "'"));
            }
            o.layout = *l;
            o.max_payload_bytes = max_payload_bytes;
            Use use(*d.h);
            absl::StatusOr<hq::Queue*> q;
            {
              py::gil_scoped_release release;
              q = use.db()->CreateQueue(name, o);
            }
            return PyQueue{d.h, Check(std::move(q))};
          },
          py::arg("name"), py::kw_only(), py::arg("partitions") = 1,
          py::arg("priorities") = 1, py::arg("ttl") = py::none(),
          py::arg("layout") = "time",
          py::arg("max_payload_bytes") = uint32_t{1} << 20,
          "Creates a queue (AlreadyExists if it exists).")
      .def(
          "open_queue",
          [](PyDb& d, const std::string& name) {
            Use use(*d.h);
            absl::StatusOr<hq::Queue*> q;
            {
              py::gil_scoped_release release;
              q = use.db()->OpenQueue(name);
            }
            return PyQueue{d.h, Check(std::move(q))};
          },
          py::arg("name"), "The queue `name`; NotFound if there is none.")
      .def(
          "drop_queue",
          [](PyDb& d, const std::string& name) {
            Use use(*d.h);
            absl::Status st;
            {
              py::gil_scoped_release release;
              st = use.db()->DropQueue(name);
            }
            Check(st);
          },
          py::arg("name"),
          "Drops a queue, its groups, subscriptions and dead letters.")
      .def(
          "list_queues",
          [](PyDb& d) {
            Use use(*d.h);
            absl::StatusOr<std::vector<std::string>> r;
            {
              py::gil_scoped_release release;
              r = use.db()->ListQueues();
            }
            return Check(std::move(r));
          },
          "The names of the Db's queues.")
      .def(
          "compact_expired",
          [](PyDb& d) {
            Use use(*d.h);
            absl::StatusOr<hq::SweepStats> r;
            {
              py::gil_scoped_release release;
              r = use.db()->CompactExpired();
            }
            return SweepToPy(Check(std::move(r)));
          },
          "Runs the TTL sweep now; returns what it deleted.")
      .def(
          "compact_all",
          [](PyDb& d) {
            Use use(*d.h);
            absl::StatusOr<hq::SweepStats> r;
            {
              py::gil_scoped_release release;
              r = use.db()->CompactAll();
            }
            return SweepToPy(Check(std::move(r)));
          },
          "The TTL sweep, then a full LevelDB compaction.")
      .def(
          "verify",
          [](PyDb& d) {
            Use use(*d.h);
            absl::StatusOr<hq::VerifyReport> r;
            {
              py::gil_scoped_release release;
              r = use.db()->Verify();
            }
            hq::VerifyReport v = Check(std::move(r));
            py::list problems;
            for (const auto& p : v.problems) {
              problems.append(Make("VerifyProblem",
                                   py::arg("key_hex") = p.key_hex,
                                   py::arg("description") = p.description,
                                   py::arg("file") = p.file));
            }
            py::list dropped;
            for (const std::string& f : v.dropped) dropped.append(f);
            return Make(
                "VerifyReport", py::arg("keys") = v.keys,
                py::arg("queues") = v.queues, py::arg("messages") = v.messages,
                py::arg("problems") = problems,
                py::arg("problem_count") = v.problem_count,
                py::arg("tables") = v.tables, py::arg("blocks") = v.blocks,
                py::arg("dropped") = dropped);
          },
          "Reads every table block and checks every record; problems name "
          "their file.")
      .def(
          "recovery",
          [](PyDb& d) {
            Use use(*d.h);
            py::list out;
            for (const hq::RecoveryReport::Dropped& x :
                 use.db()->recovery().dropped) {
              out.append(Make(
                  "RecoveryDrop", py::arg("file") = x.file,
                  py::arg("offset") = x.offset, py::arg("bytes") = x.bytes,
                  py::arg("damage") = x.damage, py::arg("records") = x.records,
                  py::arg("torn_tail") = x.torn_tail,
                  py::arg("saved_as") = x.saved_as));
            }
            return out;
          },
          "What this open's recovery cut from damaged write-ahead logs (kept "
          "under dropped/).");
}
