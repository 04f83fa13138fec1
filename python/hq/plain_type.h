// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// PlainType<T>: a plain CPython heap type whose instances hold one C++
// value T, for values made by the hundred per call (hq.Task, hq.PutResult):
// one allocation each, no pybind11 registry lookup. Instances are made
// only from C++ (Python cannot instantiate the type), read through the
// getters the caller gives, and destroy their T when they go.
//
// Create is called once, at module init, with the GIL held; the type lives
// for the process.

#ifndef HQ_PYTHON_HQ_PLAIN_TYPE_H_
#define HQ_PYTHON_HQ_PLAIN_TYPE_H_

#include <pybind11/pybind11.h>

#include <new>
#include <string>
#include <type_traits>
#include <utility>

namespace hq::python {

template <typename T>
class PlainType {
 public:
  // Makes the type `module.<name>` ("hq._hq.<name>" as its qualified name)
  // with `getset` (ended by an entry of nullptrs), `repr` (nullptr: the
  // default) and `doc`. Throws error_already_set if CPython refuses.
  void Create(pybind11::module_& m, const char* qualified_name,
              PyGetSetDef* getset, reprfunc repr, const char* doc) {
    slots_[0] = {Py_tp_getset, getset};
    slots_[1] = {Py_tp_dealloc, reinterpret_cast<void*>(&Dealloc)};
    slots_[2] = {Py_tp_doc, const_cast<char*>(doc)};
    slots_[3] = {repr != nullptr ? Py_tp_repr : 0,
                 reinterpret_cast<void*>(repr)};
    slots_[4] = {0, nullptr};
    spec_ = {qualified_name, static_cast<int>(sizeof(Object)), 0,
             Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, slots_};
    PyObject* type = PyType_FromSpec(&spec_);
    if (type == nullptr) throw pybind11::error_already_set();
    type_ = reinterpret_cast<PyTypeObject*>(type);  // Never freed.
    const std::string name(qualified_name);
    m.attr(name.substr(name.rfind('.') + 1).c_str()) =
        pybind11::reinterpret_borrow<pybind11::object>(type);
  }

  // A new instance holding `value`. Throws error_already_set (MemoryError).
  pybind11::object New(T value) const {
    PyObject* o = type_->tp_alloc(type_, 0);
    if (o == nullptr) throw pybind11::error_already_set();
    new (&reinterpret_cast<Object*>(o)->value) T(std::move(value));
    return pybind11::reinterpret_steal<pybind11::object>(o);
  }

  // The value of `self`, an instance of this type.
  static T& Of(PyObject* self) {
    return reinterpret_cast<Object*>(self)->value;
  }

  // The value `h` holds, or nullptr if it is not an instance of this type.
  T* Get(pybind11::handle h) const {
    if (Py_TYPE(h.ptr()) != type_) return nullptr;
    return &Of(h.ptr());
  }

 private:
  struct Object {
    PyObject_HEAD T value;
  };

  static void Dealloc(PyObject* self) {
    PyTypeObject* type = Py_TYPE(self);
    if constexpr (!std::is_trivially_destructible_v<T>) Of(self).~T();
    type->tp_free(self);
    Py_DECREF(type);  // A heap type's instances hold a reference to it.
  }

  PyTypeObject* type_ = nullptr;
  PyType_Slot slots_[5] = {};
  PyType_Spec spec_ = {};
};

}  // namespace hq::python

#endif  // HQ_PYTHON_HQ_PLAIN_TYPE_H_
