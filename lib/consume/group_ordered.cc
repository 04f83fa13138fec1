// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// GroupImpl (lib/consume/group_impl.h): Ordered groups' consumers as the
// group's API shows them (lib/consume/ordered_consumers.h keeps them).

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/consume/group_impl.h"
#include "lib/engine/checked_read.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/queue_impl.h"
#include "lib/format/coding.h"
#include "lib/format/layout_codec.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {

void GroupImpl::OnConsumerExpired(const std::string& name, uint64_t gen) {
  MutexLock l(&mu_);
  consumers_.Expired(name, gen, options_.ownership_lease);
}

absl::StatusOr<std::vector<ConsumerInfo>> GroupImpl::Consumers() {
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  MutexLock l(&mu_);
  HQ_RETURN_IF_ERROR(Usable());
  return consumers_.Infos(db_->clock()->Now());
}

absl::Status GroupImpl::Leave(std::string_view consumer) {
  if (!record_.ordered) {
    return absl::FailedPreconditionError(absl::StrCat(
        "group '", name_, "' is not ordered: it has no consumers to leave"));
  }
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  LeaseId lease;
  {
    MutexLock l(&mu_);
    HQ_RETURN_IF_ERROR(Usable());
    if (!consumers_.contains(Av(consumer))) {
      return absl::NotFoundError(absl::StrCat("'", Av(consumer),
                                              "' is not a live consumer of "
                                              "group '",
                                              name_, "'"));
    }
    lease = consumers_.Leave(std::string(consumer));
  }
  // Outside the lock (an expiry running now waits for it, then finds the
  // consumer gone).
  (void)db_->leases()->Cancel(lease);
  return absl::OkStatus();
}

}  // namespace hq
