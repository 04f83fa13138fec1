// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#ifndef HQ_LIB_ENGINE_SYNC_LOG_ENV_H_
#define HQ_LIB_ENGINE_SYNC_LOG_ENV_H_

#include <atomic>
#include <string>
#include <utility>

#include "leveldb/env.h"

namespace hq {

// LevelDB 1.23 drops a full log file without syncing it when it switches
// to a new one (it deletes the WritableFile, which closes it), and flushes
// that log's memtable to a table in the background. A sync=true write to
// the new log made before the flush is done could then survive a power cut
// while the unsynced writes before it (in the old log) were lost: a hole in
// a lane, or a message whose queue's catalog record is gone. This Env syncs
// every log file before it is closed, so what survives of the logs is a
// prefix of the writes (cost: one fsync per memtable switch). LevelDB does
// not look at that sync's status, so if it fails, every later log append
// and sync fails too: the write that meets it fails and hq refuses writes
// until reopened (db.h).
class SyncLogOnCloseEnv final : public leveldb::EnvWrapper {
 public:
  explicit SyncLogOnCloseEnv(leveldb::Env* base) : leveldb::EnvWrapper(base) {}

  leveldb::Status NewWritableFile(const std::string& name,
                                  leveldb::WritableFile** result) override {
    leveldb::Status s = target()->NewWritableFile(name, result);
    if (s.ok() && name.ends_with(".log")) {
      *result = new LogFile(*result, name, &failed_);
    }
    return s;
  }

 private:
  class LogFile final : public leveldb::WritableFile {
   public:
    LogFile(leveldb::WritableFile* f, std::string name,
            std::atomic<bool>* failed)
        : f_(f), name_(std::move(name)), failed_(failed) {}
    ~LogFile() override {
      if (!closed_) SyncForClose();
      delete f_;
    }
    leveldb::Status Append(const leveldb::Slice& data) override {
      if (failed_->load()) return Failed();
      return f_->Append(data);
    }
    leveldb::Status Close() override {
      leveldb::Status s = SyncForClose();
      closed_ = true;
      leveldb::Status c = f_->Close();
      return s.ok() ? c : s;
    }
    leveldb::Status Flush() override { return f_->Flush(); }
    leveldb::Status Sync() override {
      if (failed_->load()) return Failed();
      return f_->Sync();
    }

   private:
    leveldb::Status SyncForClose() {
      leveldb::Status s = f_->Sync();
      if (!s.ok()) failed_->store(true);
      return s;
    }
    leveldb::Status Failed() const {
      return leveldb::Status::IOError(
          name_, "an earlier log file could not be synced when closed");
    }

    leveldb::WritableFile* const f_;
    const std::string name_;
    std::atomic<bool>* const failed_;
    bool closed_ = false;
  };

  std::atomic<bool> failed_{false};
};

}  // namespace hq

#endif  // HQ_LIB_ENGINE_SYNC_LOG_ENV_H_
