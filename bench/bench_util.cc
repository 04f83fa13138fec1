// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "bench/bench_util.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "lib/util/status_macros.h"

namespace hq::bench {

volatile uint64_t sink = 0;

std::string Histogram::Summary() {
  if (micros_.empty()) return "count 0";
  std::sort(micros_.begin(), micros_.end());
  double sum = 0;
  for (double m : micros_) sum += m;
  auto at = [this](double q) {
    const size_t i =
        static_cast<size_t>(std::ceil(q * static_cast<double>(micros_.size())));
    return micros_[std::min(i == 0 ? 0 : i - 1, micros_.size() - 1)];
  };
  return absl::StrFormat(
      "count %d avg %.3f p50 %.3f p99 %.3f p99.9 %.3f max %.3f", micros_.size(),
      sum / static_cast<double>(micros_.size()), at(0.50), at(0.99), at(0.999),
      micros_.back());
}

void PrintLine(const std::string& name, const Result& r) {
  const double mb = static_cast<double>(r.payload_bytes) / 1048576.0;
  std::printf("%s : %.3f micros/op; %.0f msgs/s; %.1f MB/s\n", name.c_str(),
              r.seconds * 1e6 / static_cast<double>(r.messages),
              r.msgs_per_sec(), r.seconds > 0 ? mb / r.seconds : 0);
  std::fflush(stdout);  // A long run's lines as they come, also to a file.
}

void PrintRatio(const std::string& name, const Result& a, const Result& b) {
  if (b.msgs_per_sec() > 0) {
    std::printf("ratio %s : %.2f\n", name.c_str(),
                a.msgs_per_sec() / b.msgs_per_sec());
  }
}

RawTuning& raw_tuning() {
  static RawTuning t;
  return t;
}

leveldb::Options LevelDbOptions(const Options& o, RawDb* raw) {
  leveldb::Options lo;
  lo.create_if_missing = true;
  lo.paranoid_checks = true;  // As hq opens LevelDB (db_impl.cc).
  lo.write_buffer_size = o.write_buffer_bytes;
  lo.max_open_files = o.max_open_files;
  if (o.cache_bytes > 0) {
    raw->cache.reset(leveldb::NewLRUCache(o.cache_bytes));
    lo.block_cache = raw->cache.get();
  }
  if (o.bloom_bits_per_key > 0) {
    raw->filter.reset(leveldb::NewBloomFilterPolicy(o.bloom_bits_per_key));
    lo.filter_policy = raw->filter.get();
  }
  const RawTuning& t = raw_tuning();
  if (t.max_file_bytes > 0) lo.max_file_size = t.max_file_bytes;
  if (t.block_bytes > 0) lo.block_size = t.block_bytes;
  if (!t.compression) lo.compression = leveldb::kNoCompression;
  return lo;
}

absl::Status FromLevelDb(const leveldb::Status& s, std::string_view what) {
  if (s.ok()) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(
      absl::string_view(what.data(), what.size()), ": ", s.ToString()));
}

std::string CpuSummary(std::string* cache) {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model;
  int count = 0;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key(absl::StripAsciiWhitespace(line.substr(0, colon)));
    const std::string value(absl::StripAsciiWhitespace(line.substr(colon + 1)));
    if (key == "model name") {
      ++count;
      model = value;
    } else if (key == "cache size") {
      *cache = value;
    }
  }
  if (count == 0) return "unknown";
  return absl::StrCat(count, " * ", model);
}

// LevelDB 1.23's compaction score (VersionSet::Finalize): level-0 files / 4,
// level-L bytes / (10 MiB * 10^(L-1)); a compaction is due at >= 1. Reads
// the files from the "leveldb.sstables" property, whose lines are
// "--- level L ---" and " number:size[smallest .. largest]".
double CompactionScore(const std::string& sstables) {
  double score = 0;
  int level = -1;
  int files = 0;
  uint64_t bytes = 0;
  auto finish_level = [&] {
    if (level == 0) {
      score = std::max(score, files / 4.0);
    } else if (level >= 1 && level < 6) {
      double max_bytes = 10.0 * 1048576.0;
      for (int l = 1; l < level; ++l) max_bytes *= 10;
      score = std::max(score, static_cast<double>(bytes) / max_bytes);
    }
    files = 0;
    bytes = 0;
  };
  for (absl::string_view line : absl::StrSplit(sstables, '\n')) {
    if (absl::ConsumePrefix(&line, "--- level ")) {
      finish_level();
      level = line.empty() ? -1 : line[0] - '0';
      continue;
    }
    const size_t colon = line.find(':');
    const size_t bracket = line.find('[');
    if (colon == absl::string_view::npos ||
        bracket == absl::string_view::npos || bracket < colon) {
      continue;
    }
    uint64_t size = 0;
    if (absl::SimpleAtoi(line.substr(colon + 1, bracket - colon - 1), &size)) {
      ++files;
      bytes += size;
    }
  }
  finish_level();
  return score;
}

// Waits (untimed) until `db` has no compaction due and its table files have
// not changed for a second (a memtable being written out shows up as a new
// level-0 file well within that). Gives up after ten minutes.
void WaitForCompactions(leveldb::DB* db) {
  const SteadyClock::time_point give_up =
      SteadyClock::now() + std::chrono::minutes(10);
  std::string last;
  int quiet_polls = 0;
  while (SteadyClock::now() < give_up) {
    std::string sstables;
    db->GetProperty("leveldb.sstables", &sstables);
    if (sstables == last && CompactionScore(sstables) < 1) {
      if (++quiet_polls >= 20) return;
    } else {
      quiet_polls = 0;
      last = std::move(sstables);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::fprintf(stderr,
               "hq_bench: warning: compactions still due after 10 minutes\n");
}

absl::Status OpenFreshRawDb(const Options& o, const std::string& path,
                            RawDb* raw) {
  raw->db.reset();
  HQ_RETURN_IF_ERROR(FromLevelDb(leveldb::DestroyDB(path, leveldb::Options()),
                                 absl::StrCat("destroying ", path)));
  return ReopenRawDb(o, path, raw);
}

absl::Status ReopenRawDb(const Options& o, const std::string& path,
                         RawDb* raw) {
  raw->db.reset();
  raw->filter.reset();
  raw->cache.reset();
  const leveldb::Options lo = LevelDbOptions(o, raw);
  leveldb::DB* db = nullptr;
  HQ_RETURN_IF_ERROR(FromLevelDb(leveldb::DB::Open(lo, path, &db),
                                 absl::StrCat("opening ", path)));
  raw->db.reset(db);
  return absl::OkStatus();
}

int64_t HeapKb() {
  const struct mallinfo2 m = mallinfo2();
  return static_cast<int64_t>((m.uordblks + m.hblkhd) / 1024);
}

uint64_t DirectoryBytes(const std::string& dir) {
  uint64_t n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir, ec)) {
    std::error_code size_ec;
    if (e.is_regular_file(size_ec)) n += e.file_size(size_ec);
  }
  return n;
}

}  // namespace hq::bench
