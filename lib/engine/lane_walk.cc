// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/engine/lane_walk.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "lib/engine/checked_read.h"
#include "lib/format/coding.h"
#include "lib/util/leveldb_status.h"
#include "lib/util/strings.h"

namespace hq {
namespace {

// Next() calls a step tries before it seeks: a lane of one message and a
// head is passed in two.
constexpr int kNextTries = 3;

}  // namespace

LaneWalk::LaneWalk(leveldb::Iterator* it, const LayoutCodec& codec,
                   std::string range)
    : it_(it), codec_(codec), range_(std::move(range)) {}

void LaneWalk::Seek(std::string_view target) {
  // A target past a lane's prefix (that prefix and more) means "after that
  // lane": seek its successor rather than into its keys, which may start
  // with rows a TTL sweep deleted.
  const size_t n = target.starts_with(range_) ? codec_.LanePrefixOf(target) : 0;
  const std::string successor =
      n >= LayoutCodec::kHeadSize && n < target.size()
          ? coding::PrefixSuccessor(target.substr(0, n))
          : std::string(target);
  const std::string_view from = successor < range_ ? range_ : successor;
  it_->Seek(leveldb::Slice(from.data(), from.size()));
  Settle();
  if (valid_ && std::string_view(lane_) < target) Next();
}

void LaneWalk::Next() {
  // From a lane's head, the rows a TTL sweep deleted may follow: seek.
  // From a message, a few steps reach the next lane when lanes are short.
  left_one_key_ = false;
  if (it_->key().size() > lane_.size()) {
    for (int i = 0; i < kNextTries; ++i) {
      it_->Next();
      if (!it_->Valid() || !View(it_->key()).starts_with(lane_)) {
        left_one_key_ = i == 0 && it_->status().ok();
        Settle();
        return;
      }
    }
  }
  const std::string successor = coding::PrefixSuccessor(lane_);
  it_->Seek(successor);
  Settle();
}

void LaneWalk::Settle() {
  valid_ = false;
  if (!it_->Valid()) {
    status_ = FromLevelDb(it_->status(), "walking the lanes");
    return;
  }
  const std::string_view key = View(it_->key());
  if (!key.starts_with(range_)) return;
  const size_t size = codec_.LanePrefixOf(key);
  if (size < range_.size() || size < LayoutCodec::kHeadSize) {
    status_ = absl::DataLossError(
        absl::StrCat("malformed message key '", Printable(key), "'"));
    return;
  }
  lane_.assign(key.substr(0, size));
  valid_ = true;
}

}  // namespace hq
