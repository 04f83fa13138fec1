// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// PlainType<T>: a plain CPython heap type whose instances hold one C++
// value T, for values made by the hundred per call (hq.Task, hq.PutResult):
// no pybind11 registry lookup, and no allocation for most of them: the
// memory of up to kFreeListSize dead instances is kept for the next ones
// (as CPython keeps its floats' and tuples'). Instances are made only from
// C++ (Python cannot instantiate the type, nor subclass it), read through
// the getters the caller gives, and destroy their T when they go.
//
// Create is called once, at module init, with the GIL held; the type lives
// for the process. New and the instances' deallocation REQUIRE the GIL (it
// guards the free list).

#ifndef HQ_PYTHON_HQ_PLAIN_TYPE_H_
#define HQ_PYTHON_HQ_PLAIN_TYPE_H_

#include <pybind11/pybind11.h>

#include <cstddef>
#include <new>
#include <string>
#include <type_traits>
#include <utility>

namespace hq::python {

template <typename T>
class PlainType {
 public:
  // The most dead instances whose memory is kept (a claim of 100 tasks
  // reuses the memory of the 100 before; at most this many times
  // sizeof(T) plus an object header stay allocated).
  static constexpr size_t kFreeListSize = 1024;

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

  // A new instance holding T(args...) (a copy or a move of a T: one
  // construction, in place). Throws error_already_set (MemoryError), or
  // what T's constructor throws.
  template <typename... Args>
  pybind11::object New(Args&&... args) {
    void* memory;
    if (free_size_ > 0) {
      memory = free_[--free_size_];
    } else {
      memory = PyObject_Malloc(sizeof(Object));
      if (memory == nullptr) {
        PyErr_NoMemory();
        throw pybind11::error_already_set();
      }
    }
    auto* o = static_cast<Object*>(memory);
    try {
      new (&o->value) T(std::forward<Args>(args)...);
    } catch (...) {
      PyObject_Free(memory);
      throw;
    }
    // Sets the type (taking a reference to it, as a heap type's instances
    // hold one) and a reference count of 1.
    PyObject_Init(reinterpret_cast<PyObject*>(o), type_);
    return pybind11::reinterpret_steal<pybind11::object>(
        reinterpret_cast<PyObject*>(o));
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

  // The type's tp_dealloc. Its instances are all made by New (Python can
  // neither instantiate nor subclass the type), so their memory comes from
  // PyObject_Malloc.
  static void Dealloc(PyObject* self) {
    PyTypeObject* type = Py_TYPE(self);
    if constexpr (!std::is_trivially_destructible_v<T>) Of(self).~T();
    if (free_size_ < kFreeListSize) {
      free_[free_size_++] = self;
    } else {
      PyObject_Free(self);
    }
    Py_DECREF(type);  // A heap type's instances hold a reference to it.
  }

  PyTypeObject* type_ = nullptr;
  PyType_Slot slots_[5] = {};
  PyType_Spec spec_ = {};
  // The memory of dead instances, for New (one free list per T: a T has
  // one PlainType). Guarded by the GIL.
  static inline void* free_[kFreeListSize] = {};
  static inline size_t free_size_ = 0;
};

}  // namespace hq::python

#endif  // HQ_PYTHON_HQ_PLAIN_TYPE_H_
