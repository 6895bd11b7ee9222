#!/usr/bin/env bash
# tools/check_buffer_targets.py on hidet-nccl-bench -m tables: one that meets issue 17's
# targets (exit 0), the same with one size below each limit (exit 1, each miss named), and
# the 2 x H200 run of docs/data (six tables, exit 1: its small sizes miss).
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
python3 "$check" /dev/null >/dev/null 2>&1
[ $? -eq 2 ] || fail "no table: exit 2"
echo "check_buffer_targets_test: OK"
