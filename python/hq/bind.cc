// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "bind.h"

#include <cmath>
#include <cstdint>

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
  if (!std::isfinite(unix_seconds)) {
    Raise(absl::InvalidArgumentError("a time must be finite Unix seconds"));
  }
  return absl::FromUnixNanos(static_cast<int64_t>(unix_seconds * 1e9));
}

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

std::string Bytes(py::handle h, const char* what) {
  std::string store;
  const std::string_view s = Bytes(h, store, what);
  if (s.data() == store.data()) return store;
  return std::string(s);
}

std::vector<std::string> TextList(const py::iterable& items, const char* what) {
  std::vector<std::string> out;
  for (py::handle h : items) out.push_back(Bytes(h, what));
  return out;
}

py::bytes PyBytes(std::string_view s) { return py::bytes(s.data(), s.size()); }

py::str PyText(std::string_view s) {
  return py::reinterpret_steal<py::str>(PyUnicode_DecodeUTF8(
      s.data(), static_cast<Py_ssize_t>(s.size()), "surrogateescape"));
}

// ---- Calls.

void CallGate::Enter() {
  {
    absl::MutexLock l(&mu_);
    if (!closing_.load()) {
      ++active_;
      return;
    }
  }
  RaiseClosed();
}

void CallGate::Leave() {
  absl::MutexLock l(&mu_);
  --active_;
}

void CallGate::RaiseClosed() const {
  Raise(absl::FailedPreconditionError(closed_message_));
}

bool CallGate::BeginClose() {
  absl::MutexLock l(&mu_);
  return !closing_.exchange(true);
}

void CallGate::AwaitIdle() {
  absl::MutexLock l(&mu_);
  mu_.Await(absl::Condition(
      +[](int* active) { return *active == 0; }, &active_));
}

}  // namespace hq::python
