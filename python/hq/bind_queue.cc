// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq._hq's Queue: writes, scans, and the groups and subscriptions of one
// queue.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <iterator>
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

// The fields of a message as put takes them, in put's order. DO NOT
// REORDER without kFieldNames.
enum class Field {
  kPayload,
  kTopic,
  kKey,
  kPartition,
  kPriority,
  kDelay,
  kNotBefore,
  kDedupKey
};
constexpr const char* kFieldNames[] = {"payload",    "topic",    "key",
                                       "partition",  "priority", "delay",
                                       "not_before", "dedup_key"};
constexpr size_t kNumFields = std::size(kFieldNames);

// One message's fields as Python gave them (borrowed; null or None: put's
// default).
struct Fields {
  py::handle v[kNumFields] = {};
  py::handle& operator[](Field f) { return v[static_cast<size_t>(f)]; }
};

bool Given(py::handle h) { return h && !h.is_none(); }

// Sets the fields of `m` (a default Message) that `f` gives. Its views point
// into f's objects (which must outlive it) and `store`.
void ToMessage(Fields& f, ByteStore& store, hq::Message& m) {
  if (!Given(f[Field::kPayload])) {
    throw py::type_error("a message needs a payload");
  }
  m.payload = BytesView(f[Field::kPayload], store, "payload");
  if (Given(f[Field::kTopic])) {
    m.topic = BytesView(f[Field::kTopic], store, "topic");
  }
  if (Given(f[Field::kKey])) m.key = BytesView(f[Field::kKey], store, "key");
  if (Given(f[Field::kDedupKey])) {
    m.dedup_key = BytesView(f[Field::kDedupKey], store, "dedup_key");
  }
  if (Given(f[Field::kPartition])) {
    m.partition = Int<uint32_t>(f[Field::kPartition], "partition");
  }
  if (Given(f[Field::kPriority])) {
    m.priority = Int<int>(f[Field::kPriority], "priority");
  }
  if (Given(f[Field::kDelay])) {
    m.delay = ToDuration(Float(f[Field::kDelay], "delay"), "delay");
  }
  if (Given(f[Field::kNotBefore])) {
    m.not_before = ToTime(Float(f[Field::kNotBefore], "not_before"));
  }
}

bool IsPayload(py::handle h) {
  return PyBytes_Check(h.ptr()) || PyUnicode_Check(h.ptr()) ||
         PyByteArray_Check(h.ptr());
}

// Messages built from Python items for one PutBatch, and what keeps their
// views valid while the GIL is released (another thread may then change a
// list or dict they came from).
struct Batch {
  std::vector<hq::Message> messages;
  // The items, as a tuple (Sequence): holds every item, and what an
  // immutable item (bytes, str, a tuple) holds.
  py::object items;
  // Objects read from mutable items (a dict's values, attributes).
  std::vector<py::object> keep;
  ByteStore store;

  // Adds the message of `f`, whose objects `items` or `keep` must hold.
  void Add(Fields& f) { ToMessage(f, store, messages.emplace_back()); }
  // Adds a message of only a payload, bytes that `items` holds.
  void AddPayload(PyObject* bytes) {
    messages.emplace_back().payload = std::string_view(
        PyBytes_AS_STRING(bytes), static_cast<size_t>(PyBytes_GET_SIZE(bytes)));
  }
};

