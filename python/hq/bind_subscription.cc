// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq._hq's Subscription: a live subscription that Queue.subscribe made
// (bind_queue.cc), and the PyListener that delivers its messages to Python.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "_hq.h"
#include "absl/status/status.h"

namespace hq::python {

absl::Status PyListener::OnMessage(const hq::MessageView& view) {
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
    e.discard_as_unraisable(("hq subscription " + name_ + " listener").c_str());
    return absl::InternalError("listener raised: " + what);
  }
}

uint64_t PyListener::errors() {
  absl::MutexLock l(&mu_);
  return errors_;
}

std::optional<std::string> PyListener::last_error() {
  absl::MutexLock l(&mu_);
  return last_error_;
}

hq::Subscription* PySubscription::Get() const {
  if (s->subscription == nullptr) {
    Raise(absl::FailedPreconditionError("subscription " + s->name +
                                        " was unsubscribed or closed"));
  }
  return s->subscription;
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
              py::arg("resident_lanes") = s.resident_lanes,
              py::arg("active_lanes") = s.active_lanes, py::arg("lag") = s.lag,
              py::arg("lag_exact") = s.lag_exact,
              py::arg("delivered") = s.delivered,
              py::arg("failed_attempts") = s.failed_attempts,
              py::arg("buffered") = s.buffered,
              py::arg("buffered_bytes") = s.buffered_bytes,
              py::arg("listeners") = s.listeners);
}

void BindSubscription(py::module_& m) {
  py::class_<PySubscription>(m, "Subscription",
                             "A live subscription (Queue.subscribe).")
      .def_property_readonly("name",
                             [](const PySubscription& s) { return s.s->name; })
      .def(
          "stats",
          [](PySubscription& s) {
            Use use(*s.h);
            hq::Subscription* sub = s.Get();
            return SubscriptionStatsToPy(Call([&] { return sub->Stats(); }));
          },
          "Delivered, checkpointed and lag (hq.SubscriptionStats). "
          "FailedPrecondition once unsubscribed or the Db closed.")
      .def(
          "checkpoint",
          [](PySubscription& s) {
            Use use(*s.h);
            hq::Subscription* sub = s.Get();
            Call([&] { return sub->Checkpoint(); });
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
}

}  // namespace hq::python
