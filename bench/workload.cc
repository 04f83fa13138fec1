// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "bench/workload.h"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <span>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "leveldb/db.h"
#include "leveldb/options.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/queue_impl.h"
#include "lib/util/status_macros.h"

namespace hq::bench {

MessageSource::MessageSource(const Config& c)
    : partitions_(c.partitions),
      priorities_(static_cast<uint32_t>(c.priorities)),
      value_size_(c.value_size) {
  for (int t = 0; t < c.topics; ++t) topics_.push_back(absl::StrCat("t", t));
  // Pieces of 100 bytes: 50 random printable bytes, then the same 50
  // again, so that Snappy (LevelDB's default) halves them, as in db_bench.
  std::mt19937 rng(301);
  std::uniform_int_distribution<int> printable(' ', '~');
  pool_.resize(kPoolBytes + value_size_);
  for (size_t i = 0; i < pool_.size(); i += 100) {
    for (size_t j = 0; j < 50 && i + j < pool_.size(); ++j) {
      pool_[i + j] = static_cast<char>(printable(rng));
      if (i + j + 50 < pool_.size()) pool_[i + j + 50] = pool_[i + j];
    }
  }
}

Context::Context(Config c) : config(std::move(c)), source(config) {
  hq_options.cache_bytes = config.cache_bytes;
  if (config.write_buffer_bytes != -1) {
    hq_options.write_buffer_bytes =
        static_cast<size_t>(config.write_buffer_bytes);
  }
  queue_options.partitions = config.partitions;
  queue_options.priorities = config.priorities;
  queue_options.layout = config.layout;
  queue_options.max_payload_bytes =
      std::max<uint32_t>(queue_options.max_payload_bytes,
                         static_cast<uint32_t>(config.value_size));
}

Context::~Context() {
  CloseHq();
  CloseRaw();
  if (remove_root) {
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
  }
}

absl::Status Context::MakeDirectories() {
  if (config.db.empty()) {
    std::string tmpl = "/tmp/hq_bench-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) {
      return absl::InternalError("cannot create a directory under /tmp");
    }
    root = tmpl;
    remove_root = true;
  } else {
    root = config.db;
    std::error_code ec;
    std::filesystem::create_directories(root, ec);
    if (ec) {
      return absl::InternalError(
          absl::StrCat("cannot create --db ", root, ": ", ec.message()));
    }
  }
  hq_path = root + "/hq";
  raw_path = root + "/leveldb";
  return absl::OkStatus();
}

absl::Status Context::OpenFreshHq() {
  CloseHq();
  HQ_RETURN_IF_ERROR(
      FromLevelDb(leveldb::DestroyDB(hq_path, leveldb::Options()),
                  absl::StrCat("destroying ", hq_path)));
  HQ_ASSIGN_OR_RETURN(hq_db, Db::Open(hq_path, hq_options));
  HQ_ASSIGN_OR_RETURN(queue, hq_db->CreateQueue(kQueueName, queue_options));
  const uint32_t id = static_cast<QueueImpl*>(queue)->id();
  if (id != kQueueId) {
    return absl::InternalError(absl::StrFormat(
        "the first queue of a fresh hq Db has id %d, not %d: update "
        "kQueueId so that fillseq_leveldb writes hq's keys",
        id, kQueueId));
  }
  return absl::OkStatus();
}

void Context::CloseHq() {
  queue = nullptr;
  hq_db.reset();
}

absl::Status Context::ReopenHq() {
  CloseHq();
  HQ_ASSIGN_OR_RETURN(hq_db, Db::Open(hq_path, hq_options));
  HQ_ASSIGN_OR_RETURN(queue, hq_db->OpenQueue(kQueueName));
  WaitForHqCompactions();
  return absl::OkStatus();
}

absl::Status Context::ReopenRaw() {
  HQ_RETURN_IF_ERROR(ReopenRawDb(hq_options, raw_path, &raw));
  WaitForCompactions(raw.db.get());
  return absl::OkStatus();
}

absl::Status Context::OpenFreshRaw() {
  return OpenFreshRawDb(hq_options, raw_path, &raw);
}

void Context::CloseRaw() {
  raw.db.reset();
  raw.filter.reset();
  raw.cache.reset();
}

void Context::WaitForHqCompactions() {
  WaitForCompactions(static_cast<DbImpl*>(hq_db.get())->leveldb());
}

