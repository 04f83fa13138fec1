// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq._hq's Queue: writes, scans, and the groups and subscriptions of one
// queue.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "_hq.h"
#include "absl/status/status.h"

namespace hq::python {
namespace {

py::object QueueOptionsToPy(const hq::QueueOptions& o) {
  return Make(
      "QueueOptions", py::arg("partitions") = o.partitions,
      py::arg("priorities") = o.priorities,
      py::arg("ttl") = o.ttl == absl::InfiniteDuration()
                           ? py::object(py::none())
                           : py::object(py::float_(FromDuration(o.ttl))),
      py::arg("layout") = std::string(hq::LayoutName(o.layout)),
      py::arg("max_payload_bytes") = o.max_payload_bytes);
}

// One message of put / put_batch, from bytes/str (a payload), a dict, or an
// object with the attributes of hq.Message. `store` keeps copies alive.
hq::Message ToMessage(py::handle item, std::vector<std::string>& store) {
  hq::Message m;
  auto field = [&](const char* name) -> py::object {
    if (PyDict_Check(item.ptr())) {
      return py::reinterpret_borrow<py::dict>(item).attr("get")(name);
    }
    return py::getattr(item, name, py::none());
  };
  auto text = [&](py::object v, const char* what) -> std::string_view {
    if (v.is_none()) return {};
    store.emplace_back();
    std::string_view s = Bytes(v, store.back(), what);
    if (s.data() != store.back().data()) store.back().assign(s);
    return store.back();
  };
  if (PyBytes_Check(item.ptr()) || PyUnicode_Check(item.ptr()) ||
      PyByteArray_Check(item.ptr())) {
    m.payload = text(py::reinterpret_borrow<py::object>(item), "payload");
    return m;
  }
  py::object payload = field("payload");
  if (payload.is_none()) throw py::type_error("a message needs a payload");
  m.payload = text(payload, "payload");
  m.topic = text(field("topic"), "topic");
  m.key = text(field("key"), "key");
  m.dedup_key = text(field("dedup_key"), "dedup_key");
  if (py::object p = field("partition"); !p.is_none()) {
    m.partition = p.cast<uint32_t>();
  }
  if (py::object p = field("priority"); !p.is_none()) {
    m.priority = p.cast<int>();
  }
  if (py::object d = field("delay"); !d.is_none()) {
    m.delay = ToDuration(d.cast<double>(), "delay");
  }
  if (py::object t = field("not_before"); !t.is_none()) {
    m.not_before = ToTime(t.cast<double>());
  }
  return m;
}

hq::PutOptions ToPutOptions(std::optional<bool> sync) {
  hq::PutOptions o;
  o.sync = sync;
  return o;
}

}  // namespace

void BindQueue(py::module_& m) {
  py::class_<PyQueue>(m, "Queue",
                      "A queue of a Db. Valid while its Db is open.")
      .def_property_readonly("name",
                             [](const PyQueue& q) { return q.q->name(); })
      .def_property_readonly(
          "options",
          [](const PyQueue& q) { return QueueOptionsToPy(q.q->options()); })
      .def(
          "put",
          [](PyQueue& q, py::object payload, py::object topic, py::object key,
             std::optional<uint32_t> partition, int priority, double delay,
             std::optional<double> not_before, py::object dedup_key,
             std::optional<bool> sync) {
            py::dict d;
            d["payload"] = payload;
            d["topic"] = topic;
            d["key"] = key;
            d["dedup_key"] = dedup_key;
            std::vector<std::string> store;
            store.reserve(4);
            hq::Message m = ToMessage(d, store);
            m.partition = partition;
            m.priority = priority;
            m.delay = ToDuration(delay, "delay");
            if (not_before) m.not_before = ToTime(*not_before);
            return Call(*q.h, [&] { return q.q->Put(m, ToPutOptions(sync)); });
          },
          py::arg("payload"), py::kw_only(), py::arg("topic") = py::none(),
          py::arg("key") = py::none(), py::arg("partition") = py::none(),
          py::arg("priority") = 0, py::arg("delay") = 0.0,
          py::arg("not_before") = py::none(), py::arg("dedup_key") = py::none(),
          py::arg("sync") = py::none(),
          "Writes one message; returns its PutResult (partition, id, "
          "duplicate). sync=None: the Db's sync_writes.")
      .def(
          "put_batch",
          [](PyQueue& q, const py::iterable& messages,
             std::optional<bool> sync) {
            std::vector<py::object> items;
            for (py::handle h : messages) {
              items.push_back(py::reinterpret_borrow<py::object>(h));
            }
            std::vector<std::string> store;
            store.reserve(items.size() * 4);  // No reallocation: views stay.
            std::vector<hq::Message> batch;
            batch.reserve(items.size());
            for (const py::object& item : items) {
              batch.push_back(ToMessage(item, store));
            }
            std::vector<hq::PutResult> results;
            Call(*q.h, [&] {
              return q.q->PutBatch(batch, &results, ToPutOptions(sync));
            });
            return results;
          },
          py::arg("messages"), py::kw_only(), py::arg("sync") = py::none(),
          "Writes all messages or none, in one write. An item is a payload, an "
          "hq.Message or a dict of Message's fields.")
      .def(
          "scan",
          [](PyQueue& q, std::vector<uint32_t> partitions,
             const py::iterable& topics, std::optional<hq::MessageId> start,
             std::optional<hq::MessageId> end, const std::string& order) {
            hq::ScanOptions o;
            o.partitions = std::move(partitions);
            o.topics = TextList(topics, "topic");
            if (start) o.from = *start;
            if (end) o.to = *end;
            if (order == "merged") {
              o.order = hq::ScanOptions::Order::kMerged;
            } else if (order == "lane") {
              o.order = hq::ScanOptions::Order::kLane;
            } else {
              Raise(absl::InvalidArgumentError(
                  "order must be 'merged' or 'lane', not '" + order + "'"));
            }
            Use use(*q.h);  // Until the handle knows the scanner.
            auto state = std::make_shared<ScanState>();
            state->scanner = Call([&] { return q.q->NewScanner(o); });
            q.h->AddScanner(state);
            return PyScanner{q.h, state};
          },
          py::kw_only(), py::arg("partitions") = std::vector<uint32_t>{},
          py::arg("topics") = py::tuple(), py::arg("start") = py::none(),
          py::arg("end") = py::none(), py::arg("order") = "merged",
          "A snapshot iterator over ids [start, end) of the chosen partitions "
          "and topics; order 'merged' or 'lane'.")
      .def(
          "group",
          [](PyQueue& q, const std::string& name, const py::iterable& topics,
             bool ordered, double lease, uint32_t max_attempts,
             double backoff_base, double backoff_cap, double backoff_jitter,
             double ownership_lease, size_t max_active_lanes,
             const py::object& start, uint32_t topic_max_in_flight,
             double topic_interval) {
            hq::GroupOptions o;
            o.topics = TextList(topics, "topic");
            o.ordered = ordered;
            SetStart(start, &o);
            o.lease = ToDuration(lease, "lease");
            o.max_attempts = max_attempts;
            o.backoff_base = ToDuration(backoff_base, "backoff_base");
            o.backoff_cap = ToDuration(backoff_cap, "backoff_cap");
            o.backoff_jitter = backoff_jitter;
            o.ownership_lease = ToDuration(ownership_lease, "ownership_lease");
            o.max_active_lanes = max_active_lanes;
            o.pacing.max_in_flight = topic_max_in_flight;
            o.pacing.interval = ToDuration(topic_interval, "topic_interval");
            return PyGroup{q.h,
                           Call(*q.h, [&] { return q.q->Group(name, o); })};
          },
          py::arg("name"), py::kw_only(), py::arg("topics") = py::tuple(),
          py::arg("ordered") = false, py::arg("lease") = 30.0,
          py::arg("max_attempts") = 10, py::arg("backoff_base") = 1.0,
          py::arg("backoff_cap") = 300.0, py::arg("backoff_jitter") = 0.2,
          py::arg("ownership_lease") = 10.0,
          py::arg("max_active_lanes") = hq::GroupOptions().max_active_lanes,
          py::arg("start") = "earliest", py::arg("topic_max_in_flight") = 0,
          py::arg("topic_interval") = 0.0,
          "The consumer group `name`, created on first use (topics, ordered "
          "and start are taken then; the rest from each call). "
          "topic_max_in_flight and topic_interval (seconds) pace every "
          "topic (0: no limit).")
      .def(
          "list_groups",
          [](PyQueue& q) {
            return Call(*q.h, [&] { return q.q->ListGroups(); });
          },
          "The names of the queue's consumer groups.")
      .def(
          "delete_group",
          [](PyQueue& q, const std::string& name, bool force,
             bool keep_dead_letters) {
            Call(*q.h, [&] {
              return q.q->DeleteGroup(
                  name,
                  {.force = force, .keep_dead_letters = keep_dead_letters});
            });
          },
          py::arg("name"), py::arg("force") = false,
          py::arg("keep_dead_letters") = false,
          "Deletes the consumer group `name` and all its state "
          "(Queue::DeleteGroup): its dead-letter queue too unless "
          "keep_dead_letters. FailedPreconditionError while its tasks are in "
          "flight, unless force.")
      .def(
          "subscribe",
          [](PyQueue& q, const std::string& name, py::function listener,
             std::vector<uint32_t> partitions, const py::iterable& topics,
             py::object start, uint32_t checkpoint_messages,
             double checkpoint_interval, uint32_t buffer_messages,
             uint64_t buffer_bytes, double retry_base, double retry_cap,
             size_t max_active_lanes) {
            hq::SubscribeOptions o;
            o.name = name;
            o.partitions = std::move(partitions);
            o.topics = TextList(topics, "topic");
            SetStart(start, &o);
            o.checkpoint_messages = checkpoint_messages;
            o.checkpoint_interval =
                ToDuration(checkpoint_interval, "checkpoint_interval");
            o.buffer_messages = buffer_messages;
            o.buffer_bytes = buffer_bytes;
            o.retry_base = ToDuration(retry_base, "retry_base");
            o.retry_cap = ToDuration(retry_cap, "retry_cap");
            o.max_active_lanes = max_active_lanes;
            auto l = std::make_unique<PyListener>(listener, name);
            Use use(*q.h);  // Until the handle knows the subscription.
            auto state = std::make_shared<SubState>();
            state->subscription =
                Call([&] { return q.q->Subscribe(o, l.get()); });
            state->queue = q.q;
            state->name = name;
            state->listener = l.get();
            q.h->AddSubscription(state, std::move(l));
            return PySubscription{q.h, state};
          },
          py::arg("name"), py::arg("listener"), py::kw_only(),
          py::arg("partitions") = std::vector<uint32_t>{},
          py::arg("topics") = py::tuple(), py::arg("start") = "earliest",
          py::arg("checkpoint_messages") = 1000,
          py::arg("checkpoint_interval") = 1.0,
          py::arg("buffer_messages") = 1024,
          py::arg("buffer_bytes") = uint64_t{4} << 20,
          py::arg("retry_base") = 0.1, py::arg("retry_cap") = 30.0,
          py::arg("max_active_lanes") = hq::SubscribeOptions().max_active_lanes,
          "Delivers the queue's messages to `listener` on a delivery thread, "
          "in order per lane, at least once; resumes from its checkpoints.")
      .def(
          "unsubscribe",
          [](PyQueue& q, const std::string& name) {
            Call(*q.h, [&] { return q.q->Unsubscribe(name); });
            q.h->Unsubscribed(q.q, name);
          },
          py::arg("name"),
          "Stops the subscription `name` and deletes its checkpoints.")
      .def(
          "list_subscriptions",
          [](PyQueue& q) {
            return Call(*q.h, [&] { return q.q->ListSubscriptions(); });
          },
          "The names of the queue's subscriptions.")
      .def(
          "inspect_subscription",
          [](PyQueue& q, const std::string& name) {
            return SubscriptionStatsToPy(
                Call(*q.h, [&] { return q.q->InspectSubscription(name); }));
          },
          py::arg("name"),
          "A subscription's stored checkpoints and lag, whether or not it is "
          "live.")
      .def(
          "inspect_group",
          [](PyQueue& q, const std::string& name) {
            const hq::GroupInfo info =
                Call(*q.h, [&] { return q.q->InspectGroup(name); });
            py::list cursors;
            for (const auto& c : info.cursors) {
              cursors.append(Make(
                  "LaneCursor", py::arg("partition") = c.partition,
                  py::arg("priority") = c.priority,
                  py::arg("topic") = PyText(c.topic), py::arg("scan") = c.scan,
                  py::arg("completion") = c.completion));
            }
            return Make("GroupInfo", py::arg("name") = info.name,
                        py::arg("topics") = info.topics,
                        py::arg("ordered") = info.ordered,
                        py::arg("dead_letter_queue") = info.dead_letter_queue,
                        py::arg("cursors") = cursors,
                        py::arg("start") = StartName(info.start),
                        py::arg("start_ids") = info.start_ids);
          },
          py::arg("name"),
          "A group's stored options, start and cursors (hq.GroupInfo).")
      .def(
          "stats",
          [](PyQueue& q) {
            const hq::QueueStats s = Call(*q.h, [&] { return q.q->Stats(); });
            py::list parts;
            for (const auto& p : s.partitions) {
              parts.append(Make(
                  "PartitionStats", py::arg("partition") = p.partition,
                  py::arg("lanes") = p.lanes, py::arg("first") = p.first,
                  py::arg("last") = p.last, py::arg("messages") = p.messages,
                  py::arg("messages_exact") = p.messages_exact,
                  py::arg("approximate_bytes") = p.approximate_bytes));
            }
            return Make("QueueStats", py::arg("partitions") = parts,
                        py::arg("approximate_bytes") = s.approximate_bytes);
          },
          "Messages, bytes and ids per partition, and the queue's groups and "
          "subscriptions (hq.QueueStats).")
      .def(
          "approximate_bytes",
          [](PyQueue& q) {
            return Call(*q.h, [&] { return q.q->ApproximateBytes(); });
          },
          "The queue's approximate size on disk, in bytes.");
}

}  // namespace hq::python
