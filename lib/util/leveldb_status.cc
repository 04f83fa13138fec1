// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/util/leveldb_status.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "lib/util/strings.h"

namespace hq {

absl::Status FromLevelDb(const leveldb::Status& s, std::string_view context) {
  if (s.ok()) return absl::OkStatus();
  std::string msg = absl::StrCat(Av(context), ": ", s.ToString());
  if (s.IsCorruption()) return absl::DataLossError(msg);
  if (s.IsNotFound()) return absl::NotFoundError(msg);
  return absl::InternalError(msg);
}

}  // namespace hq
