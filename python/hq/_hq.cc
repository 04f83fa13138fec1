// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq._hq: the pybind11 extension under the Python package `hq`. It maps the
// C++ API (include/hq/) one to one; hq/__init__.py re-exports it, and
// hq/_types.py holds the Python side: the exception classes the statuses
// map to and the dataclasses the stats are returned as. The contract of
// every method is in hq/_hq.pyi; the lifetimes and the GIL are in _hq.h,
// and each class is bound in a file of its own (bind_<class>.cc).

#include "_hq.h"

#include <pybind11/pybind11.h>

#include "absl/synchronization/mutex.h"

PYBIND11_MODULE(_hq, m) {
  m.doc() = "hq's C++ API (include/hq/); use it through the package hq.";
  hq::python::BindErrors(m);
  hq::python::BindMessage(m);
  hq::python::BindGroup(m);
  hq::python::BindScanner(m);
  hq::python::BindSubscription(m);
  hq::python::BindQueue(m);
  hq::python::BindDb(m);
  m.def(
      "set_mutex_deadlock_detection",
      [](bool on) {
        absl::SetMutexDeadlockDetectionMode(
            on ? absl::OnDeadlockCycle::kAbort
               : absl::OnDeadlockCycle::kIgnore);
      },
      pybind11::arg("on"),
      "Process-wide: Abseil's Mutex deadlock detection, on in Debian's "
      "libabsl (every lock of hq then also updates one graph for the whole "
      "process). False gives Abseil's release behaviour; call it at "
      "start-up, before opening a Db (doc/guide.md, Threads).");
}
