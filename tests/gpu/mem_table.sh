#!/usr/bin/env bash
# mem_table.sh LAUNCHER N PROGRAM TABLE: mem_gpu_test as N ranks of hidet-nccl-run with a
# tuning table (HIDET_NCCL_TUNE_FILE) that takes fewer views than the built-in one:
#   window    windows and plain memory: AUTO makes one sibling (no buffer view)
#   plain     plain memory only: AUTO makes one split to check the ranks' tables and keeps none
#   mismatch  rank 0 the window table, the others the plain one: AUTO is refused on every rank
#             ("read different tuning tables"), at once, and the communicator still works
# Tables that leave all_gather and reduce_scatter plain keep them exact.
set -eu
dir=$(mktemp -d "${TMPDIR:-/tmp}/hidet_nccl_tables.XXXXXX")
trap 'rm -rf "$dir"' EXIT
printf '# windows and plain memory only\nall_reduce * 4194304 window\nall_reduce * max plain\n' >"$dir/window"
printf '# plain memory only\nall_reduce * max plain\n' >"$dir/plain"
case ${4:-} in
    window | plain) # ids handed out by the first AUTO registration: the sibling, or the checking split
        HIDET_NCCL_TUNE_FILE=$dir/$4 MEM_GPU_TEST_SIBLINGS=1 "$1" -n "$2" --tag-output "$3" ;;
    mismatch)
        TABLES=$dir MEM_GPU_TEST_MISMATCH=1 "$1" -n "$2" --tag-output bash -c \
            'export HIDET_NCCL_TUNE_FILE=$TABLES/$([ "$HIDET_NCCL_RANK" = 0 ] && echo window || echo plain); exec "$0"' \
            "$3" ;;
    *) echo "usage: $0 LAUNCHER N PROGRAM window|plain|mismatch" >&2; exit 2 ;;
esac
