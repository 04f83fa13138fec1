// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// HQ_RETURN_IF_ERROR(expr): returns expr's status from the enclosing
// function if it is not OK.
// HQ_ASSIGN_OR_RETURN(lhs, expr): evaluates the StatusOr `expr`; returns its
// status if not OK, else assigns (moves) its value to `lhs`.

#ifndef HQ_LIB_UTIL_STATUS_MACROS_H_
#define HQ_LIB_UTIL_STATUS_MACROS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

#define HQ_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::absl::Status hq_status_ = (expr);      \
    if (!hq_status_.ok()) return hq_status_; \
  } while (0)

#define HQ_STATUS_CONCAT_INNER_(a, b) a##b
#define HQ_STATUS_CONCAT_(a, b) HQ_STATUS_CONCAT_INNER_(a, b)

#define HQ_ASSIGN_OR_RETURN(lhs, expr)                                      \
  HQ_ASSIGN_OR_RETURN_IMPL_(HQ_STATUS_CONCAT_(hq_statusor_, __LINE__), lhs, \
                            expr)

#define HQ_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr)     \
  auto statusor = (expr);                                  \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = std::move(statusor).value()

namespace hq {

// For objects that stop after a storage failure (consumer groups,
// subscriptions): if `s` is an error other than NotFound and `*sticky` is
// still OK, sets `*sticky` to a FailedPrecondition saying that `kind`
// '`name`' stopped and why (the message is built only then: this runs on
// every call). Returns `s`: the failing call reports the failure's own code
// (Internal, DataLoss), later calls FailedPrecondition until the Db is
// reopened, as db.h promises for writes after a failed one.
inline absl::Status RecordStickyError(absl::Status* sticky, const char* kind,
                                      const std::string& name, absl::Status s) {
  if (!s.ok() && !absl::IsNotFound(s) && sticky->ok()) {
    *sticky = absl::FailedPreconditionError(absl::StrCat(
        kind, " '", name,
        "' stopped after an error (reopen the Db): ", s.ToString()));
  }
  return s;
}

}  // namespace hq

#endif  // HQ_LIB_UTIL_STATUS_MACROS_H_
