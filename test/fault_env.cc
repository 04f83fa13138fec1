// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "test/fault_env.h"

#include <algorithm>
#include <bit>
#include <memory>
#include <vector>

namespace hq::test {
namespace {

std::array<std::atomic<int64_t>, kFaultKinds> total_injected{};

std::string_view Basename(std::string_view path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string DirName(std::string_view path) {
  const size_t slash = path.find_last_of('/');
  return std::string(slash == std::string_view::npos ? std::string_view()
                                                     : path.substr(0, slash));
}

int KindIndex(FileKind kind) {
  return std::countr_zero(static_cast<uint32_t>(kind));
}

}  // namespace

FileKind FileKindOf(std::string_view path) {
  const std::string_view name = Basename(path);
  if (name.ends_with(".log")) return kLogFile;
  if (name.ends_with(".ldb") || name.ends_with(".sst")) return kTableFile;
  if (name.starts_with("MANIFEST-")) return kManifestFile;
  if (name == "CURRENT" || name.ends_with(".dbtmp")) return kCurrentFile;
  return kOtherFile;
}

const char* FaultName(Fault f) {
  switch (f) {
    case Fault::kWrite:
      return "write";
    case Fault::kSync:
      return "sync";
    case Fault::kNoSpace:
      return "no-space";
    case Fault::kCrash:
      return "crash";
  }
  return "?";
}

// A writable file whose appends and syncs go through the Env's hooks.
class FaultEnv::File : public leveldb::WritableFile {
 public:
  File(FaultEnv* env, std::string name, std::shared_ptr<FileState> state,
       leveldb::WritableFile* base)
      : env_(env),
        name_(std::move(name)),
        state_(std::move(state)),
        base_(base) {}
  ~File() override { delete base_; }

  leveldb::Status Append(const leveldb::Slice& data) override {
    return env_->OnAppend(name_, state_.get(), base_, data);
  }
  leveldb::Status Close() override { return base_->Close(); }
  leveldb::Status Flush() override { return base_->Flush(); }
  leveldb::Status Sync() override {
    return env_->OnSync(name_, state_.get(), base_);
  }

