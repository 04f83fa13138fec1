// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Push subscriptions (HQueue 0.3's subscriber, Hedwig's durable subscriber
// with consume marks), in process: the engine reads a queue's new messages
// and pushes them to the subscription's listeners.
//
//   class Printer : public hq::MessageListener {
//     absl::Status OnMessage(const hq::MessageView& m) override {
//       std::printf("%s\n", std::string(m.payload).c_str());
//       return absl::OkStatus();
//     }
//   } printer;
//   hq::Subscription* s = *queue->Subscribe({.name = "printer"}, &printer);
//
// Delivery. Within each lane (layout.h) messages reach the listeners in id
// order, at least once: a listener that returns an error gets the same
// message again after a backoff, and nothing after it in that lane is
// delivered meanwhile (other lanes go on). With several listeners, each
// message goes to each listener in turn, in the order they were added; a
// retry resumes at the listener that failed.
//
// Checkpoints. Per lane, the subscription keeps a checkpoint: every message
// below it was delivered to every listener. Checkpoints are written every
// SubscribeOptions::checkpoint_messages deliveries or checkpoint_interval,
// whichever comes first, and always when the Db is closed. A subscription
// is durable: subscribing again with its name (after a close, or after a
// crash) resumes from its checkpoints; after a crash, the messages
// delivered after the last written checkpoint are delivered again.
// Queue::Unsubscribe stops it and deletes its state.
//
// Resources. Reading stops while the subscription's buffer (between the
// reader and the listeners) is full, so memory stays bounded whatever the
// backlog. Delivery runs on the Db's small pool of delivery threads
// (Options::delivery_threads), shared by all subscriptions: a listener
// should return quickly, since a slow one holds a pool thread. New
// messages wake delivery from the write path; nothing polls.

#ifndef HQ_SUBSCRIPTION_H_
#define HQ_SUBSCRIPTION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hq/export.h"
#include "hq/message.h"

namespace hq {

// Receives a subscription's messages. Called on a delivery thread, never
// concurrently for one subscription. The view is valid during the call.
// It must not throw, and must not call Unsubscribe for its own
// subscription (that returns FailedPrecondition) nor, in general, for
// another subscription whose listener might be unsubscribing this one
// (each would wait for the other).
class HQ_EXPORT MessageListener {
 public:
  virtual ~MessageListener() = default;
  // Delayed messages (Message::delay) are delivered at once, like to a
  // scanner, with their not_before in the view.
  // OK: handled. An error: the same message comes again after a backoff
  // (SubscribeOptions::retry_base..retry_cap), and the lane waits for it.
  virtual absl::Status OnMessage(const MessageView& message) = 0;
};

struct SubscribeOptions {
  // ---- Fixed when the subscription is created (a later Subscribe with
  // the same name and different values gets InvalidArgument).

  // Required. The rules of queue names (1..128 bytes of [A-Za-z0-9._-],
  // starting with a letter or digit).
  std::string name;
  // Only these partitions (each < the queue's partitions). Empty: all.
  std::vector<uint32_t> partitions;
  // Only messages with one of these topics. Empty: all. With the `topic`
  // layout this selects lanes; with the `time` layout the reader skips
  // other topics. Limits: at most 1024 topics of at most 1024 bytes.
  std::vector<std::string> topics;

  // Where a new subscription starts (ignored when it resumes).
  enum class Start : uint8_t {
    kEarliest = 0,  // The oldest message still stored.
    kLatest = 1,    // After the last message acknowledged before Subscribe
                    // (topic layout: stored per partition, nothing per
                    // topic; time layout: a checkpoint per lane).
    kId = 2,        // At start_id (inclusive) in every partition.
    kTime = 3,      // At the first message with id time >= start_time.
  };
  Start start = Start::kEarliest;
  MessageId start_id;
  absl::Time start_time;

  // ---- Taken from each Subscribe call.

  // Write the checkpoints after this many deliveries, or this long after
  // the first delivery not yet checkpointed, whichever comes first.
  // Defaults: 1000 and 1 s. Limits: 1..1000000 and 1 ms..1 h.
  uint32_t checkpoint_messages = 1000;
  absl::Duration checkpoint_interval = absl::Seconds(1);

  // The buffer between the reader and the listeners: reading pauses when
  // it holds this many messages or this many payload bytes (at least one
  // message is always read). Defaults: 1024 and 4 MiB. Limits: 1..1000000
  // and 1..1 GiB.
  uint32_t buffer_messages = 1024;
  uint64_t buffer_bytes = uint64_t{4} << 20;

