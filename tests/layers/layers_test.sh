#!/usr/bin/env bash
# The layer check on the tree as built, then on trees that break it on purpose (an include of a
# higher layer, a call up into a higher layer and back, two tool files calling each other, a tool
# on a core internal or on another tool, tests' headers in a circle), which it must refuse.
set -uo pipefail
check=$1 archive=$2 archive_mpi=$3
shift 3
objects=("$@") # the tools' objects, each under its target's _objs/ folder
fails=0
expect() { # description, expected exit status, command...
    local what=$1 want=$2
    shift 2
    local out
    out=$("$@" 2>&1)
    local got=$?
    if [ "$got" -eq "$want" ]; then echo "ok: $what"; else echo "FAILED: $what (exit $got, want $want)"; echo "$out"; fails=$((fails + 1)); fi
    LAST=$out
}
named() { # what the last run must have said, why
    echo "$LAST" | grep -qF -- "$1" || { echo "FAILED: $2 is not named"; echo "$LAST"; fails=$((fails + 1)); }
}

expect "the tree has no circle, no upward use, no tool on an internal" 0 python3 "$check" . "$archive" "$archive_mpi" "${objects[@]}"
echo "$LAST" | tail -1

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -rL core include bootstrap_* tools examples tests "$tmp"/

# A base file that includes a collective's header: upward, and a circle with the collective.
echo '#include "core/coll/collective_int.h"' >>"$tmp/core/base/status.c"
expect "an include of a higher layer is refused" 1 python3 "$check" "$tmp" "$archive" "$archive_mpi" "${objects[@]}"
named "includes: core/base/status.c -> core/coll/collective.c: core/base is below core/coll" "the upward include"
sed -i '$d' "$tmp/core/base/status.c"

# A source at core/'s top level.
touch "$tmp/core/stray.c"
expect "a source outside the layer folders is refused" 1 python3 "$check" "$tmp" "$archive" "$archive_mpi" "${objects[@]}"
rm "$tmp/core/stray.c"

# An archive whose registry calls into a collective and back: a circle, and comm using coll.
cat >"$tmp/registry.c" <<'C'
void hidet_nccl__coll_x(void);
void hidet_nccl__registry_x(void) { hidet_nccl__coll_x(); }
C
cat >"$tmp/collective.c" <<'C'
void hidet_nccl__registry_x(void);
void hidet_nccl__coll_x(void) { hidet_nccl__registry_x(); }
C
(cd "$tmp" && cc -c registry.c collective.c && ar rc bad.a registry.o collective.o)
expect "a call circle across layers is refused" 1 python3 "$check" "$tmp" "$tmp/bad.a" "${objects[@]}"
named "calls: circle between files core/coll/collective.c, core/comm/registry.c" "the circle"
named "core/comm/registry.c -> core/coll/collective.c (hidet_nccl__coll_x): core/comm is below core/coll" "the upward call"

# Two files of the bench that call each other (as the bench's parts and its main once did).
planted=$tmp/objs/tools/bench/_objs/hidet-nccl-bench
mkdir -p "$planted"
echo 'void planted_b(void); void planted_a(void) { planted_b(); }' >"$tmp/tools/bench/planted_a.c"
echo 'void planted_a(void); void planted_b(void) { planted_a(); }' >"$tmp/tools/bench/planted_b.c"
cc -c "$tmp/tools/bench/planted_a.c" -o "$planted/planted_a.o" && cc -c "$tmp/tools/bench/planted_b.c" -o "$planted/planted_b.o"
expect "a call circle between a tool's files is refused" 1 python3 "$check" "$tmp" "$archive" "$archive_mpi" "${objects[@]}" "$planted"/planted_*.o
named "calls: circle between files tools/bench/planted_a.c, tools/bench/planted_b.c" "the tools' circle"
# The same sources without their objects: the call graph cannot see them, which is an error.
expect "a tool's source without its object is refused" 1 python3 "$check" "$tmp" "$archive" "$archive_mpi" "${objects[@]}"
named "tools/bench/planted_a.c: no object of it was given" "the source without an object"
rm "$tmp"/tools/bench/planted_*.c

# A tool that includes a core internal, and one that includes another tool's header.
echo '#include "core/comm/registry_int.h"' >>"$tmp/tools/bench/bench_options.c"
echo '#include "tools/trace/trace_read.h"' >>"$tmp/tools/bench/bench.h"
expect "a tool on a core internal or on another tool is refused" 1 python3 "$check" "$tmp" "$archive" "$archive_mpi" "${objects[@]}"
named "includes: tools/bench/bench_options.c -> core/comm/registry.c: tools/bench may use only include/hidet_nccl, core/base/number.h, tools/support" "the tool's include of a core internal"
named "includes: tools/bench/bench.h -> tools/trace/trace_read.c: tools/bench may use only" "the tool's include of another tool"
sed -i '$d' "$tmp/tools/bench/bench_options.c" "$tmp/tools/bench/bench.h"

# A tool that calls a library internal (the public API only; number.h is header-only).
planted=$tmp/objs/tools/dev/_objs/planted
mkdir -p "$planted"
echo 'void hidet_nccl__fail(void); void planted_c(void) { hidet_nccl__fail(); }' >"$tmp/tools/dev/planted_c.c"
cc -c "$tmp/tools/dev/planted_c.c" -o "$planted/planted_c.o"
expect "a tool's call of a library internal is refused" 1 python3 "$check" "$tmp" "$archive" "$archive_mpi" "${objects[@]}" "$planted/planted_c.o"
named "calls: tools/dev/planted_c.c -> core/base/status.c (hidet_nccl__fail): tools/dev may use only" "the tool's call of an internal"
rm "$tmp/tools/dev/planted_c.c"

# Two of the tests' helpers that include each other.
echo '#include "tests/socket_peers.h"' >>"$tmp/tests/cunit_runner.c"
echo '#include "tests/cunit_runner.h"' >>"$tmp/tests/socket_peers.c"
expect "an include circle in the tests' helpers is refused" 1 python3 "$check" "$tmp" "$archive" "$archive_mpi" "${objects[@]}"
named "includes: circle between files tests/cunit_runner.c, tests/socket_peers.c" "the tests' circle"
sed -i '$d' "$tmp/tests/cunit_runner.c" "$tmp/tests/socket_peers.c"

# The tree is whole again: the check passes on the copy.
expect "the copy, mended, passes" 0 python3 "$check" "$tmp" "$archive" "$archive_mpi" "${objects[@]}"

[ "$fails" -eq 0 ] && echo "all passed" || echo "$fails failed"
exit $((fails > 0))
