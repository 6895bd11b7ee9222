#!/usr/bin/env bash
# mem_window_table.sh LAUNCHER N PROGRAM: mem_gpu_test as N ranks of hidet-nccl-run with a
# tuning table that takes windows and plain memory only: AUTO makes one sibling (no buffer
# view), and all_gather / reduce_scatter, which the table leaves plain, stay exact.
set -eu
table=$(mktemp "${TMPDIR:-/tmp}/hidet_nccl_table.XXXXXX")
trap 'rm -f "$table"' EXIT
printf '# windows and plain memory only\nall_reduce * 4194304 window\nall_reduce * max plain\n' >"$table"
HIDET_NCCL_TUNE_FILE=$table MEM_GPU_TEST_SIBLINGS=1 "$1" -n "$2" --tag-output "$3"