// The items of an iterable as a tuple, which holds a reference to each:
// reading an item can run Python code (a property, __getattr__) that
// changes the caller's list, and another thread may change it while the
// write runs without the GIL; the tuple keeps every item alive and in place
// meanwhile.
py::object Sequence(py::handle items) {
  if (!PyTuple_Check(items.ptr()) && !PyList_Check(items.ptr()) &&
      !py::isinstance<py::iterable>(items)) {
    throw py::type_error("the messages must be iterable, not " +
                         TypeName(items));
  }
  PyObject* seq = PySequence_Tuple(items.ptr());
  if (seq == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(seq);
}

// One item of put_batch: a payload (bytes or str), a dict of Message's
// fields, or an object with Message's attributes (hq.Message).
void AddBatchItem(py::handle item, Batch& b) {
  if (PyBytes_Check(item.ptr())) {
    b.AddPayload(item.ptr());
    return;
  }
  Fields f;
  if (IsPayload(item)) {
    f[Field::kPayload] = item;
  } else if (PyDict_Check(item.ptr())) {
    for (size_t i = 0; i < kNumFields; ++i) {
      PyObject* v = PyDict_GetItemString(item.ptr(), kFieldNames[i]);
      if (v == nullptr) continue;
      b.keep.push_back(py::reinterpret_borrow<py::object>(v));
      f.v[i] = v;
    }
  } else {
    for (size_t i = 0; i < kNumFields; ++i) {
      b.keep.push_back(py::getattr(item, kFieldNames[i], py::none()));
      f.v[i] = b.keep.back();
    }
  }
  b.Add(f);
}

// put_many's `fields`: the field of each position of its tuples.
std::vector<Field> FieldOrder(py::handle names) {
  std::vector<Field> order;
  bool seen[kNumFields] = {};
  for (const std::string& name : TextList(names, "a field name")) {
    size_t i = 0;
    while (i < kNumFields && name != kFieldNames[i]) ++i;
    if (i == kNumFields) {
      Raise(absl::InvalidArgumentError(
          "fields: '" + name +
          "' is not one of payload, topic, key, partition, priority, delay, "
          "not_before, dedup_key"));
    }
    if (seen[i]) {
      Raise(absl::InvalidArgumentError("fields: '" + name + "' twice"));
    }
    seen[i] = true;
    order.push_back(static_cast<Field>(i));
  }
  if (!seen[static_cast<size_t>(Field::kPayload)]) {
    Raise(absl::InvalidArgumentError("fields must name 'payload'"));
  }
  return order;
}

// One item of put_many: a tuple of the values `order` names (a shorter one
// leaves the rest at put's defaults), or a payload.
void AddRow(py::handle item, const std::vector<Field>& order, Batch& b) {
  if (PyBytes_Check(item.ptr())) {
    b.AddPayload(item.ptr());
    return;
  }
  Fields f;
  if (PyTuple_Check(item.ptr())) {
    const size_t n = static_cast<size_t>(PyTuple_GET_SIZE(item.ptr()));
    if (n > order.size()) {
      Raise(absl::InvalidArgumentError(
          "a tuple of " + std::to_string(n) + " values for " +
          std::to_string(order.size()) + " fields"));
    }
    for (size_t i = 0; i < n; ++i) {
      f[order[i]] = PyTuple_GET_ITEM(item.ptr(), static_cast<Py_ssize_t>(i));
    }
  } else if (IsPayload(item)) {
    f[Field::kPayload] = item;
  } else {
    throw py::type_error("an item must be a tuple or a payload, not " +
                         TypeName(item));
  }
  b.Add(f);
}

// Runs add(item, batch) on every item of `items`; an error names the
// item's index.
template <typename Add>
Batch ToBatch(py::handle items, Add&& add) {
  Batch b;
  b.items = Sequence(items);
  PyObject* const seq = b.items.ptr();
  const Py_ssize_t n = PyTuple_GET_SIZE(seq);
  b.messages.reserve(static_cast<size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    try {
      add(PyTuple_GET_ITEM(seq, i), b);
    } catch (py::type_error& e) {
      throw py::type_error("item " + std::to_string(i) + ": " + e.what());
    }
  }
  return b;
}

std::optional<bool> ToSync(py::handle sync) {
  if (sync.is_none()) return std::nullopt;
  if (!PyBool_Check(sync.ptr())) {
    throw py::type_error("sync must be None, True or False, not " +
                         TypeName(sync));
  }
  return sync.ptr() == Py_True;
}

hq::PutOptions ToPutOptions(py::handle sync) {
  hq::PutOptions o;
  o.sync = ToSync(sync);
  return o;
}

// Writes b's messages in one PutBatch; their PutResults.
std::vector<hq::PutResult> PutBatch(PyQueue& q, const Batch& b,
                                    py::handle sync) {
  const hq::PutOptions o = ToPutOptions(sync);
  std::vector<hq::PutResult> results;
  Call(*q.h, [&] { return q.q->PutBatch(b.messages, &results, o); });
  return results;
}

// Queue.put(payload, *, topic, key, partition, priority, delay,
// not_before, dedup_key, sync) from a vectorcall: args[0, nargs) are
// positional, then one value per name of kwnames.
py::object Put(py::handle self, PyObject* const* args, Py_ssize_t nargs,
               PyObject* kwnames) {
  PyQueue* q = ValueOf<PyQueue>(self);
  if (q == nullptr) throw py::type_error("put needs an hq.Queue");
  // put's parameters: the message's fields, then sync.
  static const FastParams params(
      "put",
      {kFieldNames[0], kFieldNames[1], kFieldNames[2], kFieldNames[3],
       kFieldNames[4], kFieldNames[5], kFieldNames[6], kFieldNames[7], "sync"},
      1);
  static_assert(kNumFields == 8);
  PyObject* given[kNumFields + 1] = {};
  params.Parse(args, nargs, kwnames, given);
  if (given[0] == nullptr) params.RaiseMissing(0);
  Fields f;
  for (size_t i = 0; i < kNumFields; ++i) f.v[i] = given[i];
  ByteStore store;
  hq::Message m;
  ToMessage(f, store, m);
  const hq::PutOptions o = ToPutOptions(given[kNumFields] == nullptr
                                            ? py::handle(Py_None)
                                            : py::handle(given[kNumFields]));
  return NewPutResult(Call(*q->h, [&] { return q->q->Put(m, o); }));
}

// Queue.put_batch(messages, *, sync=None) from a vectorcall (FastParams).
py::object PutBatchCall(py::handle self, PyObject* const* args,
                        Py_ssize_t nargs, PyObject* kwnames) {
  PyQueue* q = ValueOf<PyQueue>(self);
  if (q == nullptr) throw py::type_error("put_batch needs an hq.Queue");
  static const FastParams params("put_batch", {"messages", "sync"}, 1);
  PyObject* given[2] = {};
  params.Parse(args, nargs, kwnames, given);
  if (given[0] == nullptr) params.RaiseMissing(0);
  return NewPutResults(PutBatch(*q, ToBatch(given[0], AddBatchItem),
                                given[1] == nullptr ? Py_None : given[1]));
}

// Queue.put_many(items, *, fields=("payload", "topic", "priority",
// "dedup_key"), sync=None) from a vectorcall (FastParams).
py::object PutManyCall(py::handle self, PyObject* const* args, Py_ssize_t nargs,
                       PyObject* kwnames) {
  PyQueue* q = ValueOf<PyQueue>(self);
  if (q == nullptr) throw py::type_error("put_many needs an hq.Queue");
  static const FastParams params("put_many", {"items", "fields", "sync"}, 1);
  PyObject* given[3] = {};
  params.Parse(args, nargs, kwnames, given);
  if (given[0] == nullptr) params.RaiseMissing(0);
  static const std::vector<Field> kDefaultOrder = {
      Field::kPayload, Field::kTopic, Field::kPriority, Field::kDedupKey};
  std::vector<Field> given_order;
  if (given[1] != nullptr) given_order = FieldOrder(given[1]);
  const std::vector<Field>& order =
      given[1] != nullptr ? given_order : kDefaultOrder;
  auto add = [&](py::handle item, Batch& b) { AddRow(item, order, b); };
  return NewObject(PyPutResults{PutBatch(
      *q, ToBatch(given[0], add), given[2] == nullptr ? Py_None : given[2])});
}

}  // namespace

