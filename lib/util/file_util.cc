// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/util/file_util.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "lib/util/strings.h"

namespace hq::file_util {
namespace {

namespace fs = std::filesystem;

absl::Status ErrnoStatus(std::string_view what, int err) {
  const std::string text = absl::StrCat(Av(what), ": ", std::strerror(err));
  switch (err) {
    case ENOENT:
      return absl::NotFoundError(text);
    case EEXIST:
      return absl::AlreadyExistsError(text);
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(text);
    case ENOSPC:
    case EDQUOT:
      return absl::ResourceExhaustedError(text);
    default:
      return absl::InternalError(text);
  }
}

}  // namespace

bool IsDefaultEnv(leveldb::Env* env) { return env == leveldb::Env::Default(); }

absl::Status FromIo(const leveldb::Status& s, std::string_view what) {
  if (s.ok()) return absl::OkStatus();
  const std::string text = absl::StrCat(Av(what), ": ", s.ToString());
  if (s.IsNotFound()) return absl::NotFoundError(text);
  const absl::string_view t(text);
  if (absl::StrContains(t, "Permission denied") ||
      absl::StrContains(t, "Read-only file system")) {
    return absl::PermissionDeniedError(text);
  }
  if (absl::StrContains(t, "No space left") ||
      absl::StrContains(t, "quota exceeded")) {
    return absl::ResourceExhaustedError(text);
  }
  return absl::InternalError(text);
}

absl::Status AsInternal(const absl::Status& s) {
  if (s.ok() || s.code() == absl::StatusCode::kInternal) return s;
  return absl::InternalError(s.message());
}

absl::StatusOr<uint64_t> CopyFile(leveldb::Env* env, const std::string& from,
                                  const std::string& to, uint64_t limit) {
  leveldb::SequentialFile* in_raw = nullptr;
  leveldb::Status s = env->NewSequentialFile(from, &in_raw);
  if (!s.ok()) return FromIo(s, absl::StrCat("reading ", from));
  std::unique_ptr<leveldb::SequentialFile> in(in_raw);
  leveldb::WritableFile* out_raw = nullptr;
  s = env->NewWritableFile(to, &out_raw);
  if (!s.ok()) return FromIo(s, absl::StrCat("creating ", to));
  std::unique_ptr<leveldb::WritableFile> out(out_raw);
  constexpr size_t kChunk = size_t{1} << 20;
  std::unique_ptr<char[]> buf(new char[kChunk]);
  uint64_t copied = 0;
  while (copied < limit) {
    leveldb::Slice chunk;
    const size_t want =
        static_cast<size_t>(std::min<uint64_t>(kChunk, limit - copied));
    s = in->Read(want, &chunk, buf.get());
    if (!s.ok()) return FromIo(s, absl::StrCat("reading ", from));
    if (chunk.empty()) break;
    s = out->Append(chunk);
    if (!s.ok()) return FromIo(s, absl::StrCat("writing ", to));
    copied += chunk.size();
  }
  s = out->Sync();
  if (s.ok()) s = out->Close();
  if (!s.ok()) return FromIo(s, absl::StrCat("writing ", to));
  return copied;
}

absl::Status WriteFile(leveldb::Env* env, const std::string& path,
                       std::string_view data) {
  leveldb::WritableFile* raw = nullptr;
  leveldb::Status s = env->NewWritableFile(path, &raw);
  if (!s.ok()) return FromIo(s, absl::StrCat("creating ", path));
  std::unique_ptr<leveldb::WritableFile> f(raw);
  s = f->Append(leveldb::Slice(data.data(), data.size()));
  if (s.ok()) s = f->Sync();
  if (s.ok()) s = f->Close();
  return FromIo(s, absl::StrCat("writing ", path));
}

absl::StatusOr<uint64_t> LinkOrCopy(leveldb::Env* env, const std::string& from,
                                    const std::string& to, bool* linked) {
  *linked = false;
  if (IsDefaultEnv(env)) {
    if (link(from.c_str(), to.c_str()) == 0) {
      *linked = true;
      uint64_t size = 0;
      const leveldb::Status s = env->GetFileSize(to, &size);
      if (!s.ok()) return FromIo(s, absl::StrCat("reading the size of ", to));
      return size;
    }
    const int err = errno;
    // Another file system (EXDEV), or one without hard links: copy.
    if (err == ENOENT || err == EEXIST || err == ENOSPC || err == EDQUOT ||
        err == EROFS) {
      return ErrnoStatus(absl::StrCat("linking ", from, " as ", to), err);
    }
  }
  return CopyFile(env, from, to);
}

absl::Status SyncDir(leveldb::Env* env, const std::string& dir) {
  if (!IsDefaultEnv(env)) return absl::OkStatus();
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(absl::StrCat("opening ", dir), errno);
  const int r = fsync(fd);
  const int err = errno;
  close(fd);
  if (r != 0) return ErrnoStatus(absl::StrCat("syncing ", dir), err);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Entry>> ListFiles(leveldb::Env* env,
                                             const std::string& dir) {
  std::vector<Entry> out;
  if (IsDefaultEnv(env)) {
    std::error_code ec;
    fs::recursive_directory_iterator it(dir, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
      const fs::file_status st = it->symlink_status(ec);
      if (ec) break;
      if (fs::is_directory(st)) continue;
      const std::string name =
          it->path().lexically_relative(dir).generic_string();
      if (!fs::is_regular_file(st)) {
        return absl::FailedPreconditionError(
            absl::StrCat(dir, "/", name, " is neither a file nor a directory"));
      }
      const uintmax_t size = it->file_size(ec);
      if (ec) break;
      out.push_back({name, static_cast<uint64_t>(size)});
    }
    if (ec) return ErrnoStatus(absl::StrCat("listing ", dir), ec.value());
  } else {
    std::vector<std::string> names;
    leveldb::Status s = env->GetChildren(dir, &names);
    if (!s.ok()) return FromIo(s, absl::StrCat("listing ", dir));
    for (const std::string& name : names) {
      if (name == "." || name == "..") continue;
      uint64_t size = 0;
      s = env->GetFileSize(dir + "/" + name, &size);
      if (!s.ok()) return FromIo(s, absl::StrCat("reading the size of ", name));
      out.push_back({name, size});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const Entry& a, const Entry& b) { return a.name < b.name; });
  return out;
}

bool DirExists(leveldb::Env* env, const std::string& path) {
  if (IsDefaultEnv(env)) {
    std::error_code ec;
    return fs::is_directory(path, ec);
  }
  std::vector<std::string> names;
  if (!env->GetChildren(path, &names).ok()) return false;
  for (const std::string& n : names) {
    if (n != "." && n != "..") return true;
  }
  return false;
}

int64_t FreeBytes(leveldb::Env* env, const std::string& dir) {
  if (!IsDefaultEnv(env)) return -1;
  struct statvfs st;
  if (statvfs(dir.c_str(), &st) != 0) return -1;
  return static_cast<int64_t>(st.f_bavail) * static_cast<int64_t>(st.f_frsize);
}

}  // namespace hq::file_util
