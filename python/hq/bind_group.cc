// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq._hq's consumer groups: Group and what its calls return or take (Task,
// DeadLetter, PendingTask).

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "_hq.h"
#include "plain_type.h"

namespace hq::python {
namespace {

// hq.Task: a plain CPython type (not a pybind11 class), as a claim makes
// up to 10000 of them.
PlainType<hq::Task> task_type;

const hq::Task& Of(PyObject* self) { return PlainType<hq::Task>::Of(self); }

// The task `h` holds, or nullptr if it is not an hq.Task.
hq::Task* TaskOf(py::handle h) { return task_type.Get(h); }

hq::Task& TaskArg(py::handle h) {
  hq::Task* t = TaskOf(h);
  if (t == nullptr) {
    throw py::type_error("task must be a Task, not " + TypeName(h));
  }
  return *t;
}

py::object NewTask(hq::Task&& t) { return task_type.New(std::move(t)); }

py::list NewTasks(std::vector<hq::Task>&& tasks) {
  py::list out(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) {
    PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(i),
                    NewTask(std::move(tasks[i])).release().ptr());
  }
  return out;
}

// A getter of hq.Task from get(task) giving a py::object.
template <py::object (*get)(const hq::Task&)>
PyObject* Getter(PyObject* self, void*) {
  try {
    return get(Of(self)).release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

py::object TaskPartition(const hq::Task& t) { return py::int_(t.partition); }
py::object TaskPriority(const hq::Task& t) { return py::int_(t.priority); }
py::object TaskId(const hq::Task& t) { return NewObject(hq::MessageId(t.id)); }
py::object TaskTopic(const hq::Task& t) { return PyText(t.topic); }
py::object TaskKey(const hq::Task& t) { return PyBytes(t.key); }
py::object TaskPayload(const hq::Task& t) { return PyBytes(t.payload); }
py::object TaskAttempt(const hq::Task& t) { return py::int_(t.attempt); }
py::object TaskLeaseDeadline(const hq::Task& t) {
  return FromTime(t.lease_deadline);
}
py::object TaskNotBefore(const hq::Task& t) { return FromTime(t.not_before); }
py::object TaskConsumer(const hq::Task& t) { return PyText(t.consumer); }

PyObject* TaskRepr(PyObject* self) {
  try {
    const hq::Task& t = Of(self);
    const std::string s = "Task(partition=" + std::to_string(t.partition) +
                          ", id=" + t.id.ToString() +
                          ", attempt=" + std::to_string(t.attempt) + ")";
    return PyUnicode_FromStringAndSize(s.data(),
                                       static_cast<Py_ssize_t>(s.size()));
  } catch (const std::bad_alloc&) {
    return PyErr_NoMemory();
  }
}

void BindTask(py::module_& m) {
  static PyGetSetDef getset[] = {
      {"partition", Getter<TaskPartition>, nullptr, nullptr, nullptr},
      {"priority", Getter<TaskPriority>, nullptr, nullptr, nullptr},
      {"id", Getter<TaskId>, nullptr, nullptr, nullptr},
      {"topic", Getter<TaskTopic>, nullptr, nullptr, nullptr},
      {"key", Getter<TaskKey>, nullptr, nullptr, nullptr},
      {"payload", Getter<TaskPayload>, nullptr, nullptr, nullptr},
      {"attempt", Getter<TaskAttempt>, nullptr, nullptr, nullptr},
      {"lease_deadline", Getter<TaskLeaseDeadline>, nullptr, nullptr, nullptr},
      {"not_before", Getter<TaskNotBefore>, nullptr, nullptr, nullptr},
      {"consumer", Getter<TaskConsumer>, nullptr, nullptr, nullptr},
      {nullptr, nullptr, nullptr, nullptr, nullptr}};
  task_type.Create(m, "hq._hq.Task", getset, &TaskRepr,
                   "A claimed message under a lease.");
  // For hq._hq_fleet, a separate extension, whose FleetTask.task is an
  // hq.Task: a new reference to a copy of the task, or nullptr with a
  // Python error set (TaskApi in _hq.h).
  static const TaskApi api = {.new_task = [](const hq::Task& t) -> PyObject* {
    try {
      return task_type.New(t).release().ptr();
    } catch (py::error_already_set& e) {
      e.restore();
    } catch (const std::exception& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
    return nullptr;
  }};
  m.attr("_task_api") = py::capsule(&api, kTaskApiCapsule);
}

// What Complete, Release, Reject and Extend read of a task (group.h),
// copied into `h` (its key and payload stay as they were).
void CopyHandle(const hq::Task& t, hq::Task* h) {
  h->partition = t.partition;
  h->priority = t.priority;
  h->id = t.id;
  h->topic = t.topic;
  h->attempt = t.attempt;
  h->lease_deadline = t.lease_deadline;
  h->not_before = t.not_before;
  h->consumer = t.consumer;
}

hq::Task Handle(const hq::Task& t) {
  hq::Task h;
  CopyHandle(t, &h);
  return h;
}

// The handles (above) of a Task or an iterable of Tasks, copied with the GIL
// held (another thread may extend the same hq.Task while a call runs
// without it) into the first n elements of `*out`, n returned. The elements
// past n are left as they are, for a later call to reuse with their
// strings' memory. Runs Python code (an iterable's iteration, which may
// itself complete tasks) only before it writes to *out, or to raise.
size_t TaskList(py::handle tasks, std::vector<hq::Task>* out) {
  auto put = [out](size_t i, const hq::Task& t) {
    if (i == out->size()) out->emplace_back();
    CopyHandle(t, &(*out)[i]);
  };
  if (const hq::Task* t = TaskOf(tasks)) {
    put(0, *t);
    return 1;
  }
  if (!PyList_Check(tasks.ptr()) && !PyTuple_Check(tasks.ptr()) &&
      !py::isinstance<py::iterable>(tasks)) {
    throw py::type_error("tasks must be a Task or an iterable of Tasks, not " +
                         TypeName(tasks));
  }
  PyObject* seq = PySequence_Fast(tasks.ptr(), "tasks must be iterable");
  if (seq == nullptr) throw py::error_already_set();
  const py::object keep = py::reinterpret_steal<py::object>(seq);
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  if (out->size() < static_cast<size_t>(n)) {
    out->reserve(static_cast<size_t>(n));
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    const py::handle item = PySequence_Fast_GET_ITEM(seq, i);
    const hq::Task* t = TaskOf(item);
    if (t == nullptr) {
      throw py::type_error("tasks[" + std::to_string(i) +
                           "] must be a Task, not " + TypeName(item));
    }
    put(static_cast<size_t>(i), *t);
  }
  return static_cast<size_t>(n);
}

// A vector of task handles for one call, reused by later calls: no
// allocation nor construction per task. Made and destroyed with the GIL
// held (which guards the vectors kept between calls); between, the vector
// is the call's own, also while it runs with the GIL released.
class HandleBuffer {
 public:
  HandleBuffer() {
    if (kept_.empty()) {
      v_ = std::make_unique<std::vector<hq::Task>>();
    } else {
      v_ = std::move(kept_.back());
      kept_.pop_back();
    }
  }
  ~HandleBuffer() {
    if (v_->size() <= kMaxHandles && kept_.size() < kMaxKept) {
      kept_.push_back(std::move(v_));
    }
  }
  HandleBuffer(const HandleBuffer&) = delete;
  HandleBuffer& operator=(const HandleBuffer&) = delete;

  std::vector<hq::Task>* get() { return v_.get(); }

 private:
  // A vector of more handles is freed, and more vectors than calls in
  // progress at once (one per thread) are rarely needed.
  static constexpr size_t kMaxHandles = 1024;
  static constexpr size_t kMaxKept = 8;
  static inline std::vector<std::unique_ptr<std::vector<hq::Task>>> kept_;

  std::unique_ptr<std::vector<hq::Task>> v_;
};

// A sequence of ints (not a str or bytes) as uint32s; TypeError for
// anything else, InvalidArgument ("<what> out of range") for an int that
// does not fit.
std::vector<uint32_t> UintList(py::handle h, const char* what) {
  std::vector<uint32_t> out;
  if ((PyTuple_Check(h.ptr()) && PyTuple_GET_SIZE(h.ptr()) == 0) ||
      (PyList_Check(h.ptr()) && PyList_GET_SIZE(h.ptr()) == 0)) {
    return out;
  }
  if (PyUnicode_Check(h.ptr()) || PyBytes_Check(h.ptr()) ||
      !PySequence_Check(h.ptr())) {
    throw py::type_error(std::string(what) + "s must be a sequence of ints, " +
                         "not " + TypeName(h));
  }
  PyObject* seq = PySequence_Fast(h.ptr(), "not a sequence");
  if (seq == nullptr) throw py::error_already_set();
  const py::object keep = py::reinterpret_steal<py::object>(seq);
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  out.reserve(static_cast<size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    out.push_back(Int<uint32_t>(PySequence_Fast_GET_ITEM(seq, i), what));
  }
  return out;
}

// Group.claim(max=1, *, lease=None, wait=0.0, topics=(), partitions=(),
// consumer="") from a vectorcall (FastParams).
py::object Claim(py::handle self, PyObject* const* args, Py_ssize_t nargs,
                 PyObject* kwnames) {
  PyGroup* g = ValueOf<PyGroup>(self);
  if (g == nullptr) throw py::type_error("claim needs an hq.Group");
  enum { kMax, kLease, kWait, kTopics, kPartitions, kConsumer, kParams };
  static const FastParams params(
      "claim", {"max", "lease", "wait", "topics", "partitions", "consumer"}, 1);
  PyObject* given[kParams] = {};
  params.Parse(args, nargs, kwnames, given);
  hq::ClaimOptions o;
  o.max = given[kMax] == nullptr ? 1 : Int<uint32_t>(given[kMax], "max");
  if (given[kLease] != nullptr && given[kLease] != Py_None) {
    o.lease = ToDuration(Real(given[kLease], "lease"), "lease");
  }
  const absl::Duration wait =
      given[kWait] == nullptr ? absl::ZeroDuration()
                              : ToDuration(Real(given[kWait], "wait"), "wait");
  if (given[kTopics] != nullptr) o.topics = TextList(given[kTopics], "topic");
  if (given[kPartitions] != nullptr) {
    o.partitions = UintList(given[kPartitions], "partition");
  }
  if (given[kConsumer] != nullptr) {
    o.consumer = Bytes(given[kConsumer], "consumer");
  }
  return NewTasks(ClaimWaiting(*g->h, wait, [&](absl::Duration slice) {
    o.wait = slice;
    return g->g->Claim(o);
  }));
}

// Group.complete(tasks) from a vectorcall (FastParams).
py::object Complete(py::handle self, PyObject* const* args, Py_ssize_t nargs,
                    PyObject* kwnames) {
  PyGroup* g = ValueOf<PyGroup>(self);
  if (g == nullptr) throw py::type_error("complete needs an hq.Group");
  static const FastParams params("complete", {"tasks"}, 1);
  PyObject* given[1] = {};
  params.Parse(args, nargs, kwnames, given);
  if (given[0] == nullptr) params.RaiseMissing(0);
  HandleBuffer handles;
  const size_t n = TaskList(given[0], handles.get());
  const std::span<const hq::Task> list(handles.get()->data(), n);
  Call(*g->h, [&] { return g->g->Complete(list); });
  return py::none();
}

// What the group's calls return or take: Task, DeadLetter, PendingTask.
void BindGroupValues(py::module_& m) {
  BindTask(m);

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
}

}  // namespace

void BindGroup(py::module_& m) {
  BindGroupValues(m);
  py::class_<PyGroup> group(m, "Group",
                            "A durable consumer group: at-least-once tasks "
                            "under a lease, completed once or dead-lettered.");
  // Vectorcall methods: a crawler calls them for every batch (bind.h).
  static PyMethodDef claim_def = {
      "claim", FastMethod<Claim>, METH_FASTCALL | METH_KEYWORDS,
      "claim($self, max=1, *, lease=None, wait=0.0, topics=(), "
      "partitions=(), consumer='')\n"
      "--\n\n"
      "Hands out up to `max` (1..10000) tasks under a lease (None: the "
      "group's). With `wait`, blocks (GIL released) until something is "
      "claimable or the wait ends; returns [] if nothing is. Ordered "
      "groups need `consumer`."};
  AddFastMethod(group, &claim_def);
  static PyMethodDef complete_def = {
      "complete", FastMethod<Complete>, METH_FASTCALL | METH_KEYWORDS,
      "complete($self, tasks)\n"
      "--\n\n"
      "Completes tasks (a Task or an iterable of Tasks): all or nothing, one "
      "write. FailedPrecondition if a task is no longer held."};
  AddFastMethod(group, &complete_def);
  group
      .def_property_readonly("name",
                             [](const PyGroup& g) { return g.g->name(); })
      .def_property_readonly(
          "dead_letter_queue",
          [](const PyGroup& g) { return g.g->dead_letter_queue(); })
      .def(
          "release",
          [](PyGroup& g, py::handle task, double retry_after) {
            // Copies, with the GIL held: another thread may extend the
            // same hq.Task while this call runs without it.
            const hq::Task t = Handle(TaskArg(task));
            absl::Duration d = ToDuration(retry_after, "retry_after");
            Call(*g.h, [&] { return g.g->Release(t, d); });
          },
          py::arg("task"), py::arg("retry_after") = 0.0,
          "Gives a held task back, to come again after `retry_after` seconds, "
          "or be dead-lettered if it used max_attempts.")
      .def(
          "reject",
          [](PyGroup& g, py::handle task) {
            const hq::Task t = Handle(TaskArg(task));  // As release's.
            Call(*g.h, [&] { return g.g->Reject(t); });
          },
          py::arg("task"),
          "Dead-letters a held task at once (reason 'rejected'), whatever "
          "its attempts: for a task that will never succeed. "
          "FailedPrecondition if it is not held.")
      .def(
          "extend",
          [](PyGroup& g, py::handle task, double lease) {
            // On a copy, written back with the GIL held: the hq.Task may be
            // read by another thread while this call runs without it.
            hq::Task t = Handle(TaskArg(task));
            absl::Duration d = ToDuration(lease, "lease");
            Call(*g.h, [&] { return g.g->Extend(&t, d); });
            TaskArg(task).lease_deadline = t.lease_deadline;
          },
          py::arg("task"), py::arg("lease"),
          "Moves a held task's lease deadline to `lease` seconds from now; "
          "updates task.lease_deadline.")
      .def(
          "stats",
          [](PyGroup& g) {
            const hq::GroupStats s = Call(*g.h, [&] { return g.g->Stats(); });
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
            py::list out;
            for (const auto& c : Call(*g.h, [&] { return g.g->Consumers(); })) {
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
            Call(*g.h, [&] { return g.g->SetTopicPacing(t, pacing); });
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
            const std::optional<hq::TopicPacing> p =
                Call(*g.h, [&] { return g.g->GetTopicPacing(t); });
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
            Call(*g.h, [&] { return g.g->ClearTopicPacing(t); });
          },
          py::arg("topic"), "Removes `topic`'s own pacing (none: OK).")
      .def(
          "leave",
          [](PyGroup& g, const std::string& consumer) {
            Call(*g.h, [&] { return g.g->Leave(consumer); });
          },
          py::arg("consumer"),
          "Ordered groups: `consumer` leaves now; its partitions go to the "
          "others.")
      .def(
          "delete",
          [](PyGroup& g, bool force, bool keep_dead_letters) {
            Call(*g.h, [&]() -> absl::Status {
              // dead_letter_queue() is "<queue>.dead.<group>".
              const std::string dead = g.g->dead_letter_queue();
              const std::string queue =
                  dead.substr(0, dead.size() - g.g->name().size() - 6);
              absl::StatusOr<hq::Queue*> q = g.h->db()->OpenQueue(queue);
              if (!q.ok()) return q.status();
              return (*q)->DeleteGroup(
                  g.g->name(),
                  {.force = force, .keep_dead_letters = keep_dead_letters});
            });
          },
          py::arg("force") = false, py::arg("keep_dead_letters") = false,
          "Deletes the group and all its state (Queue.delete_group); every "
          "later call of this Group raises NotFoundError.")
      .def(
          "dead_letters",
          [](PyGroup& g, size_t max, const hq::DeadLetter* after) {
            return Call(*g.h, [&] { return g.g->ListDeadLetters(max, after); });
          },
          py::arg("max") = 1000, py::kw_only(), py::arg("after") = nullptr,
          "The group's dead letters, at most `max` (1..10000), after `after`.")
      .def(
          "pending",
          [](PyGroup& g, size_t max, const hq::PendingTask* after) {
            return Call(*g.h, [&] { return g.g->ListPending(max, after); });
          },
          py::arg("max") = 1000, py::kw_only(), py::arg("after") = nullptr,
          "The group's pending tasks one by one (in flight, redelivery, "
          "delayed), at most `max` (1..10000), in key order, after `after`.")
      .def(
          "requeue",
          [](PyGroup& g, std::vector<hq::DeadLetter> letters) {
            std::vector<hq::PutResult> results;
            Call(*g.h, [&] { return g.g->Requeue(letters, &results); });
            return NewPutResults(results);
          },
          py::arg("letters"),
          "Puts dead letters back into the queue as new messages, atomically; "
          "returns their PutResults.");
}

}  // namespace hq::python
