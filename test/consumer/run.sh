#!/usr/bin/env bash
# Builds test/consumer/ against hq one of the ways README.md gives ("Using hq
# in your project") and runs it:
#   run.sh pkg-config SRC BUILD   g++ with `pkg-config --cflags --libs hq`
#   run.sh cmake SRC BUILD        find_package(hq CONFIG), target hq::hq
#   run.sh fleet-pkg-config SRC BUILD
#                                 g++ with `pkg-config --cflags --libs
#                                 hq-fleet` (test/consumer/fleet_consumer.cc)
#   run.sh fleet-cmake SRC BUILD  find_package(hq CONFIG COMPONENTS fleet),
#                                 target hq::fleet (fleet_consumer.cc); and
#                                 the component asked of an install without
#                                 the fleet fails, saying so
#   run.sh subproject SRC BUILD   dependency('hq', fallback : 'hq'), hq built
#                                 as a shared library with -Dtests at its
#                                 default: the parent must get no hq tests,
#                                 Python module or man page; its tool, built
#                                 without the fleet, refuses `hq fleet`
# and checks installs of hq itself:
#   run.sh python SRC BUILD       the Python package of BUILD's staged
#                                 install imported by /usr/bin/python3 from
#                                 the staged copy of a directory on its
#                                 sys.path, with hq.__version__ the project's
#   run.sh shared SRC BUILD       the README's shared install of SRC
#                                 (-Ddefault_library=shared -Dtests=false):
#                                 all of it built and staged, the staged tool
#                                 run on the staged libhq.so.0
# The first two and python use a staged install of the built tree BUILD
# (meson install --no-rebuild --destdir), so nothing is rebuilt; the others
# build hq from SRC once more, unoptimized (subproject: its library only).
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

# A shared libhq: SONAME libhq.so.0, and only hq's API exported: every
# defined dynamic symbol is in namespace hq, or a weak template instance
# (std::, absl::) that the compiler emits wherever it is used.
check_shared_lib() {
  local lib=$1 soname strays
  soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  say "$(basename "$lib"): SONAME $soname"
  [ "$soname" = libhq.so.0 ] || { say "wrong SONAME '$soname'"; exit 1; }
  strays=$(nm -D --defined-only "$lib" | awk '$2 !~ /^[VWvwu]$/ {print $3}' |
    c++filt | grep -v '^hq::\|^typeinfo for hq::\|^typeinfo name for hq::\|^vtable for hq::\|^VTT for hq::\|^_init$\|^_fini$' || true)
  if [ -n "$strays" ]; then
    say "libhq.so exports symbols outside hq::"
    echo "$strays" | head -40
    exit 1
  fi
  say "exports $(nm -D --defined-only "$lib" | grep -c ' T ') functions"
}

