#!/usr/bin/env bash
# Builds test/consumer/ against hq one of the ways README.md gives ("Using hq
# in your project") and runs it:
#   run.sh pkg-config SRC BUILD   g++ with `pkg-config --cflags --libs hq`
#   run.sh cmake SRC BUILD        find_package(hq CONFIG), target hq::hq
#   run.sh subproject SRC BUILD   dependency('hq', fallback : 'hq'), hq built
#                                 as a shared library with -Dtests at its
#                                 default: the parent must get no hq tests
# The first two use a staged install of the built tree BUILD
# (meson install --no-rebuild --destdir), so nothing is rebuilt; the third
# builds hq's library (only) from SRC, unoptimized.
set -euo pipefail
way=$1 src=$(realpath "$2") build=$(realpath "$3")
work=$(mktemp -d "${TMPDIR:-/tmp}/hq-consumer-$way.XXXXXX")
[ -n "${HQ_CONSUMER_KEEP:-}" ] || trap 'rm -rf "$work"' EXIT
say() { echo "run.sh $way: $*"; }

# A sanitized build's libhq needs a sanitized program: the consumer is built
# with the same -fsanitize (./hq.sh test with HQ_SANITIZE, .ci/run).
options=$(meson introspect "$build" --buildoptions |
  /usr/bin/python3 -c 'import json,sys; o={x["name"]:x["value"] for x in json.load(sys.stdin)}; print(o["prefix"], o["libdir"], o["b_sanitize"], sep="\t")')
IFS=$'\t' read -r prefix libdir sanitize <<<"$options"
[[ $libdir = /* ]] || libdir=$prefix/$libdir
san_flags=()
[ "$sanitize" = none ] || san_flags=(-fsanitize="$sanitize")

stage() {
  meson install -C "$build" --no-rebuild --quiet --destdir "$work/stage" \
    >"$work/install.log" 2>&1 || { cat "$work/install.log"; exit 1; }
  root=$work/stage$prefix
}

case "$way" in
  pkg-config)
    stage
    export PKG_CONFIG_PATH=$work/stage$libdir/pkgconfig
    flags=$(pkg-config --define-variable=prefix="$root" --cflags --libs hq)
    say "g++ -std=c++20 ${san_flags[*]} consumer.cc $flags"
    g++ -std=c++20 "${san_flags[@]}" -o "$work/consumer" \
      "$src/test/consumer/consumer.cc" $flags
    ;;
  cmake)
    stage
    cmake -S "$src/test/consumer" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$root" \
      -DCMAKE_CXX_FLAGS="${san_flags[*]}" \
      >"$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; exit 1; }
    cmake --build "$work/cmake" >>"$work/cmake.log" 2>&1 ||
      { cat "$work/cmake.log"; exit 1; }
    cp "$work/cmake/consumer" "$work/consumer"
    ;;
  subproject)
    cp -r "$src/test/consumer" "$work/project"
    mkdir "$work/project/subprojects"
    ln -s "$src" "$work/project/subprojects/hq"
    sub_options=()
    [ "$sanitize" = none ] ||
      sub_options=(-Db_sanitize="$sanitize" -Db_lundef=false)
    meson setup "$work/b" "$work/project" --buildtype=plain \
      -Dhq:default_library=shared "${sub_options[@]}" >"$work/setup.log" 2>&1 ||
      { cat "$work/setup.log"; exit 1; }
    # hq as a subproject adds no tests and needs neither Catch2 nor SQLite.
    meson introspect "$work/b" --tests >"$work/tests.json"
    if grep -q '"name"' "$work/tests.json"; then
      say "the parent project got hq's tests:"
      cat "$work/tests.json"
      exit 1
    fi
    if grep -qi 'catch2\|sqlite' "$work/setup.log"; then
      say "hq as a subproject looked for test dependencies:"
      cat "$work/setup.log"
      exit 1
    fi
    ninja -C "$work/b" consumer >"$work/build.log" 2>&1 ||
      { cat "$work/build.log"; exit 1; }
    lib=$(readlink -f "$work/b/subprojects/hq/libhq.so")
    soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
    say "$(basename "$lib"): SONAME $soname"
    [ "$soname" = libhq.so.0 ] || { say "wrong SONAME '$soname'"; exit 1; }
    # Only hq's API is exported: every defined dynamic symbol is in
    # namespace hq, or a weak template instance (std::, absl::) that the
    # compiler emits wherever it is used.
    strays=$(nm -D --defined-only "$lib" | awk '$2 !~ /^[VWvwu]$/ {print $3}' |
      c++filt | grep -v '^hq::\|^typeinfo for hq::\|^typeinfo name for hq::\|^vtable for hq::\|^VTT for hq::\|^_init$\|^_fini$' || true)
    if [ -n "$strays" ]; then
      say "libhq.so exports symbols outside hq::"
      echo "$strays" | head -40
      exit 1
    fi
    say "exports $(nm -D --defined-only "$lib" | grep -c ' T ') functions"
    ldd "$work/b/consumer" >"$work/ldd.txt"
    grep -q 'libhq.so.0 =>' "$work/ldd.txt" ||
      { say "consumer is not linked to libhq.so.0"; cat "$work/ldd.txt"; exit 1; }
    "$work/b/consumer" "$work/db"
    exit 0
    ;;
  *)
    echo "usage: run.sh pkg-config|cmake|subproject SRC BUILD" >&2
    exit 2
    ;;
esac
"$work/consumer" "$work/db"