void BindQueue(py::module_& m) {
  py::class_<PyQueue> queue(m, "Queue",
                            "A queue of a Db. Valid while its Db is open.");
  // Queue.put, the one-message call, is a vectorcall method
  // (METH_FASTCALL): no argument tuple, dict or per-argument conversion.
  static PyMethodDef put_def = {
      "put", FastMethod<Put>, METH_FASTCALL | METH_KEYWORDS,
      "put($self, payload, *, topic=None, key=None, partition=None, "
      "priority=0, delay=0.0, not_before=None, dedup_key=None, sync=None)\n"
      "--\n\n"
      "Writes one message; returns its PutResult (partition, id, "
      "duplicate). sync=None: the Db's sync_writes."};
  AddFastMethod(queue, &put_def);
  // So are put_batch and put_many, a crawler's calls.
  static PyMethodDef put_batch_def = {
      "put_batch", FastMethod<PutBatchCall>, METH_FASTCALL | METH_KEYWORDS,
      "put_batch($self, messages, *, sync=None)\n"
      "--\n\n"
      "Writes all messages or none, in one write. An item is a payload, an "
      "hq.Message or a dict of Message's fields."};
  AddFastMethod(queue, &put_batch_def);
  static PyMethodDef put_many_def = {
      "put_many", FastMethod<PutManyCall>, METH_FASTCALL | METH_KEYWORDS,
      "put_many($self, items, *, fields=('payload', 'topic', 'priority', "
      "'dedup_key'), sync=None)\n"
      "--\n\n"
      "put_batch of tuples: each item holds the values of put's arguments "
      "named by `fields`, in that order (a shorter tuple leaves the rest at "
      "put's defaults; None is the default), or is a payload. All or none, "
      "one write; returns the PutResults (a sequence made lazily)."};
  AddFastMethod(queue, &put_many_def);
  queue
      .def_property_readonly("name",
                             [](const PyQueue& q) { return q.q->name(); })
      .def_property_readonly(
          "options",
          [](const PyQueue& q) { return QueueOptionsToPy(q.q->options()); })
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
          "delete_subscription",
          [](PyQueue& q, const std::string& name) {
            Call(*q.h, [&] { return q.q->DeleteSubscription(name); });
            q.h->Unsubscribed(q.q, name);
          },
          py::arg("name"),
          "Deletes the subscription `name` and all its state "
          "(Queue::DeleteSubscription, the same as unsubscribe): stops it if "
          "it is live; a later subscribe of the name starts afresh. "
          "NotFoundError if there is no such subscription.")
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
