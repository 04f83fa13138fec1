// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/engine/checked_read.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "lib/util/crc32c.h"

namespace hq {
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

class CheckedIterator final : public leveldb::Iterator {
 public:
  explicit CheckedIterator(leveldb::Iterator* it) : it_(it) {}

  bool Valid() const override { return valid_; }
  void SeekToFirst() override {
    it_->SeekToFirst();
    floor_.clear();
    floor_kind_ = kInclusive;
    After();
  }
  void SeekToLast() override {
    it_->SeekToLast();
    floor_kind_ = kUnknown;
    After();
  }
  void Seek(const leveldb::Slice& target) override {
    if (AtSeekOf(Abs(target))) return;
    it_->Seek(target);
    floor_.assign(target.data(), target.size());
    floor_kind_ = kInclusive;
    After();
  }
  void Next() override {
    // The key left behind bounds the keys not yet seen.
    floor_.swap(last_key_);
    floor_kind_ = kExclusive;
    it_->Next();
    // At the end or an error, last_key_ stays the last key yielded.
    if (!it_->Valid() || !it_->status().ok()) last_key_ = floor_;
    After();
  }
  void Prev() override {
    it_->Prev();
    floor_kind_ = kUnknown;
    After();
  }
  leveldb::Slice key() const override { return it_->key(); }
  leveldb::Slice value() const override { return it_->value(); }
  leveldb::Status status() const override { return status_; }

 private:
  // What the position says of the keys before it: every key from floor_
  // (or after it) up to the current key, exclusive, is absent.
  enum FloorKind { kUnknown, kInclusive, kExclusive };

  // Whether Seek(target) would stay where the iterator is: the target lies
  // in the gap below the current key (or below the end, once the iterator
  // ran past the last key). An iterator reads one snapshot, so the gap
  // stays empty. Saves a seek of every level's table for a reader that
  // seeks from one lane to the next, as claims and walks do.
  bool AtSeekOf(absl::string_view target) const {
    if (!status_.ok() || floor_kind_ == kUnknown) return false;
    const absl::string_view floor(floor_);
    if (floor_kind_ == kInclusive ? target < floor : target <= floor) {
      return false;
    }
    return !valid_ || target <= absl::string_view(last_key_);
  }

  // After every move: an error ends the iteration.
  void After() {
    if (!status_.ok()) {
      valid_ = false;
      return;
    }
    leveldb::Status s = it_->status();
    if (s.ok()) {
      valid_ = it_->Valid();
      if (valid_) last_key_.assign(it_->key().data(), it_->key().size());
      return;
    }
    std::string where =
        last_key_.empty()
            ? std::string("before any key read")
            : absl::StrCat("after key ", absl::BytesToHexString(last_key_));
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

  const std::unique_ptr<leveldb::Iterator> it_;
  bool valid_ = false;
  leveldb::Status status_;
  std::string last_key_;  // The current key (the last one yielded).
  std::string floor_;
  FloorKind floor_kind_ = kUnknown;
};

class CheckedTableFile final : public leveldb::RandomAccessFile {
 public:
  CheckedTableFile(leveldb::RandomAccessFile* f, std::string name,
                   uint64_t size)
      : f_(f), name_(std::move(name)), size_(size) {}

  leveldb::Status Read(uint64_t offset, size_t n, leveldb::Slice* result,
                       char* scratch) const override {
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
      return s;
    }
    if (n <= kBlockTrailerBytes) return s;
    const size_t body = n - kBlockTrailerBytes;
    const uint32_t stored = crc32c::Unmask(DecodeLittle32(p + body + 1));
    const uint32_t actual = crc32c::Extend(0, p, body + 1);  // With type.
    if (stored != actual) return Damaged(offset, n, "checksum mismatch");
    return s;
  }

 private:
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
  if (!s.ok() || !IsTableFile(name)) return s;
  uint64_t size = 0;
  s = target()->GetFileSize(name, &size);
  if (!s.ok()) {
    delete *result;
    *result = nullptr;
    return s;
  }
  *result = new CheckedTableFile(*result, name, size);
  return s;
}

}  // namespace hq
