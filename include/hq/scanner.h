// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Scanners read a queue: one partition, a set, or all of them, filtered by
// topic and id range (HQueue's PartitionScanner, CombinedPartitionScanner and
// QueueScanner).

#ifndef HQ_SCANNER_H_
#define HQ_SCANNER_H_

#include "absl/status/status.h"
#include "hq/export.h"
#include "hq/message.h"

namespace hq {

// A read-only iterator over a consistent snapshot of a queue: messages
// written after NewScanner returned are not seen.
//
//   auto scanner = queue->NewScanner(options);  // StatusOr
//   while ((*scanner)->Next()) Use((*scanner)->message());
//   if (!(*scanner)->status().ok()) ...
//
// Lifetime: a Scanner holds a LevelDB snapshot and iterator until it is
// destroyed or its lease expires; it must be destroyed before the Db that
// made it. Lease (HBase's scanner lease): every call renews it; a scanner
// not called for Options::scanner_lease (checked lazily: expiry comes
// between one and two leases after the last call) releases its snapshot
// and iterator at once, and its next call fails with FailedPrecondition
// ("scanner lease expired"). Open another scanner from the last id read.
// Thread safety: a Scanner is not thread-safe; use one per thread.
class HQ_EXPORT Scanner {
 public:
  Scanner() = default;
  virtual ~Scanner() = default;
  Scanner(const Scanner&) = delete;
  Scanner& operator=(const Scanner&) = delete;

  // Moves to the next message. Returns false at the end of the range or on
  // an error; status() tells which. Once it has returned false it keeps
  // returning false.
  virtual bool Next() = 0;

  // The current message. REQUIRES: the last Next() returned true. Its views
  // are valid until the next call to Next(), the scanner's destruction or
  // its lease's expiry (which happens on the lease thread: copy what you
  // keep longer than Options::scanner_lease without calling the scanner).
  virtual const MessageView& message() const = 0;

  // OK, or the error that ended the scan: FailedPrecondition when the
  // scanner's lease expired, DataLoss when a stored record cannot be
  // decoded, or the storage's error (Internal).
  virtual absl::Status status() const = 0;
};

}  // namespace hq

#endif  // HQ_SCANNER_H_
