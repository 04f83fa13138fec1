// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// GroupImpl (lib/consume/group_impl.h): Dead letters: writing them to the
// group's dead-letter queue, listing and requeueing them.

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/consume/group_impl.h"
#include "lib/consume/lane_turn.h"
#include "lib/engine/checked_read.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/queue_impl.h"
#include "lib/format/coding.h"
#include "lib/format/layout_codec.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {

absl::Status GroupImpl::FlushDying() {
  if (dying_.empty()) return absl::OkStatus();
  const absl::Time now = db_->clock()->Now();
  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(db_->leveldb(), CheckedReadOptions()));
  std::vector<Task> letters;
  std::vector<format::DeadValue> infos;
  std::vector<Lane*> touched;
  std::vector<std::pair<Lane*, MessageId>> done;
  leveldb::WriteBatch extra;
  letters.reserve(dying_.size());
  const MessageId cutoff = queue_->TtlCutoff(now);
  for (auto [lane, id] : dying_) {
    Rec& rec = lane->tasks.find(id)->second;
    Task t;
    // A message past the TTL is gone: it is not dead-lettered.
    absl::StatusOr<bool> found =
        id < cutoff ? false
                    : LaneTurn::ReadMessage(*queue_, *lane, id, it.get(), &t);
    if (!found.ok()) return Fail(found.status());
    if (*found) {
      format::DeadValue d;
      d.original_partition = lane->partition;
      d.original_id = id;
      d.priority = lane->priority;
      d.reason = static_cast<uint8_t>(rec.reason);
      d.attempts = rec.attempts;
      d.dead_ms = ToMs(now);
      d.topic = t.topic;
      t.partition = lane->partition;
      t.priority = lane->priority;
      letters.push_back(std::move(t));
      infos.push_back(std::move(d));
    }
    rec.dying = false;
    rec.state = format::TaskState::kDone;
    done.emplace_back(lane, id);
    Touch(lane, &touched);
  }
  dying_.clear();
  for (Lane* lane : touched) Settle(lane, &extra);
  PutDone(done, &extra);
  if (letters.empty()) {
    HQ_RETURN_IF_ERROR(Write(extra));
    Committed(&touched);
    return absl::OkStatus();
  }
  // This batch does not move the source position.
  cursors_.PutFloored(&extra, /*unless_passed=*/false);
  const absl::Status s = dead_queue_.Write(letters, infos, extra);
  if (!s.ok()) {
    // The tasks are marked done in memory but not on disk: stop here.
    if (!queue_->dropped() && broken_.ok()) {
      broken_ = absl::FailedPreconditionError(absl::StrCat(
          "consumer group '", name_,
          "' could not write dead letters (reopen the Db): ", s.ToString()));
    }
    return s;
  }
  dead_count_ += letters.size();
  Committed(&touched);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<DeadLetter>> GroupImpl::ListDeadLetters(
    size_t max, const DeadLetter* after) {
  if (max < 1 || max > 10000) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "ListDeadLetters: max is %d; it must be in 1..10000", max));
  }
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  MutexLock l(&mu_);
  HQ_RETURN_IF_ERROR(Usable());
  HQ_RETURN_IF_ERROR(FlushDying());
  HQ_RETURN_IF_ERROR(ForgetDeadIfQueueGone());
  std::vector<DeadLetter> out;
  absl::StatusOr<QueueImpl*> dead = dead_queue_.Open(/*create=*/false);
  if (absl::IsNotFound(dead.status())) return out;
  if (!dead.ok()) return dead.status();
  if (after != nullptr && after->partition >= (*dead)->options().partitions) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "ListDeadLetters: after.partition %d is out of range 0..%d",
        after->partition, (*dead)->options().partitions - 1));
  }
  leveldb::WriteBatch gone;  // Dead records whose message was removed.
  uint64_t gone_count = 0;
  const std::string prefix =
      format::GroupRecordPrefix(format::kDeadTag, queue_->id(), record_.id);
  std::string seek = prefix;
  if (after != nullptr) {
    coding::PutFixed16(&seek, static_cast<uint16_t>(after->partition));
    LayoutCodec::AppendMessageId(&seek, after->id);
    seek.push_back('\0');  // Just past `after`.
  }
  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(db_->leveldb(), CheckedReadOptions()));
  std::string message_key, value;
  for (it->Seek(seek);
       it->Valid() && out.size() < max && View(it->key()).starts_with(prefix);
       it->Next()) {
    std::string_view key = View(it->key()).substr(prefix.size());
    format::DeadValue d;
    uint16_t partition;
    if (key.size() != 2 + LayoutCodec::kMessageIdSize ||
        !coding::GetFixed16(&key, &partition) ||
        !format::DecodeDead(View(it->value()), &d)) {
      return absl::DataLossError(absl::StrCat(
          "consumer group '", name_, "': malformed dead-letter record"));
    }
    DeadLetter letter;
    letter.partition = partition;
    letter.id = LayoutCodec::DecodeMessageId(key.data());
    letter.original_partition = d.original_partition;
    letter.original_id = d.original_id;
    letter.priority = d.priority;
    letter.topic = d.topic;
    letter.attempts = d.attempts;
    letter.reason = static_cast<DeadLetterReason>(d.reason);
    letter.dead_at = absl::FromUnixMillis(static_cast<int64_t>(d.dead_ms));
    message_key.clear();
    (*dead)->codec().AppendMessageKey(
        &message_key, (*dead)->id(), partition,
        std::min(d.priority, (*dead)->options().priorities - 1), d.topic,
        letter.id);
    leveldb::Status s =
        CheckedGet(db_->leveldb(), CheckedReadOptions(), message_key, &value);
    if (s.IsNotFound()) {
      // Removed from the dead-letter queue (TTL set by hand, a tool).
      gone.Delete(it->key());
      ++gone_count;
      continue;
    }
    HQ_RETURN_IF_ERROR(FromLevelDb(s, "reading a dead letter"));
    std::string_view k, payload;
    if (!format::DecodeMessageValue(value, &k, &payload)) {
      return absl::DataLossError("malformed dead letter");
    }
    letter.key.assign(k);
    letter.payload.assign(payload);
    out.push_back(std::move(letter));
  }
  HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "reading dead letters"));
  HQ_RETURN_IF_ERROR(Write(gone));
  dead_count_ -= std::min(dead_count_, gone_count);
  return out;
}

