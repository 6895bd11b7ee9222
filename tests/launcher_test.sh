#!/usr/bin/env bash
# Tests of hidet-nccl-run on the CPU, and of hidet-nccl-bench's options (refused before CUDA or
# NCCL is touched, so on this machine without a GPU) and its libraries (no libmpi):
# launcher_test.sh LAUNCHER CHILD BENCH
# Ends with "N passed, N failed".
set -u
if [ -n "${TEST_SRCDIR:-}" ]; then . "$TEST_SRCDIR/$TEST_WORKSPACE/tests/wait_for.sh"; else . "$(dirname "$(realpath "$0")")/wait_for.sh"; fi
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
    [ "$(grep -oE 's=[0-9a-f]{64} ' <<<"$first" | sort -u | wc -l)" -eq 1 -a "$(grep -c 's=' <<<"$first")" -eq 2 ]
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

# A rank that exits 3 once all 4 have started: the launcher exits 3, having stopped the others
# (they would sleep 600 s), the others are gone.
mkdir -p "$tmp/p3"
PIDFILE_DIR=$tmp/p3 timeout 60 "$run" -n 4 --grace 2 --rendezvous-dir "$rdv" "$child" exit 2 3 2>"$tmp/exit3.err"
rc=$?
check "exit 3: launcher exits 3 (got $rc)" [ "$rc" -eq 3 ]
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

# --keep-going: rank 1 is killed, the others (working on 1 s after its end) run to their end; the
# exit code is still 137.
mkdir -p "$tmp/pkeep"
start=$(date +%s%N)
PIDFILE_DIR=$tmp/pkeep timeout 60 "$run" -n 4 --grace 2 --keep-going --rendezvous-dir "$rdv" "$child" finish 1 \
    >"$tmp/keep.out" 2>"$tmp/keep.err"
rc=$?
took_ms=$((($(date +%s%N) - start) / 1000000))
check "--keep-going: launcher exits 137 (got $rc)" [ "$rc" -eq 137 ]
check "--keep-going: the 3 other ranks finished" [ "$(grep -c 'finished$' "$tmp/keep.out")" -eq 3 ]
check "--keep-going: it waited for them (${took_ms} ms)" [ "$took_ms" -ge 1000 ]
check "--keep-going: summary says so" grep -q "left to finish (--keep-going)" "$tmp/keep.err"
check "--keep-going: rendezvous directory removed" rdv_empty

# SIGINT to the launcher stops every rank.
mkdir -p "$tmp/pint"
PIDFILE_DIR=$tmp/pint "$run" -n 4 --grace 2 --rendezvous-dir "$rdv" "$child" sleep 2>"$tmp/int.err" &
launcher=$!
check "SIGINT: 4 ranks started" wait_for 60 "4 pid files in $tmp/pint" eval '[ "$(ls "$tmp/pint" | grep -c "^pid\.[0-9]*$")" -eq 4 ]'
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
# that writes one on SIGUSR1 as the library does: a temporary file renamed into place, so that
# the dump is whole when it appears), then the usual stop; the dump is in before the stop. Rank 1
# fails once the others are ready for SIGUSR1 (each says so with a file; 60 s at most).
tdir=$tmp/traces
mkdir -p "$tmp/tready"
start=$(date +%s)
READY=$tmp/tready "$run" -n 3 --trace-on-failure --trace-dir "$tdir" --trace-wait 20 --rendezvous-dir "$rdv" sh -c '
    if [ "$HIDET_NCCL_RANK" = 1 ]; then
        for _ in $(seq 1200); do [ -e "$READY/0" ] && [ -e "$READY/2" ] && break; sleep 0.05; done
        exit 5
    fi
    d=$HIDET_NCCL_TRACE_DIR f=hidet-nccl-trace.$HIDET_NCCL_RANK.jsonl
    trap "echo dump > \$d/.\$f.tmp && mv \$d/.\$f.tmp \$d/\$f; exit 7" USR1
    touch "$READY/$HIDET_NCCL_RANK"
    sleep 600 & wait' >"$tmp/trace.out" 2>"$tmp/trace.err"
