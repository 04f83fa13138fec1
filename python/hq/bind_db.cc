// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq._hq's Db, and the DbHandle that its Queues, Groups, Scanners and
// Subscriptions share (_hq.h has the lifetimes).

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "_hq.h"
#include "absl/status/status.h"

namespace hq::python {

void DbHandle::AddScanner(const std::shared_ptr<ScanState>& s) {
  absl::MutexLock l(&mu_);
  std::erase_if(scanners_, [](const auto& w) { return w.expired(); });
  scanners_.push_back(s);
}

void DbHandle::ResetScanner(ScanState& s) {
  std::unique_ptr<hq::Scanner> doomed;
  absl::MutexLock l(&mu_);
  doomed = std::move(s.scanner);
}

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
  if (!BeginClose()) return;
  {
    // Listeners need the GIL to return, and the Db waits for them.
    ReleaseGilIfHeld release;
    AwaitIdle();
    std::vector<std::unique_ptr<hq::Scanner>> scanners;
    std::unique_ptr<hq::Db> doomed;
    {
      absl::MutexLock l(&mu_);
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

std::vector<std::weak_ptr<DbHandle>>& OpenHandles() {
  static auto* handles = new std::vector<std::weak_ptr<DbHandle>>;
  std::erase_if(*handles, [](const auto& w) { return w.expired(); });
  return *handles;
}

namespace {

py::object SweepToPy(const hq::SweepStats& s) {
  return Make("SweepStats", py::arg("queues") = s.queues,
              py::arg("lanes") = s.lanes, py::arg("deleted") = s.deleted,
              py::arg("examined") = s.examined,
              py::arg("hints_trimmed") = s.hints_trimmed);
}

}  // namespace

void BindDb(py::module_& m) {
  py::module_::import("atexit").attr("register")(py::cpp_function([] {
    for (const auto& w : OpenHandles()) {
      if (auto h = w.lock()) h->Close();
    }
  }));

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
            const std::string path = Bytes(fs_path, "path");
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
            auto h = std::make_shared<DbHandle>(
                Call([&] { return hq::Db::Open(path, o); }));
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
                               return d.h->db()->path();
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
            return PyQueue{d.h, Call(*d.h, [&] {
                             return d.h->db()->CreateQueue(name, o);
                           })};
          },
          py::arg("name"), py::kw_only(), py::arg("partitions") = 1,
          py::arg("priorities") = 1, py::arg("ttl") = py::none(),
          py::arg("layout") = "time",
          py::arg("max_payload_bytes") = uint32_t{1} << 20,
          "Creates a queue (AlreadyExists if it exists).")
      .def(
          "open_queue",
          [](PyDb& d, const std::string& name) {
            return PyQueue{
                d.h, Call(*d.h, [&] { return d.h->db()->OpenQueue(name); })};
          },
          py::arg("name"), "The queue `name`; NotFound if there is none.")
      .def(
          "drop_queue",
          [](PyDb& d, const std::string& name) {
            Call(*d.h, [&] { return d.h->db()->DropQueue(name); });
          },
          py::arg("name"),
          "Drops a queue, its groups, subscriptions and dead letters.")
      .def(
          "list_queues",
          [](PyDb& d) {
            return Call(*d.h, [&] { return d.h->db()->ListQueues(); });
          },
          "The names of the Db's queues.")
      .def(
          "compact_expired",
          [](PyDb& d) {
            return SweepToPy(
                Call(*d.h, [&] { return d.h->db()->CompactExpired(); }));
          },
          "Runs the TTL sweep now; returns what it deleted.")
      .def(
          "compact_all",
          [](PyDb& d) {
            return SweepToPy(
                Call(*d.h, [&] { return d.h->db()->CompactAll(); }));
          },
          "The TTL sweep, then a full LevelDB compaction.")
      .def(
          "verify",
          [](PyDb& d) {
            const hq::VerifyReport v =
                Call(*d.h, [&] { return d.h->db()->Verify(); });
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
                 d.h->db()->recovery().dropped) {
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

}  // namespace hq::python
