// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq/status.h. The payload is the detail's value as one decimal digit
// string ("1"), so that any reader of the Status can print it.

#include <string>

#include "absl/strings/cord.h"
#include "hq/status.h"

namespace hq {

ErrorDetail GetErrorDetail(const absl::Status& status) {
  const auto payload = status.GetPayload(kErrorDetailUrl);
  if (!payload.has_value()) return ErrorDetail::kNone;
  const std::string value(*payload);
  if (value == "1") return ErrorDetail::kDbLocked;
  if (value == "2") return ErrorDetail::kDropDurable;
  return ErrorDetail::kNone;
}

absl::Status WithErrorDetail(absl::Status status, ErrorDetail detail) {
  if (status.ok()) return status;
  if (detail == ErrorDetail::kNone) {
    status.ErasePayload(kErrorDetailUrl);
  } else {
    status.SetPayload(kErrorDetailUrl,
                      absl::Cord(std::to_string(static_cast<int>(detail))));
  }
  return status;
}

const char* ErrorDetailName(ErrorDetail detail) {
  switch (detail) {
    case ErrorDetail::kDbLocked:
      return "DB_LOCKED";
    case ErrorDetail::kDropDurable:
      return "DROP_DURABLE";
    case ErrorDetail::kNone:
      break;
  }
  return "";
}

}  // namespace hq
