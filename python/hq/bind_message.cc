// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq._hq's messages: MessageId, PutResult (what a put returns) and
// ReceivedMessage (what a scanner reads and a listener gets).

#include <pybind11/pybind11.h>

#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "_hq.h"
#include "plain_type.h"

namespace hq::python {

namespace {

// hq.PutResult: a plain CPython type (not a pybind11 class), as a put of
// 100 messages makes 100 of them.
PlainType<hq::PutResult> put_result_type;
static_assert(std::is_trivially_destructible_v<hq::PutResult>);

const hq::PutResult& Of(PyObject* self) {
  return PlainType<hq::PutResult>::Of(self);
}

PyObject* GetPartition(PyObject* self, void*) {
  return PyLong_FromUnsignedLong(Of(self).partition);
}

PyObject* GetId(PyObject* self, void*) {
  try {
    return NewObject(hq::MessageId(Of(self).id)).release().ptr();
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return nullptr;
}

PyObject* GetDuplicate(PyObject* self, void*) {
  return PyBool_FromLong(Of(self).duplicate ? 1 : 0);
}

PyObject* PutResultRepr(PyObject* self) {
  try {
    const hq::PutResult& r = Of(self);
    const std::string s = "PutResult(partition=" + std::to_string(r.partition) +
                          ", id=" + r.id.ToString() +
                          ", duplicate=" + (r.duplicate ? "True" : "False") +
                          ")";
    return PyUnicode_FromStringAndSize(s.data(),
                                       static_cast<Py_ssize_t>(s.size()));
  } catch (const std::bad_alloc&) {
    return PyErr_NoMemory();
  }
}

void BindPutResult(py::module_& m) {
  static PyGetSetDef getset[] = {
      {"partition", GetPartition, nullptr, "The partition written.", nullptr},
      {"id", GetId, nullptr, "The message's MessageId.", nullptr},
      {"duplicate", GetDuplicate, nullptr,
       "True: nothing written; a live message with the dedup key exists and "
       "partition and id name it.",
       nullptr},
      {nullptr, nullptr, nullptr, nullptr, nullptr}};
  put_result_type.Create(m, "hq._hq.PutResult", getset, &PutResultRepr,
                         "Where a written message went: partition, id, "
                         "duplicate.");
}

}  // namespace

py::object NewPutResult(const hq::PutResult& r) {
  return put_result_type.New(r);
}

py::list NewPutResults(const std::vector<hq::PutResult>& results) {
  py::list out(results.size());
  for (size_t i = 0; i < results.size(); ++i) {
    PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(i),
                    NewPutResult(results[i]).release().ptr());
  }
  return out;
}

void BindMessage(py::module_& m) {
  py::class_<hq::MessageId>(m, "MessageId")
      .def(py::init([](uint64_t ms, uint16_t seq) {
             if (ms > hq::MessageId::kMaxMs) {
               throw py::value_error("MessageId ms must be < 2**48");
             }
             return hq::MessageId{ms, seq};
           }),
           py::arg("ms"), py::arg("seq") = 0)
      .def_readonly("ms", &hq::MessageId::ms)
      .def_readonly("seq", &hq::MessageId::seq)
      .def_static("min", &hq::MessageId::Min)
      .def_static("max", &hq::MessageId::Max)
      .def_static("at_time",
                  [](double t) { return hq::MessageId::AtTime(ToTime(t)); })
      .def_static("parse",
                  [](std::string_view text) {
                    std::optional<hq::MessageId> id =
                        hq::MessageId::Parse(text);
                    if (!id) {
                      Raise(absl::InvalidArgumentError("not a MessageId: " +
                                                       std::string(text)));
                    }
                    return *id;
                  })
      .def("next", &hq::MessageId::Next)
      .def_property_readonly("time",
                             [](const hq::MessageId& id) -> double {
                               return UnixSeconds(id.time());
                             })
      .def("__str__", &hq::MessageId::ToString)
      .def("__repr__",
           [](const hq::MessageId& id) {
             return "MessageId(" + std::to_string(id.ms) + ", " +
                    std::to_string(id.seq) + ")";
           })
      .def("__hash__",
           [](const hq::MessageId& id) {
             return py::hash(py::make_tuple(id.ms, id.seq));
           })
      .def("__eq__", [](const hq::MessageId& a,
                        const hq::MessageId& b) { return a == b; })
      .def("__ne__", [](const hq::MessageId& a,
                        const hq::MessageId& b) { return a != b; })
      .def("__lt__",
           [](const hq::MessageId& a, const hq::MessageId& b) { return a < b; })
      .def("__le__", [](const hq::MessageId& a,
                        const hq::MessageId& b) { return a <= b; })
      .def("__gt__",
           [](const hq::MessageId& a, const hq::MessageId& b) { return a > b; })
      .def("__ge__", [](const hq::MessageId& a, const hq::MessageId& b) {
        return a >= b;
      });

  BindPutResult(m);

  py::class_<PyPutResults>(m, "PutResults",
                           "The PutResults of a put_many, in the order of its "
                           "items: a read-only sequence that makes each "
                           "PutResult when it is read.")
      .def("__len__", [](const PyPutResults& r) { return r.results.size(); })
      .def("__getitem__",
           [](const PyPutResults& r, Py_ssize_t i) {
             const auto n = static_cast<Py_ssize_t>(r.results.size());
             if (i < 0) i += n;
             if (i < 0 || i >= n) {
               throw py::index_error("PutResults index out of range");
             }
             return NewPutResult(r.results[static_cast<size_t>(i)]);
           })
      .def("__iter__",
           [](const PyPutResults& r) {
             return py::iter(NewPutResults(r.results));
           })
      .def_property_readonly(
          "duplicates",
          [](const PyPutResults& r) {
            py::list out(r.results.size());
            for (size_t i = 0; i < r.results.size(); ++i) {
              PyObject* b = r.results[i].duplicate ? Py_True : Py_False;
              Py_INCREF(b);
              PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(i), b);
            }
            return out;
          },
          "Whether each item was a duplicate (PutResult.duplicate), as a "
          "list of bools.")
      .def("__repr__", [](const PyPutResults& r) {
        return "PutResults(" + std::to_string(r.results.size()) + " results)";
      });

  py::class_<PyMessage>(m, "ReceivedMessage")
      .def_readonly("id", &PyMessage::id)
      .def_readonly("partition", &PyMessage::partition)
      .def_readonly("priority", &PyMessage::priority)
      .def_property_readonly("topic",
                             [](const PyMessage& x) { return PyText(x.topic); })
      .def_property_readonly("key",
                             [](const PyMessage& x) { return PyBytes(x.key); })
      .def_property_readonly(
          "payload", [](const PyMessage& x) { return PyBytes(x.payload); })
      .def_property_readonly(
          "not_before",
          [](const PyMessage& x) { return FromTime(x.not_before); })
      .def_property_readonly("dedup_key",
                             [](const PyMessage& x) -> py::object {
                               if (x.dedup_key.empty()) return py::none();
                               return PyBytes(x.dedup_key);
                             })
      .def("__repr__", [](const PyMessage& x) {
        return "ReceivedMessage(partition=" + std::to_string(x.partition) +
               ", id=" + x.id.ToString() + ", " +
               std::to_string(x.payload.size()) + " bytes)";
      });
}

}  // namespace hq::python
