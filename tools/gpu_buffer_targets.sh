#!/usr/bin/env bash
# Issue 17's measurement on one host, from a bundle of tools/make_gpu_bundle.sh (where it is
# buffer_targets.sh): hidet-nccl-bench --modes for all_reduce, all_gather and reduce_scatter in
# float32 and bfloat16, 8 B .. 4 GiB, the library on its memory against raw NCCL plain,
# registered and window; then tools/check_buffer_targets.py on the tables.
#   buffer_targets.sh [NGPUS [RUN...]]     RUN: all_reduce_float32 ... reduce_scatter_bfloat16
# With TUNE=1 each run first measures a table (--tune) and the library then runs with it
# (HIDET_NCCL_TUNE_FILE); else with the table built in; MAX_BYTES (4G) the largest size.
# Output in $OUT (else ./buffer_targets):
# buffers.txt, tune.txt, targets.txt. Every run has a deadline (RUN_TIMEOUT, 300 s).
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
for run in $runs; do
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
python3 "$here/check_buffer_targets.py" "$out/buffers.txt" >"$out/targets.txt" 2>&1
echo "check: exit $?" >>"$out/targets.txt"
grep -v '^  ' "$out/targets.txt"