  // Backoff after a listener error, doubling per failure of the same
  // message: min(retry_cap, retry_base * 2^(n-1)). Defaults: 100 ms, 30 s.
  // Limits: 1 ms..1 h, base <= cap.
  absl::Duration retry_base = absl::Milliseconds(100);
  absl::Duration retry_cap = absl::Seconds(30);

  // Topic layout queues: at most this many lanes with messages to read are
  // kept in memory (a few hundred bytes each, so the default is about
  // 64 MiB), whatever the number of topics. The others wait in the queue's
  // lane activity index, on disk, and are read in turn (a lane that had
  // its turn and still has messages goes behind the lanes waiting on
  // disk). Besides them, memory holds the lanes with buffered messages,
  // checkpoints not yet written, or a listener's retry pending (one message
  // each). Time layout queues have partitions x priorities lanes and are
  // not capped. Default: 131072. Limits: 1..2^24.
  size_t max_active_lanes = 131072;
};

// One lane's checkpoint.
struct LaneCheckpoint {
  uint32_t partition = 0;
  int priority = 0;
  std::string topic;  // Topic layout only.
  // Every message of the lane below this id was delivered.
  MessageId next;
  // As last written (the position a crash would resume from).
  MessageId written;
};

struct SubscriptionStats {
  // Lanes with their checkpoints, by partition, then priority from the
  // highest, then topic. A time layout queue: every lane with a checkpoint
  // (written, or not yet written; at most partitions x priorities). A
  // topic layout queue: the lanes in memory (see resident_lanes), never
  // those waiting on disk: at most max_active_lanes plus the lanes with
  // buffered messages, whatever the number of topics.
  std::vector<LaneCheckpoint> lanes;
  // Lanes in memory: those with messages to read, buffered messages, a
  // retry pending, a checkpoint not yet written, or (topic layout) a hold
  // on the source position; a one-message lane the walk delivers without
  // a lane object of its own counts too (doc/massive_topics.md). Of them,
  // those in the working set (at most SubscribeOptions::max_active_lanes
  // in a topic layout queue).
  uint64_t resident_lanes = 0;
  uint64_t active_lanes = 0;
  // Messages in scope past the checkpoints, counted up to 100000 (then
  // lag_exact is false and lag is a lower bound).
  uint64_t lag = 0;
  bool lag_exact = true;
  // Since Subscribe in this process: messages delivered to every listener,
  // and listener calls that returned an error.
  uint64_t delivered = 0;
  uint64_t failed_attempts = 0;
  // Messages read and not yet delivered, and their payload bytes.
  uint64_t buffered = 0;
  uint64_t buffered_bytes = 0;
  uint32_t listeners = 0;
};

// A live subscription. Owned by the Db; valid until Unsubscribe or the
// Db's destruction.
class HQ_EXPORT Subscription {
 public:
  Subscription() = default;
  virtual ~Subscription() = default;
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;
  virtual const std::string& name() const = 0;
  // Time and memory are bounded by the lanes in memory and, in a topic
  // layout queue, at most 1024 lanes waiting on disk (whose lag it counts),
  // not by the topics; a time layout queue's idle lanes have their
  // checkpoint records read (SubscriptionStats::lanes). It reads them, and
  // counts the lag, on a snapshot of one moment after letting go of the
  // subscription's lock: deliveries go on meanwhile. The live status file
  // (Options::status_interval, hq/options.h) counts the same figures
  // without the lanes. Queue::InspectSubscription lists every lane with a
  // checkpoint record. Errors: as Checkpoint's, and DataLoss for a
  // malformed checkpoint record.
  virtual absl::StatusOr<SubscriptionStats> Stats() = 0;
  // Writes the checkpoints now (one write), also when the interval has not
  // passed. Errors: NotFound (the queue was dropped); FailedPrecondition
  // (the Db is closing); Internal / DataLoss (the write failed). After a
  // failed write (this one, or one made during delivery) the subscription
  // stops delivering, and Checkpoint and Stats return FailedPrecondition
  // ("reopen the Db") until the Db is reopened; it then resumes from its
  // last written checkpoints.
  virtual absl::Status Checkpoint() = 0;
};

}  // namespace hq

#endif  // HQ_SUBSCRIPTION_H_
