// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The rowkey-layout lab of hq_bench (workload `layout_lab`): the same
// messages stored under different rowkey layouts in raw LevelDB (with the
// leveldb::Options hq uses), each layout then read the way it allows.
//
// The messages are those of a push-message platform (Aliexpress UTT's
// published HBase redesign, references/hbase-rowkey-redesign.zh.txt): a job
// run is split into segments of --lab_segment_size messages, sent in
// parallel; each segment has a random 4-letter salt that spreads segments
// over the key space. A rowkey is five fields joined by '_':
//
//   salt     4 letters, one per segment
//   index    the message's number in its segment, zero-padded
//   segment  the segment id, 6 digits
//   time     the job run's time, 13 digits (ms)
//   job      the job id, 8 digits
//
// A layout is the order of the fields, and its name says it:
// "salt_index_segment_time_job" (the platform's rowkey before: a segment's
// messages are scattered, index by index, among every other segment of the
// salt) and "salt_time_job_segment_index" (after: a segment is one
// contiguous range). Every field but `index` is the same for all messages
// of a segment, so a segment is contiguous exactly when `index` comes last:
// such a layout reads a segment with one iterator Seek and Next calls; any
// other layout reads it with one DB::Get per message (LevelDB has no
// multi-get; the platform's "batched gets" are such point reads), in index
// order. To compare another layout, name it in --lab_layouts: any order of
// the five fields, `salt` optional (e.g. "time_job_segment_index" or
// "segment_index_salt_time_job").
//
// Per layout, in a fresh database: lab_write writes every message (segments
// imported concurrently: 100 messages of each in turn, WriteBatches of 1000),
// then, after compactions settle and a reopen (cold block cache, warm page
// cache), lab_read reads --lab_read_segments whole segments chosen at
// random (the same ones for every layout), checking every value. One op =
// one message. Then, for each layout after the first,
//   ratio layout_lab_read[L]/[FIRST] : R

#ifndef HQ_BENCH_LAYOUT_LAB_H_
#define HQ_BENCH_LAYOUT_LAB_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "hq/options.h"

namespace hq::bench {

struct LayoutLabOptions {
  // Layout names (field orders). The first is the one others are compared
  // with.
  std::vector<std::string> layouts = {"salt_index_segment_time_job",
                                      "salt_time_job_segment_index"};
  int64_t messages = 1000000;    // In all, over messages / segment_size
  int64_t segment_size = 10000;  // segments (at least one).
  int64_t read_segments = 20;    // Segments read per layout.
  size_t value_size = 100;       // Bytes per message.
};

// Checks that `name` is a layout: an order of index, segment, time, job and
// optionally salt, each once, joined by '_'. InvalidArgument otherwise.
absl::Status CheckLabLayout(const std::string& name);

// Runs the lab in directory `dir` (one database per layout, destroyed
// first), printing its lines to stdout.
absl::Status RunLayoutLab(const LayoutLabOptions& lab, const Options& hq,
                          const std::string& dir);

}  // namespace hq::bench

#endif  // HQ_BENCH_LAYOUT_LAB_H_
