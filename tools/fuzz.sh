#!/usr/bin/env bash
# Fuzzes hq with libFuzzer (test/fuzz):
#   tools/fuzz.sh [SECONDS]
# installs clang and hq's build dependencies if missing (apt-get),
# configures build-fuzz with CC=clang CXX=clang++ -Dfuzz=true (the library
# and the fuzz targets only, under ASan+UBSan), builds, and runs every fuzz
# target for SECONDS (default 30) over its committed corpus, one after the
# other, as the meson test suite "fuzz". Ends with "N passed, N failed" and
# fails if any target crashed, leaked, hung or found a model divergence.
# A failing input is left in
# build-fuzz/test/fuzz/fuzz-work/<target>_fuzz/artifacts/; replay it with
#   build-fuzz/test/fuzz/<target>_fuzz ARTIFACT
# New inputs that add coverage are in .../fuzz-work/<target>_fuzz/new/;
# to keep them, merge them into the committed corpus:
#   build-fuzz/test/fuzz/<target>_fuzz -merge=1 test/fuzz/corpus/<target> \
#     build-fuzz/test/fuzz/fuzz-work/<target>_fuzz/new
# Environment: BUILD_DIR (default build-fuzz).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
BUILD_DIR=${BUILD_DIR:-build-fuzz}

PACKAGES=(clang libclang-rt-dev meson ninja-build pkg-config cmake
          libleveldb-dev libabsl-dev libxxhash-dev python3)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
    missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "fuzz.sh: installing ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
    "${missing[@]}" >/dev/null
fi

if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  CC=clang CXX=clang++ meson setup "$BUILD_DIR" -Dfuzz=true >/dev/null
fi
meson configure "$BUILD_DIR" -Dfuzz_seconds="$seconds"
rm -f "$BUILD_DIR/meson-logs/testlog.json"
rc=0
ninja -C "$BUILD_DIR" || rc=$?
if [ "$rc" -eq 0 ]; then
  meson test -C "$BUILD_DIR" --suite fuzz --print-errorlogs || rc=$?
fi
./hq.sh summary "$BUILD_DIR/meson-logs/testlog.json"
exit "$rc"
