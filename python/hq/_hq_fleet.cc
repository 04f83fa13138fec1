// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq._hq_fleet: the pybind11 extension behind hq.fleet, binding
// include/hq/fleet.h's Agent. Built only where both the Python package and
// libhq_fleet are (python/hq/meson.build); hq/fleet.py re-exports it, and
// hq/_hq_fleet.pyi holds the contract of every method.
//
// - Errors are raised as the same classes as hq._hq's (bind.h, which both
//   extensions share): the hq.Error subclass of hq._types._ERRORS_BY_CODE
//   named after the status's code.
// - An Agent is held by one AgentHandle. close() (or __exit__, or the last
//   reference going away, or interpreter exit) refuses new calls, waits for
//   the calls in progress (a waiting claim notices within kWaitSlice) and
//   destroys the C++ Agent. Every later call raises FailedPrecondition.
// - Every call into the Agent releases the GIL (bind.h's Call). It works on
//   copies of the FleetTasks it is given (taken with the GIL held), so
//   another thread may use the same Python objects meanwhile.
// - A FleetTask is a copy owned by Python; hq.Task's class (hq._hq) is the
//   type of its `task`, so hq._hq is imported first (hq/fleet.py does).

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "bind.h"
#include "hq/fleet.h"
#include "hq/hq.h"

namespace hq::python {
namespace {

using hq::fleet::Agent;
using hq::fleet::AgentOptions;
using hq::fleet::AgentStats;
using hq::fleet::FleetTask;

// One URL of put_batch: a str or bytes (the URL), or a tuple
// (url[, payload[, priority]]).
hq::fleet::Url ToUrl(py::handle item) {
  hq::fleet::Url u;
  if (PyUnicode_Check(item.ptr()) || PyBytes_Check(item.ptr()) ||
      PyByteArray_Check(item.ptr())) {
    u.url = Bytes(item, "url");
    return u;
  }
  if (!PyTuple_Check(item.ptr()) && !PyList_Check(item.ptr())) {
    throw py::type_error(
        "put_batch takes URLs (str) or (url, payload, priority) tuples, not " +
        std::string(py::str(py::type::of(item).attr("__name__"))));
  }
  py::sequence t = py::reinterpret_borrow<py::sequence>(item);
  const size_t n = py::len(t);
  if (n < 1 || n > 3) {
    throw py::type_error(
        "a put_batch tuple is (url[, payload[, priority]]), not of length " +
        std::to_string(n));
  }
  u.url = Bytes(t[0], "url");
  if (n > 1) u.payload = Bytes(t[1], "payload");
  if (n > 2) u.priority = t[2].cast<int>();
  return u;
}

// The site rules Agent.open and site_of take: "site" (hq::fleet::SiteOf,
// the registered domain), "host" (the URL's host, lower-cased) or
// "host:port" (the host and the port as the URL writes it; none: the host
// alone).
enum class SiteRule { kSite, kHost, kHostPort };

SiteRule ToSiteRule(const std::string& rule) {
  if (rule == "site") return SiteRule::kSite;
  if (rule == "host") return SiteRule::kHost;
  if (rule == "host:port") return SiteRule::kHostPort;
  Raise(absl::InvalidArgumentError(
      "site_of must be 'site', 'host' or 'host:port', not '" + rule + "'"));
}

// The site of `url` under `rule`; InvalidArgument for a URL without a host.
absl::StatusOr<std::string> SiteByRule(std::string_view url, SiteRule rule) {
  if (rule == SiteRule::kSite) return hq::fleet::SiteOf(url);
  const size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) {
    return absl::InvalidArgumentError("hq fleet: URL without a host: " +
                                      std::string(url.substr(0, 200)));
  }
  std::string_view authority = url.substr(scheme + 3);
  authority = authority.substr(0, authority.find_first_of("/?#"));
  if (const size_t at = authority.rfind('@'); at != std::string_view::npos) {
    authority.remove_prefix(at + 1);
  }
  std::string_view host = authority;
  std::string_view port;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close != std::string_view::npos) {
      host = authority.substr(0, close + 1);
      if (close + 1 < authority.size() && authority[close + 1] == ':') {
        port = authority.substr(close + 2);
      }
    }
  } else if (const size_t colon = authority.find(':');
             colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.empty()) {
    return absl::InvalidArgumentError("hq fleet: URL without a host: " +
                                      std::string(url.substr(0, 200)));
  }
  std::string site(host);
  for (char& c : site) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  if (rule == SiteRule::kHostPort && !port.empty()) {
    site += ':';
    site += port;
  }
  return site;
}