case "$way" in
  pkg-config)
    stage
    export PKG_CONFIG_PATH=$work/stage$libdir/pkgconfig
    flags=$(pkg-config --define-variable=prefix="$root" --cflags --libs hq)
    # hq.pc carries -std=c++20: the consumer's line does not add it.
    say "g++ ${san_flags[*]} consumer.cc $flags"
    g++ "${san_flags[@]}" -o "$work/consumer" \
      "$src/test/consumer/consumer.cc" $flags
    # Without C++20 the public headers stop at once, saying why.
    echo '#include <hq/db.h>' >"$work/cxx17.cc"
    if g++ $(pkg-config --define-variable=prefix="$root" --cflags hq) \
        -std=c++17 -fsyntax-only "$work/cxx17.cc" >"$work/cxx17.log" 2>&1; then
      say "<hq/db.h> compiled with -std=c++17"; exit 1
    fi
    grep -m1 'error' "$work/cxx17.log" | grep -q 'hq needs C++20' ||
      { say "no clear error without C++20:"; head -20 "$work/cxx17.log"; exit 1; }
    ;;
  fleet-pkg-config)
    stage
    export PKG_CONFIG_PATH=$work/stage$libdir/pkgconfig
    flags=$(pkg-config --define-variable=prefix="$root" --cflags --libs hq-fleet)
    say "g++ ${san_flags[*]} fleet_consumer.cc $flags"
    g++ "${san_flags[@]}" -o "$work/fleet_consumer" \
      "$src/test/consumer/fleet_consumer.cc" $flags
    LD_LIBRARY_PATH=$root/${libdir#"$prefix"/} "$work/fleet_consumer"
    exit 0
    ;;
  fleet-cmake)
    stage
    cmake -S "$src/test/consumer" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$root" \
      -DHQ_CONSUMER_FLEET=ON -DCMAKE_CXX_FLAGS="${san_flags[*]}" \
      >"$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; exit 1; }
    cmake --build "$work/cmake" >>"$work/cmake.log" 2>&1 ||
      { cat "$work/cmake.log"; exit 1; }
    LD_LIBRARY_PATH=$root/${libdir#"$prefix"/} "$work/cmake/fleet_consumer"
    # The same install without the component's file, as an hq built
    # without the fleet installs: asking for it fails and says why.
    rm "$root/${libdir#"$prefix"/}/cmake/hq/hq-fleet.cmake"
    if cmake -S "$src/test/consumer" -B "$work/cmake-nofleet" \
        -DCMAKE_PREFIX_PATH="$root" -DHQ_CONSUMER_FLEET=ON \
        >"$work/nofleet.log" 2>&1; then
      say "COMPONENTS fleet was found in an install without the fleet"; exit 1
    fi
    grep -q 'built without the fleet' "$work/nofleet.log" ||
      { say "no clear error for the missing component:"; cat "$work/nofleet.log"; exit 1; }
    say "without the fleet: $(grep -m1 -o 'this hq was built without the fleet[^:]*' "$work/nofleet.log")"
    exit 0
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
    # Meson 1.0 prefixes ccache, when installed, to the compiler it finds,
    # and its CMake module then fails to configure (CMAKE_CXX_COMPILER not
    # set): the compiler is named without it.
    export CXX=${CXX:-c++}
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
    # Nor, unless asked, its Python module or man page: the library and
    # tool only.
    meson introspect "$work/b" --targets >"$work/targets.json"
    extra=$(/usr/bin/python3 -c 'import json,sys
print(" ".join(t["name"] for t in json.load(open(sys.argv[1]))
               if t["name"] == "hq.1" or t["name"].startswith("_hq")
               or t["type"] == "shared module"))' "$work/targets.json")
    if [ -n "$extra" ]; then
      say "hq as a subproject builds more than its library and tool: $extra"
      exit 1
    fi
    if grep -qi 'catch2\|sqlite' "$work/setup.log"; then
      say "hq as a subproject looked for test dependencies:"
      cat "$work/setup.log"
      exit 1
    fi
    ninja -C "$work/b" consumer >"$work/build.log" 2>&1 ||
      { cat "$work/build.log"; exit 1; }
    check_shared_lib "$(readlink -f "$work/b/subprojects/hq/libhq.so")"
    ldd "$work/b/consumer" >"$work/ldd.txt"
    grep -q 'libhq.so.0 =>' "$work/ldd.txt" ||
      { say "consumer is not linked to libhq.so.0"; cat "$work/ldd.txt"; exit 1; }
    "$work/b/consumer" "$work/db"
    # A subproject leaves the fleet out: its tool says so when asked for
    # `hq fleet`, as a usage error naming the packages to install.
    ninja -C "$work/b" subprojects/hq/tools/hq >>"$work/build.log" 2>&1 ||
      { cat "$work/build.log"; exit 1; }
    code=0
    "$work/b/subprojects/hq/tools/hq" fleet status --zookeeper=127.0.0.1:1 \
      >"$work/fleet.out" 2>"$work/fleet.err" || code=$?
    if [ "$code" != 2 ] || ! grep -q 'built without the fleet' "$work/fleet.err" ||
       ! grep -q 'libzookeeper-mt-dev libnats-dev' "$work/fleet.err"; then
      say "hq fleet in a tool without the fleet: exit $code"
      cat "$work/fleet.err"
      exit 1
    fi
    say "$(head -1 "$work/fleet.err")"
    exit 0
    ;;
  shared)
    # As README.md's install, with -Ddefault_library=shared; unoptimized and
    # without the Python module, whose build is python/'s and not the
    # library's. Everything else the install has is built: the tool links
    # libhq.so.0 as users' programs do, and must find all it needs there.
    meson setup "$work/b" "$src" --buildtype=plain --prefix=/usr/local \
      -Ddefault_library=shared -Dtests=false -Dpython=disabled \
      >"$work/setup.log" 2>&1 || { cat "$work/setup.log"; exit 1; }
    ninja -C "$work/b" >"$work/build.log" 2>&1 ||
      { cat "$work/build.log"; exit 1; }
    meson install -C "$work/b" --no-rebuild --destdir "$work/stage" \
      >"$work/install.log" 2>&1 || { cat "$work/install.log"; exit 1; }
    root=$work/stage/usr/local
    shared_libdir=$(meson introspect "$work/b" --buildoptions |
      /usr/bin/python3 -c 'import json,sys; print({x["name"]:x["value"] for x in json.load(sys.stdin)}["libdir"])')
    [[ $shared_libdir = /* ]] || shared_libdir=/usr/local/$shared_libdir
    lib=$work/stage$shared_libdir/libhq.so.0
    [ -e "$lib" ] || { say "no $lib in the install:"; cat "$work/install.log"; exit 1; }
    check_shared_lib "$(readlink -f "$lib")"
    tool=$root/bin/hq
    [ -x "$tool" ] || { say "no bin/hq in the install"; cat "$work/install.log"; exit 1; }
    # The installed tool, on the installed library (an install has no
    # RPATH into a build tree).
    export LD_LIBRARY_PATH=$work/stage$shared_libdir
    ldd "$tool" >"$work/ldd.txt"
    grep -q "libhq.so.0 => $work/stage" "$work/ldd.txt" ||
      { say "the installed hq does not use the staged libhq.so.0"; cat "$work/ldd.txt"; exit 1; }
    say "$("$tool" --version | head -1)"
    "$tool" --db="$work/db" create pages
    printf 'a\nb\nc\n' | "$tool" --db="$work/db" put pages
    "$tool" --db="$work/db" --json ls >"$work/ls.json"
    /usr/bin/python3 -c 'import json,sys; q=json.load(open(sys.argv[1]))["queues"]; assert [x["name"] for x in q] == ["pages"], q' \
      "$work/ls.json"
    "$tool" --db="$work/db" scan pages >"$work/scan.txt"
    [ "$(grep -c . "$work/scan.txt")" -ge 3 ] ||
      { say "scan of the 3 messages put:"; cat "$work/scan.txt"; exit 1; }
    exit 0
    ;;
  python)
    stage
    init=$(find "$work/stage" -path '*/hq/__init__.py')
    [ -n "$init" ] || { say "no hq/__init__.py in the install"; cat "$work/install.log"; exit 1; }
    staged_site=${init%/hq/__init__.py}
    site=${staged_site#"$work/stage"}
    say "the package is installed in $site"
    # The directory is one the interpreter searches by itself.
    /usr/bin/python3 -c 'import sys; sys.exit(sys.argv[1] not in sys.path)' "$site" ||
      { say "$site is not on /usr/bin/python3's sys.path:"
        /usr/bin/python3 -c 'import sys; print(sys.path)'; exit 1; }
    version=$(meson introspect "$build" --projectinfo |
      /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')
    cd "$work"
    PYTHONPATH=$staged_site /usr/bin/python3 -c '
import sys
import hq
site, version, db_dir = sys.argv[1:]
assert hq.__file__.startswith(site + "/"), hq.__file__
assert hq._hq.__file__.startswith(site + "/"), hq._hq.__file__
assert hq.__version__ == version, (hq.__version__, version)
with hq.Db.open(db_dir) as db:
    db.create_queue("pages").put(b"https://example.com/")
    assert [m.payload for m in db.open_queue("pages").scan()] == [
        b"https://example.com/"]
print("run.sh python: import hq", hq.__version__, "from", hq.__file__)
' "$staged_site" "$version" "$work/db"
    exit 0
    ;;
  *)
    echo "usage: run.sh pkg-config|cmake|fleet-pkg-config|fleet-cmake|subproject|shared|python SRC BUILD" >&2
    exit 2
    ;;
esac
"$work/consumer" "$work/db"
