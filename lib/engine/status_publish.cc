// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Publishing the live status file (lib/format/live_status.h): the
// janitor's publication (DbImpl::PublishStatus, DbImpl::RemoveStatusFile),
// from what each queue's consumers contribute
// (QueueConsumers::CollectLiveStatus).

#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "leveldb/env.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/queue_impl.h"
#include "lib/format/live_status.h"
#include "lib/util/file_util.h"

namespace hq {

absl::Status DbImpl::PublishStatus(bool timed) {
  if (IsClosing()) return absl::OkStatus();
  LiveStatus s;
  s.pid = getpid();
  s.interval = options_.status_interval;
  std::vector<absl::Time> loaded_at;
  for (QueueImpl* q : CachedQueues()) {
    if (!q->dropped()) q->consumers()->CollectLiveStatus(&s, &loaded_at);
  }
  // After the collection: every figure counts what happened before it.
  s.written = clock_->Now();
  // Rates since the last timed publication, or for a group loaded since,
  // since its load (its totals count from there).
  absl::flat_hash_map<std::string, StatusTotals> totals;
  for (size_t i = 0; i < s.groups.size(); ++i) {
    LiveGroupStatus& g = s.groups[i];
    const std::string key = absl::StrCat(g.queue, std::string(1, '\0'), g.name);
    StatusTotals base{.at = loaded_at[i]};
    // A group dropped and loaded again counts from its new load.
    if (auto prev = status_totals_.find(key);
        prev != status_totals_.end() && prev->second.at >= loaded_at[i] &&
        g.claimed_total >= prev->second.claimed &&
        g.completed_total >= prev->second.completed) {
      base = prev->second;
    }
    const double seconds = absl::ToDoubleSeconds(s.written - base.at);
    if (seconds > 0) {
      g.claimed_per_s =
          static_cast<double>(g.claimed_total - base.claimed) / seconds;
      g.completed_per_s =
          static_cast<double>(g.completed_total - base.completed) / seconds;
    }
    totals[key] =
        timed ? StatusTotals{g.claimed_total, g.completed_total, s.written}
              : base;
  }
  status_totals_ = std::move(totals);
  leveldb::Env* env = BaseEnv();
  const std::string file = StatusFile();
  const std::string tmp = file + ".tmp";
  leveldb::Status ws =
      leveldb::WriteStringToFile(env, EncodeLiveStatus(s), tmp);
  if (ws.ok()) ws = env->RenameFile(tmp, file);
  return ws.ok() ? absl::OkStatus()
                 : file_util::FromIo(ws, "publishing the live status");
}

void DbImpl::PublishStatusSoon() {
  if (options_.status_interval <= absl::ZeroDuration()) return;
  MutexLock l(&janitor_mu_);
  status_soon_ = true;
  janitor_cv_.Signal();
}

int64_t DbImpl::TEST_TimedStatusCount() {
  MutexLock l(&janitor_mu_);
  return timed_statuses_;
}

std::string DbImpl::StatusFile() const {
  return absl::StrCat(path_, "/", kLiveStatusFile);
}

void DbImpl::RemoveStatusFile() {
  const std::string file = StatusFile();
  (void)BaseEnv()->RemoveFile(file + ".tmp");
  (void)BaseEnv()->RemoveFile(file);
}

}  // namespace hq