 private:
  FaultEnv* const env_;
  const std::string name_;
  const std::shared_ptr<FileState> state_;
  leveldb::WritableFile* const base_;
};

FaultEnv::FaultEnv(leveldb::Env* base, Options options)
    : leveldb::EnvWrapper(base), options_(options) {}

FaultEnv::~FaultEnv() = default;

void FaultEnv::FailWrites(uint32_t kinds, int times) {
  std::lock_guard<std::mutex> l(mu_);
  fail_writes_ = {kinds, times};
}

void FaultEnv::FailSyncs(uint32_t kinds, int times) {
  std::lock_guard<std::mutex> l(mu_);
  fail_syncs_ = {kinds, times};
}

void FaultEnv::LimitSpace(int64_t bytes, uint32_t kinds) {
  std::lock_guard<std::mutex> l(mu_);
  space_left_ = bytes;
  space_kinds_ = kinds;
}

int64_t FaultEnv::space_left() const {
  std::lock_guard<std::mutex> l(mu_);
  return space_left_;
}

void FaultEnv::ClearFaults() {
  std::lock_guard<std::mutex> l(mu_);
  fail_writes_ = {};
  fail_syncs_ = {};
  space_left_ = -1;
}

void FaultEnv::PowerCut() {
  std::lock_guard<std::mutex> l(mu_);
  powered_off_ = true;
}

int64_t FaultEnv::injected(Fault f) const {
  return injected_[static_cast<int>(f)].load();
}

int64_t FaultEnv::TotalInjected(Fault f) {
  return total_injected[static_cast<int>(f)].load();
}

int64_t FaultEnv::bytes_written(uint32_t kinds) const {
  std::lock_guard<std::mutex> l(mu_);
  int64_t n = 0;
  for (int i = 0; i < static_cast<int>(bytes_by_kind_.size()); ++i) {
    if (kinds & (1u << i)) n += bytes_by_kind_[i];
  }
  return n;
}

std::vector<FaultEnv::FileInfo> FaultEnv::Files() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<FileInfo> out;
  for (const auto& [name, st] : files_) {
    out.push_back({name, st->kind, st->size, st->synced, st->entry_durable});
  }
  return out;
}

bool FaultEnv::Take(Rule* rule, FileKind kind) {
  if (rule->times == 0 || (rule->kinds & kind) == 0) return false;
  if (rule->times > 0) --rule->times;
  return true;
}

void FaultEnv::Count(Fault f) {
  ++injected_[static_cast<int>(f)];
  ++total_injected[static_cast<int>(f)];
}

leveldb::Status FaultEnv::OnAppend(const std::string& name, FileState* st,
                                   leveldb::WritableFile* f,
                                   const leveldb::Slice& data) {
  std::lock_guard<std::mutex> l(mu_);
  if (Take(&fail_writes_, st->kind)) {
    Count(Fault::kWrite);
    return leveldb::Status::IOError(name, "injected write failure");
  }
  leveldb::Slice part = data;
  bool full = false;
  if (space_left_ >= 0 && (space_kinds_ & st->kind) != 0 &&
      static_cast<int64_t>(data.size()) > space_left_) {
    part = leveldb::Slice(data.data(), static_cast<size_t>(space_left_));
    full = true;
  }
  leveldb::Status s;
  if (!part.empty()) s = f->Append(part);
  if (s.ok()) {
    st->size += static_cast<int64_t>(part.size());
    bytes_by_kind_[KindIndex(st->kind)] += static_cast<int64_t>(part.size());
    if (space_left_ >= 0 && (space_kinds_ & st->kind) != 0) {
      space_left_ -= static_cast<int64_t>(part.size());
    }
  }
  if (s.ok() && full) {
    Count(Fault::kNoSpace);
    return leveldb::Status::IOError(
        name, "No space left on device (injected ENOSPC)");
  }
  return s;
}

leveldb::Status FaultEnv::OnSync(const std::string& name, FileState* st,
                                 leveldb::WritableFile* f) {
  std::lock_guard<std::mutex> l(mu_);
  if (Take(&fail_syncs_, st->kind)) {
    Count(Fault::kSync);
    return leveldb::Status::IOError(name, "injected sync failure");
  }
  if (powered_off_) return leveldb::Status::OK();  // Nothing is durable.
  leveldb::Status s = f->Sync();
  if (!s.ok()) return s;
  st->synced = st->size;
  if (!options_.strict_directories) st->entry_durable = true;
  if (st->kind == kManifestFile) {
    // As LevelDB's POSIX Env: syncing a MANIFEST syncs its directory.
    for (auto& [other, state] : files_) {
      if (state->dir == st->dir) state->entry_durable = true;
    }
    st->entry_durable = true;
  }
  return s;
}

leveldb::Status FaultEnv::NewWritableFile(const std::string& name,
                                          leveldb::WritableFile** result) {
  // An existing entry stays (the file is truncated in place); a new one is
  // volatile until synced.
  const bool existed = target()->FileExists(name);
  leveldb::WritableFile* base = nullptr;
  leveldb::Status s = target()->NewWritableFile(name, &base);
  if (!s.ok()) return s;
  auto state = std::make_shared<FileState>();
  state->dir = DirName(name);
  state->kind = FileKindOf(name);
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = files_.find(name);
    if (it != files_.end()) {
      state->entry_durable = it->second->entry_durable && !powered_off_;
    } else {
      state->entry_durable = existed && !powered_off_;
    }
    files_[name] = state;
  }
  *result = new File(this, name, std::move(state), base);
  return s;
}

leveldb::Status FaultEnv::NewAppendableFile(const std::string& name,
                                            leveldb::WritableFile** result) {
  uint64_t size = 0;
  const bool existed = target()->GetFileSize(name, &size).ok();
  leveldb::WritableFile* base = nullptr;
  leveldb::Status s = target()->NewAppendableFile(name, &base);
  if (!s.ok()) return s;
  std::shared_ptr<FileState> state;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = files_.find(name);
    if (it != files_.end()) {
      state = it->second;
    } else {
      // Not written through this Env: what is there is durable.
      state = std::make_shared<FileState>();
      state->dir = DirName(name);
      state->kind = FileKindOf(name);
      state->size = state->synced = static_cast<int64_t>(size);
      state->entry_durable = existed && !powered_off_;
      files_[name] = state;
    }
  }
  *result = new File(this, name, std::move(state), base);
  return s;
}

leveldb::Status FaultEnv::RemoveFile(const std::string& name) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (powered_off_) return leveldb::Status::OK();
  }
  leveldb::Status s = target()->RemoveFile(name);
  if (s.ok()) {
    std::lock_guard<std::mutex> l(mu_);
    files_.erase(name);
  }
  return s;
}

