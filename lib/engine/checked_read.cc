// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/engine/checked_read.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "lib/format/coding.h"
#include "lib/util/crc32c.h"

namespace hq {

constinit std::atomic<uint64_t> table_read_failures{0};

namespace {

absl::string_view Abs(const leveldb::Slice& s) {
  return absl::string_view(s.data(), s.size());
}

uint32_t DecodeLittle32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return uint32_t{u[0]} | uint32_t{u[1]} << 8 | uint32_t{u[2]} << 16 |
         uint32_t{u[3]} << 24;
}

// LevelDB's table format (doc/table_format.md): every block is followed by
// a 5-byte trailer, a compression type byte and the masked CRC-32C of the
// block and that byte; the file ends with a 48-byte footer whose last 8
// bytes are the magic number. DO NOT CHANGE: LevelDB's format.
constexpr size_t kBlockTrailerBytes = 5;
constexpr size_t kFooterBytes = 48;
constexpr uint64_t kTableMagicNumber = 0xdb4775248b80fb57ull;

class CheckedTableFile final : public leveldb::RandomAccessFile {
 public:
  CheckedTableFile(leveldb::RandomAccessFile* f, std::string name,
                   uint64_t size)
      : f_(f), name_(std::move(name)), size_(size) {}

  leveldb::Status Read(uint64_t offset, size_t n, leveldb::Slice* result,
                       char* scratch) const override {
    leveldb::Status s = Check(offset, n, result, scratch);
    if (!s.ok()) table_read_failures.fetch_add(1, std::memory_order_relaxed);
    return s;
  }

 private:
  leveldb::Status Check(uint64_t offset, size_t n, leveldb::Slice* result,
                        char* scratch) const {
    leveldb::Status s = f_->Read(offset, n, result, scratch);
    // A read past the end: an error for some Envs (the in-memory one), a
    // short read for others.
    if (!s.ok() && offset + n > size_) {
      return Damaged(offset, n,
                     absl::StrCat("truncated: the file has ", size_, " bytes"));
    }
    if (!s.ok()) return s;
    if (result->size() != n) {
      return Damaged(offset, n,
                     absl::StrCat("truncated: read ", result->size(), " of ", n,
                                  " bytes"));
    }
    const char* p = result->data();
    if (offset + n == size_ && n == kFooterBytes) {
      const uint64_t magic =
          DecodeLittle32(p + n - 8) | uint64_t{DecodeLittle32(p + n - 4)} << 32;
      if (magic != kTableMagicNumber) {
        return Damaged(offset, n, "not a table (bad magic number)");
      }
      if (!FooterHandlesFit(std::string_view(p, n - 8))) {
        return Damaged(offset, n,
                       "bad footer (a block handle outside the file)");
      }
      return s;
    }
    if (n <= kBlockTrailerBytes) return s;
    const size_t body = n - kBlockTrailerBytes;
    const uint32_t stored = crc32c::Unmask(DecodeLittle32(p + body + 1));
    const uint32_t actual = crc32c::Extend(0, p, body + 1);  // With type.
    if (stored != actual) return Damaged(offset, n, "checksum mismatch");
    return s;
  }

  // Whether the footer's two block handles (the metaindex's and the
  // index's, varint offset and size each) decode and lie, with their
  // trailers, before the footer. LevelDB would fail the table's open on a
  // handle that does not decode, with no read to name the file.
  bool FooterHandlesFit(std::string_view handles) const {
    for (int i = 0; i < 2; ++i) {
      uint64_t offset = 0;
      uint64_t size = 0;
      if (!coding::GetVarint64(&handles, &offset) ||
          !coding::GetVarint64(&handles, &size)) {
        return false;
      }
      const uint64_t end = size_ - kFooterBytes;
      if (offset > end || size > end - offset ||
          kBlockTrailerBytes > end - offset - size) {
        return false;
      }
    }
    return true;
  }

  leveldb::Status Damaged(uint64_t offset, size_t n,
                          const std::string& what) const {
    return leveldb::Status::Corruption(
        absl::StrCat("table file ", name_, ": block at offset ", offset, " (",
                     n, " bytes)"),
        what);
  }

  const std::unique_ptr<leveldb::RandomAccessFile> f_;
  const std::string name_;
  const uint64_t size_;
};

bool IsTableFile(const std::string& name) {
  return name.ends_with(".ldb") || name.ends_with(".sst");
}

}  // namespace

void CheckedIterator::Fail(const leveldb::Status& s) {
  std::string where =
      last_key_.empty()
          ? std::string("before any key read")
          : absl::StrCat("after key ",
                         absl::BytesToHexString(last_key_.view()));
  if (it_->Valid()) {
    absl::StrAppend(&where, " and before key ",
                    absl::BytesToHexString(Abs(it_->key())));
  }
  const std::string what =
      s.IsNotFound()
          ? absl::StrCat("a table file is missing: ", StatusMessage(s))
          : StatusMessage(s);
  status_ = s.IsIOError() ? leveldb::Status::IOError(what, where)
                          : leveldb::Status::Corruption(what, where);
  valid_ = false;
}

std::string StatusMessage(const leveldb::Status& s) {
  std::string text = s.ToString();
  for (const char* prefix : {"Corruption: ", "IO error: ", "NotFound: ",
                             "Invalid argument: ", "Not implemented: "}) {
    if (text.starts_with(prefix)) return text.substr(std::strlen(prefix));
  }
  return text;
}

leveldb::Iterator* NewCheckedIterator(leveldb::DB* db,
                                      const leveldb::ReadOptions& ro) {
  return WrapCheckedIterator(db->NewIterator(ro));
}

leveldb::Iterator* WrapCheckedIterator(leveldb::Iterator* it) {
  return new CheckedIterator(it);
}

std::unique_ptr<CheckedIterator> MakeCheckedIterator(
    leveldb::DB* db, const leveldb::ReadOptions& ro) {
  return std::make_unique<CheckedIterator>(db->NewIterator(ro));
}

leveldb::Status CheckedGet(leveldb::DB* db, const leveldb::ReadOptions& ro,
                           const leveldb::Slice& key, std::string* value) {
  leveldb::Status s = db->Get(ro, key, value);
  // An absent key is NotFound with no message; a table file that cannot be
  // opened is NotFound naming the file.
  if (s.IsNotFound() && s.ToString() != "NotFound: ") {
    return leveldb::Status::Corruption("a table file is missing",
                                       StatusMessage(s));
  }
  return s;
}

leveldb::Status TableCheckEnv::NewRandomAccessFile(
    const std::string& name, leveldb::RandomAccessFile** result) {
  leveldb::Status s = target()->NewRandomAccessFile(name, result);
  if (!IsTableFile(name)) return s;
  if (!s.ok()) {
    table_read_failures.fetch_add(1, std::memory_order_relaxed);
    return s;
  }
  uint64_t size = 0;
  s = target()->GetFileSize(name, &size);
  if (!s.ok()) {
    table_read_failures.fetch_add(1, std::memory_order_relaxed);
    delete *result;
    *result = nullptr;
    return s;
  }
  *result = new CheckedTableFile(*result, name, size);
  return s;
}

}  // namespace hq
