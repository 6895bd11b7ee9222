#!/usr/bin/env bash
# Issue 37's comparison on a GPU machine: hidet-nccl-bench's same-run time ratio library/raw for
# every collective, from two builds of the library side by side (before and after a change), in
# alternating runs so that both see the same machine (and, with the issue's command, the after
# build with the flight recorder off: what the recorder costs; and its bench with --aa, raw NCCL
# in both columns: how far a ratio strays with no library at all); then the per-piece costs
# (coll_cost_probe parts) and the noise between two identical raw loops (coll_cost_probe aa).
#   tools/gpu/overhead_compare.sh BEFORE_BIN AFTER_BIN [ROUNDS]    (bundle: DIR/overhead_compare.sh)
# BIN: a folder holding hidet-nccl-bench (one with --samples: 4b74a86 or later) and coll_cost_probe
# (one of them hidet-nccl-run). Prints the runs, then
# tools/gpu/bench_ratios.py's medians over the rounds (it sits beside this script), and
# tools/gpu/bench_pairs.py's verdict from every timed run (the bench's --samples). KEEP=DIR keeps
# every run's output there (one file per build and settings), else they go with the script.
set -uo pipefail
before=${1:?BEFORE_BIN} after=${2:?AFTER_BIN} rounds=${3:-5}
here=$(cd "$(dirname "$0")" && pwd)
out=${KEEP:-$(mktemp -d)}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
bench() { # bin label args... (a label ending in -norec: the flight recorder off; in -aa: raw against raw)
    local bin=$1 label=$2 entries=${HIDET_NCCL_TRACE_ENTRIES:-} aa=()
    shift 2
    [[ $label == *-norec* ]] && entries=0
    [[ $label == *-aa* ]] && aa=(--aa)
    echo "## hidet-nccl-bench ($label): $*"
    HIDET_NCCL_TRACE_ENTRIES=$entries "$launcher" -n 1 "$bin/hidet-nccl-bench" -c all "${aa[@]}" "$@" \
        --samples "$out/$label.samples" |
        tee -a "$out/$label"
}
# The launcher starts each bench (one rank); it is not what is measured: AFTER_BIN's, else BEFORE_BIN's.
launcher=$after/hidet-nccl-run
[ -x "$launcher" ] || launcher=$before/hidet-nccl-run
for r in $(seq 1 "$rounds"); do
    if ((r % 2)); then order=(before after after-norec after-aa); else order=(after-aa after-norec after before); fi
    for which in "${order[@]}"; do
        bin=$before
        [ "$which" != before ] && bin=$after
        bench "$bin" "$which" -b 8 -e 2M -f 8 -n 200 -w 20 --reps 5
    done
done
for r in $(seq 1 "$rounds"); do
    if ((r % 2)); then order=(before after); else order=(after before); fi
    for which in "${order[@]}"; do
        bin=$before
        [ "$which" = after ] && bin=$after
        bench "$bin" "$which-long" -b 8 -e 2M -f 8 -n 1000 -w 50 --reps 9
    done
done
for which in before after; do
    bin=$before
    [ "$which" = after ] && bin=$after
    echo "## coll_cost_probe parts ($which)"
    "$bin/coll_cost_probe" parts
    echo "## coll_cost_probe 8 bytes, 200 calls ($which)"
    "$bin/coll_cost_probe"
done
echo "## coll_cost_probe aa (raw against raw: the noise)"
"$after/coll_cost_probe" aa
echo "## ratios: issue's command (-n 200 -w 20 --reps 5), $rounds runs each"
python3 "$here/bench_ratios.py" "$out/before" "$out/after" "$out/after-norec" "$out/after-aa"
echo "## ratios: longer (-n 1000 -w 50 --reps 9), $rounds runs each"
python3 "$here/bench_ratios.py" "$out/before-long" "$out/after-long"
echo "## every timed run: medians over run pairs (library run, raw run after it), all rounds pooled"
python3 "$here/bench_pairs.py" "$out/before.samples" "$out/after.samples" "$out/after-norec.samples" \
    "$out/after-aa.samples" "$out/before-long.samples" "$out/after-long.samples"
[ -n "${KEEP:-}" ] || rm -rf "$out"