rc=$? took=$(($(date +%s) - start))
check "trace-on-failure: exit 5 (got $rc)" [ "$rc" -eq 5 ]
check "trace-on-failure: both others dumped" test -s "$tdir/hidet-nccl-trace.0.jsonl" -a -s "$tdir/hidet-nccl-trace.2.jsonl"
check "trace-on-failure: stopped once the dumps were in, not after --trace-wait (${took}s)" [ "$took" -lt 20 ]
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
not_shown() { ! grep -qF -- "$1" "$tmp/refused.out"; } # not in the last refusal's output
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
check "bench --reps 1e3" refused "$bench" "--reps '1e3' is not a whole number in 1 .. 1000" --reps 1e3
check "bench -r 1e3" refused "$bench" "-r '1e3' is not a root rank in 0 .. 1048576, or -1" -r 1e3
check "bench -f 1" refused "$bench" "-f '1' is not a factor in (1, 1024]" -f 1
check "bench -f 2x" refused "$bench" "-f '2x' is not a factor in (1, 1024]" -f 2x
check "bench --aa --modes" refused "$bench" "--aa is for the collectives' table, not --modes or --tune" --aa --modes
check "bench --samples --tune" refused "$bench" "--samples is for the collectives' table, not --modes or --tune" --samples "$tmp/s" --tune "$tmp/t"
# Good values pass the parser: -h after them prints the usage (on stdout) and exits 0.
timeout -s KILL 20 "$bench" -b 8 -e 64k -b 1K -e 1G -f 1.5 -n 3 -w 0 -c 0 -r 1 -h >"$tmp/bench_h.out" 2>&1
rc=$?
check "bench: good values taken (exit $rc)" [ "$rc" -eq 0 ]
check "bench: good values taken, then the usage" grep -q "^usage:" "$tmp/bench_h.out"
timeout -s KILL 20 "$bench" -c all -r -1 -a 1 -z 1 -d half -o avg --reps 2 --check 0 -c 1 --collective broadcast,gather \
    -G 0 --tmpdir /tmp --init-times --aa --minbytes 1K --maxbytes 2M --stepfactor 4 --iters 2 --warmup_iters 1 \
    --datatype double --op max --root 0 --average 0 --blocking 0 --cudagraph 0 -h >/dev/null 2>"$tmp/bench_h2.err"
rc=$?
check "bench: nccl-tests' options and the bench's own taken (exit $rc)" [ "$rc" -eq 0 ]
# The bench needs no MPI at run time (issue 31): it meets through hidet_nccl_init, under
# hidet-nccl-run (file bootstrap) and mpirun or srun (PMIx) alike.
ldd "$bench" >"$tmp/bench_ldd.txt" 2>&1
check "bench: ldd reads it (exit $?)" grep -q "libc.so" "$tmp/bench_ldd.txt"
check "bench: no libmpi among its libraries" bash -c "! grep -E 'libmpi|libopen-(rte|pal)' '$tmp/bench_ldd.txt'"
# --help (and -h, the same) names every collective and every option.
timeout -s KILL 20 "$bench" --help >"$tmp/bench_help.out" 2>"$tmp/bench_help.err"
rc=$?
check "bench --help: exit 0 (got $rc)" [ "$rc" -eq 0 ]
check "bench --help: on stdout, nothing on stderr" [ -s "$tmp/bench_help.out" -a ! -s "$tmp/bench_help.err" ]
check "bench -h: the same text" cmp -s "$tmp/bench_help.out" <(timeout -s KILL 20 "$bench" -h)
for word in all_reduce broadcast reduce all_gather reduce_scatter all_to_all gather scatter send_recv all; do
    check "bench --help names the collective $word" grep -qw -- "$word" "$tmp/bench_help.out"
done
for flag in -b -e -f -n -w -c -d -o -r -a -z -G -h --minbytes --maxbytes --stepfactor --iters --warmup_iters \
    --check --collective --datatype --op --root --average --blocking --cudagraph --help --reps --init-times \
    --tmpdir --modes --tune; do
    check "bench --help names $flag" grep -qE -- "(^| )$flag[ ,]" "$tmp/bench_help.out"
done
check "bench --help: the busbw factors" grep -q "all_reduce 2(n-1)/n" "$tmp/bench_help.out"
# Names and choices refused with exit 2, naming the flag, the value and what it takes.
colls="all_reduce, broadcast, reduce, all_gather, reduce_scatter, all_to_all, gather, scatter, send_recv or all"
check "bench -c nosuch" refused "$bench" "-c 'nosuch' is not a collective ($colls" -c nosuch
check "bench -c all_reduce,nosuch" refused "$bench" "-c 'all_reduce,nosuch' is not a collective ($colls" \
    -c all_reduce,nosuch
