// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/engine/log_sync_env.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace hq {

// A log file as LevelDB sees it. Close() and the destructor hand the file
// over to the Env's closed logs; Sync() first syncs the logs closed before.
class LogSyncEnv::LogFile final : public leveldb::WritableFile {
 public:
  LogFile(leveldb::WritableFile* f, std::string name, LogSyncEnv* env)
      : f_(f), name_(std::move(name)), env_(env) {}
  ~LogFile() override {
    if (f_ != nullptr) env_->HandOver(std::move(f_), name_);
  }

  leveldb::Status Append(const leveldb::Slice& data) override {
    if (f_ == nullptr) return Closed();
    if (env_->failed_.load(std::memory_order_acquire)) return env_->Failed();
    return f_->Append(data);
  }
  leveldb::Status Close() override {
    if (f_ == nullptr) return leveldb::Status::OK();
    env_->HandOver(std::move(f_), name_);
    if (env_->failed_.load(std::memory_order_acquire)) return env_->Failed();
    return leveldb::Status::OK();
  }
  leveldb::Status Flush() override {
    if (f_ == nullptr) return Closed();
    return f_->Flush();
  }
  leveldb::Status Sync() override {
    if (f_ == nullptr) return Closed();
    leveldb::Status s = env_->SyncClosedLogs();
    if (!s.ok()) return s;
    return f_->Sync();
  }

 private:
  leveldb::Status Closed() const {
    return leveldb::Status::IOError(name_, "log file used after Close");
  }

  std::unique_ptr<leveldb::WritableFile> f_;  // Null once handed over.
  const std::string name_;
  LogSyncEnv* const env_;
};

LogSyncEnv::~LogSyncEnv() {
  MutexLock l(&mu_);
  while (!closed_.empty()) {
    Closed c = std::move(closed_.front());
    closed_.pop_front();
    SyncAndClose(c);
  }
}

leveldb::Status LogSyncEnv::NewWritableFile(const std::string& name,
                                            leveldb::WritableFile** result) {
  leveldb::Status s = target()->NewWritableFile(name, result);
  if (s.ok() && name.ends_with(".log")) {
    *result = new LogFile(*result, name, this);
  }
  return s;
}

leveldb::Status LogSyncEnv::RemoveFile(const std::string& name) {
  std::unique_ptr<leveldb::WritableFile> obsolete;
  {
    MutexLock l(&mu_);
    for (auto it = closed_.begin(); it != closed_.end(); ++it) {
      if (it->name == name) {
        obsolete = std::move(it->file);
        closed_.erase(it);
        cv_.SignalAll();
        break;
      }
    }
  }
  // LevelDB removes a log only once its memtable is in a synced table
  // named by a synced MANIFEST: nothing in it needs a sync.
  if (obsolete != nullptr) obsolete->Close();  // Its status is moot.
  obsolete.reset();
  return target()->RemoveFile(name);
}

void LogSyncEnv::HandOver(std::unique_ptr<leveldb::WritableFile> file,
                          const std::string& name) {
  MutexLock l(&mu_);
  closed_.push_back({std::move(file), name});
  cv_.SignalAll();
}

void LogSyncEnv::SyncAndClose(Closed& c) {
  ++syncing_;
  mu_.Unlock();
  leveldb::Status s = c.file->Sync();
  if (s.ok()) s = c.file->Close();
  c.file.reset();
  mu_.Lock();
  --syncing_;
  if (!s.ok() && error_.empty()) {
    error_ = absl::StrCat(c.name, ": ", s.ToString());
    failed_.store(true, std::memory_order_release);
  }
  cv_.SignalAll();
}

leveldb::Status LogSyncEnv::Failed() {
  MutexLock l(&mu_);
  return FailedLocked();
}

leveldb::Status LogSyncEnv::FailedLocked() const {
  return leveldb::Status::IOError(
      "an earlier log file could not be synced after LevelDB closed it",
      error_);
}

leveldb::Status LogSyncEnv::SyncClosedLogs() {
  MutexLock l(&mu_);
  ++waiting_;
  cv_.SignalAll();
  while (true) {
    if (!closed_.empty() && !hold_ && error_.empty()) {
      Closed c = std::move(closed_.front());
      closed_.pop_front();
      SyncAndClose(c);
    } else if ((closed_.empty() || !error_.empty()) && syncing_ == 0) {
      break;  // Every log closed before this call is synced (or failed).
    } else {
      cv_.Wait(&mu_);  // Held, or another thread syncs one.
    }
  }
  --waiting_;
  cv_.SignalAll();
  return error_.empty() ? leveldb::Status::OK() : FailedLocked();
}

void LogSyncEnv::TEST_HoldSyncs(bool hold) {
  MutexLock l(&mu_);
  hold_ = hold;
  cv_.SignalAll();
}

int LogSyncEnv::TEST_PendingSyncs() {
  MutexLock l(&mu_);
  return static_cast<int>(closed_.size()) + syncing_;
}

int LogSyncEnv::TEST_WaitingSyncs() {
  MutexLock l(&mu_);
  return waiting_;
}

bool LogSyncEnv::TEST_Await(int min_pending, int min_waiting,
                            absl::Duration deadline) {
  const absl::Time end = absl::Now() + deadline;
  MutexLock l(&mu_);
  while (static_cast<int>(closed_.size()) + syncing_ < min_pending ||
         waiting_ < min_waiting) {
    const absl::Duration left = end - absl::Now();
    if (left <= absl::ZeroDuration()) return false;
    cv_.WaitWithTimeout(&mu_, left);
  }
  return true;
}

}  // namespace hq
