#!/usr/bin/env bash
# hq's two commands. On a fresh Debian machine each one installs what is
# missing (apt-get), configures and builds, then:
#   ./hq.sh demo   runs examples/crawler on demo-data/crawler: a crawl of a
#                  synthetic web that checks its own result. Interrupted
#                  (Ctrl-C), it resumes at the next demo; a finished crawl
#                  prints its summary again; ./hq.sh demo --fresh starts over.
#                  Other arguments go to the crawler (--pages, --workers...)
#   ./hq.sh test   runs the whole test suite and ends with "N passed, N failed"
# Environment:
#   BUILD_DIR    build directory (default: build, or build-<sanitizer>)
#   HQ_SANITIZE  build with sanitizers: "address,undefined" or "thread"
#   HQ_DEMO_DIR  where the demo keeps its data (default: demo-data; the crawl
#                goes into its subdirectory crawler)
set -euo pipefail
cd "$(dirname "$0")"
HQ_SANITIZE=${HQ_SANITIZE:-}
if [ -n "$HQ_SANITIZE" ]; then
  BUILD_DIR=${BUILD_DIR:-build-${HQ_SANITIZE//,/-}}
else
  BUILD_DIR=${BUILD_DIR:-build}
fi

# The last line is the fleet's (-Dfleet): the ZooKeeper and NATS C clients,
# and the servers its tests start on 127.0.0.1. zookeeper is ZooKeeper's
# jars and the JRE they need, without a daemon (zookeeperd would start one).
PACKAGES=(g++ meson ninja-build pkg-config cmake libleveldb-dev libabsl-dev
          catch2 libxxhash-dev libsqlite3-dev python3 python3-dev
          pybind11-dev python3-pybind11 python3-pytest python3-scrapy help2man
          libzookeeper-mt-dev libnats-dev zookeeper nats-server)

install_missing() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
      missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "hq.sh: installing ${missing[*]}" >&2
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

build() {
  install_missing
  if [ ! -f "$BUILD_DIR/build.ninja" ]; then
    local extra=()
    if [ -n "$HQ_SANITIZE" ]; then
      extra=(-Db_sanitize="$HQ_SANITIZE" -Db_lundef=false)
      # ASan's advice: -O1 runs well and compiles in half -O2's time.
      [[ $HQ_SANITIZE == *address* ]] && extra+=(-Doptimization=1)
    fi
    meson setup "$BUILD_DIR" "${extra[@]}" >/dev/null
  fi
  ninja -C "$BUILD_DIR"
}

# Prints "N passed, N failed" summed over meson test logs (testlog.json);
# a missing log (its build failed before testing) counts as one failure.
# Before that line, each failed test's name and the end of its output, so
# that the tail of a CI log says what broke.
summary() {
  python3 - "$@" <<'PY'
import json, sys
passed = failed = 0
failures = []
for path in sys.argv[1:]:
    try:
        with open(path) as f:
            for line in f:
                if not line.strip():
                    continue
                t = json.loads(line)
                r = t.get("result")
                if r in ("OK", "EXPECTEDFAIL"):
                    passed += 1
                elif r != "SKIP":
                    failed += 1
                    failures.append((path, t))
    except FileNotFoundError:
        failed += 1
        failures.append((path, None))
for path, t in failures:
    if t is None:
        print(f"=== FAILED: no test log {path} (the build failed)")
        continue
    print(f"=== FAILED: {t.get('name')} ({t.get('result')}) in {path}")
    out = (t.get("stdout") or "") + (t.get("stderr") or "")
    for l in out.splitlines()[-60:]:
        print("  " + l)
print(f"{passed} passed, {failed} failed")
PY
}

cmd=${1:-}
shift || true
case "$cmd" in
  demo)
    build
    dir=${HQ_DEMO_DIR:-demo-data}
    mkdir -p "$dir"
    echo "hq.sh: running examples/crawler on $dir/crawler"
    "$BUILD_DIR/examples/crawler" "$dir/crawler" "$@"
    ;;
  test)
    rm -f "$BUILD_DIR/meson-logs/testlog.json"
    rc=0
    build || { summary "$BUILD_DIR/meson-logs/testlog.json"; exit 1; }
    # Sanitizer reports fail the test that produced them. Sanitized code
    # runs several times slower (TSan most): the per-test timeouts
    # (test/meson.build) are doubled, so that a loaded machine does not
    # turn a slow run into a failure. TSan does not check the memory
    # accesses that uninstrumented libraries (Debian's LevelDB and Abseil)
    # make through its interceptors: reported and suppressed one by one
    # (test/tsan.supp), their count grew with the run and every later
    # check scanned them (concurrency_test took 13 s or over 10 minutes).
    # LeakSanitizer skips only the ZooKeeper C client's own leaks at close
    # (test/lsan.supp).
    multiplier=1
    [ -n "$HQ_SANITIZE" ] && multiplier=2
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:ignore_noninstrumented_modules=1:suppressions=$PWD/test/tsan.supp} \
    LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/test/lsan.supp:print_suppressions=0} \
      meson test -C "$BUILD_DIR" --print-errorlogs \
        --timeout-multiplier "$multiplier" "$@" || rc=$?
    summary "$BUILD_DIR/meson-logs/testlog.json"
    exit $rc
    ;;
  summary)
    summary "$@"
    ;;
  *)
    echo "usage: ./hq.sh demo|test [args] | summary TESTLOG.json..." >&2
    exit 2
    ;;
esac