check "bench --collective 1" refused "$bench" "--collective '1' is not a collective ($colls" --collective 1
check "bench -c ' 1'" refused "$bench" "-c ' 1' is not a collective" -c ' 1'
check "bench --check x" refused "$bench" "--check 'x' is not a whole number in 0 .. 1" --check x
check "bench -d float33" refused "$bench" "-d 'float33' is not a data type (bool, int8, int16" -d float33
check "bench --datatype ''" refused "$bench" "--datatype '' is not a data type" --datatype ''
check "bench -o mean" refused "$bench" "-o 'mean' is not a reduction op (sum, prod, max, min or avg)" -o mean
check "bench --op SUM" refused "$bench" "--op 'SUM' is not a reduction op" --op SUM
check "bench -r -2" refused "$bench" "-r '-2' is not a root rank in 0 .. 1048576, or -1" -r -2
check "bench -a 4" refused "$bench" "-a '4' is not a whole number in 0 .. 3" -a 4
check "bench -z 2" refused "$bench" "-z '2' is not a whole number in 0 .. 1" -z 2
check "bench -G x" refused "$bench" "-G 'x' is not a whole number in 0 .. 1000000" -G x
check "bench --reps 0" refused "$bench" "--reps '0' is not a whole number in 1 .. 1000" --reps 0
check "bench -G 1 -z 1" refused "$bench" "-G (CUDA graph replays) and -z 1 (a wait after each call) do not go together" \
    -G 1 -z 1
check "bench --modes -c broadcast" refused "$bench" "--modes takes one collective: -c all_reduce, all_gather or" \
    --modes -c broadcast
check "bench -c reduce -d int16" refused "$bench" "-c reduce -d int16 -o sum: " -c reduce -d int16
check "bench --no-such" refused "$bench" "unknown option '--no-such'" --no-such
check "bench -b (no value)" refused "$bench" "-b needs a value" -b
# Letters nccl-tests uses otherwise moved to long options; the message says where.
check "bench -m (now --modes)" refused "$bench" "unknown option '-m' (nccl-tests' letter; library memory modes are --modes)" -m
check "bench -t (now --tune)" refused "$bench" "the tuning file is --tune FILE" -t tune.txt
check "bench -T (now --tmpdir)" refused "$bench" "the rendezvous directory is --tmpdir DIR" -T /tmp
check "bench -C (now -c)" refused "$bench" "the collective is -c COLL" -C all_gather
# The spellings of the launchers users know (issue 31): mpirun's -np N and -npN, torchrun's
# --nproc-per-node N and --nproc_per_node N, all as -n N; getopt alone read -np as -n 'p'.
sizes() { "$run" "$@" --rendezvous-dir "$rdv" sh -c 'echo "$HIDET_NCCL_RANK/$HIDET_NCCL_WORLD_SIZE"' 2>&1 | sort | tr '\n' ' '; }
for spelling in "-np 3" "-np3" "-n 3" "-n3" "--np 3" "--np=3" "--nproc-per-node 3" "--nproc_per_node 3" \
    "--nproc-per-node=3" "--nproc_per_node=3"; do
    # shellcheck disable=SC2086 # the spelling is one or two words
    check "$spelling: 3 ranks" [ "$(sizes $spelling)" = "0/3 1/3 2/3 " ]
done
check "-np with nothing after it" refused "$run" "-np needs a number of ranks" -np
check "-np without a number" refused "$run" "-np '/bin/true' is not a whole number in 1 .. 4096" -np /bin/true
check "-np x" refused "$run" "-np 'x' is not a whole number in 1 .. 4096" -np x /bin/true
check "-np4x" refused "$run" "-np '4x' is not a whole number in 1 .. 4096" -np4x /bin/true
check "-np 0" refused "$run" "-np '0' is out of range: a whole number in 1 .. 4096" -np 0 /bin/true
check "-n p (two words)" refused "$run" "-n 'p' is not a whole number" -n p /bin/true
check "--nproc-per-node ' 2'" refused "$run" "--nproc-per-node ' 2' is not a whole number in 1 .. 4096" \
    --nproc-per-node ' 2' /bin/true
check "--nproc_per_node 5000" refused "$run" "--nproc_per_node '5000' is out of range" --nproc_per_node 5000 /bin/true
check "the program's own -np and -x are its own" [ "$("$run" -n 1 --rendezvous-dir "$rdv" sh -c 'echo "$*"' sh -np 3 -x A)" = \
    "-np 3 -x A" ]
