// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The hand-off of URLs between the agents of a fleet, over NATS JetStream
// (nats.c, nats/nats.h). A thin wrapper: connections, reconnection and the
// replication of the stream are nats.c's and the servers'; this file owns
// the layout below (doc/fleet.md, "JetStream layout") and records.h's
// records.
//
//   stream HQF_<fleet>: file storage, `replicas` replicas, the duplicate
//     window `duplicate_window`, limits retention (nothing expires);
//   hqf.<fleet>.u.<p>: one url_record per message, message id
//     UrlMessageId(url): a URL published twice within the window is stored
//     once;
//   hqf.<fleet>.d.<p>: completion_batch messages (UrlHash of each URL);
//   u<p>e<epoch>: the durable pull consumer of partition p's owner at
//     `epoch`, filtered on hqf.<fleet>.u.<p>, explicit acks, from the first
//     message.
//
// Delivery is at least once: a record fetched and not acked (the owner died,
// an ack was lost) is delivered again after `ack_wait` to the consumer of
// the same epoch, and a consumer of a new epoch starts over from the
// partition's first record. The owner drops what it already stored by the
// URL's dedup key.
//
//   auto h = Handoff::Connect({.urls = {"nats://127.0.0.1:4222"},
//                              .fleet = "crawl", .partitions = 1024});
//   PublishResult r;
//   (*h)->Publish(outgoing, &r);             // every URL acknowledged
//   auto feed = (*h)->OpenPartition(7, epoch);
//   auto batch = (*feed)->Fetch(256, absl::Seconds(1));
//   ... store batch->records in hq (synced) ...
//   (*feed)->Ack(sequences_of(batch->records));

#ifndef HQ_LIB_FLEET_HANDOFF_H_
#define HQ_LIB_FLEET_HANDOFF_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hq/fleet.h"
#include "lib/util/sync.h"
#include "nats/nats.h"

namespace hq::fleet {

struct HandoffOptions {
  // NATS server URLs ("nats://127.0.0.1:4222"), at least one
  // (SplitNatsUrls of AgentOptions::nats, lib/fleet/clients.h). The client
  // connects to one of them and reconnects to any (also to servers the
  // cluster tells it about) for as long as the Handoff lives.
  std::vector<std::string> urls;

  // The fleet's name, 1..64 of [A-Za-z0-9_-] (AgentOptions::fleet).
  std::string fleet = "default";

  // Partitions of the fleet, 1..65536: every partition number given to a
  // call must be below it.
  uint32_t partitions = 1024;

  // The stream's replicas (1..5; 1 for a single server) and duplicate
  // window, used when Connect creates the stream. An existing stream must
  // have the same replicas (and subjects); its window is left as it is.
  int replicas = 3;
  absl::Duration duplicate_window = absl::Minutes(2);

  // How long Connect tries to reach a server and set up the stream before
  // it returns Unavailable.
  absl::Duration connect_timeout = absl::Seconds(20);

  // The longest wait for one JetStream API reply (stream and consumer
  // management, consumer info, the sync ack that ends Ack).
  absl::Duration request_timeout = absl::Seconds(10);

  // ReadCompletions replaces a reader (an ordered consumer) that delivers
  // nothing for read_stall before the end of the subject, from the first
  // message not yet read; it gives up after request_timeout without one.
  absl::Duration read_stall = absl::Seconds(1);

  // How long Publish and PublishCompletions keep (re)sending what JetStream
  // has not acknowledged before they give up.
  absl::Duration publish_timeout = absl::Seconds(30);

  // Partition consumers: a record fetched and not acked within ack_wait is
  // delivered again; at most max_ack_pending records are out unacked (Fetch
  // returns nothing more until some are acked). Used when OpenPartition
  // creates a consumer; an existing consumer keeps its own.
  absl::Duration ack_wait = absl::Seconds(30);
  int max_ack_pending = 20000;