// ---- The Agent's handle.

class AgentHandle : public CallGate {
 public:
  explicit AgentHandle(std::unique_ptr<Agent> agent)
      : CallGate("the hq.fleet.Agent is closed"), agent_(std::move(agent)) {}
  AgentHandle(const AgentHandle&) = delete;
  AgentHandle& operator=(const AgentHandle&) = delete;
  ~AgentHandle() { Close(); }

  // The Agent. REQUIRES: a call in progress (a Use of this handle).
  Agent* agent() {
    absl::MutexLock l(&mu_);
    return agent_.get();
  }

  // Refuses new calls, waits for those in progress and destroys the Agent
  // (the GIL released meanwhile, if held). Idempotent.
  void Close() {
    if (!BeginClose()) return;
    ReleaseGilIfHeld release;
    AwaitIdle();
    std::unique_ptr<Agent> doomed;
    {
      absl::MutexLock l(&mu_);
      doomed = std::move(agent_);
    }
    doomed.reset();
  }

 private:
  absl::Mutex mu_;
  std::unique_ptr<Agent> agent_ ABSL_GUARDED_BY(mu_);
};

// Every Agent opened, closed at interpreter exit if still open (its
// threads must stop before Python's finalization). Touched with the GIL.
std::vector<std::weak_ptr<AgentHandle>>& OpenAgents() {
  static auto* agents = new std::vector<std::weak_ptr<AgentHandle>>;
  std::erase_if(*agents, [](const auto& w) { return w.expired(); });
  return *agents;
}

struct PyAgent {
  std::shared_ptr<AgentHandle> h;
};

std::vector<FleetTask> TaskList(py::handle tasks) {
  std::vector<FleetTask> out;
  if (py::isinstance<FleetTask>(tasks)) {
    out.push_back(tasks.cast<FleetTask>());
    return out;
  }
  for (py::handle t : tasks) out.push_back(t.cast<FleetTask>());
  return out;
}

py::object StatsToPy(const AgentStats& s) {
  py::list owned;
  for (const AgentStats::Partition& p : s.owned) {
    owned.append(
        Make("FleetPartitionStats", py::arg("partition") = p.partition,
             py::arg("epoch") = p.epoch, py::arg("serving") = p.serving,
             py::arg("backlog") = p.backlog, py::arg("in_flight") = p.in_flight,
             py::arg("handoff_lag") = p.handoff_lag));
  }
  return Make("AgentStats", py::arg("owned") = owned,
              py::arg("published") = s.published,
              py::arg("received") = s.received,
              py::arg("duplicates") = s.duplicates,
              py::arg("completions_published") = s.completions_published,
              py::arg("coordinator") = s.coordinator);
}