# mpirun's -x: -x VAR=VALUE sets VAR for the ranks (the value may hold '=' or be empty), -x VAR
# passes this environment's value on, several are taken (the last of one VAR wins); the
# launcher itself goes on reading its own environment (TMPDIR), except that the default -n
# counts the ranks' CUDA_VISIBLE_DEVICES.
xout=$(HN_X_FROM=outer "$run" -n 2 -x HN_X_SET=one -x HN_X_EQ=a=b -x HN_X_EMPTY= -x HN_X_FROM -x HN_X_TWICE=1 \
    -xHN_X_TWICE=2 --rendezvous-dir "$rdv" sh -c 'echo "$HN_X_SET|$HN_X_EQ|${HN_X_EMPTY-unset}|$HN_X_FROM|$HN_X_TWICE"')
check "-x: both ranks see the variables ($xout)" [ "$xout" = "one|a=b||outer|2"$'\n'"one|a=b||outer|2" ]
mkdir -p "$tmp/tmpdir"
xout=$(TMPDIR=$tmp/tmpdir "$run" -n 1 -x TMPDIR=/nowhere sh -c 'echo "$TMPDIR $HIDET_NCCL_RENDEZVOUS_DIR"')
starts_with() { [[ $1 == "$2"* ]]; }
check "-x TMPDIR: the rank's, not the launcher's ($xout)" starts_with "$xout" "/nowhere $tmp/tmpdir/hidet-nccl-"
check "-x CUDA_VISIBLE_DEVICES=0,1,2 without -n: 3 ranks" \
    [ "$("$run" -x CUDA_VISIBLE_DEVICES=0,1,2 --rendezvous-dir "$rdv" sh -c 'echo "$CUDA_VISIBLE_DEVICES"' | wc -l)" -eq 3 ]
unset HN_X_UNSET
check "-x of an unset variable" refused "$run" "-x HN_X_UNSET: HN_X_UNSET is not set in hidet-nccl-run's environment" \
    -n 1 -x HN_X_UNSET /bin/true
check "-x 1BAD=x" refused "$run" "-x: '1BAD' is not an environment variable's name" -n 1 -x 1BAD=x /bin/true
check "-x ''" refused "$run" "-x: '' is not an environment variable's name" -n 1 -x '' /bin/true
check "-x =v" refused "$run" "-x: '' is not an environment variable's name" -n 1 -x =v /bin/true
check "-x MY-PW=hunter2" refused "$run" "-x: 'MY-PW' is not an environment variable's name" -n 1 -x MY-PW=hunter2 /bin/true
check "-x MY-PW=hunter2: the value is not shown" not_shown hunter2
# The launcher's own variables: refused, named, with where they come from; never the value.
for v in HIDET_NCCL_RANK HIDET_NCCL_LOCAL_RANK HIDET_NCCL_WORLD_SIZE HIDET_NCCL_LOCAL_WORLD_SIZE RANK LOCAL_RANK \
    WORLD_SIZE LOCAL_WORLD_SIZE HIDET_NCCL_JOB_KEY HIDET_NCCL_RENDEZVOUS_DIR MASTER_ADDR MASTER_PORT \
    HIDET_NCCL_TIMEOUT HIDET_NCCL_TRACE_DIR HIDET_NCCL_JOB_SECRET_FILE HIDET_NCCL_JOB_SECRET; do
    check "-x $v=..." refused "$run" "-x $v: hidet-nccl-run sets $v for its ranks itself (from " \
        -n 1 -x "$v=value-of-sixteen-or-more" /bin/true
    check "-x $v=...: the value is not shown" not_shown value-of-sixteen
done
HIDET_NCCL_TIMEOUT=5 check "-x HIDET_NCCL_TIMEOUT (set)" refused "$run" "(from --timeout" -n 1 -x HIDET_NCCL_TIMEOUT /bin/true
"$run" --help >"$tmp/help.out"
help_has() { local w; for w; do grep -qF -- "$w" "$tmp/help.out" || { echo "--help lacks $w"; return 1; }; done; }
check "--help: -np, --nproc-per-node and -x" help_has " -np N" "--nproc-per-node N" "--nproc_per_node N" "-x VAR=VALUE" \
    "-x VAR "

# A program that does not exist: 127, like a shell.
"$run" -n 2 --rendezvous-dir "$rdv" /no/such/program 2>/dev/null
check "missing executable: exit 127" [ $? -eq 127 ]
check "rendezvous directory removed at the end" rdv_empty

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
