// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq::Db: one LevelDB directory holding any number of queues.

#ifndef HQ_DB_H_
#define HQ_DB_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hq/options.h"
#include "hq/queue.h"

namespace hq {

// An open Db. Create with Db::Open; close by destroying it, which waits for
// writes in progress. Every Scanner must be destroyed before its Db, and no
// Queue* may be used after the Db is destroyed.
//
// Thread safety: all methods may be called concurrently from any threads.
class Db {
 public:
  // Opens (or, with create_if_missing, creates) the Db in directory `path`.
  // Nothing per queue is read: Open's time and memory do not depend on how
  // many queues or messages the Db holds.
  // Errors:
  //   InvalidArgument:    an option outside its limits; empty path;
  //   NotFound:           no Db at `path` and !create_if_missing;
  //   AlreadyExists:      a Db at `path` and error_if_exists;
  //   FailedPrecondition: the directory is already open, by another process
  //                       or by another Db object in this process (the
  //                       message names the directory);
  //   DataLoss:           stored data is corrupt or of an unknown format;
  //   Internal:           any other storage error.
  static absl::StatusOr<std::unique_ptr<Db>> Open(const std::string& path,
                                                  const Options& options = {});

  virtual ~Db() = default;

  // Creates a queue. O(1): one catalog row, no files or threads of its own.
  // Names: 1..128 bytes of [A-Za-z0-9._-], starting with a letter or digit.
  // Errors: InvalidArgument (bad name or option), AlreadyExists.
  virtual absl::StatusOr<Queue*> CreateQueue(std::string_view name,
                                             const QueueOptions& options) = 0;

  // Returns the queue named `name`. Errors: InvalidArgument (bad name),
  // NotFound (no such queue).
  virtual absl::StatusOr<Queue*> OpenQueue(std::string_view name) = 0;

  // Deletes a queue and all its messages, then compacts the range they used
  // so their disk space is returned. Takes time proportional to the queue's
  // size. Queue* handles to it stay valid but fail with NotFound. If the
  // process dies part-way, the next Open finishes the job.
  // Errors: InvalidArgument (bad name), NotFound (no such queue).
  virtual absl::Status DropQueue(std::string_view name) = 0;

  // Names of all queues, in byte order. O(number of queues).
  virtual absl::StatusOr<std::vector<std::string>> ListQueues() = 0;

  // The directory this Db was opened on.
  virtual const std::string& path() const = 0;
};

}  // namespace hq

#endif  // HQ_DB_H_