  // false: Connect neither creates the stream nor checks its subjects and
  // replicas, and returns NotFound when it does not exist. For a reader of
  // the stream's state (ReadState), which must not change the fleet.
  bool create_stream = true;
};

// A URL to hand over to its partition's owner. The views must stay valid
// for the call.
struct Outgoing {
  uint32_t partition = 0;
  std::string_view url;
  int priority = 0;  // 0..7.
  std::string_view payload;
};

struct PublishResult {
  // Messages JetStream acknowledged as stored (or as already stored).
  uint64_t acknowledged = 0;
  // Of those, how many it reported as duplicates: a URL already published
  // within the duplicate window (in this batch, earlier, or by another
  // agent), or a resend of a message whose first ack was lost.
  uint64_t duplicates = 0;
};

// The state of the fleet's stream (Handoff::ReadState).
struct StreamState {
  uint64_t messages = 0;  // Every message of the stream, and their bytes.
  uint64_t bytes = 0;
  // lag[p]: the records of hqf.<fleet>.u.<p> not yet acked by the consumer
  // u<p>e<epochs[p]> (PartitionFeed::Lag); all of the subject's records
  // when that consumer does not exist, as a new one starts at the first.
  std::vector<uint64_t> lag;
};

// A record fetched from a partition's stream.
struct FeedRecord {
  uint64_t sequence = 0;    // Its stream sequence: the handle Ack takes.
  uint64_t deliveries = 0;  // 1 on first delivery, more when redelivered.
  Url url;
};

// A message on a partition's subject that is not a valid url_record. It is
// neither acked nor dropped: it comes back after ack_wait until Term'ed.
struct MalformedRecord {
  uint64_t sequence = 0;
  absl::Status status;  // DataLoss, naming the sequence.
};

struct FetchResult {
  std::vector<FeedRecord> records;  // In the order of the stream.
  std::vector<MalformedRecord> malformed;
};

class Handoff;

// The consumer of one partition at one epoch. Fetch, Ack, Term and Lag may
// be called from several threads at once (Fetches run one at a time). The
// feed may outlive its Handoff.
class PartitionFeed {
 public:
  ~PartitionFeed();  // Leaves the consumer in place: it is durable.
  PartitionFeed(const PartitionFeed&) = delete;
  PartitionFeed& operator=(const PartitionFeed&) = delete;

  uint32_t partition() const { return partition_; }
  uint64_t epoch() const { return epoch_; }
  const std::string& consumer() const { return consumer_; }

  // Up to `max` (1..10000) records, waiting up to `wait` for the first; an
  // empty result when there are none. Each record is held by the feed until
  // it is acked (or redelivered, which replaces the held delivery). A record
  // that does not decode, or that is not on this partition's URL subject,
  // comes back in `malformed` (DataLoss, naming its sequence and subject),
  // never in `records`. Unavailable when NATS does not answer (the connection
  // is down, the consumer's leader is moving): call again.
  absl::StatusOr<FetchResult> Fetch(int max, absl::Duration wait);

  // Acknowledges the records of these sequences (as fetched by this feed):
  // JetStream will not deliver them again. Call it only once they are
  // stored for good. Returns when the server confirmed the last ack (those
  // before it travel ahead of it on the same connection). NotFound, after
  // acking the others, when a sequence is not held by this feed (never
  // fetched, or acked already); Unavailable when NATS does not confirm
  // (the records not confirmed stay held: Ack them again, or they come back
  // after ack_wait).
  absl::Status Ack(std::span<const uint64_t> sequences);

  // Tells JetStream never to deliver these held records again, without
  // acking them: for malformed records once they are reported. Errors as
  // Ack's.
  absl::Status Term(std::span<const uint64_t> sequences);

  // Records of the partition this consumer has not had acked: not yet
  // delivered plus delivered and waiting for an ack (consumer info's
  // num_pending + num_ack_pending). Unavailable as Fetch.
  absl::StatusOr<uint64_t> Lag();

 private:
  friend class Handoff;
  struct Shared;
  PartitionFeed(std::shared_ptr<Shared> shared, uint32_t partition,
                uint64_t epoch, std::string consumer, std::string subject,
                natsSubscription* sub);
  absl::Status Settle(std::span<const uint64_t> sequences, bool term);

  // Constant after construction.
  const std::shared_ptr<Shared> shared_;
  const uint32_t partition_;
  const uint64_t epoch_;
  const std::string consumer_;
  const std::string subject_;    // The partition's URL subject.
  natsSubscription* const sub_;  // A pull subscription.

  Mutex fetch_mu_;  // One Fetch at a time on the subscription.
  Mutex mu_;
  // Fetched and not yet acked: stream sequence -> its newest delivery.
  absl::flat_hash_map<uint64_t, natsMsg*> held_ ABSL_GUARDED_BY(mu_);
};

// A connection to the fleet's JetStream. All its methods may be called from
// several threads at once.
class Handoff {
 public:
  // Connects to NATS and creates the stream HQF_<fleet>, or checks the one
  // that exists. InvalidArgument (options), FailedPrecondition (the stream
  // exists with other subjects or replicas, or another stream has these
  // subjects), Unavailable (no server reached, or JetStream not ready,
  // within connect_timeout).
  static absl::StatusOr<std::unique_ptr<Handoff>> Connect(
      const HandoffOptions& options);

  ~Handoff();  // Closes the connection once no PartitionFeed uses it.
  Handoff(const Handoff&) = delete;
  Handoff& operator=(const Handoff&) = delete;

