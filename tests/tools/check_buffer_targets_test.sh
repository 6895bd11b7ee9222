#!/usr/bin/env bash
# tools/gpu/check_buffer_targets.py on hidet-nccl-bench -m tables: one that meets issue 17's
# targets (exit 0), the same with one size below each limit (exit 1, each miss named), and
# the 2 x H200 run of docs/data (six tables, exit 1: its small sizes miss); then issue 29's
# (--own) on tables with the own kernels' column, a CUDA-graph table among them.
set -u
check=$1 data=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
table() { # rows: size best-ratio plain-ratio
    echo "# all_reduce"
    echo "#       size      type |   library raw plain raw buffer raw window |    best lib/best lib/plain"
    while read -r size rb rp; do
        printf '%12s   float32 |     1.000     1.000     1.000     1.000 |  window %7s %7s\n' "$size" "$rb" "$rp"
    done
    echo "# tuning table appended to x"
}
printf '8 0.990 1.000\n1048576 0.995 1.310\n4194304 1.000 1.400\n67108864 0.980 0.990\n' | table >"$tmp/good.txt"
python3 "$check" "$tmp/good.txt" >"$tmp/good.out" || fail "a table that meets the targets: $(cat "$tmp/good.out")"
grep -q "all_reduce float32: 4 sizes, worst 0.980 x best raw, 0.990 x raw plain: met" "$tmp/good.out" || fail "summary"
printf '8 0.979 1.000\n1048576 0.995 1.299\n67108864 0.990 0.989\n' | table >"$tmp/bad.txt"
python3 "$check" "$tmp/bad.txt" >"$tmp/bad.out" && fail "misses not seen"
grep -q "8 B: 0.979 x the best raw mode" "$tmp/bad.out" || fail "the best-mode miss: $(cat "$tmp/bad.out")"
grep -q "1048576 B: 1.299 x raw plain at 1-4 MiB" "$tmp/bad.out" || fail "the 1-4 MiB miss"
grep -q "67108864 B: 0.989 x raw plain (< 0.99)" "$tmp/bad.out" || fail "the plain miss"
grep -q "3 missed" "$tmp/bad.out" || fail "the count"
python3 "$check" "$data" >"$tmp/data.out" && fail "the 2 x H200 data meets every target?"
[ "$(grep -c ': 30 sizes' "$tmp/data.out")" -eq 6 ] || fail "six tables of 30 sizes: $(grep -v '^ ' "$tmp/data.out")"
# Issue 29's targets (--own) on tables with the own kernels' column: rows "size library best-ratio".
own_table() { # $1: a line before the table (a graph run's), then rows: size library-column lib/best
    echo "# library memory: 1 bytes from hidet_nccl_mem_alloc, registered AUTO in 1.0 ms (siblings made)"
    [ -n "$1" ] && echo "$1"
    echo "# all_reduce"
    echo "#       size      type |   library raw plain raw buffer raw window       own |    best lib/best lib/plain own/best"
    while read -r size lib rb; do
        printf '%12s   float32 | %9s     1.000     1.000     1.000     1.000 |     own %7s   1.000   1.000\n' \
            "$size" "$lib" "$rb"
    done
    echo "# tuning table appended to x"
}
printf '8 3.400 1.100\n8192 100.0 1.300\n1048576 200.0 1.350\n4294967296 300.0 0.980\n' | own_table "" >"$tmp/own.txt"
python3 "$check" --own "$tmp/own.txt" >"$tmp/own.out" || fail "issue 29's targets met: $(cat "$tmp/own.out")"
grep -q "all_reduce float32: 4 sizes, worst 0.980 x best raw, 1.300 at 8 KiB-1 MiB: met" "$tmp/own.out" ||
    fail "own summary: $(cat "$tmp/own.out")"
printf '8 3.600 1.100\n16384 100.0 1.290\n1048576 200.0 1.350\n2097152 300.0 0.970\n' | own_table "" >"$tmp/own_bad.txt"
printf '8 2.600 1.100\n' | own_table "# in CUDA graphs: every timing's calls captured in one graph, replayed 10 times" \
    >>"$tmp/own_bad.txt"
python3 "$check" --own "$tmp/own_bad.txt" >"$tmp/own_bad.out" && fail "own misses not seen"
grep -q "8 B: 3.60 us per call (> 3.5)" "$tmp/own_bad.out" || fail "the 8-byte miss: $(cat "$tmp/own_bad.out")"
grep -q "16384 B: 1.290 x the best raw mode at 8 KiB-1 MiB (< 1.3)" "$tmp/own_bad.out" || fail "the mid miss"
grep -q "2097152 B: 0.970 x the best raw mode (< 0.98)" "$tmp/own_bad.out" || fail "the floor miss"
grep -q "all_reduce float32 (CUDA graphs):.*8 B: 2.60 us per call (> 2.5 in a graph)" "$tmp/own_bad.out" ||
    fail "the graph's 8-byte miss: $(cat "$tmp/own_bad.out")"
python3 "$check" /dev/null >/dev/null 2>&1
[ $? -eq 2 ] || fail "no table: exit 2"
echo "check_buffer_targets_test: OK"
