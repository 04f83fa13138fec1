// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "bench/registry.h"

#include <string_view>
#include <vector>

namespace hq::bench {

const std::vector<Workload>& Workloads() {
  static const std::vector<Workload>* const workloads = [] {
    auto* w = new std::vector<Workload>;
    AddWriteWorkloads(w);
    AddReadWorkloads(w);
    AddConsumeWorkloads(w);
    AddAdminWorkloads(w);
    AddPeerWorkloads(w);
    return w;
  }();
  return *workloads;
}

const Workload* FindWorkload(std::string_view name) {
  for (const Workload& w : Workloads()) {
    if (w.name == name) return &w;
  }
  return nullptr;
}

}  // namespace hq::bench
