// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/engine/info_log.h"

#include <cstdio>
#include <utility>

namespace hq {
namespace {

// Up to this many lines wait for Commit(); an Open logs a few per log file
// it replays and per table it writes.
constexpr size_t kMaxPending = 10000;

std::string Format(const char* format, std::va_list ap) {
  std::va_list copy;
  va_copy(copy, ap);
  char small[512];
  const int n = std::vsnprintf(small, sizeof(small), format, copy);
  va_end(copy);
  if (n < 0) return format;
  if (static_cast<size_t>(n) < sizeof(small)) return std::string(small, n);
  std::string out(static_cast<size_t>(n) + 1, '\0');
  std::vsnprintf(out.data(), out.size(), format, ap);
  out.resize(static_cast<size_t>(n));
  return out;
}

// leveldb::Log, which Debian's libleveldb does not export.
void LogTo(leveldb::Logger* logger, const char* format, ...) {
  std::va_list ap;
  va_start(ap, format);
  logger->Logv(format, ap);
  va_end(ap);
}

void Write(leveldb::Logger* logger, const std::string& line) {
  LogTo(logger, "%s", line.c_str());
}

}  // namespace

InfoLog::InfoLog(leveldb::Env* env, std::string dir,
                 std::function<void(std::string_view)> on_background_error)
    : env_(env),
      dir_(std::move(dir)),
      on_background_error_(std::move(on_background_error)) {}

InfoLog::~InfoLog() = default;

std::string InfoLog::BackgroundError(std::string_view line) {
  // db_impl.cc, BackgroundCompaction: "Compaction error: %s".
  constexpr std::string_view kCompaction = "Compaction error: ";
  if (line.starts_with(kCompaction)) {
    return std::string(line.substr(kCompaction.size()));
  }
  // db_impl.cc, WriteLevel0Table: "Level-0 table #%llu: %lld bytes %s",
  // the status last ("OK" if it was written).
  constexpr std::string_view kLevel0 = "Level-0 table #";
  if (line.starts_with(kLevel0)) {
    line.remove_prefix(kLevel0.size());
    const size_t bytes = line.find(" bytes ");
    if (bytes == std::string_view::npos) return "";
    std::string_view status = line.substr(bytes + 7);
    if (status == "OK") return "";
    return std::string(status);
  }
  return "";
}

void InfoLog::Logv(const char* format, std::va_list ap) {
  std::string line = Format(format, ap);
  while (!line.empty() && line.back() == '\n') line.pop_back();
  if (on_background_error_) {
    const std::string error = BackgroundError(line);
    if (!error.empty()) on_background_error_(error);
  }
  MutexLock l(&mu_);
  if (committed_) {
    if (file_ != nullptr) Write(file_.get(), line);
  } else if (pending_.size() < kMaxPending) {
    pending_.push_back(std::move(line));
  }
}

void InfoLog::Commit() {
  MutexLock l(&mu_);
  if (committed_) return;
  committed_ = true;
  const std::string log = dir_ + "/LOG";
  env_->RenameFile(log, log + ".old");  // As LevelDB's Open: it may be absent.
  leveldb::Logger* file = nullptr;
  if (env_->NewLogger(log, &file).ok()) file_.reset(file);
  if (file_ != nullptr) {
    for (const std::string& line : pending_) Write(file_.get(), line);
  }
  pending_.clear();
  pending_.shrink_to_fit();
}

}  // namespace hq
