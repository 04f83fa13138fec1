// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#ifndef HQ_LIB_UTIL_LEVELDB_STATUS_H_
#define HQ_LIB_UTIL_LEVELDB_STATUS_H_

#include <string_view>

#include "absl/status/status.h"
#include "leveldb/status.h"

namespace hq {

// A LevelDB status as an absl::Status, its message prefixed by `context`:
// Corruption is DataLoss, NotFound NotFound, anything else Internal.
absl::Status FromLevelDb(const leveldb::Status& s, std::string_view context);

}  // namespace hq

#endif  // HQ_LIB_UTIL_LEVELDB_STATUS_H_
