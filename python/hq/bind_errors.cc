// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq._hq's errors: every failed call raises through bind.h's Raise, the
// hq.Error subclass of hq._types named after the status's code. This file
// binds the binding tests' way to raise each of them.

#include <pybind11/pybind11.h>

#include <string>

#include "_hq.h"
#include "absl/status/status.h"

namespace hq::python {

void BindErrors(py::module_& m) {
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
}

}  // namespace hq::python