  const std::string& stream() const;
  std::string UrlSubject(uint32_t partition) const;
  std::string CompletionSubject(uint32_t partition) const;

  // Publishes each URL to its partition's subject and returns OK once
  // JetStream acknowledged every one (all are sent at once, then the acks
  // awaited; what is not acknowledged is sent again until publish_timeout).
  // `*result` (optional) counts what was acknowledged, also on error.
  // InvalidArgument (nothing sent) for a partition out of range or a URL
  // EncodeUrlRecord refuses. Unavailable when the connection is down or
  // JetStream refused a message at the deadline, DeadlineExceeded when acks
  // were still missing; either way some may have been stored: publish again
  // (duplicates are dropped within the duplicate window).
  absl::Status Publish(std::span<const Outgoing> urls,
                       PublishResult* result = nullptr);

  // Publishes the UrlHash of each URL to hqf.<fleet>.d.<partition>, in
  // batches of at most kMaxCompletionsPerBatch. Errors as Publish's. A batch
  // may be stored twice (no message id): completions are a set.
  absl::Status PublishCompletions(uint32_t partition,
                                  std::span<const std::string> urls);
  // The same for several partitions at once, in one round of publishes.
  struct Completed {
    uint32_t partition = 0;
    std::span<const std::string> urls;
  };
  absl::Status PublishCompletions(std::span<const Completed> batches);

  // Opens partition p's consumer at `epoch`: binds to u<p>e<epoch>, creating
  // it if needed, and deletes the consumers u<p>e<k> of epochs k < epoch.
  // FailedPrecondition when a consumer of a higher epoch exists (the
  // partition has moved on), InvalidArgument for p out of range, Unavailable
  // as Connect's.
  absl::StatusOr<std::unique_ptr<PartitionFeed>> OpenPartition(
      uint32_t partition, uint64_t epoch);

  // The UrlHash of every URL published as completed in partition p, read
  // from its completion subject's first message to its last one at the
  // time of the call. DataLoss (naming the stream sequence) for a message
  // that is not a completion batch; Unavailable or DeadlineExceeded (after
  // request_timeout without a message, the reader replaced after each
  // read_stall of silence) when NATS does not answer, and
  // Unavailable when the read delivered fewer messages than the stream's
  // leader counts on the subject (its consumer sat on a replica that is
  // behind): never a set that lacks a completion acknowledged before the
  // call.
  absl::StatusOr<absl::flat_hash_set<uint64_t>> ReadCompletions(
      uint32_t partition);

  // The stream's size and each partition's lag at the epoch of its owner,
  // epochs[p] (one per partition, else InvalidArgument): one stream info
  // and one listing of the consumers; writes nothing. Unavailable or
  // DeadlineExceeded as ReadCompletions.
  absl::StatusOr<StreamState> ReadState(std::span<const uint64_t> epochs);

  // Tests: called by ReadCompletions after each message it read, with its
  // subscription and the count of messages read so far (a test stalls the
  // reader by deleting its consumer). Set before any call; not for use
  // while one runs.
  using ReadHook = std::function<void(natsSubscription* sub, uint64_t read)>;
  void TEST_SetReadHook(ReadHook hook) { test_read_hook_ = std::move(hook); }

 private:
  struct Publisher;
  struct Pending;
  Handoff(HandoffOptions options, std::shared_ptr<PartitionFeed::Shared> s);
  absl::Status CheckPartition(uint32_t partition) const;
  using StreamInfo =
      std::unique_ptr<jsStreamInfo, decltype(&jsStreamInfo_Destroy)>;
  // The stream's info from its leader, with the message count of each
  // subject that matches `filter`.
  absl::StatusOr<StreamInfo> ReadStreamInfo(const std::string& filter);
  // An ordered consumer of `subject` from stream sequence `first` into
  // *sub; NATS's error otherwise (and *sub null).
  absl::Status SubscribeFrom(const std::string& subject, uint64_t first,
                             natsSubscription** sub);
  // Messages stored on `subject`, as the stream's leader counts them.
  absl::StatusOr<uint64_t> CountOnSubject(const std::string& subject);
  absl::Status PublishAll(std::vector<Pending>& pending, PublishResult* result);
  std::unique_ptr<Publisher> TakePublisher();
  void ReturnPublisher(std::unique_ptr<Publisher> p);

  // Constant after construction.
  const HandoffOptions options_;
  const std::shared_ptr<PartitionFeed::Shared> shared_;
  ReadHook test_read_hook_;

  Mutex mu_;
  // JetStream contexts for async publishing not in use by a Publish call.
  std::vector<std::unique_ptr<Publisher>> idle_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hq::fleet

#endif  // HQ_LIB_FLEET_HANDOFF_H_
