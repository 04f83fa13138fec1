// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq_bench's peer workloads: put and claim_complete's work done by SQLite
// (put_sqlite, claim_complete_sqlite; bench/sqlite_peer.h) and by Redis
// Streams (put_redis, claim_complete_redis; bench/redis_peer.h). See the
// top of hq_bench.cc for what each measures.

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/bench_util.h"
#include "bench/redis_peer.h"
#include "bench/registry.h"
#include "bench/sqlite_peer.h"
#include "bench/workload.h"
#include "lib/util/status_macros.h"
#include "sqlite3.h"

namespace hq::bench {
namespace {

// ---- SQLite.

// Inserts the --num messages into the tasks table, `batch` rows per
// transaction (one call in `hist` per transaction).
absl::Status SqliteEnqueue(Context& c, Sqlite* db, int64_t batch,
                           Histogram* hist) {
  HQ_ASSIGN_OR_RETURN(sqlite3_stmt * insert,
                      db->Prepare("INSERT INTO tasks(priority, topic, "
                                  "payload, state, lease_until, attempts) "
                                  "VALUES(?, ?, ?, 0, 0, 0)"));
  const int64_t num = c.config.num;
  for (int64_t i = 0; i < num; i += batch) {
    const SteadyClock::time_point op_start =
        hist != nullptr ? SteadyClock::now() : SteadyClock::time_point();
    const int64_t end = std::min(num, i + batch);
    HQ_RETURN_IF_ERROR(db->Exec("BEGIN"));
    for (int64_t j = i; j < end; ++j) {
      const std::string& topic = c.source.topic(j);
      const std::string_view payload = c.source.payload(j);
      sqlite3_bind_int(insert, 1, c.source.priority(j));
      sqlite3_bind_text(insert, 2, topic.data(), static_cast<int>(topic.size()),
                        SQLITE_STATIC);
      sqlite3_bind_blob(insert, 3, payload.data(),
                        static_cast<int>(payload.size()), SQLITE_STATIC);
      HQ_RETURN_IF_ERROR(db->StepDone(insert));
    }
    HQ_RETURN_IF_ERROR(db->Exec("COMMIT"));
    if (hist != nullptr) hist->Add(MicrosSince(op_start));
  }
  return absl::OkStatus();
}

ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> PutSqlite(Context& c,
                                                         Histogram* hist) {
  Sqlite db;
  HQ_RETURN_IF_ERROR(
      OpenSqliteQueue(c.root + "/sqlite-put.db", c.config.sync, &db));
  const SteadyClock::time_point start = SteadyClock::now();
  HQ_RETURN_IF_ERROR(SqliteEnqueue(c, &db, c.config.batch, hist));
  const double seconds = MicrosSince(start) / 1e6;
  return c.Payloads(seconds, c.config.num);
}

// Claims up to `claim`'s LIMIT tasks and deletes them: one batch of
// claim_complete_sqlite. Returns how many; adds their payload bytes to
// `*bytes`.
absl::StatusOr<int64_t> SqliteClaimAndComplete(Sqlite& db, sqlite3_stmt* claim,
                                               sqlite3_stmt* complete, int n,
                                               std::vector<int64_t>& ids,
                                               uint64_t* bytes) {
  ids.clear();
  sqlite3_bind_int64(claim, 1, absl::ToUnixMillis(absl::Now()) + 30000);
  sqlite3_bind_int(claim, 2, n);
  int rc;
  while ((rc = sqlite3_step(claim)) == SQLITE_ROW) {
    ids.push_back(sqlite3_column_int64(claim, 0));
    *bytes += static_cast<uint64_t>(sqlite3_column_bytes(claim, 1));
  }
  sqlite3_reset(claim);
  if (rc != SQLITE_DONE) return db.Error("claiming");
  if (ids.empty()) return 0;
  // Unused placeholders of a short last batch stay NULL: match nothing.
  sqlite3_clear_bindings(complete);
  for (size_t i = 0; i < ids.size(); ++i) {
    sqlite3_bind_int64(complete, static_cast<int>(i) + 1, ids[i]);
  }
  HQ_RETURN_IF_ERROR(db.StepDone(complete));
  return static_cast<int64_t>(ids.size());
}

ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> ClaimCompleteSqlite(
    Context& c, Histogram* hist) {
  Sqlite db;
  HQ_RETURN_IF_ERROR(
      OpenSqliteQueue(c.root + "/sqlite.db", c.config.sync, &db));
  HQ_RETURN_IF_ERROR(SqliteEnqueue(c, &db, c.config.num, nullptr));
  const int n = static_cast<int>(c.config.claim_batch);
  HQ_ASSIGN_OR_RETURN(
      sqlite3_stmt * claim,
      db.Prepare("UPDATE tasks SET state = 1, lease_until = ?1, "
                 "attempts = attempts + 1 WHERE id IN (SELECT id FROM "
                 "tasks WHERE state = 0 ORDER BY priority DESC, id LIMIT "
                 "?2) RETURNING id, payload"));
  std::string del = "DELETE FROM tasks WHERE id IN (?";
  for (int i = 1; i < n; ++i) del += ",?";
  del += ")";
  HQ_ASSIGN_OR_RETURN(sqlite3_stmt * complete, db.Prepare(del));
  std::vector<int64_t> ids;
  int64_t count = 0;
  uint64_t bytes = 0;
  const SteadyClock::time_point start = SteadyClock::now();
  for (;;) {
    const SteadyClock::time_point op_start =
        hist != nullptr ? SteadyClock::now() : SteadyClock::time_point();
    HQ_ASSIGN_OR_RETURN(
        const int64_t done,
        SqliteClaimAndComplete(db, claim, complete, n, ids, &bytes));
    if (done == 0) break;
    if (hist != nullptr) hist->Add(MicrosSince(op_start));
    count += done;
  }
  const double seconds = MicrosSince(start) / 1e6;
  sink = sink + bytes;
  if (count != c.config.num) {
    return absl::DataLossError(absl::StrFormat(
        "sqlite claimed %d tasks of the %d written", count, c.config.num));
  }
  return c.Payloads(seconds, count);
}

// ---- Redis.

// A connection to the bench's redis-server, emptied (FLUSHALL). The
// server starts at the first Redis workload, in root/redis, and stops
// with the bench. NotFound when redis-server is not installed.
absl::StatusOr<RedisClient*> RedisConnection(Context& c) {
  if (c.redis == nullptr) {
    HQ_ASSIGN_OR_RETURN(c.redis,
                        RedisServer::Start(c.root + "/redis", c.config.sync));
    std::printf(
        "Redis:       redis-server %s on 127.0.0.1:%d, appendonly, "
        "appendfsync %s\n",
        c.redis->version().c_str(), c.redis->port(),
        c.config.sync ? "always" : "no");
    HQ_ASSIGN_OR_RETURN(c.redis_client, RedisClient::Connect(c.redis->port()));
  }
  HQ_RETURN_IF_ERROR(c.redis_client->Command({"FLUSHALL"}).status());
  return c.redis_client.get();
}

// Redis streams of the partitions: bench:<p> for partition p.
std::vector<std::string> RedisStreams(const Context& c) {
  std::vector<std::string> streams;
  for (uint32_t p = 0; p < c.config.partitions; ++p) {
    streams.push_back(absl::StrCat("bench:", p));
  }
  return streams;
}

// XADDs the --num messages to their partitions' streams, `batch` commands
// per pipeline (one call in `hist` per pipeline).
absl::Status RedisEnqueue(Context& c, RedisClient* client, int64_t batch,
                          Histogram* hist) {
  const std::vector<std::string> streams = RedisStreams(c);
  const int64_t num = c.config.num;
  std::vector<RespValue> replies;
  for (int64_t i = 0; i < num; i += batch) {
    const SteadyClock::time_point op_start =
        hist != nullptr ? SteadyClock::now() : SteadyClock::time_point();
    const int64_t end = std::min(num, i + batch);
    for (int64_t j = i; j < end; ++j) {
      client->Append({"XADD", streams[c.source.partition(j)], "*", "t",
                      c.source.topic(j), "p", c.source.payload(j)});
    }
    HQ_RETURN_IF_ERROR(client->Flush(&replies));
    for (const RespValue& r : replies) {
      if (r.type != RespValue::Type::kString) {
        return absl::InternalError(absl::StrCat("XADD: ", r.str));
      }
    }
    if (hist != nullptr) hist->Add(MicrosSince(op_start));
  }
  return absl::OkStatus();
}

// A Redis workload's answer when redis-server is not installed.
absl::StatusOr<Result> SkipRedis(const std::string& name,
                                 const absl::Status& s) {
  if (s.code() != absl::StatusCode::kNotFound) return s;
  std::printf("%s : skipped: %s\n", name.c_str(),
              std::string(s.message()).c_str());
  return Result{};
}

ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> PutRedis(Context& c,
                                                        Histogram* hist) {
  absl::StatusOr<RedisClient*> client = RedisConnection(c);
  if (!client.ok()) return SkipRedis("put_redis", client.status());
  const SteadyClock::time_point start = SteadyClock::now();
  HQ_RETURN_IF_ERROR(RedisEnqueue(c, *client, c.config.batch, hist));
  const double seconds = MicrosSince(start) / 1e6;
  return c.Payloads(seconds, c.config.num);
}

// Acknowledges (pipelined, one XACK per stream) the entries of one
// XREADGROUP reply `got`; returns how many. Adds their payload bytes to
// `*bytes`.
absl::StatusOr<int64_t> RedisAck(RedisClient* client, const RespValue& got,
                                 uint64_t* bytes) {
  // Reply: nil, or [[stream, [[id, [field, value, ...]], ...]], ...].
  int64_t claimed = 0;
  std::vector<std::string_view> ack;
  for (const RespValue& stream : got.array) {
    if (stream.array.size() != 2) {
      return absl::InternalError("XREADGROUP: unexpected reply");
    }
    ack = {"XACK", stream.array[0].str, "g"};
    for (const RespValue& entry : stream.array[1].array) {
      if (entry.array.size() != 2 || entry.array[1].array.size() != 4) {
        return absl::InternalError("XREADGROUP: unexpected entry");
      }
      ack.push_back(entry.array[0].str);
      *bytes += entry.array[1].array[3].str.size();
    }
    claimed += static_cast<int64_t>(ack.size() - 3);
    client->Append(ack);
  }
  if (claimed == 0) return 0;
  std::vector<RespValue> replies;
  HQ_RETURN_IF_ERROR(client->Flush(&replies));
  int64_t acked = 0;
  for (const RespValue& r : replies) acked += r.integer;
  if (acked != claimed) {
    return absl::InternalError(
        absl::StrFormat("XACK acknowledged %d of %d entries", acked, claimed));
  }
  return claimed;
}

ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> ClaimCompleteRedis(
    Context& c, Histogram* hist) {
  absl::StatusOr<RedisClient*> connection = RedisConnection(c);
  if (!connection.ok()) {
    return SkipRedis("claim_complete_redis", connection.status());
  }
  RedisClient* client = *connection;
  HQ_RETURN_IF_ERROR(RedisEnqueue(c, client, 1000, nullptr));
  const std::vector<std::string> streams = RedisStreams(c);
  const std::string count = absl::StrCat(c.config.claim_batch);
  std::vector<std::string_view> read = {"XREADGROUP", "GROUP", "g",      "c",
                                        "COUNT",      count,   "STREAMS"};
  for (const std::string& s : streams) {
    HQ_RETURN_IF_ERROR(
        client->Command({"XGROUP", "CREATE", s, "g", "0"}).status());
    read.push_back(s);
  }
  for (size_t i = 0; i < streams.size(); ++i) read.push_back(">");
  int64_t done = 0;
  uint64_t bytes = 0;
  const SteadyClock::time_point start = SteadyClock::now();
  for (;;) {
    const SteadyClock::time_point op_start =
        hist != nullptr ? SteadyClock::now() : SteadyClock::time_point();
    HQ_ASSIGN_OR_RETURN(const RespValue got, client->Command(read));
    if (got.type != RespValue::Type::kArray) break;
    HQ_ASSIGN_OR_RETURN(const int64_t claimed, RedisAck(client, got, &bytes));
    if (claimed == 0) break;
    if (hist != nullptr) hist->Add(MicrosSince(op_start));
    done += claimed;
  }
  const double seconds = MicrosSince(start) / 1e6;
  sink = sink + bytes;
  if (done != c.config.num) {
    return absl::DataLossError(absl::StrFormat(
        "redis claimed %d entries of the %d written", done, c.config.num));
  }
  return c.Payloads(seconds, done);
}

}  // namespace

void AddPeerWorkloads(std::vector<Workload>* out) {
  out->push_back({.name = "put_sqlite",
                  .description = "put's messages INSERTed into a SQLite "
                                 "table, --batch per transaction",
                  .run = PutSqlite});
  out->push_back({.name = "claim_complete_sqlite",
                  .description = "claim_complete's work on SQLite: UPDATE "
                                 "... RETURNING, then DELETE",
                  .run = ClaimCompleteSqlite});
  out->push_back({.name = "put_redis",
                  .description = "put's messages XADDed to Redis Streams, "
                                 "--batch per pipeline",
                  .run = PutRedis});
  out->push_back({.name = "claim_complete_redis",
                  .description = "claim_complete's work on Redis Streams: "
                                 "XREADGROUP, then XACK",
                  .run = ClaimCompleteRedis});
}

}  // namespace hq::bench
