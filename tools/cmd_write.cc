// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The hq subcommands that write: create (a queue) and put (messages).

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "tools/command.h"
#include "tools/flags.h"

namespace hq::tool {

// --------------------------------------------------------------- create

ExitCode Create(const Args& args) {
  HQ_TRY(Need(args, 1, "create QUEUE"));
  std::optional<Layout> layout = ParseLayout(absl::GetFlag(FLAGS_layout));
  if (!layout) {
    return Usage(absl::StrCat("--layout: '", absl::GetFlag(FLAGS_layout),
                              "' is not a layout (time or topic)"));
  }
  const int32_t partitions = absl::GetFlag(FLAGS_num_partitions);
  if (partitions < 1) return Usage("--num_partitions must be 1..65535");
  HQ_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, OpenDb(/*create=*/true));
  HQ_ASSIGN_OR_RETURN(
      Queue * q,
      db->CreateQueue(args[0],
                      {.partitions = static_cast<uint32_t>(partitions),
                       .priorities = absl::GetFlag(FLAGS_num_priorities),
                       .ttl = absl::GetFlag(FLAGS_ttl),
                       .layout = *layout}));
  if (absl::GetFlag(FLAGS_json)) {
    Json j;
    j.BeginObject().Key("created").String(q->name()).EndObject();
    PrintJson(j);
  } else {
    std::printf("created queue %s\n", q->name().c_str());
  }
  return kExitOk;
}

// ------------------------------------------------------------------ put

namespace {

// The payloads to put: a file each of `files`, or if there are none a line
// each of stdin. Reads everything first: a bad file changes nothing.
Result<std::vector<std::string>> ReadPayloads(
    const std::vector<std::string>& files) {
  std::vector<std::string> payloads;
  if (files.empty()) {
    std::string line;
    while (std::getline(std::cin, line)) payloads.push_back(line);
    return payloads;
  }
  for (const std::string& file : files) {
    std::string data;
    if (!ReadFile(file, &data)) {
      return Failure{kExitError, absl::StrCat("cannot read '", file,
                                              "': ", std::strerror(errno))};
    }
    payloads.push_back(std::move(data));
  }
  return payloads;
}

// Messages go in batches of this many, each written atomically (PutBatch).
constexpr size_t kPutBatch = 1000;

// The messages of payloads[start, end): each as `proto`, with its payload.
std::vector<Message> Batch(const std::vector<std::string>& payloads,
                           size_t start, size_t end, const Message& proto) {
  std::vector<Message> batch;
  for (size_t i = start; i < end; ++i) {
    batch.push_back(proto);
    batch.back().payload = payloads[i];
  }
  return batch;
}

// The failure of the batch at `start`: batches are atomic, so exactly the
// first `start` messages are stored; says where to resume.
Failure BatchFailure(const absl::Status& st, size_t start, size_t total,
                     const std::vector<std::string>& files) {
  Failure f = FromStatus(st);
  const bool from_files = !files.empty();
  const std::string unit = from_files ? "file" : "line";
  f.message =
      start == 0
          ? absl::StrCat(f.message, " (no message was stored)")
          : absl::StrCat(f.message, " (stored the first ", start, " of ", total,
                         " messages, ", unit, "s 1..", start,
                         "; nothing after them: resume with ", unit, " ",
                         start + 1,
                         from_files ? absl::StrCat(", '", files[start], "'")
                                    : absl::StrCat(", as tail -n +", start + 1),
                         ")");
  f.details.push_back({"stored", static_cast<int64_t>(start)});
  f.details.push_back({"total", static_cast<int64_t>(total)});
  return f;
}

// Puts every payload into `q`, in batches; the last is synced, and with
// it everything before.
Result<std::vector<PutResult>> PutAll(Queue* q,
                                      const std::vector<std::string>& payloads,
                                      const std::vector<std::string>& files) {
  // Message holds views: of these strings.
  const std::string topic = absl::GetFlag(FLAGS_topic);
  const std::string key = absl::GetFlag(FLAGS_key);
  const std::string dedup_key = absl::GetFlag(FLAGS_dedup_key);
  Message proto{.topic = topic, .key = key, .dedup_key = dedup_key};
  const int32_t partition = absl::GetFlag(FLAGS_partition);
  if (partition >= 0) proto.partition = static_cast<uint32_t>(partition);
  proto.priority = absl::GetFlag(FLAGS_priority);
  proto.delay = absl::GetFlag(FLAGS_delay);
  std::vector<PutResult> results;
  for (size_t start = 0; start < payloads.size(); start += kPutBatch) {
    const size_t end = std::min(payloads.size(), start + kPutBatch);
    std::vector<PutResult> part;
    const absl::Status st =
        q->PutBatch(Batch(payloads, start, end, proto), &part,
                    {.sync = end == payloads.size()});
    if (!st.ok()) return BatchFailure(st, start, payloads.size(), files);
    results.insert(results.end(), part.begin(), part.end());
  }
  return results;
}

void PrintPut(const Queue& q, const std::vector<PutResult>& results) {
  if (absl::GetFlag(FLAGS_json)) {
    Json j;
    j.BeginObject().Key("queue").String(q.name()).Key("results").BeginArray();
    for (const PutResult& r : results) {
      j.BeginObject().Key("partition").Uint(r.partition);
      j.Key("id").String(r.id.ToString());
      if (r.duplicate) j.Key("duplicate").Bool(true);
      j.EndObject();
    }
    j.EndArray().EndObject();
    PrintJson(j);
    return;
  }
  size_t duplicates = 0;
  for (const PutResult& r : results) duplicates += r.duplicate ? 1 : 0;
  if (duplicates > 0 && results.size() == 1) {
    std::printf(
        "not written: a live message of %s has dedup key '%s': "
        "partition %u id %s\n",
        q.name().c_str(), Cell(absl::GetFlag(FLAGS_dedup_key)).c_str(),
        results[0].partition, results[0].id.ToString().c_str());
  } else {
    std::printf("put %zu message%s to %s\n", results.size(),
                results.size() == 1 ? "" : "s", q.name().c_str());
  }
}

}  // namespace

ExitCode Put(const Args& args) {
  if (args.empty()) return Usage("missing arguments: hq put QUEUE [FILE...]");
  const std::vector<std::string> files(args.begin() + 1, args.end());
  HQ_ASSIGN_OR_RETURN(const std::vector<std::string> payloads,
                      ReadPayloads(files));
  if (!absl::GetFlag(FLAGS_dedup_key).empty() && payloads.size() != 1) {
    return Usage(absl::StrCat("--dedup_key names one message; the input has ",
                              payloads.size()));
  }
  HQ_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, OpenDb());
  HQ_ASSIGN_OR_RETURN(Queue * q, OpenQueue(db.get(), args[0]));
  HQ_ASSIGN_OR_RETURN(const std::vector<PutResult> results,
                      PutAll(q, payloads, files));
  PrintPut(*q, results);
  return kExitOk;
}

}  // namespace hq::tool