absl::Status GroupImpl::Requeue(std::span<const DeadLetter> letters,
                                std::vector<PutResult>* results) {
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  if (letters.empty()) {
    if (results != nullptr) results->clear();
    return absl::OkStatus();
  }
  std::vector<PutResult> local(letters.size());
  {
    MutexLock l(&mu_);
    HQ_RETURN_IF_ERROR(Usable());
    absl::StatusOr<QueueImpl*> dead = dead_queue_.Open(/*create=*/false);
    if (!dead.ok()) return dead.status();
    const std::string prefix =
        format::GroupRecordPrefix(format::kDeadTag, queue_->id(), record_.id);
    std::vector<std::string> keys, payloads, message_keys, topics;
    std::vector<Message> messages(letters.size());
    std::vector<uint32_t> partitions(letters.size());
    absl::flat_hash_set<std::string> seen;
    std::string value;
    for (const DeadLetter& letter : letters) {
      auto not_found = [&] {
        return absl::NotFoundError(absl::StrFormat(
            "dead letter %d/%s is not in the dead-letter queue of group '%s'",
            letter.partition, letter.id.ToString(), name_));
      };
      if (letter.partition >= (*dead)->options().partitions) {
        return not_found();
      }
      std::string k = prefix;
      coding::PutFixed16(&k, static_cast<uint16_t>(letter.partition));
      LayoutCodec::AppendMessageId(&k, letter.id);
      if (!seen.insert(k).second) {
        return absl::InvalidArgumentError(
            absl::StrFormat("dead letter %d/%s appears twice", letter.partition,
                            letter.id.ToString()));
      }
      leveldb::Status s =
          CheckedGet(db_->leveldb(), CheckedReadOptions(), k, &value);
      if (s.IsNotFound()) return not_found();
      HQ_RETURN_IF_ERROR(FromLevelDb(s, "reading a dead letter"));
      format::DeadValue d;
      if (!format::DecodeDead(value, &d)) {
        return absl::DataLossError("malformed dead-letter record");
      }
      std::string mk;
      (*dead)->codec().AppendMessageKey(
          &mk, (*dead)->id(), letter.partition,
          std::min(d.priority, (*dead)->options().priorities - 1), d.topic,
          letter.id);
      s = CheckedGet(db_->leveldb(), CheckedReadOptions(), mk, &value);
      if (s.IsNotFound()) return not_found();
      HQ_RETURN_IF_ERROR(FromLevelDb(s, "reading a dead letter"));
      std::string_view key, payload;
      if (!format::DecodeMessageValue(value, &key, &payload)) {
        return absl::DataLossError("malformed dead letter");
      }
      keys.emplace_back(key);
      payloads.emplace_back(payload);
      topics.push_back(d.topic);
      message_keys.push_back(std::move(mk));
      message_keys.push_back(std::move(k));
      partitions[topics.size() - 1] =
          std::min(d.original_partition, queue_->options().partitions - 1);
      messages[topics.size() - 1].priority =
          std::min(d.priority, queue_->options().priorities - 1);
    }
    for (size_t i = 0; i < messages.size(); ++i) {
      messages[i].topic = topics[i];
      messages[i].key = keys[i];
      messages[i].payload = payloads[i];
    }
    HQ_RETURN_IF_ERROR(
        db_->WriteMessages(queue_, messages, partitions.data(), local.data(),
                           db_->default_sync(), [&](leveldb::WriteBatch* b) {
                             for (const std::string& k : message_keys)
                               b->Delete(k);
                           }));
    dead_count_ -= std::min<uint64_t>(dead_count_, letters.size());
  }
  if (results != nullptr) *results = std::move(local);
  return absl::OkStatus();
}

}  // namespace hq
