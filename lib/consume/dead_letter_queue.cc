// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/consume/dead_letter_queue.h"

#include <algorithm>
#include <cstdint>
#include <memory>

#include "absl/strings/str_cat.h"
#include "lib/engine/checked_read.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/queue_impl.h"
#include "lib/format/coding.h"
#include "lib/format/layout_codec.h"
#include "lib/util/leveldb_status.h"
#include "lib/util/strings.h"

namespace hq {

DeadLetterQueue::DeadLetterQueue(DbImpl* db, QueueImpl* queue,
                                 uint32_t group_id, const std::string& group)
    : db_(db),
      queue_(queue),
      group_id_(group_id),
      name_(absl::StrCat(queue->name(), ".dead.", group)) {}

absl::StatusOr<QueueImpl*> DeadLetterQueue::Open(bool create) const {
  const std::string& name = name_;
  absl::StatusOr<Queue*> q = db_->OpenQueue(name);
  if (absl::IsNotFound(q.status()) && create) {
    const QueueOptions& qo = queue_->options();
    q = db_->CreateQueue(name, {.partitions = qo.partitions,
                                .priorities = qo.priorities,
                                .layout = qo.layout,
                                .max_payload_bytes = qo.max_payload_bytes});
    if (absl::IsAlreadyExists(q.status())) q = db_->OpenQueue(name);
  }
  if (!q.ok()) return q.status();
  return static_cast<QueueImpl*>(*q);
}

absl::Status DeadLetterQueue::Write(const std::vector<Task>& letters,
                                    const std::vector<format::DeadValue>& infos,
                                    const leveldb::WriteBatch& extra) const {
  const std::string dead_prefix =
      format::GroupRecordPrefix(format::kDeadTag, queue_->id(), group_id_);
  std::vector<Message> messages(letters.size());
  std::vector<uint32_t> partitions(letters.size());
  std::vector<PutResult> results(letters.size());
  absl::Status s;
  // Twice: the dead-letter queue may be dropped between the lookup and the
  // write; the second attempt creates it again.
  for (int attempt = 0; attempt < 2; ++attempt) {
    absl::StatusOr<QueueImpl*> dead = Open(/*create=*/true);
    if (!dead.ok()) {
      s = dead.status();
      continue;
    }
    const QueueOptions& dqo = (*dead)->options();
    for (size_t i = 0; i < letters.size(); ++i) {
      const Task& t = letters[i];
      messages[i] =
          Message{.topic = t.topic,
                  .payload = t.payload,
                  .key = t.key,
                  .priority = std::min(t.priority, dqo.priorities - 1)};
      partitions[i] = t.partition % dqo.partitions;
    }
    s = db_->WriteMessages(
        *dead, messages, partitions.data(), results.data(), db_->default_sync(),
        [&](leveldb::WriteBatch* b) {
          std::string k;
          for (size_t i = 0; i < results.size(); ++i) {
            k = dead_prefix;
            coding::PutFixed16(&k, static_cast<uint16_t>(results[i].partition));
            LayoutCodec::AppendMessageId(&k, results[i].id);
            b->Put(k, format::EncodeDead(infos[i]));
          }
          b->Append(extra);
        },
        /*also_live=*/queue_);
    if (s.ok() || queue_->dropped()) break;
  }
  return s;
}

absl::Status DeadLetterQueue::ForEachRecord(
    absl::FunctionRef<void(std::string_view key)> fn) const {
  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(db_->leveldb(), CheckedReadOptions()));
  const std::string prefix =
      format::GroupRecordPrefix(format::kDeadTag, queue_->id(), group_id_);
  for (it->Seek(prefix); it->Valid() && View(it->key()).starts_with(prefix);
       it->Next()) {
    fn(View(it->key()));
  }
  return FromLevelDb(it->status(), "reading dead letters");
}

}  // namespace hq
