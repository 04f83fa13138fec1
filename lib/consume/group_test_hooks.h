// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Test hooks of the consumer groups that a test runner sets before any
// group exists (test/catch_main.cc), without the groups' internals.

#ifndef HQ_LIB_CONSUME_GROUP_TEST_HOOKS_H_
#define HQ_LIB_CONSUME_GROUP_TEST_HOOKS_H_

#include <cstddef>

namespace hq {

// Replaces every group's GroupOptions::max_active_lanes and every
// subscription's SubscribeOptions::max_active_lanes (0: do not), so that a
// whole test program runs with a tiny working set.
void TEST_SetMaxActiveLanes(size_t n);

}  // namespace hq

#endif  // HQ_LIB_CONSUME_GROUP_TEST_HOOKS_H_
