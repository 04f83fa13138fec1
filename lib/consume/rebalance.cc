// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/consume/rebalance.h"

#include <algorithm>
#include <cstddef>

namespace hq {

std::vector<int> AssignPartitions(std::span<const int> owner,
                                  std::span<const std::string> consumers) {
  const size_t partitions = owner.size();
  const size_t n = consumers.size();
  std::vector<int> result(partitions, -1);
  if (n == 0) return result;
  std::vector<size_t> owned(n, 0);
  for (int o : owner) {
    if (o >= 0) ++owned[o];
  }
  // The consumers, those owning the most first.
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return owned[a] != owned[b] ? owned[a] > owned[b]
                                : consumers[a] < consumers[b];
  });
  std::vector<size_t> quota(n), kept(n, 0);
  for (size_t r = 0; r < n; ++r) {
    quota[order[r]] = partitions / n + (r < partitions % n ? 1 : 0);
  }
  std::vector<size_t> free;
  for (size_t p = 0; p < partitions; ++p) {
    const int o = owner[p];
    if (o >= 0 && kept[o] < quota[o]) {
      ++kept[o];
      result[p] = o;
    } else {
      free.push_back(p);
    }
  }
  size_t r = 0;
  for (size_t p : free) {
    while (r < n && kept[order[r]] >= quota[order[r]]) ++r;
    if (r == n) break;
    result[p] = static_cast<int>(order[r]);
    ++kept[order[r]];
  }
  return result;
}

}  // namespace hq
