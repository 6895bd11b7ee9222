#!/usr/bin/env bash
# Issues 17 and 29's measurements on one host, from a bundle of tools/gpu/make_gpu_bundle.sh (where it
# is buffer_targets.sh): hidet-nccl-bench --modes, the library on its memory against raw NCCL
# plain, registered and window (and, for all_reduce, the library's own kernels), 8 B .. 4 GiB;
# then tools/gpu/check_buffer_targets.py on the tables.
#   buffer_targets.sh [NGPUS [RUN...]]     RUN: all_reduce_float32 ... reduce_scatter_bfloat16, own
# With TUNE=1 each run first measures a table (--tune) and the library then runs with it
# (HIDET_NCCL_TUNE_FILE); else with the table built in; MAX_BYTES (4G) the largest size.
# `own` is issue 29 in one call: all_reduce float32 and bfloat16 each tuned (the own kernels
# among the modes), run with their table, and at 8 bytes in CUDA graphs (-G) with it; checked
# with --own (>= 1.3 x the best raw mode at 8 KiB-1 MiB, >= 0.98 x everywhere, 8 B <= 3.5 us,
# <= 2.5 us in a graph) into targets_own.txt.
# Output in $OUT (else ./buffer_targets):
# buffers.txt, tune.txt, targets.txt (own.txt, targets_own.txt). Every run has a deadline
# (RUN_TIMEOUT, 300 s).
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=$here/bin
out=${OUT:-$PWD/buffer_targets}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
n=${1:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')}
shift $(($# > 0 ? 1 : 0))
runs=${*:-all_reduce_float32 all_reduce_bfloat16 all_gather_float32 all_gather_bfloat16 reduce_scatter_float32 reduce_scatter_bfloat16}
bench() { # label args...
    local label=$1
    shift
    echo "=== $label: hidet-nccl-bench --modes $* ($n ranks)" >>"$out/buffers.txt"
    timeout "${RUN_TIMEOUT:-300}" "$bin/hidet-nccl-run" -n "$n" "$bin/hidet-nccl-bench" --modes "$@" >>"$out/buffers.txt" 2>&1 ||
        echo "=== $label: exit $?" >>"$out/buffers.txt"
}
own() { # issue 29: all_reduce tuned with the own kernels among the modes, then in graphs at 8 B
    local dtype table
    for dtype in float32 bfloat16; do
        table=$out/tune_own_$dtype.txt
        rm -f "$table"
        echo "=== tune own all_reduce $dtype ($n ranks)" >>"$out/own.txt"
        timeout "${RUN_TIMEOUT:-300}" "$bin/hidet-nccl-run" -n "$n" "$bin/hidet-nccl-bench" --modes -b 8 \
            -e "${MAX_BYTES:-4G}" -f 2 --reps 5 -c all_reduce -d "$dtype" --tune "$table" >>"$out/own.txt" 2>&1 ||
            echo "=== exit $?" >>"$out/own.txt"
        cat "$table" >>"$out/tune.txt"
        for graph in "" "-G 20"; do
            echo "=== own all_reduce $dtype, its table ${graph:+(graphs)} ($n ranks)" >>"$out/own.txt"
            # shellcheck disable=SC2086 # graph: no option or two words
            HIDET_NCCL_TUNE_FILE=$table timeout "${RUN_TIMEOUT:-300}" "$bin/hidet-nccl-run" -n "$n" \
                "$bin/hidet-nccl-bench" --modes -b 8 -e "$([ -n "$graph" ] && echo 8 || echo "${MAX_BYTES:-4G}")" \
                -f 2 --reps 5 -c all_reduce -d "$dtype" $graph >>"$out/own.txt" 2>&1 || echo "=== exit $?" >>"$out/own.txt"
        done
    done
    python3 "$here/check_buffer_targets.py" --own "$out/own.txt" >"$out/targets_own.txt" 2>&1
    echo "check --own: exit $?" >>"$out/targets_own.txt"
    grep -v '^  ' "$out/targets_own.txt"
}
for run in $runs; do
    if [ "$run" = own ]; then
        own
        continue
    fi
    coll=${run%_*} dtype=${run##*_}
    args=(-b 8 -e "${MAX_BYTES:-4G}" -f 2 --reps 5 -c "$coll" -d "$dtype")
    if [ "${TUNE:-0}" = 1 ]; then
        table=$out/tune_$run.txt
        rm -f "$table"
        bench "tune $run" "${args[@]}" --tune "$table"
        cat "$table" >>"$out/tune.txt"
        HIDET_NCCL_TUNE_FILE=$table bench "$run (its table)" "${args[@]}"
    else
        bench "$run (built-in table)" "${args[@]}"
    fi
done
[ -s "$out/buffers.txt" ] || exit 0 # own alone
python3 "$here/check_buffer_targets.py" "$out/buffers.txt" >"$out/targets.txt" 2>&1
echo "check: exit $?" >>"$out/targets.txt"
grep -v '^  ' "$out/targets.txt"