void BindFleet(py::module_& m) {
  // hq.Task, the type of FleetTask.task, is hq._hq's, made by its TaskApi.
  py::module_::import("hq._hq");
  static const auto* task_api =
      static_cast<const TaskApi*>(PyCapsule_Import(kTaskApiCapsule, 0));
  if (task_api == nullptr) throw py::error_already_set();
  py::module_::import("atexit").attr("register")(py::cpp_function([] {
    for (const auto& w : OpenAgents()) {
      if (auto h = w.lock()) h->Close();
    }
  }));

  m.def(
      "site_of",
      [](const py::object& url, const std::string& rule) {
        const SiteRule r = ToSiteRule(rule);
        const std::string u = Bytes(url, "url");
        return Check(SiteByRule(u, r));
      },
      py::arg("url"), py::arg("rule") = "site",
      "A URL's site under `rule`: 'site', the registered domain of its host "
      "(an IP address or a one-label host is its own site); 'host'; or "
      "'host:port'. InvalidArgument for a URL without a host.");
  m.def(
      "partition_of",
      [](const py::object& site, uint32_t partitions) {
        if (partitions == 0) {
          Raise(absl::InvalidArgumentError("partitions must be at least 1"));
        }
        return hq::fleet::PartitionOf(Bytes(site, "site"), partitions);
      },
      py::arg("site"), py::arg("partitions"),
      "The virtual partition of a site: XXH3_64bits(site) % partitions.");

  py::class_<FleetTask>(m, "FleetTask")
      .def_property_readonly(
          "url", [](const FleetTask& t) { return PyText(t.task.key); })
      .def_property_readonly(
          "site", [](const FleetTask& t) { return PyText(t.task.topic); })
      .def_property_readonly(
          "payload", [](const FleetTask& t) { return PyBytes(t.task.payload); })
      .def_property_readonly("priority",
                             [](const FleetTask& t) { return t.task.priority; })
      .def_readonly("partition", &FleetTask::partition)
      .def_readonly("epoch", &FleetTask::epoch)
      .def_property_readonly(
          "valid_until",
          [](const FleetTask& t) { return FromTime(t.valid_until); })
      .def_property_readonly("attempt",
                             [](const FleetTask& t) { return t.task.attempt; })
      .def_property_readonly(
          "lease_deadline",
          [](const FleetTask& t) { return FromTime(t.task.lease_deadline); })
      .def_property_readonly("id", [](const FleetTask& t) { return t.task.id; })
      .def_property_readonly("task",
                             [](const FleetTask& t) {
                               PyObject* o = task_api->new_task(t.task);
                               if (o == nullptr) throw py::error_already_set();
                               return py::reinterpret_steal<py::object>(o);
                             })
      .def("__repr__", [](const FleetTask& t) {
        return "FleetTask(url=" + std::string(py::repr(PyText(t.task.key))) +
               ", partition=" + std::to_string(t.partition) +
               ", epoch=" + std::to_string(t.epoch) +
               ", attempt=" + std::to_string(t.task.attempt) + ")";
      });

  py::class_<PyAgent>(m, "Agent",
                      "One agent of a fleet: its own hq Db, its share of the "
                      "partitions.")
      .def_static(
          "open",
          [](const std::string& agent_id, const py::object& db_path,
             const std::string& zookeeper, const std::string& nats,
             const std::string& fleet, uint32_t partitions,
             double session_timeout, double grace, double ownership_lease,
             int replicas, double duplicate_window, const py::object& pacing,
             double task_lease, uint32_t max_attempts,
             const std::string& site_of) {
            AgentOptions o;
            if (const SiteRule rule = ToSiteRule(site_of);
                rule != SiteRule::kSite) {
              o.site_of = [rule](std::string_view url) {
                return SiteByRule(url, rule);
              };
            }
            o.agent_id = agent_id;
            o.fleet = fleet;
            o.db_path = Bytes(py::module_::import("os").attr("fspath")(db_path),
                              "db_path");
            o.zookeeper = zookeeper;
            o.nats = nats;
            o.partitions = partitions;
            o.session_timeout = ToDuration(session_timeout, "session_timeout");
            o.grace = ToDuration(grace, "grace");
            o.ownership_lease = ToDuration(ownership_lease, "ownership_lease");
            o.replicas = replicas;
            o.duplicate_window =
                ToDuration(duplicate_window, "duplicate_window");
            if (!pacing.is_none()) {
              o.pacing.max_in_flight =
                  pacing.attr("max_in_flight").cast<uint32_t>();
              o.pacing.interval = ToDuration(
                  pacing.attr("interval").cast<double>(), "pacing.interval");
            }
            o.task_lease = ToDuration(task_lease, "task_lease");
            o.max_attempts = max_attempts;
            auto h = std::make_shared<AgentHandle>(
                Call([&] { return Agent::Open(o); }));
            OpenAgents().push_back(h);
            return PyAgent{std::move(h)};
          },
          py::arg("agent_id"), py::arg("db_path"), py::arg("zookeeper"),
          py::arg("nats"), py::kw_only(), py::arg("fleet") = "default",
          py::arg("partitions") = 1024, py::arg("session_timeout") = 10.0,
          py::arg("grace") = 30.0, py::arg("ownership_lease") = 5.0,
          py::arg("replicas") = 3, py::arg("duplicate_window") = 120.0,
          py::arg("pacing") = py::none(), py::arg("task_lease") = 30.0,
          py::arg("max_attempts") = 10, py::arg("site_of") = "site",
          "Joins the fleet (hq/fleet.h AgentOptions; seconds as floats). "
          "Usable as a context manager.")
      .def(
          "close", [](PyAgent& a) { a.h->Close(); },
          "Closes the agent (its partitions stay its own for `grace`). "
          "Idempotent.")
      .def_property_readonly("closed",
                             [](PyAgent& a) { return a.h->closing(); })
      .def("__enter__", [](PyAgent& a) -> PyAgent& { return a; })
      .def("__exit__",
           [](PyAgent& a, py::args) {
             a.h->Close();
             return false;
           })
      .def(
          "put",
          [](PyAgent& a, const py::object& url, const py::object& payload,
             int priority) {
            hq::fleet::Url u{.url = Bytes(url, "url"),
                             .payload = Bytes(payload, "payload"),
                             .priority = priority};
            Call(*a.h, [&] { return a.h->agent()->Put(u); });
          },
          py::arg("url"), py::arg("payload") = py::bytes(),
          py::arg("priority") = 0,
          "Publishes a URL to its partition's stream; returns once JetStream "
          "acknowledged it.")
      .def(
          "put_batch",
          [](PyAgent& a, const py::iterable& urls) {
            std::vector<hq::fleet::Url> list;
            for (py::handle item : urls) list.push_back(ToUrl(item));
            Call(*a.h, [&] { return a.h->agent()->PutBatch(list); });
          },
          py::arg("urls"),
          "put for every URL (a str, or a (url, payload, priority) tuple).")
      .def(
          "claim",
          [](PyAgent& a, uint32_t max, std::optional<double> lease,
             double wait) {
            hq::ClaimOptions o;
            o.max = max;
            if (lease) o.lease = ToDuration(*lease, "lease");
            return ClaimWaiting(*a.h, ToDuration(wait, "wait"),
                                [&](absl::Duration slice) {
                                  o.wait = slice;
                                  return a.h->agent()->Claim(o);
                                });
          },
          py::arg("max") = 1, py::kw_only(), py::arg("lease") = py::none(),
          py::arg("wait") = 0.0,
          "Hands out up to `max` tasks of the partitions this agent serves. "
          "With `wait`, blocks (GIL released) until something is claimable "
          "or the wait ends; returns [] if nothing is.")
      .def(
          "complete",
          [](PyAgent& a, py::handle tasks) {
            std::vector<FleetTask> list = TaskList(tasks);
            Call(*a.h, [&] { return a.h->agent()->Complete(list); });
          },
          py::arg("tasks"),
          "Completes tasks (a list, or one) and publishes them as completed.")
      .def(
          "release",
          [](PyAgent& a, FleetTask t, double retry_after) {
            const absl::Duration d = ToDuration(retry_after, "retry_after");
            Call(*a.h, [&] { return a.h->agent()->Release(t, d); });
          },
          py::arg("task"), py::arg("retry_after") = 0.0,
          "Gives a task back, to come again after `retry_after` seconds.")
      .def(
          "reject",
          [](PyAgent& a, FleetTask t) {
            Call(*a.h, [&] { return a.h->agent()->Reject(t); });
          },
          py::arg("task"), "Dead-letters a held task at once.")
      .def(
          "extend",
          [](PyAgent& a, FleetTask& t, double lease) {
            const absl::Duration d = ToDuration(lease, "lease");
            FleetTask copy = t;
            Call(*a.h, [&] { return a.h->agent()->Extend(&copy, d); });
            t = std::move(copy);
          },
          py::arg("task"), py::arg("lease"),
          "Moves a task's lease deadline to `lease` seconds from now; updates "
          "its lease_deadline and valid_until.")
      .def(
          "stats",
          [](PyAgent& a) {
            return StatsToPy(Call(*a.h, [&] { return a.h->agent()->Stats(); }));
          },
          "The partitions this agent owns and its hand-off counters "
          "(hq.fleet.AgentStats).")
      .def(
          "leave",
          [](PyAgent& a) { Call(*a.h, [&] { return a.h->agent()->Leave(); }); },
          "Leaves the fleet at once: its partitions move without the grace "
          "period. Later calls but close raise FailedPrecondition.");
}

}  // namespace
}  // namespace hq::python

PYBIND11_MODULE(_hq_fleet, m) {
  m.doc() = "hq's fleet (include/hq/fleet.h); use it through hq.fleet.";
  hq::python::BindFleet(m);
}
