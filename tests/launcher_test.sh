#!/usr/bin/env bash
# Tests of hidet-nccl-run on the CPU, and of hidet-nccl-bench's options (refused before MPI or
# CUDA is touched, so on this machine without a GPU): launcher_test.sh LAUNCHER CHILD BENCH
# Ends with "N passed, N failed".
set -u
run=$(realpath "$1")
child=$(realpath "$2")
bench=$(realpath "$3")
tmp=${TEST_TMPDIR:-$(mktemp -d)}/launcher
rm -rf "$tmp"
mkdir -p "$tmp"
passed=0
failed=0
check() { # description, then a command that must succeed
    local what=$1
    shift
    if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $what"; fi
}
rdv=$tmp/rdv
mkdir -p "$rdv"
rdv_empty() { [ -z "$(ls -A "$rdv")" ]; }
pids_gone() { # every pid recorded in $1 is gone
    local f
    for f in "$1"/pid.*; do
        [ -e "$f" ] || return 1
        if kill -0 "$(cat "$f")" 2>/dev/null; then echo "pid $(cat "$f") ($f) still alive"; return 1; fi
    done
}

# One node: every rank gets the same fresh job secret (64 hex digits), another for every job; a
# secret in the environment is passed on as it is.
secret_of() { "$run" -n 2 --tag-output sh -c 'echo "s=$HIDET_NCCL_JOB_SECRET f=$HIDET_NCCL_JOB_SECRET_FILE"'; }
first=$(secret_of)
second=$(secret_of)
check "one node: both ranks hold one secret of 64 hex digits" \
    [ "$(grep -oE 's=[0-9a-f]{64} ' <<<"$first" | sort -u | wc -l)" -eq 1 ] && [ "$(grep -c 's=' <<<"$first")" -eq 2 ]
check "one node: another job, another secret" [ "$(grep -oE 's=[0-9a-f]+' <<<"$first" | head -1)" != \
    "$(grep -oE 's=[0-9a-f]+' <<<"$second" | head -1)" ]
check "a secret from the environment is kept" grep -q "s=mine-of-sixteen-bytes-or-more f=" \
    <(HIDET_NCCL_JOB_SECRET=mine-of-sixteen-bytes-or-more secret_of)

# 1, 4 and 16 ranks bootstrap over the file backend; every rank has rank 0's id bytes.
for n in 1 4 16; do
    out=$tmp/boot$n.txt
    "$run" -n "$n" --rendezvous-dir "$rdv" "$child" bootstrap >"$out" 2>"$tmp/boot$n.err"
    rc=$?
    check "$n ranks: exit 0 (got $rc)" [ "$rc" -eq 0 ]
    check "$n ranks: $n lines" [ "$(grep -c '^rank ' "$out")" -eq "$n" ]
    check "$n ranks: one id" [ "$(awk '{print $6}' "$out" | sort -u | wc -l)" -eq 1 ]
    check "$n ranks: ranks 0..n-1" [ "$(awk '{print $2}' "$out" | sort -n | tr '\n' ' ')" = "$(seq -s ' ' 0 $((n - 1))) " ]
    check "$n ranks: id is 128 bytes" [ "$(awk 'NR==1{print length($6)}' "$out")" -eq 256 ]
    check "$n ranks: rendezvous directory removed" rdv_empty
done

# A rank that exits 3: the launcher exits 3 within the grace period, the others are gone.
mkdir -p "$tmp/p3"
start=$(date +%s)
PIDFILE_DIR=$tmp/p3 timeout 60 "$run" -n 4 --grace 2 --rendezvous-dir "$rdv" "$child" exit 2 3 2>"$tmp/exit3.err"
rc=$?
took=$(($(date +%s) - start))
check "exit 3: launcher exits 3 (got $rc)" [ "$rc" -eq 3 ]
check "exit 3: within the grace period (${took}s)" [ "$took" -le 4 ]
check "exit 3: summary names rank 2" grep -q "rank 2 exited with code 3" "$tmp/exit3.err"
check "exit 3: no rank left" pids_gone "$tmp/p3"
check "exit 3: rendezvous directory removed" rdv_empty

