// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "bind.h"

#include <cmath>
#include <cstdint>
#include <memory>

#include "hq/hq.h"

namespace hq::python {

py::handle Types() {
  static py::handle types = py::module_::import("hq._types").release();
  return types;
}

void Raise(const absl::Status& status) {
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

py::object FromTime(absl::Time t) {
  if (t == absl::InfinitePast() || t == absl::InfiniteFuture()) {
    return py::none();
  }
  return py::float_(UnixSeconds(t));
}

absl::Time ToTime(double unix_seconds) {
  // int64 nanoseconds reach about 9.2e9 s either side of 1970; the cast of
  // a double beyond them is undefined.
  if (!std::isfinite(unix_seconds) || std::abs(unix_seconds) >= 9.2e9) {
    Raise(absl::InvalidArgumentError(
        "a time must be finite Unix seconds within 9.2e9 of 1970"));
  }
  return absl::FromUnixNanos(static_cast<int64_t>(unix_seconds * 1e9));
}

namespace {

// A bytes or str object's bytes in place (str: its UTF-8 form, cached by
// the object); false for any other type.
bool InPlaceBytes(py::handle h, std::string_view* out) {
  if (PyBytes_Check(h.ptr())) {  // The usual case first, by a type flag.
    *out = std::string_view(PyBytes_AS_STRING(h.ptr()),
                            static_cast<size_t>(PyBytes_GET_SIZE(h.ptr())));
    return true;
  }
  if (PyUnicode_Check(h.ptr())) {
    Py_ssize_t n = 0;
    const char* s = PyUnicode_AsUTF8AndSize(h.ptr(), &n);
    if (s == nullptr) throw py::error_already_set();
    *out = std::string_view(s, static_cast<size_t>(n));
    return true;
  }
  return false;
}

}  // namespace

std::string_view Bytes(py::handle h, std::string& store, const char* what) {
  if (std::string_view v; InPlaceBytes(h, &v)) return v;
  if (PyByteArray_Check(h.ptr())) {
    store.assign(PyByteArray_AS_STRING(h.ptr()),
                 static_cast<size_t>(PyByteArray_GET_SIZE(h.ptr())));
    return store;
  }
  throw py::type_error(std::string(what) + " must be bytes or str, not " +
                       TypeName(h));
}

std::string_view BytesView(py::handle h, ByteStore& store, const char* what) {
  if (std::string_view v; InPlaceBytes(h, &v)) return v;
  if (PyByteArray_Check(h.ptr())) {
    store.push_back(std::make_unique<std::string>(
        PyByteArray_AS_STRING(h.ptr()),
        static_cast<size_t>(PyByteArray_GET_SIZE(h.ptr()))));
    return *store.back();
  }
  std::string unused;
  return Bytes(h, unused, what);  // Raises its TypeError.
}

std::string TypeName(py::handle h) {
  return py::str(py::type::handle_of(h).attr("__name__"));
}

double Float(py::handle h, const char* what) {
  if (PyFloat_Check(h.ptr())) return PyFloat_AS_DOUBLE(h.ptr());
  if (PyLong_Check(h.ptr())) {
    const double d = PyLong_AsDouble(h.ptr());
    if (d == -1.0 && PyErr_Occurred()) throw py::error_already_set();
    return d;
  }
  if (PyIndex_Check(h.ptr())) {
    py::object index =
        py::reinterpret_steal<py::object>(PyNumber_Index(h.ptr()));
    if (!index) throw py::error_already_set();
    return Float(index, what);
  }
  throw py::type_error(std::string(what) + " must be a number, not " +
                       TypeName(h));
}

double Real(py::handle h, const char* what) {
  if (PyFloat_Check(h.ptr())) return PyFloat_AS_DOUBLE(h.ptr());
  if (!PyUnicode_Check(h.ptr())) {
    const double d = PyFloat_AsDouble(h.ptr());
    if (d != -1.0 || !PyErr_Occurred()) return d;
    if (!PyErr_ExceptionMatches(PyExc_TypeError)) {
      throw py::error_already_set();  // An OverflowError, say.
    }
    PyErr_Clear();
  }
  throw py::type_error(std::string(what) + " must be a number, not " +
                       TypeName(h));
}

std::string Bytes(py::handle h, const char* what) {
  std::string store;
  const std::string_view s = Bytes(h, store, what);
  if (s.data() == store.data()) return store;
  return std::string(s);
}

std::vector<std::string> TextList(py::handle items, const char* what) {
  std::vector<std::string> out;
  if (PyTuple_Check(items.ptr()) && PyTuple_GET_SIZE(items.ptr()) == 0) {
    return out;  // The usual default, without an iterator.
  }
  for (py::handle h : py::iter(items)) out.push_back(Bytes(h, what));
  return out;
}

py::bytes PyBytes(std::string_view s) { return py::bytes(s.data(), s.size()); }

py::str PyText(std::string_view s) {
  return py::reinterpret_steal<py::str>(PyUnicode_DecodeUTF8(
      s.data(), static_cast<Py_ssize_t>(s.size()), "surrogateescape"));
}

// ---- Vectorcall methods.

FastParams::FastParams(const char* function,
                       std::initializer_list<const char*> names,
                       size_t positional)
    : function_(function), positional_(positional) {
  for (const char* name : names) {
    PyObject* interned = PyUnicode_InternFromString(name);
    if (interned == nullptr) throw py::error_already_set();
    names_.push_back(interned);
  }
}

void FastParams::Parse(PyObject* const* args, Py_ssize_t nargs,
                       PyObject* kwnames, PyObject** given) const {
  const size_t n = names_.size();
  if (static_cast<size_t>(nargs) > positional_) {
    std::string names;
    for (size_t i = 0; i < positional_; ++i) {
      if (i > 0) names += ", ";
      names += py::str(names_[i]).cast<std::string>();
    }
    throw py::type_error(function_ + "() takes " + std::to_string(positional_) +
                         " positional argument" +
                         (positional_ == 1 ? "" : "s") + " (" + names +
                         ") but " + std::to_string(nargs) + " were given");
  }
  for (Py_ssize_t i = 0; i < nargs; ++i) given[i] = args[i];
  const Py_ssize_t nkw = kwnames == nullptr ? 0 : PyTuple_GET_SIZE(kwnames);
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    PyObject* name = PyTuple_GET_ITEM(kwnames, k);
    size_t i = 0;
    while (i < n && name != names_[i]) ++i;
    if (i == n) {  // Not interned: compare the text.
      i = 0;
      while (i < n && PyUnicode_Compare(name, names_[i]) != 0) {
        if (PyErr_Occurred()) throw py::error_already_set();
        ++i;
      }
    }
    if (i == n) {
      throw py::type_error(function_ +
                           "() got an unexpected keyword argument '" +
                           std::string(py::str(name)) + "'");
    }
    if (given[i] != nullptr) {
      throw py::type_error(function_ + "() got multiple values for argument '" +
                           std::string(py::str(name)) + "'");
    }
    given[i] = args[nargs + k];
  }
}

void FastParams::RaiseMissing(size_t i) const {
  throw py::type_error(function_ + "() missing its argument '" +
                       std::string(py::str(names_[i])) + "'");
}

void AddFastMethod(py::handle cls, PyMethodDef* def) {
  py::object method = py::reinterpret_steal<py::object>(
      PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(cls.ptr()), def));
  if (!method) throw py::error_already_set();
  py::setattr(cls, def->ml_name, method);
}

// ---- Calls.

void CallGate::Enter() {
  active_.fetch_add(1);
  if (!closing_.load()) return;
  Leave();
  RaiseClosed();
}

void CallGate::Leave() {
  if (active_.fetch_sub(1) == 1 && closing_.load()) {
    // The close may be waiting in Await: releasing mu_ makes it look again.
    absl::MutexLock l(&mu_);
  }
}

void CallGate::RaiseClosed() const {
  Raise(absl::FailedPreconditionError(closed_message_));
}

bool CallGate::BeginClose() { return !closing_.exchange(true); }

void CallGate::AwaitIdle() {
  absl::MutexLock l(&mu_);
  mu_.Await(absl::Condition(
      +[](std::atomic<int>* active) { return active->load() == 0; }, &active_));
}

}  // namespace hq::python
