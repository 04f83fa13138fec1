// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/fleet/assignment.h"

#include <algorithm>
#include <charconv>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "lib/consume/rebalance.h"
#include "lib/util/strings.h"

namespace hq::fleet {
namespace {

constexpr std::string_view kHeader = "hq-fleet-assignment";
constexpr uint32_t kMaxPartitions = 65536;

absl::Status Malformed(std::string_view why) {
  return absl::DataLossError(
      absl::StrCat("hq fleet: the assignment record is malformed: ", Av(why)));
}

bool ParseU64(absl::string_view s, uint64_t* v) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

Assignment EmptyAssignment(uint32_t partitions) {
  Assignment a;
  a.owners.resize(partitions);
  a.epochs.assign(partitions, 0);
  return a;
}

std::string EncodeAssignment(const Assignment& a) {
  std::vector<std::string> members;
  for (const std::string& o : a.owners) {
    if (!o.empty()) members.push_back(o);
  }
  std::sort(members.begin(), members.end());
  members.erase(std::unique(members.begin(), members.end()), members.end());
  absl::flat_hash_map<std::string, size_t> index;
  std::string out = absl::StrCat(Av(kHeader), " 1 ", a.partitions(),
                                 "\nmembers ", members.size());
  for (size_t i = 0; i < members.size(); ++i) {
    index[members[i]] = i;
    absl::StrAppend(&out, " ", members[i]);
  }
  out += "\n";
  for (uint32_t p = 0; p < a.partitions(); ++p) {
    if (a.owners[p].empty()) {
      absl::StrAppend(&out, "- ", a.epochs[p], "\n");
    } else {
      absl::StrAppend(&out, index[a.owners[p]], " ", a.epochs[p], "\n");
    }
  }
  return out;
}

absl::StatusOr<Assignment> DecodeAssignment(std::string_view data) {
  if (data.empty() || data.back() != '\n') return Malformed("no last line");
  data.remove_suffix(1);
  std::vector<absl::string_view> lines = absl::StrSplit(Av(data), '\n');
  if (lines.size() < 2) return Malformed("no header");
  std::vector<absl::string_view> head = absl::StrSplit(lines[0], ' ');
  uint64_t partitions = 0;
  if (head.size() != 3 || head[0] != Av(kHeader) || head[1] != "1" ||
      !ParseU64(head[2], &partitions) || partitions == 0 ||
      partitions > kMaxPartitions) {
    return Malformed(absl::StrCat("header \"", lines[0].substr(0, 80), "\""));
  }
  std::vector<absl::string_view> members = absl::StrSplit(lines[1], ' ');
  uint64_t k = 0;
  if (members.size() < 2 || members[0] != "members" ||
      !ParseU64(members[1], &k) || k != members.size() - 2) {
    return Malformed("members line");
  }
  for (size_t i = 2; i < members.size(); ++i) {
    if (members[i].empty()) return Malformed("an empty agent id");
  }
  if (lines.size() != partitions + 2) {
    return Malformed(absl::StrCat(lines.size() - 2, " partition lines for ",
                                  partitions, " partitions"));
  }
  Assignment a = EmptyAssignment(static_cast<uint32_t>(partitions));
  for (uint32_t p = 0; p < partitions; ++p) {
    absl::string_view line = lines[p + 2];
    size_t space = line.find(' ');
    if (space == absl::string_view::npos) return Malformed("partition line");
    absl::string_view owner = line.substr(0, space);
    if (!ParseU64(line.substr(space + 1), &a.epochs[p])) {
      return Malformed(absl::StrCat("epoch of partition ", p));
    }
    if (owner == "-") continue;
    uint64_t i = 0;
    if (!ParseU64(owner, &i) || i >= k) {
      return Malformed(absl::StrCat("owner of partition ", p));
    }
    a.owners[p] = std::string(members[i + 2]);
  }
  return a;
}

Assignment Rebalance(const Assignment& current,
                     std::span<const std::string> members, size_t* moved) {
  if (moved != nullptr) *moved = 0;
  if (members.empty()) return current;
  absl::flat_hash_map<std::string_view, int> index;
  for (size_t i = 0; i < members.size(); ++i) {
    index[members[i]] = static_cast<int>(i);
  }
  std::vector<int> owner(current.partitions(), -1);
  for (uint32_t p = 0; p < current.partitions(); ++p) {
    auto it = index.find(current.owners[p]);
    if (it != index.end()) owner[p] = it->second;
  }
  std::vector<int> next = AssignPartitions(owner, members);
  Assignment out = current;
  for (uint32_t p = 0; p < current.partitions(); ++p) {
    const std::string& id = members[next[p]];
    if (id == current.owners[p]) continue;
    out.owners[p] = id;
    ++out.epochs[p];
    if (moved != nullptr) ++*moved;
  }
  return out;
}

}  // namespace hq::fleet