# A rank killed by SIGKILL: 137.
mkdir -p "$tmp/p9"
PIDFILE_DIR=$tmp/p9 timeout 60 "$run" -n 3 --grace 2 --rendezvous-dir "$rdv" "$child" kill 1 2>"$tmp/kill.err"
rc=$?
check "SIGKILL: launcher exits 137 (got $rc)" [ "$rc" -eq 137 ]
check "SIGKILL: summary names the signal" grep -q "rank 1 was killed by signal 9" "$tmp/kill.err"
check "SIGKILL: no rank left" pids_gone "$tmp/p9"
check "SIGKILL: rendezvous directory removed" rdv_empty

# --keep-going: rank 1 is killed, the others run to their end; the exit code is still 137.
start=$(date +%s%N)
timeout 60 "$run" -n 4 --grace 2 --keep-going --rendezvous-dir "$rdv" "$child" finish 1 >"$tmp/keep.out" 2>"$tmp/keep.err"
rc=$?
took_ms=$((($(date +%s%N) - start) / 1000000))
check "--keep-going: launcher exits 137 (got $rc)" [ "$rc" -eq 137 ]
check "--keep-going: the 3 other ranks finished" [ "$(grep -c 'finished$' "$tmp/keep.out")" -eq 3 ]
check "--keep-going: it waited for them (${took_ms} ms)" [ "$took_ms" -ge 900 ]
check "--keep-going: summary says so" grep -q "left to finish (--keep-going)" "$tmp/keep.err"
check "--keep-going: rendezvous directory removed" rdv_empty

# SIGINT to the launcher stops every rank.
mkdir -p "$tmp/pint"
PIDFILE_DIR=$tmp/pint "$run" -n 4 --grace 2 --rendezvous-dir "$rdv" "$child" sleep 2>"$tmp/int.err" &
launcher=$!
for _ in $(seq 100); do [ "$(ls "$tmp/pint" | wc -l)" -eq 4 ] && break; sleep 0.1; done
kill -INT "$launcher"
wait "$launcher"
rc=$?
check "SIGINT: launcher exits 130 (got $rc)" [ "$rc" -eq 130 ]
check "SIGINT: no rank left" pids_gone "$tmp/pint"
check "SIGINT: rendezvous directory removed" rdv_empty

# --tag-output and --output-dir.
"$run" -n 3 --tag-output --rendezvous-dir "$rdv" "$child" lines >"$tmp/tag.out" 2>"$tmp/tag.err"
check "tag-output: 9 tagged stdout lines" [ "$(grep -cE '^\[[0-2]\] (first|second|third) line$' "$tmp/tag.out")" -eq 9 ]
check "tag-output: 3 tagged stderr lines" [ "$(grep -cE '^\[[0-2]\] an error line$' "$tmp/tag.err")" -eq 3 ]
check "tag-output: rank 1's lines in order" [ "$(grep '^\[1\]' "$tmp/tag.out" | tr '\n' '|')" = "[1] first line|[1] second line|[1] third line|" ]
# A line longer than the launcher's 4096-byte buffer keeps one tag (issue 27, item 23): lines of
# 5000, 20000 and 100000 bytes from 4 ranks at once, on stdout and stderr, into two files and
# into one (2>&1), then into the ranks' logs; no other line lands inside a long one.
long_lines='for n in 5000 20000 100000; do head -c $n /dev/zero | tr "\0" x; echo; echo "short $HIDET_NCCL_RANK" >&2
    head -c $n /dev/zero | tr "\0" y >&2; echo >&2; echo "short $HIDET_NCCL_RANK"; done'
