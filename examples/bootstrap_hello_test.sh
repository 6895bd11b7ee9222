#!/usr/bin/env bash
# The CPU-only example as a user runs it: 4 ranks under hidet-nccl-run, each told by rank 0.
#   bootstrap_hello_test.sh HIDET_NCCL_RUN BOOTSTRAP_HELLO
set -u
out=$("$1" -n 4 "$2" 2>&1)
rc=$?
echo "$out"
[ "$rc" -eq 0 ] || { echo "FAILED: exit $rc"; exit 1; }
[ "$(grep -c 'got "hello from rank 0 of 4"; 4 of the ranks run on this host' <<<"$out")" -eq 4 ] ||
    { echo "FAILED: not every rank got rank 0's message"; exit 1; }
[ "$(grep -oE '^rank [0-9]+ of 4' <<<"$out" | sort -u | wc -l)" -eq 4 ] || { echo "FAILED: ranks 0 .. 3"; exit 1; }
echo "passed"