absl::StatusOr<Result> Context::TimedPuts(const PutShape& shape,
                                          Histogram* hist, bool dedup,
                                          int64_t* duplicates) {
  const int64_t num = shape.num;
  const int threads = shape.threads;
  // Thread t writes messages [num*t/T, num*(t+1)/T), each with its own
  // histogram and duplicate count, merged at the end.
  std::vector<Histogram> hists(static_cast<size_t>(threads));
  std::vector<int64_t> dups(static_cast<size_t>(threads), 0);
  std::vector<absl::Status> status(static_cast<size_t>(threads));
  const SteadyClock::time_point start = SteadyClock::now();
  auto put_share = [&](int t) {
    const size_t k = static_cast<size_t>(t);
    status[k] =
        PutRange(shape, num * t / threads, num * (t + 1) / threads,
                 hist != nullptr ? &hists[k] : nullptr, dedup, &dups[k]);
  };
  if (threads == 1) {
    put_share(0);  // On this thread, as fillseq_leveldb writes.
  } else {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(put_share, t);
    for (std::thread& t : pool) t.join();
  }
  const double seconds = MicrosSince(start) / 1e6;
  for (const absl::Status& s : status) HQ_RETURN_IF_ERROR(s);
  if (duplicates != nullptr) {
    *duplicates = 0;
    for (int64_t d : dups) *duplicates += d;
  }
  if (hist != nullptr) {
    for (Histogram& h : hists) hist->Merge(h);
  }
  put_messages = num;
  WaitForHqCompactions();
  return Payloads(seconds, num);
}

absl::Status Context::PutRange(const PutShape& shape, int64_t begin,
                               int64_t end, Histogram* hist, bool dedup,
                               int64_t* duplicates) {
  const int64_t batch = shape.batch;
  if (hist != nullptr) {
    hist->Reserve(static_cast<size_t>((end - begin) / batch + 1));
  }
  PutOptions po;
  po.sync = shape.sync;
  const size_t width =
      static_cast<size_t>(std::max<int64_t>(1, std::min(batch, end - begin)));
  std::vector<Message> messages(width);
  std::vector<std::string> keys(dedup ? width : 0);
  std::vector<PutResult> results;
  for (int64_t i = begin; i < end; i += batch) {
    const int64_t n = std::min(batch, end - i);
    for (int64_t j = 0; j < n; ++j) {
      Message& m = messages[static_cast<size_t>(j)];
      m.topic = source.topic(i + j);
      m.payload = source.payload(i + j);
      m.partition = source.partition(i + j);
      m.priority = source.priority(i + j);
      if (dedup) {
        std::string& k = keys[static_cast<size_t>(j)];
        k.clear();
        absl::StrAppend(&k, "https://s", (i + j) % 1000, ".example/", i + j);
        m.dedup_key = k;
      }
    }
    const SteadyClock::time_point op_start =
        hist != nullptr ? SteadyClock::now() : SteadyClock::time_point();
    if (batch == 1) {
      absl::StatusOr<PutResult> r = queue->Put(messages[0], po);
      if (!r.ok()) return r.status();
      if (r->duplicate) ++*duplicates;
    } else {
      HQ_RETURN_IF_ERROR(queue->PutBatch(
          std::span<const Message>(messages.data(), static_cast<size_t>(n)),
          dedup ? &results : nullptr, po));
      if (dedup) {
        for (const PutResult& r : results) *duplicates += r.duplicate;
      }
    }
    if (hist != nullptr) hist->Add(MicrosSince(op_start));
  }
  return absl::OkStatus();
}

absl::Status Context::FillQueue() {
  const int64_t num = config.num;
  std::vector<Message> messages;
  for (int64_t i = 0; i < num; i += 1000) {
    const int64_t n = std::min<int64_t>(1000, num - i);
    messages.resize(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) {
      messages[static_cast<size_t>(j)] = source.message(i + j);
    }
    HQ_RETURN_IF_ERROR(queue->PutBatch(messages, nullptr));
  }
  WaitForHqCompactions();
  return absl::OkStatus();
}

absl::StatusOr<int64_t> Context::Drain(ConsumerGroup* group, Histogram* hist,
                                       uint64_t* bytes) {
  const ClaimOptions co{.max = config.claim_batch};
  int64_t n = 0;
  for (;;) {
    const SteadyClock::time_point op_start =
        hist != nullptr ? SteadyClock::now() : SteadyClock::time_point();
    HQ_ASSIGN_OR_RETURN(std::vector<Task> tasks, group->Claim(co));
    if (tasks.empty()) return n;
    if (bytes != nullptr) {
      for (const Task& t : tasks) *bytes += t.payload.size();
    }
    HQ_RETURN_IF_ERROR(group->Complete(tasks));
    if (hist != nullptr) hist->Add(MicrosSince(op_start));
    n += static_cast<int64_t>(tasks.size());
  }
}

}  // namespace hq::bench
