// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/consume/read_ahead.h"

#include "lib/format/layout_codec.h"
#include "lib/util/leveldb_status.h"
#include "lib/util/strings.h"

namespace hq {

std::string_view ReadAhead::front_value() const {
  const Entry& e = entries_[next_];
  return std::string_view(data_).substr(e.offset, e.size);
}

void ReadAhead::DropBelow(MessageId id) {
  while (!empty() && entries_[next_].id < id) ++next_;
  if (empty()) Clear();
}

absl::Status ReadAhead::Fill(std::string_view prefix, leveldb::Iterator* it,
                             Budget* budget) {
  Forget();  // Its buffers are reused.
  budget_ = budget;
  for (; it->Valid() && entries_.size() < kMaxMessages; it->Next()) {
    MessageId id;
    if (!LayoutCodec::LaneMessage(View(it->key()), prefix, &id)) break;
    const size_t n = it->value().size();
    if (data_.size() + n > kMaxBytes ||
        budget->used + n + sizeof(Entry) > budget->limit) {
      break;
    }
    entries_.push_back({.id = id, .offset = data_.size(), .size = n});
    data_.append(it->value().data(), n);
    budget->used += n + sizeof(Entry);
  }
  // The heap held is what the budget counts.
  entries_.shrink_to_fit();
  data_.shrink_to_fit();
  return FromLevelDb(it->status(), "reading a lane ahead");
}

void ReadAhead::Forget() {
  if (budget_ != nullptr) {
    budget_->used -= data_.size() + entries_.size() * sizeof(Entry);
  }
  entries_.clear();
  next_ = 0;
  data_.clear();
}

void ReadAhead::Clear() {
  Forget();
  // A lane with nothing kept keeps no memory either.
  entries_.shrink_to_fit();
  data_.shrink_to_fit();
}

}  // namespace hq
