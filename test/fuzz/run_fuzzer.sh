#!/usr/bin/env bash
# Runs a libFuzzer target for a bounded time over its committed corpus:
#   run_fuzzer.sh FUZZER CORPUS_DIR SECONDS
# New inputs go to <build dir>/fuzz-work/<target>/new (libFuzzer writes to
# its first corpus directory), crashes to .../artifacts/: the committed
# corpus is only read. Exits 1 if the target crashed, leaked or hung:
# libFuzzer's own error exit code, 77, is what meson reads as a skipped test.
set -euo pipefail
fuzzer=$1
corpus=$2
seconds=$3
work=$(dirname "$fuzzer")/fuzz-work/$(basename "$fuzzer")
mkdir -p "$work/new" "$work/artifacts"
exec "$fuzzer" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 \
  -error_exitcode=1 -timeout_exitcode=1 \
  -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
  "$work/new" "$corpus"