leveldb::Status FaultEnv::RenameFile(const std::string& from,
                                     const std::string& to) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (powered_off_) return leveldb::Status::OK();
  }
  leveldb::Status s = target()->RenameFile(from, to);
  if (s.ok()) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = files_.find(from);
    if (it == files_.end()) {
      files_.erase(to);  // Replaced by a file that is durable as it is.
    } else {
      std::shared_ptr<FileState> state = it->second;
      files_.erase(it);
      state->kind = FileKindOf(to);
      state->dir = DirName(to);
      files_[to] = std::move(state);
    }
  }
  return s;
}

leveldb::Status FaultEnv::ReadPrefix(const std::string& name, int64_t size,
                                     std::string* data) {
  data->clear();
  if (size <= 0) return leveldb::Status::OK();
  leveldb::SequentialFile* in = nullptr;
  leveldb::Status s = target()->NewSequentialFile(name, &in);
  if (!s.ok()) return s;
  std::unique_ptr<leveldb::SequentialFile> owned(in);
  std::vector<char> scratch(static_cast<size_t>(size));
  while (static_cast<int64_t>(data->size()) < size) {
    leveldb::Slice got;
    s = in->Read(static_cast<size_t>(size) - data->size(), &got,
                 scratch.data());
    if (!s.ok()) return s;
    if (got.empty()) break;
    data->append(got.data(), got.size());
  }
  return leveldb::Status::OK();
}

namespace {

leveldb::Status Rewrite(leveldb::Env* env, const std::string& name,
                        const std::string& data) {
  leveldb::WritableFile* out = nullptr;
  leveldb::Status s = env->NewWritableFile(name, &out);
  if (!s.ok()) return s;
  std::unique_ptr<leveldb::WritableFile> owned(out);
  s = out->Append(data);
  if (s.ok()) s = out->Sync();
  if (s.ok()) s = out->Close();
  return s;
}

}  // namespace

leveldb::Status FaultEnv::Truncate(const std::string& name, int64_t size) {
  std::string data;
  leveldb::Status s = ReadPrefix(name, size, &data);
  return s.ok() ? Rewrite(target(), name, data) : s;
}

leveldb::Status FaultEnv::ZeroPage(const std::string& name, int64_t offset,
                                   int64_t page_size) {
  uint64_t size = 0;
  leveldb::Status s = target()->GetFileSize(name, &size);
  std::string data;
  if (s.ok()) s = ReadPrefix(name, static_cast<int64_t>(size), &data);
  if (!s.ok()) return s;
  const size_t begin = std::min(data.size(), static_cast<size_t>(offset));
  const size_t end =
      std::min(data.size(), static_cast<size_t>(offset + page_size));
  std::fill(data.begin() + begin, data.begin() + end, '\0');
  return Rewrite(target(), name, data);
}

leveldb::Status FaultEnv::SimulateCrash(CrashStats* stats, Loss loss) {
  constexpr int64_t kPage = 4096;
  std::lock_guard<std::mutex> l(mu_);
  CrashStats local;
  leveldb::Status result;
  for (auto it = files_.begin(); it != files_.end();) {
    FileState& st = *it->second;
    if (!st.entry_durable) {
      leveldb::Status s = target()->RemoveFile(it->first);
      if (!s.ok() && target()->FileExists(it->first) && result.ok()) {
        result = s;
      }
      ++local.files_removed;
      local.bytes_dropped += st.size;
      it = files_.erase(it);
      continue;
    }
    const int64_t first_page = (st.synced + kPage - 1) / kPage * kPage;
    const int64_t unsynced_pages = (st.size - first_page) / kPage;
    if (loss == Loss::kMiddlePageOfLogs && st.kind == kLogFile &&
        unsynced_pages >= 3) {
      leveldb::Status s =
          ZeroPage(it->first, first_page + unsynced_pages / 2 * kPage, kPage);
      if (!s.ok() && result.ok()) result = s;
      ++local.pages_lost;
      local.bytes_dropped += kPage;
      st.synced = st.size;  // What is left is what the disk holds.
    } else if (st.synced < st.size) {
      leveldb::Status s = Truncate(it->first, st.synced);
      if (!s.ok() && result.ok()) result = s;
      ++local.files_truncated;
      local.bytes_dropped += st.size - st.synced;
      st.size = st.synced;
    }
    ++it;
  }
  powered_off_ = false;
  Count(Fault::kCrash);
  if (stats != nullptr) *stats = local;
  return result;
}

}  // namespace hq::test
