// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Convenience header: all of hq's public API.

#ifndef HQ_HQ_H_
#define HQ_HQ_H_

#include "hq/clock.h"
#include "hq/db.h"
#include "hq/group.h"
#include "hq/layout.h"
#include "hq/lease.h"
#include "hq/message.h"
#include "hq/options.h"
#include "hq/queue.h"
#include "hq/scanner.h"
#include "hq/status.h"
#include "hq/subscription.h"

#endif  // HQ_HQ_H_
