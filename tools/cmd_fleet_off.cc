// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq fleet in a tool built without the fleet library (-Dfleet, where the
// ZooKeeper or NATS C client is missing): says so, as a usage error.

#include "tools/command.h"

namespace hq::tool {

ExitCode Fleet(const Args& /*args*/) {
  return Usage(
      "this hq was built without the fleet (libhq_fleet): install the "
      "ZooKeeper and NATS C clients (Debian: libzookeeper-mt-dev "
      "libnats-dev) and build hq again (meson's -Dfleet=auto finds them)");
}

}  // namespace hq::tool
