// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// HQ_EXPORT marks what a shared libhq exports: the public classes and free
// functions of include/hq/, and the decoder of the live status file
// (lib/format/live_status.h), which the installed hq tool links from
// libhq.so and which no installed header declares. The library is compiled
// with -fvisibility=hidden (and hidden inline functions), so everything
// else, lib/ included, stays inside libhq.so. A static libhq.a is
// unaffected.

#ifndef HQ_EXPORT_H_
#define HQ_EXPORT_H_

// Every public header includes this one first of hq's headers (directly or
// through the first it includes), so that a compile without C++20 stops
// here, with this message, before anything of hq that needs it. (hq.pc's
// Cflags and the CMake target hq::hq ask for C++20.)
#if defined(_MSVC_LANG) ? _MSVC_LANG < 202002L : __cplusplus < 202002L
#error "hq needs C++20: compile with -std=c++20 (or later)"
#endif

#if defined(__GNUC__) || defined(__clang__)
#define HQ_EXPORT __attribute__((visibility("default")))
#else
#define HQ_EXPORT
#endif

#endif  // HQ_EXPORT_H_
