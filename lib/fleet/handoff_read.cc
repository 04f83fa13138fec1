// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Handoff's reads of the stream: the completed URLs of a partition, and
// the stream's state for status readers.

#include <charconv>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "lib/fleet/clients.h"
#include "lib/fleet/handoff.h"
#include "lib/fleet/handoff_shared.h"
#include "lib/fleet/records.h"
#include "lib/util/status_macros.h"

namespace hq::fleet {

// ---------------------------------------------------------------------------
// Completions.

absl::StatusOr<Handoff::StreamInfo> Handoff::ReadStreamInfo(
    const std::string& filter) {
  jsOptions jo = shared_->ApiOptions();
  jo.Stream.Info.SubjectsFilter = filter.c_str();
  jsStreamInfo* si = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s =
      js_GetStreamInfo(&si, shared_->js, shared_->stream.c_str(), &jo, &jerr);
  if (s != NATS_OK) {
    return NatsStatus(
        s, absl::StrCat("stream info of ", shared_->stream, " for ", filter),
        jerr);
  }
  return StreamInfo(si, &jsStreamInfo_Destroy);
}

absl::StatusOr<uint64_t> Handoff::CountOnSubject(const std::string& subject) {
  HQ_ASSIGN_OR_RETURN(StreamInfo si, ReadStreamInfo(subject));
  const jsStreamStateSubjects* list = si->State.Subjects;
  for (int i = 0; list != nullptr && i < list->Count; ++i) {
    if (subject == list->List[i].Subject) return list->List[i].Msgs;
  }
  return 0;
}

absl::Status Handoff::SubscribeFrom(const std::string& subject, uint64_t first,
                                    natsSubscription** sub) {
  jsOptions jo = shared_->ApiOptions();
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Stream = shared_->stream.c_str();
  so.Ordered = true;
  so.Config.DeliverPolicy = js_DeliverByStartSequence;
  so.Config.OptStartSeq = first;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s =
      js_SubscribeSync(sub, shared_->js, subject.c_str(), &jo, &so, &jerr);
  if (s != NATS_OK) {
    *sub = nullptr;
    return NatsStatus(
        s, absl::StrCat("subscribe ", subject, " from sequence ", first), jerr);
  }
  return absl::OkStatus();
}

absl::StatusOr<absl::flat_hash_set<uint64_t>> Handoff::ReadCompletions(
    uint32_t partition) {
  HQ_RETURN_IF_ERROR(CheckPartition(partition));
  const std::string subject = CompletionSubject(partition);
  const char* stream = shared_->stream.c_str();
  jsOptions jo = shared_->ApiOptions();
  absl::flat_hash_set<uint64_t> done;

  // How many messages the subject holds now, from the stream's leader: the
  // read below must see at least as many. A consumer can be placed on a
  // replica that is behind, whose copy of the subject lacks messages the
  // leader acknowledged; it delivers the rest without a gap in its own
  // sequence, so only the count tells.
  HQ_ASSIGN_OR_RETURN(const uint64_t stored, CountOnSubject(subject));

  // Where the subject ends now: the sequence of its last message.
  uint64_t end = 0;
  {
    natsMsg* last = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    natsStatus s =
        js_GetLastMsg(&last, shared_->js, stream, subject.c_str(), &jo, &jerr);
    if (s == NATS_NOT_FOUND && jerr != JSStreamNotFoundErr && stored == 0) {
      return done;
    }
    if (s != NATS_OK) {
      return NatsStatus(s, "read completions: last of " + subject, jerr);
    }
    end = natsMsg_GetSequence(last);
    natsMsg_Destroy(last);
  }

  // An ordered consumer (ephemeral, flow-controlled, recreated by nats.c
  // after a gap) from the subject's first message to `end`. One that
  // delivers nothing for read_stall (its server died or left the cluster)
  // is replaced by a new one from the first sequence not yet read; the
  // read fails only after request_timeout without a message.
  absl::Status status;
  std::vector<uint64_t> hashes;
  uint64_t read = 0;  // Messages of the subject up to `end`.
  uint64_t next = 1;  // The first stream sequence not yet read.
  absl::Time progress = absl::Now();
  natsSubscription* sub = nullptr;
  auto drop = [&sub] {
    if (sub == nullptr) return;
    natsSubscription_Unsubscribe(sub);  // Deletes the ephemeral consumer.
    natsSubscription_Destroy(sub);
    sub = nullptr;
  };
  auto stalled = [&](const absl::Status& why) {
    drop();
    if (absl::Now() - progress < shared_->options.request_timeout) return false;
    status = absl::DeadlineExceededError(absl::StrCat(
        "read completions of ", subject, " (to sequence ", end,
        "): nothing in ",
        absl::FormatDuration(shared_->options.request_timeout), ", read ", read,
        " messages; the last error: ", why.message()));
    return true;
  };
  while (true) {
    if (sub == nullptr) {
      absl::Status s = SubscribeFrom(subject, next, &sub);
      if (!s.ok()) {
        if (stalled(s)) break;
        absl::SleepFor(absl::Milliseconds(100));
        continue;
      }
    }
    natsMsg* m = nullptr;
    natsStatus s =
        natsSubscription_NextMsg(&m, sub, Millis(shared_->options.read_stall));
    if (s == NATS_CONNECTION_CLOSED) {
      status = NatsStatus(s, "read completions of " + subject);
      break;
    }
    if (s != NATS_OK) {
      if (stalled(NatsStatus(s, "next message"))) break;
      continue;
    }
    jsMsgMetaData* meta = nullptr;
    if (natsMsg_GetMetaData(&meta, m) != NATS_OK) {
      natsMsg_Destroy(m);  // Not a JetStream message (flow control).
      continue;
    }
    const uint64_t seq = meta->Sequence.Stream;
    jsMsgMetaData_Destroy(meta);
    if (seq < next) {  // Delivered again by a consumer that replaced one.
      natsMsg_Destroy(m);
      continue;
    }
    next = seq + 1;
    progress = absl::Now();
    hashes.clear();
    absl::Status d = DecodeCompletionBatch(
        std::string_view(natsMsg_GetData(m),
                         static_cast<size_t>(natsMsg_GetDataLength(m))),
        &hashes);
    natsMsg_Destroy(m);
    if (!d.ok()) {
      status = absl::DataLossError(absl::StrCat("stream ", shared_->stream,
                                                " sequence ", seq, " on ",
                                                subject, ": ", d.message()));
      break;
    }
    done.insert(hashes.begin(), hashes.end());
    if (seq <= end) ++read;
    if (test_read_hook_) test_read_hook_(sub, read);
    if (seq >= end) break;
  }
  drop();
  if (status.ok() && read < stored) {
    status = absl::UnavailableError(
        absl::StrCat("read completions of ", subject, ": the stream holds ",
                     stored, " messages on it, the consumer delivered ", read,
                     " (a replica behind its leader); try again"));
  }
  if (!status.ok()) return status;
  return done;
}

// ---------------------------------------------------------------------------
// State, for status readers.

absl::StatusOr<StreamState> Handoff::ReadState(
    std::span<const uint64_t> epochs) {
  if (epochs.size() != options_.partitions) {
    return absl::InvalidArgumentError(
        absl::StrCat("handoff: ReadState takes ", options_.partitions,
                     " epochs, one per partition, not ", epochs.size()));
  }
  const char* stream = shared_->stream.c_str();
  StreamState state;
  state.lag.assign(options_.partitions, 0);

  // The stream's size, and the messages of each partition's URL subject.
  {
    const std::string prefix = absl::StrCat("hqf.", options_.fleet, ".u.");
    HQ_ASSIGN_OR_RETURN(StreamInfo si, ReadStreamInfo(prefix + "*"));
    state.messages = si->State.Msgs;
    state.bytes = si->State.Bytes;
    const jsStreamStateSubjects* subjects = si->State.Subjects;
    for (int i = 0; subjects != nullptr && i < subjects->Count; ++i) {
      const std::string_view subject = subjects->List[i].Subject;
      if (!subject.starts_with(prefix)) continue;
      const std::string_view digits = subject.substr(prefix.size());
      uint32_t p = 0;
      auto r = std::from_chars(digits.data(), digits.data() + digits.size(), p);
      if (r.ec != std::errc() || r.ptr != digits.data() + digits.size() ||
          p >= options_.partitions) {
        continue;
      }
      state.lag[p] = subjects->List[i].Msgs;
    }
  }

  // The consumers of the owners' epochs replace those counts.
  jsOptions jo = shared_->ApiOptions();
  jsConsumerInfoList* list = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_Consumers(&list, shared_->js, stream, &jo, &jerr);
  if (s == NATS_NOT_FOUND) return state;  // No consumer at all.
  if (s != NATS_OK) {
    return NatsStatus(s, absl::StrCat("consumers of ", stream), jerr);
  }
  for (int i = 0; i < list->Count; ++i) {
    const jsConsumerInfo* ci = list->List[i];
    uint32_t p;
    uint64_t e;
    if (ci == nullptr || ci->Name == nullptr ||
        !ParseConsumerName(ci->Name, &p, &e) || p >= options_.partitions ||
        e != epochs[p]) {
      continue;
    }
    state.lag[p] = Unacked(*ci);
  }
  jsConsumerInfoList_Destroy(list);
  return state;
}

}  // namespace hq::fleet