whole_lines() { # file, lines expected of each rank, the ranks: every line one tag and one whole line
    local file=$1 want=$2
    shift 2
    awk -v ranks="$*" -v want="$want" '
        { if (!match($0, /^\[[0-9]+\] /)) { print "untagged: " substr($0, 1, 40); bad = 1; next }
          r = substr($0, 2, RLENGTH - 3); body = substr($0, RLENGTH + 1); n[r]++
          if (body != "short " r && body !~ /^(x+|y+)$/) { print "mixed: " substr($0, 1, 40); bad = 1 }
          else if (body ~ /^[xy]/ && length(body) != 5000 && length(body) != 20000 && length(body) != 100000) {
              print "rank " r ": a line of " length(body) " bytes"; bad = 1 } }
        END { k = split(ranks, list, " ")
              for (i = 1; i <= k; i++)
                  if (n[list[i]] != want) { print "rank " list[i] ": " n[list[i]] + 0 " lines"; bad = 1 }
              exit bad }' "$file"
}
"$run" -n 4 --tag-output --rendezvous-dir "$rdv" sh -c "$long_lines" >"$tmp/long.out" 2>"$tmp/long.err"
check "tag-output: long stdout lines whole" whole_lines "$tmp/long.out" 6 0 1 2 3
check "tag-output: long stderr lines whole" whole_lines "$tmp/long.err" 6 0 1 2 3
"$run" -n 4 --tag-output --rendezvous-dir "$rdv" sh -c "$long_lines" >"$tmp/long2.out" 2>&1
check "tag-output: long lines whole on one file (2>&1)" whole_lines "$tmp/long2.out" 12 0 1 2 3
"$run" -n 2 --tag-output --output-dir "$tmp/longlogs" --rendezvous-dir "$rdv" sh -c "$long_lines"
for r in 0 1; do
    check "tag-output: long lines whole in rank.$r.log" whole_lines "$tmp/longlogs/rank.$r.log" 12 $r
done
"$run" -n 2 --output-dir "$tmp/logs" --rendezvous-dir "$rdv" "$child" lines >"$tmp/od.out" 2>&1
check "output-dir: nothing on the terminal" [ ! -s "$tmp/od.out" ]
for r in 0 1; do
    check "output-dir: rank.$r.log has 4 lines" [ "$(wc -l <"$tmp/logs/rank.$r.log")" -eq 4 ]
done
check "rendezvous directory removed" rdv_empty

# --trace-on-failure: the others get SIGUSR1 and the time to write their dump (here a shell
# that writes one on SIGUSR1), then the usual stop; the dump is in before the stop.
tdir=$tmp/traces
start=$(date +%s)
"$run" -n 3 --trace-on-failure --trace-dir "$tdir" --trace-wait 20 --rendezvous-dir "$rdv" sh -c '
    [ "$HIDET_NCCL_RANK" = 1 ] && sleep 1 && exit 5
    trap "echo dump > \$HIDET_NCCL_TRACE_DIR/hidet-nccl-trace.\$HIDET_NCCL_RANK.jsonl; exit 7" USR1
    sleep 60 & wait' >"$tmp/trace.out" 2>"$tmp/trace.err"
rc=$? took=$(($(date +%s) - start))
check "trace-on-failure: exit 5 (got $rc)" [ "$rc" -eq 5 ]
check "trace-on-failure: both others dumped" test -s "$tdir/hidet-nccl-trace.0.jsonl" -a -s "$tdir/hidet-nccl-trace.2.jsonl"
check "trace-on-failure: stopped once the dumps were in (${took}s)" [ "$took" -le 8 ]
check "trace-on-failure: says where to look" grep -q "hidet-nccl-trace $tdir" "$tmp/trace.err"
"$run" -n 1 --trace-dir "$tmp/traces2" --rendezvous-dir "$rdv" sh -c 'echo "$HIDET_NCCL_TRACE_DIR"' >"$tmp/tdir.out"
check "trace-dir: made and exported" test -d "$tmp/traces2" -a "$(cat "$tmp/tdir.out")" = "$tmp/traces2"
ln -s "$tmp/traces2" "$tmp/traces3"
"$run" -n 1 --trace-dir "$tmp/traces3" true 2>/dev/null
check "trace-dir: a symlink refused" [ $? -eq 2 ]

