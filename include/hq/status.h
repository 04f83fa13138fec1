// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// What an hq error means beyond its absl::StatusCode, for callers that act
// on it. hq attaches an ErrorDetail to such a Status as a payload
// (absl::Status::SetPayload under kErrorDetailUrl); read it with
// GetErrorDetail, never by matching the message, whose text may change.
//
//   absl::StatusOr<std::unique_ptr<hq::Db>> db = hq::Db::Open(dir, options);
//   if (hq::GetErrorDetail(db.status()) == hq::ErrorDetail::kDbLocked) {
//     // Another process has it open: read a live view instead.
//   }

#ifndef HQ_STATUS_H_
#define HQ_STATUS_H_

#include "absl/status/status.h"
#include "hq/export.h"

namespace hq {

// DO NOT CHANGE the values: they are stored in the payload.
enum class ErrorDetail {
  kNone = 0,
  // FailedPrecondition: another process holds the Db directory's LOCK
  // (Db::Open, Db::Repair). Its message names the directory.
  kDbLocked = 1,
  // Db::DropQueue failed after the drop itself was done and durable: the
  // queue is gone, but deleting its data (or dropping its dead-letter
  // queues) failed; the next Open finishes it. The same for
  // Queue::DeleteGroup and Queue::DeleteSubscription after their tombstone.
  kDropDurable = 2,
};

// The payload's type URL.
inline constexpr char kErrorDetailUrl[] = "type.hq.dev/hq.ErrorDetail";

// The detail attached to `status`; kNone if none (also for OK and for a
// payload this version does not know).
HQ_EXPORT ErrorDetail GetErrorDetail(const absl::Status& status);

// `status` with `detail` attached (replacing any). An OK status stays OK.
HQ_EXPORT absl::Status WithErrorDetail(absl::Status status, ErrorDetail detail);

// "DB_LOCKED", "DROP_DURABLE", or "" for kNone.
HQ_EXPORT const char* ErrorDetailName(ErrorDetail detail);

}  // namespace hq

#endif  // HQ_STATUS_H_
