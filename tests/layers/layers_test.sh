#!/usr/bin/env bash
# The layer check on the library as built, then on two trees that break it on purpose (an
# include of a higher layer, a call up into a higher layer and back), which it must refuse.
set -uo pipefail
check=$1 archive=$2 archive_mpi=$3
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

expect "the library has no circle and no upward use" 0 python3 "$check" . "$archive" "$archive_mpi"
echo "$LAST" | tail -1

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -rL core include bootstrap_* "$tmp"/

# A base file that includes a collective's header: upward, and a circle with the collective.
echo '#include "core/coll/collective_int.h"' >>"$tmp/core/base/status.c"
expect "an include of a higher layer is refused" 1 python3 "$check" "$tmp" "$archive" "$archive_mpi"
echo "$LAST" | grep -q "includes: core/base/status.c -> core/coll/collective.c: core/base is below core/coll" ||
    { echo "FAILED: the upward include is not named"; echo "$LAST"; fails=$((fails + 1)); }
sed -i '$d' "$tmp/core/base/status.c"

# A source at core/'s top level.
touch "$tmp/core/stray.c"
expect "a source outside the layer folders is refused" 1 python3 "$check" "$tmp" "$archive" "$archive_mpi"
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
expect "a call circle across layers is refused" 1 python3 "$check" "$tmp" "$tmp/bad.a"
echo "$LAST" | grep -q "calls: circle between files core/coll/collective.c, core/comm/registry.c" ||
    { echo "FAILED: the circle is not named"; echo "$LAST"; fails=$((fails + 1)); }
echo "$LAST" | grep -q "core/comm/registry.c -> core/coll/collective.c (hidet_nccl__coll_x): core/comm is below core/coll" ||
    { echo "FAILED: the upward call is not named"; echo "$LAST"; fails=$((fails + 1)); }

[ "$fails" -eq 0 ] && echo "all passed" || echo "$fails failed"
exit $((fails > 0))
