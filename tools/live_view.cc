// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "tools/live_view.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace hq::tool {
namespace {

namespace fs = std::filesystem;

absl::Status ErrnoStatus(const std::string& what, int err) {
  const std::string text = absl::StrCat(what, ": ", std::strerror(err));
  return err == ENOENT ? absl::NotFoundError(text)
                       : absl::UnavailableError(text);
}

// Reads all of `path`; NotFound if it is gone.
absl::StatusOr<std::string> ReadAll(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(path, errno);
  std::string out;
  char buf[1 << 16];
  while (true) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      return ErrnoStatus(path, err);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

absl::Status WriteAll(const std::string& path, std::string_view data) {
  const int fd =
      open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoStatus(path, errno);
  while (!data.empty()) {
    const ssize_t n = write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      return ErrnoStatus(path, err);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return close(fd) == 0 ? absl::OkStatus() : ErrnoStatus(path, errno);
}

// The size of `path`, or -1 if it is gone.
int64_t SizeOf(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : -1;
}

// A new empty directory for the copy: beside `db_dir`, else in $TMPDIR.
absl::StatusOr<std::string> MakeCopyDir(const std::string& db_dir) {
  std::vector<std::string> parents;
  // Never inside the Db ("--db=." or "DIR/"): the parent of its absolute
  // path.
  std::error_code ec;
  fs::path dir = fs::absolute(db_dir, ec).lexically_normal();
  if (!dir.has_filename()) dir = dir.parent_path();
  if (!ec && dir.has_parent_path()) parents.push_back(dir.parent_path());
  const char* tmp = std::getenv("TMPDIR");
  parents.push_back(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp");
  int err = 0;
  for (const std::string& p : parents) {
    std::string dir = absl::StrCat(p, "/.hq-view-", getpid(), "-XXXXXX");
    if (mkdtemp(dir.data()) != nullptr) return dir;
    err = errno;
  }
  return ErrnoStatus(
      absl::StrCat("cannot make a directory for a copy of ", db_dir), err);
}

// Kinds of files in a LevelDB directory, by name.
bool IsTable(const std::string& name) {
  return absl::EndsWith(name, ".ldb") || absl::EndsWith(name, ".sst");
}

// The number in a LevelDB file name ("000204.ldb" -> 204); -1 if none.
int64_t FileNumber(const std::string& name) {
  int64_t n = 0;
  size_t i = 0;
  for (; i < name.size() && name[i] >= '0' && name[i] <= '9'; ++i) {
    n = n * 10 + (name[i] - '0');
  }
  return i == 0 || i > 18 ? -1 : n;
}

bool GetVarint(std::string_view* in, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift <= 63 && !in->empty(); shift += 7) {
    const uint8_t b = static_cast<uint8_t>(in->front());
    in->remove_prefix(1);
    *v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

bool SkipSlice(std::string_view* in) {
  uint64_t len;
  if (!GetVarint(in, &len) || len > in->size()) return false;
  in->remove_prefix(len);
  return true;
}

// LevelDB's MANIFEST (a log of VersionEdits; leveldb db/log_format.h and
// db/version_edit.cc): the last next-file-number it records, or -1 if it
// cannot be read. Tags: 1 comparator (slice), 2 log number, 3 next file
// number, 4 last sequence, 9 previous log number (varints), 5 compact
// pointer (level, slice), 6 deleted file (level, number), 7 new file
// (level, number, size, two slices).
int64_t NextFileNumber(std::string_view manifest) {
  constexpr size_t kBlock = 32768, kHeader = 7;
  std::string record;
  int64_t next = -1;
  for (size_t pos = 0; pos + kHeader <= manifest.size();) {
    const size_t left_in_block = kBlock - pos % kBlock;
    if (left_in_block < kHeader) {
      pos += left_in_block;  // Trailer.
      continue;
    }
    const uint8_t* h = reinterpret_cast<const uint8_t*>(manifest.data() + pos);
    const size_t len = h[4] | (size_t{h[5]} << 8);
    const int type = h[6];
    if (pos + kHeader + len > manifest.size()) break;  // A torn tail.
    const std::string_view data = manifest.substr(pos + kHeader, len);
    pos += kHeader + len;
    if (type == 1 || type == 2) record.assign(data);  // Full, first.
    if (type == 3 || type == 4) record.append(data);  // Middle, last.
    if (type != 1 && type != 4) continue;
    std::string_view in = record;
    uint64_t tag, v;
    while (!in.empty() && GetVarint(&in, &tag)) {
      bool ok = true;
      switch (tag) {
        case 1:
          ok = SkipSlice(&in);
          break;
        case 2:
        case 4:
        case 9:
          ok = GetVarint(&in, &v);
          break;
        case 3:
          ok = GetVarint(&in, &v);
          if (ok) next = static_cast<int64_t>(v);
          break;
        case 5:
          ok = GetVarint(&in, &v) && SkipSlice(&in);
          break;
        case 6:
          ok = GetVarint(&in, &v) && GetVarint(&in, &v);
          break;
        case 7:
          ok = GetVarint(&in, &v) && GetVarint(&in, &v) && GetVarint(&in, &v) &&
               SkipSlice(&in) && SkipSlice(&in);
          break;
        default:
          ok = false;
      }
      if (!ok) return -1;
    }
  }
  return next;
}

// One attempt. NotFound: a file went away under it (try again).
absl::Status CopyOnce(const std::string& from, const std::string& to,
                      uint64_t* copied_bytes) {
  absl::StatusOr<std::string> current = ReadAll(from + "/CURRENT");
  if (!current.ok()) return current.status();
  if (current->empty() || current->back() != '\n') {
    return absl::NotFoundError("CURRENT is being rewritten");
  }
  const std::string manifest = current->substr(0, current->size() - 1);
  // The MANIFEST first: every file it needs is older than it.
  absl::StatusOr<std::string> manifest_data = ReadAll(from + "/" + manifest);
  if (!manifest_data.ok()) return manifest_data.status();
  // Files numbered from the MANIFEST's next file number on were not yet
  // allocated when it was written: a table still being built, which the
  // copy must not share, since the copy's LevelDB hands out the same
  // numbers and would truncate it through the link.
  const int64_t next_file = NextFileNumber(*manifest_data);
  if (next_file < 0) {
    return absl::NotFoundError(absl::StrCat("cannot read ", manifest));
  }
  std::error_code ec;
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(from, ec)) {
    names.push_back(e.path().filename().string());
  }
  if (ec) return ErrnoStatus(from, ec.value());
  for (const std::string& name : names) {
    const std::string src = from + "/" + name, dst = to + "/" + name;
    if (IsTable(name)) {
      const int64_t number = FileNumber(name);
      if (number < 0 || number >= next_file) continue;
      if (link(src.c_str(), dst.c_str()) == 0) continue;
      if (errno == ENOENT) return ErrnoStatus(src, ENOENT);
      // Another file system, or links not allowed: copy it.
    } else if (!absl::EndsWith(name, ".log")) {
      continue;  // LOCK, LOG, older MANIFESTs, temporary files.
    }
    absl::StatusOr<std::string> data = ReadAll(src);
    if (!data.ok()) return data.status();
    if (absl::Status s = WriteAll(dst, *data); !s.ok()) return s;
    *copied_bytes += data->size();
  }
  if (absl::Status s = WriteAll(to + "/" + manifest, *manifest_data); !s.ok()) {
    return s;
  }
  *copied_bytes += manifest_data->size();
  if (absl::Status s = WriteAll(to + "/CURRENT", *current); !s.ok()) return s;
  // Valid only if no flush or compaction was recorded meanwhile.
  absl::StatusOr<std::string> current_after = ReadAll(from + "/CURRENT");
  if (!current_after.ok()) return current_after.status();
  if (*current_after != *current ||
      SizeOf(from + "/" + manifest) !=
          static_cast<int64_t>(manifest_data->size())) {
    return absl::NotFoundError("the MANIFEST changed while copying");
  }
  return absl::OkStatus();
}

void RemoveTree(const std::string& dir) {
  std::error_code ec;
  fs::remove_all(dir, ec);  // Best effort: a leftover names itself.
}

}  // namespace

absl::StatusOr<pid_t> LockOwner(const std::string& db_dir) {
  const std::string path = db_dir + "/LOCK";
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return 0;
    return ErrnoStatus(path, errno);
  }
  struct flock lock = {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  const int r = fcntl(fd, F_GETLK, &lock);
  const int err = errno;
  close(fd);
  if (r != 0) return ErrnoStatus(path, err);
  return lock.l_type == F_UNLCK ? 0 : lock.l_pid;
}

absl::StatusOr<LiveCopy> LiveCopy::Take(const std::string& db_dir) {
  const absl::Time start = absl::Now();
  absl::Status last;
  for (int attempt = 0; attempt < 10; ++attempt) {
    absl::StatusOr<std::string> dir = MakeCopyDir(db_dir);
    if (!dir.ok()) return dir.status();
    LiveCopy copy;
    copy.path_ = *dir;
    last = CopyOnce(db_dir, copy.path_, &copy.copied_bytes_);
    if (last.ok()) {
      copy.taken_ = absl::Now();
      copy.took_ = copy.taken_ - start;
      return copy;
    }
    if (!absl::IsNotFound(last)) return last;
    // ~LiveCopy removes this attempt's directory.
  }
  return absl::UnavailableError(absl::StrCat(
      "no consistent copy of ", db_dir, " in 10 attempts: ", last.message()));
}

absl::StatusOr<LiveCopyStats> CopyLiveInto(const std::string& db_dir,
                                           const std::string& dest) {
  std::error_code ec;
  const fs::path rel = fs::weakly_canonical(fs::absolute(dest, ec), ec)
                           .lexically_relative(fs::weakly_canonical(
                               fs::absolute(db_dir, ec), ec));
  if (!rel.empty() && *rel.begin() != "..") {
    return absl::InvalidArgumentError(absl::StrCat(
        "the destination '", dest, "' is inside the database directory"));
  }
  bool created = false;
  if (fs::exists(dest, ec)) {
    if (!fs::is_directory(dest, ec) || !fs::is_empty(dest, ec)) {
      return absl::AlreadyExistsError(absl::StrCat(
          "the destination '", dest, "' is a file or a non-empty directory"));
    }
  } else if (!fs::create_directory(dest, ec) || ec) {
    return ErrnoStatus(absl::StrCat("creating ", dest), ec.value());
  } else {
    created = true;
  }
  // Removes what an attempt made (dest holds nothing else).
  auto clear = [&dest] {
    std::error_code e;
    for (const fs::directory_entry& f : fs::directory_iterator(dest, e)) {
      fs::remove_all(f.path(), e);
    }
  };
  const absl::Time start = absl::Now();
  LiveCopyStats stats;
  absl::Status last;
  for (int attempt = 0; attempt < 10; ++attempt) {
    stats.attempts = attempt + 1;
    stats.copied_bytes = 0;
    last = CopyOnce(db_dir, dest, &stats.copied_bytes);
    if (last.ok()) {
      stats.taken = absl::Now();
      stats.took = stats.taken - start;
      return stats;
    }
    clear();
    if (!absl::IsNotFound(last)) break;
  }
  if (created) fs::remove(dest, ec);
  if (!absl::IsNotFound(last)) return last;
  return absl::UnavailableError(absl::StrCat(
      "no consistent copy of ", db_dir, " in 10 attempts: ", last.message()));
}

LiveCopy::LiveCopy(LiveCopy&& other) noexcept
    : path_(std::move(other.path_)),
      taken_(other.taken_),
      took_(other.took_),
      copied_bytes_(other.copied_bytes_) {
  other.path_.clear();
}

LiveCopy::~LiveCopy() {
  if (!path_.empty()) RemoveTree(path_);
}

}  // namespace hq::tool
