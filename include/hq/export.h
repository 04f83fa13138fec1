// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// HQ_EXPORT marks what a shared libhq exports: the public classes and free
// functions of include/hq/. The library is compiled with -fvisibility=hidden
// (and hidden inline functions), so everything else, lib/ included, stays
// inside libhq.so. A static libhq.a is unaffected.

#ifndef HQ_EXPORT_H_
#define HQ_EXPORT_H_

#if defined(__GNUC__) || defined(__clang__)
#define HQ_EXPORT __attribute__((visibility("default")))
#else
#define HQ_EXPORT
#endif

#endif  // HQ_EXPORT_H_
