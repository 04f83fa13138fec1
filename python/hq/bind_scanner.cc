// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq._hq's Scanner: iterates a snapshot that Queue.scan took (bind_queue.cc
// makes it and hands its C++ half to the DbHandle, which destroys it before
// the Db).

#include <pybind11/pybind11.h>

#include <optional>
#include <utility>

#include "_hq.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace hq::python {

void BindScanner(py::module_& m) {
  py::class_<PyScanner>(m, "Scanner",
                        "Iterates a snapshot of a queue taken by Queue.scan.")
      .def("__iter__", [](PyScanner& s) -> PyScanner& { return s; })
      .def(
          "__next__",
          [](PyScanner& s) {
            Use use(*s.h);
            hq::Scanner* scanner = s.s->scanner.get();
            if (scanner == nullptr) throw py::stop_iteration();
            std::optional<PyMessage> m =
                Call([&]() -> absl::StatusOr<std::optional<PyMessage>> {
                  if (scanner->Next()) {
                    return PyMessage::From(scanner->message());
                  }
                  // The end, or an error: every later call stops.
                  absl::Status status = scanner->status();
                  s.h->ResetScanner(*s.s);
                  if (!status.ok()) return status;
                  return std::nullopt;
                });
            if (!m) throw py::stop_iteration();
            return *std::move(m);
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
}

}  // namespace hq::python
