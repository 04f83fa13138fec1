// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// What hq's two pybind11 extensions (hq._hq and hq._hq_fleet) share:
//
// - Errors: an absl::Status is raised as the hq.Error subclass of its code
//   (hq._types._ERRORS_BY_CODE), its `detail` the name of its
//   hq::ErrorDetail.
// - Conversions: seconds as floats to and from absl::Duration, Unix seconds
//   to and from absl::Time, bytes/str to and from C++ strings.
// - Calls: a CallGate counts the calls in progress on a C++ object that a
//   Python object owns, so that closing it waits for them and refuses later
//   ones. Call is the one step of every bound method that calls into C++: it
//   releases the GIL around the call and raises its error status.
//
// Every function here REQUIRES the GIL unless it says otherwise.

#ifndef HQ_PYTHON_HQ_BIND_H_
#define HQ_PYTHON_HQ_BIND_H_

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <initializer_list>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "hq/group.h"

namespace hq::python {

namespace py = pybind11;

// ---- Errors.

// The module hq._types, imported once and never released.
py::handle Types();

// Raises the hq.Error subclass of status's code, with status's message
// (undecodable UTF-8 replaced) and its `detail` the name of the status's
// hq::ErrorDetail (None if none). REQUIRES: !status.ok().
[[noreturn]] void Raise(const absl::Status& status);

// Raises status if it is an error.
void Check(const absl::Status& status);

// v's value, or raises its status.
template <typename T>
T Check(absl::StatusOr<T> v) {
  if (!v.ok()) Raise(v.status());
  return *std::move(v);
}

// Builds the class `name` of hq._types (a dataclass) from keyword arguments.
template <typename... Args>
py::object Make(const char* name, Args&&... args) {
  return Types().attr(name)(std::forward<Args>(args)...);
}

// ---- Conversions.

// The name of h's type, for messages.
std::string TypeName(py::handle h);

// Seconds as an absl::Duration; InvalidArgument ("<what> must be a finite
// number of seconds") for NaN or an infinity.
absl::Duration ToDuration(double seconds, const char* what);
double FromDuration(absl::Duration d);

// Seconds since the Unix epoch.
double UnixSeconds(absl::Time t);
// t as Unix seconds; None for an infinite time.
py::object FromTime(absl::Time t);
// Unix seconds as an absl::Time; InvalidArgument if not finite.
absl::Time ToTime(double unix_seconds);

// bytes, bytearray or str (as UTF-8); TypeError ("<what> must be bytes or
// str, not <type>") for anything else. The view points into `h` when it is
// bytes or str (valid while `h` lives), else into `store`.
std::string_view Bytes(py::handle h, std::string& store, const char* what);
// The same, copied.
std::string Bytes(py::handle h, const char* what);
// Copies of the bytes of the (rare) bytearrays among many views, each at a
// stable address.
using ByteStore = std::vector<std::unique_ptr<std::string>>;
// Bytes(h, ..., what) for many views: a bytearray's bytes are copied into a
// new string of `store`.
std::string_view BytesView(py::handle h, ByteStore& store, const char* what);
// Bytes of every item of the iterable `items`, copied.
std::vector<std::string> TextList(py::handle items, const char* what);
// Python's int, or an object that converts itself to one (__index__, as
// numpy's integers do), as the integer type T; TypeError ("<what> must be
// an int, not <type>") for anything else, InvalidArgument ("<what> out of
// range") if it does not fit.
template <typename T>
T Int(py::handle h, const char* what) {
  py::object index;
  if (!PyLong_Check(h.ptr())) {
    if (!PyIndex_Check(h.ptr())) {
      throw py::type_error(std::string(what) + " must be an int, not " +
                           TypeName(h));
    }
    index = py::reinterpret_steal<py::object>(PyNumber_Index(h.ptr()));
    if (!index) throw py::error_already_set();
    h = index;
  }
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
  if (overflow != 0 || std::cmp_less(v, std::numeric_limits<T>::min()) ||
      std::cmp_greater(v, std::numeric_limits<T>::max())) {
    Raise(absl::InvalidArgumentError(std::string(what) + " out of range"));
  }
  return static_cast<T>(v);
}
// A float or int (or an object with __index__) as a double; TypeError
// ("<what> must be a number, not <type>") for anything else.
double Float(py::handle h, const char* what);
// What float() takes but a str (a float, an int, an object with __float__
// or __index__) as a double; TypeError ("<what> must be a number, not
// <type>") for anything else.
double Real(py::handle h, const char* what);

py::bytes PyBytes(std::string_view s);
// UTF-8 as str; undecodable bytes are kept as surrogate escapes.
py::str PyText(std::string_view s);

// ---- Objects of bound classes, made and read without pybind11's lookup of
// the class by C++ type on every conversion (a hash of the type's name).
// (hq.Task and hq.PutResult, made by the hundred, are plain CPython types
// instead: bind_group.cc, bind_message.cc.)

// hq._hq's maker of hq.Task objects, for the other extension modules
// (hq._hq_fleet's FleetTask.task): a capsule of this name, hq._hq's
// attribute _task_api.
inline constexpr char kTaskApiCapsule[] = "hq._hq._task_api";
struct TaskApi {
  // A new reference to an hq.Task holding a copy of `t`; nullptr with a
  // Python error set on failure.
  PyObject* (*new_task)(const hq::Task& t);
};

// pybind11's record of the bound class T, looked up once. REQUIRES: T is
// bound.
template <typename T>
const py::detail::type_info* TypeRecord() {
  static const py::detail::type_info* const record =
      py::detail::get_type_info(typeid(T), /*throw_if_missing=*/true);
  return record;
}

// A new Python object of the bound class T holding v (moved).
template <typename T>
py::object NewObject(T&& v) {
  using U = std::remove_cvref_t<T>;
  py::handle h = py::detail::type_caster_generic::cast(
      &v, py::return_value_policy::move, py::handle(), TypeRecord<U>(), nullptr,
      [](const void* p) -> void* {
        return new U(std::move(*const_cast<U*>(static_cast<const U*>(p))));
      });
  if (!h) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(h);
}

// The C++ value of `h` if it is an object of the bound class T (or of a
// Python subclass of it), else nullptr. Valid while `h` lives. TypeError
// for an object of T that was never initialized (made by T.__new__).
template <typename T>
T* ValueOf(py::handle h) {
  const py::detail::type_info* record = TypeRecord<T>();
  if (Py_TYPE(h.ptr()) != record->type) {
    if (!PyObject_TypeCheck(h.ptr(), record->type)) return nullptr;
    return &h.cast<T&>();  // A subclass: pybind11's own path.
  }
  void* v = reinterpret_cast<py::detail::instance*>(h.ptr())
                ->get_value_and_holder(record)
                .value_ptr();
  if (v == nullptr) {
    throw py::type_error("an uninitialized " + TypeName(h) + " object");
  }
  return static_cast<T*>(v);
}

// ---- Vectorcall methods: the calls made by the thousand (put, claim,
// complete) are METH_FASTCALL | METH_KEYWORDS methods, without pybind11's
// dispatch (an argument tuple and dict, a caster per argument).

// The parameters of one such method, by name; the first `positional` may
// also be given by position. Made once, with the GIL held (its names are
// interned and never released); then read-only.
class FastParams {
 public:
  // `function`: the method's name, for messages.
  FastParams(const char* function, std::initializer_list<const char*> names,
             size_t positional);
  FastParams(const FastParams&) = delete;
  FastParams& operator=(const FastParams&) = delete;