# Usage errors: exit 2 with a usage message.
"$run" --no-such-option "$child" >/dev/null 2>"$tmp/u1.err"
check "unknown option: exit 2" [ $? -eq 2 ]
check "unknown option: usage" grep -q "usage: hidet-nccl-run" "$tmp/u1.err"
"$run" -n 2 >/dev/null 2>"$tmp/u2.err"
check "missing program: exit 2" [ $? -eq 2 ]
check "missing program: says so" grep -q "no program to run" "$tmp/u2.err"
"$run" -n 0 "$child" >/dev/null 2>&1
check "-n 0: exit 2" [ $? -eq 2 ]
"$run" --help >"$tmp/help.out"
check "--help: exit 0 and usage" grep -q "^usage: hidet-nccl-run" "$tmp/help.out"
check "--version" grep -q "^hidet-nccl-run [0-9]" <("$run" --version)
# Numbers by the one grammar (core/base/number.h; issue 27, item 3): digits only, then the
# range; refused at once with exit 2 and a message naming the option, the value and the range.
refused() { # program, expected message, arguments...
    local prog=$1 want=$2
    shift 2
    timeout -s KILL 20 "$prog" "$@" >"$tmp/refused.out" 2>&1
    local rc=$?
    [ "$rc" -eq 2 ] && grep -qF -- "$want" "$tmp/refused.out" && return 0
    echo "rc $rc for $*:"
    cat "$tmp/refused.out"
    return 1
}
check "-n ' 2'" refused "$run" "-n ' 2' is not a whole number in 1 .. 4096" -n ' 2' /bin/true
check "-n 0x2" refused "$run" "-n '0x2' is not a whole number in 1 .. 4096" -n 0x2 /bin/true
check "-n 5000" refused "$run" "-n '5000' is out of range: a whole number in 1 .. 4096" -n 5000 /bin/true
check "--timeout 1e3" refused "$run" "--timeout '1e3' is not a number of seconds in (0, 10000000]" --timeout 1e3 \
    -n 1 /bin/true
check "--timeout ''" refused "$run" "--timeout '' is not a number of seconds" --timeout '' -n 1 /bin/true
check "--grace ' 1'" refused "$run" "--grace ' 1' is not a number of seconds" --grace ' 1' -n 1 /bin/true
check "--grace 0" refused "$run" "--grace '0' is out of range: seconds in (0, 10000000]" --grace 0 -n 1 /bin/true
check "--trace-wait .5" refused "$run" "--trace-wait '.5' is not a number of seconds" --trace-wait .5 -n 1 /bin/true
"$run" -n 1 --timeout 0.5 --grace 1.25 --rendezvous-dir "$rdv" /bin/true
check "--timeout 0.5 --grace 1.25: taken" [ $? -eq 0 ]
# The bench's: sizes are digits and at most one suffix K, M or G (no fraction: 1536K, not
# 1.5M); this machine has no GPU, so a value let through would end in a CUDA error, not exit 2.
size_range="is not a size in 1 .. 1024G bytes"
for v in 1X 1.5M '' -1 ' 1' 1KK K 0 2048G; do
    check "bench -b '$v'" refused "$bench" "-b '$v' $size_range" -b "$v"
done
check "bench -e 1M1" refused "$bench" "-e '1M1' $size_range" -e 1M1
check "bench -b 2M -e 1M" refused "$bench" "-b 2097152 bytes is more than -e 1048576 bytes" -b 2M -e 1M
check "bench -n x" refused "$bench" "-n 'x' is not a whole number in 1 .. 1000000" -n x
check "bench -n 0" refused "$bench" "-n '0' is not a whole number in 1 .. 1000000" -n 0
check "bench -w ' 5'" refused "$bench" "-w ' 5' is not a whole number in 0 .. 1000000" -w ' 5'
check "bench -c 2" refused "$bench" "-c '2' is not a whole number in 0 .. 1" -c 2
check "bench -r 1e3" refused "$bench" "-r '1e3' is not a whole number in 1 .. 1000" -r 1e3
check "bench -f 1" refused "$bench" "-f '1' is not a factor in (1, 1024]" -f 1
check "bench -f 2x" refused "$bench" "-f '2x' is not a factor in (1, 1024]" -f 2x
# Good values pass the parser: -h after them prints the usage and exits 0.
timeout -s KILL 20 "$bench" -b 8 -e 64k -b 1K -e 1G -f 1.5 -n 3 -w 0 -c 0 -r 1 -h >/dev/null 2>"$tmp/bench_h.err"
rc=$?
check "bench: good values taken (exit $rc)" [ "$rc" -eq 0 ]
check "bench: good values taken, then the usage" grep -q "^usage:" "$tmp/bench_h.err"
# A program that does not exist: 127, like a shell.
"$run" -n 2 --rendezvous-dir "$rdv" /no/such/program 2>/dev/null
check "missing executable: exit 127" [ $? -eq 127 ]
check "rendezvous directory removed at the end" rdv_empty

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
