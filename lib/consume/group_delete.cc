// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// QueueImpl::DeleteGroup (hq/queue.h): the group's handle is stopped under
// its lock, a tombstone replaces its record in one synced write, and the
// engine deletes its records in batches (lib/engine/consumer_delete.cc).

#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "hq/status.h"
#include "lib/consume/group_impl.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/queue_impl.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {

absl::Status QueueImpl::DeleteGroup(std::string_view name,
                                    const DeleteGroupOptions& options) {
  HQ_RETURN_IF_ERROR(format::ValidateGroupName(name));
  if (dropped()) return DroppedError();
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  const std::string dead_name = absl::StrCat(name_, ".dead.", Av(name));
  const std::string key = format::GroupKey(record_.id, name);
  format::GroupRecord record;
  format::DeleteValue tombstone;
  {
    // Held until the tombstone is written: no Group(name) loads or creates
    // the group meanwhile.
    MutexLock l(&groups_mu_);
    if (deleting_groups_.contains(Av(name))) {
      return absl::NotFoundError(absl::StrCat("consumer group '", Av(name),
                                              "' of queue '", name_,
                                              "' is being deleted"));
    }
    HQ_ASSIGN_OR_RETURN(const std::string value,
                        ReadNamedRecord(key, "consumer group", name));
    HQ_RETURN_IF_ERROR(format::DecodeGroupRecord(value, &record));
    if (!options.keep_dead_letters) {
      absl::StatusOr<Queue*> dead = db_->OpenQueue(dead_name);
      if (dead.ok()) {
        tombstone.dead_queue_id = static_cast<QueueImpl*>(*dead)->id();
        tombstone.dead_queue = dead_name;
      } else if (!absl::IsNotFound(dead.status())) {
        return dead.status();
      }
    }
    auto write = [&] {
      return db_->BeginConsumerDelete(this, key, record.id, tombstone);
    };
    auto it = groups_.find(Av(name));
    if (it != groups_.end()) {
      // Under the group's lock: no call of it runs while the tombstone is
      // written, and none hands out a task after.
      HQ_RETURN_IF_ERROR(it->second->BeginDelete(options.force, write));
      std::unique_ptr<GroupImpl> g = std::move(it->second);
      groups_.erase(it);
      RemoveListener(g.get());
      g->WakeWaiters();  // Waiting claims return NotFound.
      deleted_groups_.push_back(std::move(g));
    } else {
      HQ_RETURN_IF_ERROR(write());
    }
    deleting_groups_.emplace(name);
  }
  db_->PublishStatusSoon();
  absl::Status s = db_->FinishConsumerDelete(record_.id, record.id, tombstone);
  if (!s.ok()) {
    // The name stays unusable in this process: the next Open finishes the
    // delete.
    return WithErrorDetail(
        absl::Status(s.code(), absl::StrCat("consumer group '", Av(name),
                                            "' of queue '", name_,
                                            "' is deleted, but deleting its "
                                            "records failed (the next Open "
                                            "finishes it): ",
                                            s.message())),
        ErrorDetail::kDropDurable);
  }
  MutexLock l(&groups_mu_);
  deleting_groups_.erase(Av(name));
  return absl::OkStatus();
}

}  // namespace hq