  size_t size() const { return names_.size(); }

  // The arguments of a call (args[0, nargs) positional, then one per name
  // of kwnames): given[i], borrowed, for the i-th name; nullptr if not
  // given. TypeError, worded as Python's own, for too many positional
  // arguments, an unknown keyword or a parameter given twice. REQUIRES:
  // given has size() entries, all nullptr.
  void Parse(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
             PyObject** given) const;

  // Raises the TypeError of a call without the parameter i.
  [[noreturn]] void RaiseMissing(size_t i) const;

 private:
  const std::string function_;
  std::vector<PyObject*> names_;
  const size_t positional_;
};

// The body of a vectorcall method: self, then the arguments as
// FastParams::Parse takes them; returns the result (a new reference).
using FastFn = py::object (*)(py::handle self, PyObject* const* args,
                              Py_ssize_t nargs, PyObject* kwnames);

// fn as a METH_FASTCALL | METH_KEYWORDS function: its exception becomes the
// Python error it stands for.
template <FastFn fn>
PyObject* FastCall(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                   PyObject* kwnames) {
  try {
    return fn(self, args, nargs, kwnames).release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (py::builtin_exception& e) {
    e.set_error();
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

// FastCall<fn> as a PyMethodDef's ml_meth.
template <FastFn fn>
const PyCFunction FastMethod =
    reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&FastCall<fn>));

// Adds the method `def` (METH_FASTCALL | METH_KEYWORDS, its ml_meth a
// FastMethod; its doc starting with a "name($self, ...)\n--\n\n"
// signature) to the bound class `cls`. REQUIRES: def lives for the process.
void AddFastMethod(py::handle cls, PyMethodDef* def);

// ---- Calls.

// A waiting call (a claim) waits in slices of at most this long, with the
// GIL released, to notice a close and pending signals (Ctrl-C) in between.
// Its work is still woken by the write path, never found by polling.
inline constexpr absl::Duration kWaitSlice = absl::Milliseconds(200);

// Releases the GIL for its lifetime if this thread holds it (and Python is
// still initialized); else does nothing. For a close, which may run from a
// destructor with or without the GIL.
class ReleaseGilIfHeld {
 public:
  ReleaseGilIfHeld() {
    if (Py_IsInitialized() && PyGILState_Check()) release_.emplace();
  }
  ReleaseGilIfHeld(const ReleaseGilIfHeld&) = delete;
  ReleaseGilIfHeld& operator=(const ReleaseGilIfHeld&) = delete;

 private:
  std::optional<py::gil_scoped_release> release_;
};

// The calls in progress on one C++ object that Python objects share, and
// its closing: once BeginClose has run, a new call raises FailedPrecondition
// with the gate's message, and AwaitIdle waits for the calls in progress.
// Thread-safe.
class CallGate {
 public:
  // `closed_message`: the FailedPrecondition's message, as "the hq.Db is
  // closed".
  explicit CallGate(std::string closed_message)
      : closed_message_(std::move(closed_message)) {}
  CallGate(const CallGate&) = delete;
  CallGate& operator=(const CallGate&) = delete;

  // Starts a call, or raises FailedPrecondition once closing. Pair with
  // Leave (Use does). Lock-free unless closing.
  void Enter();
  // Ends a call. Needs no GIL. Lock-free unless closing.
  void Leave();

  // Whether BeginClose has run. Needs no GIL.
  bool closing() const { return closing_.load(); }
  // Raises the FailedPrecondition a call gets once closing.
  [[noreturn]] void RaiseClosed() const;

 protected:
  // Refuses every later call. False if it had already (another caller is
  // closing or has closed). Needs no GIL.
  bool BeginClose();
  // Blocks until no call is in progress. REQUIRES: BeginClose ran; this
  // thread does not hold the GIL (a call in progress may need it).
  void AwaitIdle();

 private:
  const std::string closed_message_;
  // A call increments active_, then reads closing_; a close sets closing_,
  // then waits for active_ to reach 0 (both sequentially consistent: a call
  // that missed the close is counted by it). A call that ends after the
  // close started takes mu_ to wake the close's Await.
  std::atomic<int> active_{0};
  std::atomic<bool> closing_{false};
  absl::Mutex mu_;
};

// A call in progress on a CallGate, from construction (which raises
// FailedPrecondition once the gate is closing) to destruction.
class Use {
 public:
  explicit Use(CallGate& gate) : gate_(gate) { gate_.Enter(); }
  ~Use() { gate_.Leave(); }
  Use(const Use&) = delete;
  Use& operator=(const Use&) = delete;

 private:
  CallGate& gate_;
};

// The step of every bound method that calls into C++: runs fn() with the
// GIL released (always, even for a call that is usually short: an engine
// call may wait for a lock that a delivery thread holds while it waits for
// the GIL to run a listener, or for the write pipeline, fsync included),
// raises its status if it failed, and returns the value of an
// absl::StatusOr (nothing for an absl::Status). fn must not touch Python
// objects. A caller that needs a call on a gate holds a Use (or calls the
// overload below).
template <typename Fn>
auto Call(Fn&& fn) {
  using R = std::invoke_result_t<Fn&>;
  R r = [&fn] {
    py::gil_scoped_release release;
    return fn();
  }();
  if constexpr (std::is_same_v<R, absl::Status>) {
    Check(r);
  } else {
    return Check(std::move(r));
  }
}

// Call(fn) as a call on `gate`: raises FailedPrecondition instead once the
// gate is closing; holds the gate's close off until fn returned.
template <typename Fn>
auto Call(CallGate& gate, Fn&& fn) {
  Use use(gate);
  return Call(std::forward<Fn>(fn));
}

// A claim that may wait: calls claim(slice) (fn of an absl::Duration giving
// an absl::StatusOr of a container) on `gate` until it returns something or
// `wait` has passed, each call waiting at most kWaitSlice. Between calls,
// raises FailedPrecondition if the gate is closing and the exception of a
// pending signal's handler (KeyboardInterrupt).
template <typename Claim>
auto ClaimWaiting(CallGate& gate, absl::Duration wait, Claim&& claim) {
  const absl::Time deadline = absl::Now() + wait;
  for (;;) {
    const absl::Duration left =
        std::max(deadline - absl::Now(), absl::ZeroDuration());
    const absl::Duration slice = std::min(left, kWaitSlice);
    auto got = Call(gate, [&] { return claim(slice); });
    if (!got.empty() || left <= kWaitSlice) return got;
    if (gate.closing()) gate.RaiseClosed();
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  }
}

}  // namespace hq::python

#endif  // HQ_PYTHON_HQ_BIND_H_
