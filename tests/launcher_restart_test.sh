#!/usr/bin/env bash
# hidet-nccl-run --max-restarts (issue 39, item 1) on the CPU: a rank that dies is started again as
# the same rank, with the environment its first start had and HIDET_NCCL_RESTART_COUNT=k, at most
# N times; the ranks are small shell scripts (launcher_child for the bootstrap cases), no GPU.
# Waits are for files and lines (tests/wait_for.sh), never for a time; the time bounds are scaled.
# launcher_restart_test.sh LAUNCHER CHILD. Ends with "N passed, N failed".
set -u
if [ -n "${TEST_SRCDIR:-}" ]; then . "$TEST_SRCDIR/$TEST_WORKSPACE/tests/wait_for.sh"; else . "$(dirname "$(realpath "$0")")/wait_for.sh"; fi
run=$(realpath "$1")
child=$(realpath "$2")
tmp=${TEST_TMPDIR:-$(mktemp -d)}/restart
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
said() { grep -qE -- "$2" "$1" 2>/dev/null; } # FILE PATTERN: a line of FILE matches
alive() { [ -e "/proc/$1" ] && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; } # a zombie is not
pids_gone() { # every pid in the files given is gone
    local f p
    for f; do
        [ -e "$f" ] || { echo "no $f"; return 1; }
        for p in $(cat "$f"); do
            if alive "$p"; then echo "pid $p ($f) still alive"; return 1; fi
        done
    done
}
quietly_gone() { pids_gone "$@" >/dev/null; }
gone_within() { wait_for "$1" "the processes in ${*:2} to end" quietly_gone "${@:2}" || pids_gone "${@:2}"; }
has_line() { grep -qxF -- "$2" "$1" || { echo "no line '$2' in $1:"; cat "$1"; return 1; }; }
no_match() { ! grep -qE -- "$2" "$1" || { echo "'$2' in $1:"; grep -E -- "$2" "$1"; return 1; }; }
lines_are() { # FILE EXPECTED (lines joined by |)
    local got
    got=$(tr '\n' '|' <"$1" 2>/dev/null)
    [ "$got" = "$2" ] || { echo "$1: '$got', not '$2'"; return 1; }
}
in_order() { # FILE LINE... : the lines are in FILE in this order
    local file=$1 last=0 n
    shift
    for line; do
        n=$(grep -nxF -- "$line" "$file" | head -1 | cut -d: -f1)
        [ -n "$n" ] && [ "$n" -gt "$last" ] || { echo "'$line' not after line $last of $file"; return 1; }
        last=$n
    done
}

# A rank killed once is started again: the same rank, the same environment but the count (0 at
# the first start, 1 now), its output tagged as before (the half line its first process left, in
# a pipe that a process it started out of its group holds open, is ended, not lost nor joined to
# the next), and the job ends 0. The others are not restarted or stopped.
d=$tmp/once
mkdir -p "$d"
once='d=$0 c=${HIDET_NCCL_RESTART_COUNT-unset} r=$HIDET_NCCL_RANK
    env | grep -v "^HIDET_NCCL_RESTART_COUNT=" | sort >"$d/env.$r.$c"
    echo "$c $$" >>"$d/starts.$r"
    echo "rank $r start $c"
    if [ "$r" = 1 ] && [ "$c" = 0 ]; then
        setsid sh -c "echo \$\$ >$d/escaped.$r; exec sleep 300" & # holds the pipes until the launcher exits
        until [ -s "$d/escaped.$r" ]; do sleep 0.01; done
        printf "half a line"
        kill -9 $$
    fi
    echo "rank $r end $c"'
"$run" -n 3 --max-restarts 2 --restart-delay 0.1 --tag-output -x CUDA_VISIBLE_DEVICES=0,1,2 --rendezvous-dir "$rdv" \
    sh -c "$once" "$d" >"$d/out" 2>"$d/err"
rc=$?
check "killed once: exit 0 (got $rc)" [ "$rc" -eq 0 ]
check "killed once: rank 1 started twice, count 0 then 1" lines_are <(cut -d' ' -f1 "$d/starts.1") "0|1|"
check "killed once: ranks 0 and 2 started once" lines_are <(cat "$d/starts.0" "$d/starts.2" | cut -d' ' -f1) "0|0|"
check "killed once: the restart's environment is the first's (but the count)" cmp "$d/env.1.0" "$d/env.1.1"
check "killed once: ... rank 1, local rank 1, of 3, the same GPUs" grep -qxF "HIDET_NCCL_RANK=1" "$d/env.1.1"
check "killed once: ... local rank 1" grep -qxF "LOCAL_RANK=1" "$d/env.1.1"
check "killed once: ... CUDA_VISIBLE_DEVICES" grep -qxF "CUDA_VISIBLE_DEVICES=0,1,2" "$d/env.1.1"
check "killed once: ... the job's key and rendezvous" grep -qE "^HIDET_NCCL_JOB_KEY=run-.+" "$d/env.1.1"
check "killed once: the log line names the rank, the count and the cause" has_line "$d/err" \
    "hidet-nccl-run: rank 1 failed (killed by signal 9 (SIGKILL)); restart 1 of 2 in 0.1 s"
check "killed once: the start is said with the new pid" has_line "$d/err" \
    "hidet-nccl-run: rank 1: restart 1 of 2 started (pid $(sed -n 2p "$d/starts.1" | cut -d' ' -f2))"
check "killed once: rank 1's output tagged, in order, the half line ended" in_order "$d/out" "[1] rank 1 start 0" \
    "[1] half a line" "[1] rank 1 start 1" "[1] rank 1 end 1"
check "killed once: no other restart" [ "$(grep -c restart "$d/err")" -eq 2 ]
check "killed once: what escaped the group killed at the end" pids_gone "$d/escaped.1"
check "killed once: rendezvous directory removed" rdv_empty

# --output-dir: the restarted rank's log goes on after the first process's lines.
d=$tmp/logs
mkdir -p "$d"
"$run" -n 2 --max-restarts 1 --restart-delay 0 --output-dir "$d/logs" --rendezvous-dir "$rdv" sh -c "$once" "$d" \
    >"$d/out" 2>"$d/err"
rc=$?
check "output-dir: exit 0 (got $rc)" [ "$rc" -eq 0 ]
check "output-dir: rank.1.log holds both starts, in order" in_order "$d/logs/rank.1.log" "rank 1 start 0" \
    "half a linerank 1 start 1" "rank 1 end 1"
check "output-dir: rank.0.log one start" lines_are "$d/logs/rank.0.log" "rank 0 start 0|rank 0 end 0|"

# A rank that fails at once every time is started again exactly N times, each said; then the job
# stops as without restarts: the others stopped, its code, and the reason given.
d=$tmp/always
mkdir -p "$d"
start=$(date +%s)
"$run" -n 3 --grace 2 --max-restarts 3 --restart-delay 0.05 --rendezvous-dir "$rdv" sh -c '
    echo "${HIDET_NCCL_RESTART_COUNT}" >>"$0/starts.$HIDET_NCCL_RANK"
    if [ "$HIDET_NCCL_RANK" = 2 ]; then
        until [ -e "$0/pid.0" ] && [ -e "$0/pid.1" ]; do sleep 0.01; done
        exit 3
    fi
    echo $$ >"$0/pid.$HIDET_NCCL_RANK.tmp"; mv "$0/pid.$HIDET_NCCL_RANK.tmp" "$0/pid.$HIDET_NCCL_RANK"
    exec sleep 60' "$d" 2>"$d/err"
rc=$?
took=$(($(date +%s) - start))
check "fails every time: exit 3 (got $rc)" [ "$rc" -eq 3 ]
check "fails every time: started 1 + 3 times" lines_are "$d/starts.2" "0|1|2|3|"
for k in 1 2 3; do
    check "fails every time: restart $k said" has_line "$d/err" \
        "hidet-nccl-run: rank 2 failed (exit 3); restart $k of 3 in 0.05 s"
done
check "fails every time: no restart 4" no_match "$d/err" "restart 4"
check "fails every time: no restarts left, said" has_line "$d/err" \
    "hidet-nccl-run: rank 2 failed 4 times; no restarts left (--max-restarts 3; the last: exit 3)"
check "fails every time: the others stopped" has_line "$d/err" \
    "hidet-nccl-run: rank 2 exited with code 3; the other ranks were stopped"
check "fails every time: the others were never restarted" lines_are <(cat "$d/starts.0" "$d/starts.1") "0|0|"
check "fails every time: no rank left" pids_gone "$d/pid.0" "$d/pid.1"
check "fails every time: bounded (${took}s)" [ "$took" -le "$(scaled 10)" ]
check "fails every time: rendezvous directory removed" rdv_empty

# --max-restarts 0, and no option: today's behaviour (the first death fails the job).
for opt in "--max-restarts 0" ""; do
    d=$tmp/zero${opt:+0}
    mkdir -p "$d"
    # shellcheck disable=SC2086 # the option is two words, or none
    "$run" -n 3 --grace 2 $opt --rendezvous-dir "$rdv" sh -c '
        echo "$HIDET_NCCL_RESTART_COUNT" >>"$0/starts.$HIDET_NCCL_RANK"
        if [ "$HIDET_NCCL_RANK" = 1 ]; then
            until [ -e "$0/pid.0" ] && [ -e "$0/pid.2" ]; do sleep 0.01; done
            kill -9 $$
        fi
        echo $$ >"$0/pid.$HIDET_NCCL_RANK.tmp"; mv "$0/pid.$HIDET_NCCL_RANK.tmp" "$0/pid.$HIDET_NCCL_RANK"
        exec sleep 60' "$d" 2>"$d/err"
    rc=$?
    check "'$opt': exit 137 (got $rc)" [ "$rc" -eq 137 ]
    check "'$opt': rank 1 started once, count 0" lines_are "$d/starts.1" "0|"
    check "'$opt': nothing of restarts said" no_match "$d/err" "restart"
    check "'$opt': the usual summary" grep -q "rank 1 was killed by signal 9 (Killed); the other ranks were stopped" \
        "$d/err"
    check "'$opt': no rank left" pids_gone "$d/pid.0" "$d/pid.2"
done

# An exit 0 is a finished rank: never started again, however many restarts are left.
d=$tmp/zero_exit
mkdir -p "$d"
"$run" -n 2 --max-restarts 3 --restart-delay 0 --rendezvous-dir "$rdv" sh -c '
    echo "$HIDET_NCCL_RESTART_COUNT" >>"$0/starts.$HIDET_NCCL_RANK"' "$d" 2>"$d/err"
rc=$?
check "exit 0: exit 0 (got $rc)" [ "$rc" -eq 0 ]
check "exit 0: each rank started once" lines_are <(cat "$d/starts.0" "$d/starts.1") "0|0|"
check "exit 0: no restart said" no_match "$d/err" "restart"

# Bad values: refused before anything starts, exit 2, naming the option, the value and the range.
refused() { # expected message, arguments...
    local want=$1
    shift
    timeout -s KILL 20 "$run" "$@" >"$tmp/refused.out" 2>&1
    local rc=$?
    [ "$rc" -eq 2 ] && grep -qF -- "$want" "$tmp/refused.out" && return 0
    echo "rc $rc for $*:"
    cat "$tmp/refused.out"
    return 1
}
for v in -1 x '' ' 1' 1.5 0x1 +1; do
    check "--max-restarts '$v'" refused "--max-restarts '$v' is not a whole number in 0 .. 1000" --max-restarts "$v" \
        -n 1 /bin/true
done
check "--max-restarts 1001" refused "--max-restarts '1001' is out of range: a whole number in 0 .. 1000" \
    --max-restarts 1001 -n 1 /bin/true
check "--max_restarts 5000" refused "--max_restarts '5000' is out of range" --max_restarts 5000 -n 1 /bin/true
for v in -1 1e3 '' ' 1' .5; do
    check "--restart-delay '$v'" refused "--restart-delay '$v' is not a number of seconds in [0, 3600]" \
        --restart-delay "$v" -n 1 /bin/true
done
check "--restart-delay 3601" refused "--restart-delay '3601' is out of range: seconds in [0, 3600]" \
    --restart-delay 3601 -n 1 /bin/true
check "-x HIDET_NCCL_RESTART_COUNT=1" refused "-x HIDET_NCCL_RESTART_COUNT: hidet-nccl-run sets" \
    -x HIDET_NCCL_RESTART_COUNT=1 -n 1 /bin/true
"$run" --max_restarts 1000 --restart-delay 0 -n 1 --rendezvous-dir "$rdv" /bin/true
check "--max_restarts 1000 --restart-delay 0: taken" [ $? -eq 0 ]
"$run" --help >"$tmp/help.out"
check "--help: --max-restarts and --restart-delay" grep -q -- "--max-restarts N .*--restart-delay S" \
    <(tr '\n' ' ' <"$tmp/help.out")

# --keep-going: past N the rank's failure is the job's code, but the others go on; a rank that
# dies later still has its own restarts.
d=$tmp/keep
mkdir -p "$d"
"$run" -n 3 --grace 2 --keep-going --max-restarts 1 --restart-delay 0.05 --rendezvous-dir "$rdv" sh -c '
    d=$0 r=$HIDET_NCCL_RANK c=$HIDET_NCCL_RESTART_COUNT
    echo "$c" >>"$d/starts.$r"
    if [ "$r" = 1 ]; then
        until [ -s "$d/pid.0" ] && [ -s "$d/pid.2" ]; do sleep 0.01; done
        exit 4
    fi
    [ "$c" = 0 ] && echo $$ >"$d/pid.$r.tmp" && mv "$d/pid.$r.tmp" "$d/pid.$r"
    until [ -e "$d/go" ]; do sleep 0.05; done
    [ "$r" = 2 ] && [ "$c" = 0 ] && exit 6
    echo "rank $r finished"' "$d" >"$d/out" 2>"$d/err" &
launcher=$!
wait_for 30 "rank 1's restarts spent" said "$d/err" "rank 1 failed 2 times; no restarts left"
check "keep-going: past N, ranks 0 and 2 still run" bash -c "kill -0 $(cat "$d/pid.0") && kill -0 $(cat "$d/pid.2")"
touch "$d/go"
wait "$launcher"
rc=$?
check "keep-going: exit 4 (got $rc)" [ "$rc" -eq 4 ]
check "keep-going: rank 1 started 2 times" lines_are "$d/starts.1" "0|1|"
check "keep-going: rank 2 restarted after rank 1's failure" has_line "$d/err" \
    "hidet-nccl-run: rank 2 failed (exit 6); restart 1 of 1 in 0.05 s"
check "keep-going: ranks 0 and 2 finished" lines_are <(sort "$d/out") "rank 0 finished|rank 2 finished|"
check "keep-going: summary" grep -q "rank 1 exited with code 4; the other ranks were left to finish" "$d/err"

# SIGTERM to the launcher while a restart waits: the job ends at once (nothing waits for the
# delay), the restart is called off and said, no rank is left.
d=$tmp/term
mkdir -p "$d"
"$run" -n 2 --grace 2 --max-restarts 3 --restart-delay 60 --rendezvous-dir "$rdv" sh -c '
    echo "$HIDET_NCCL_RESTART_COUNT" >>"$0/starts.$HIDET_NCCL_RANK"
    [ "$HIDET_NCCL_RANK" = 1 ] && exit 5
    echo $$ >"$0/pid.$HIDET_NCCL_RANK"; exec sleep 60' "$d" 2>"$d/err" &
launcher=$!
wait_for 30 "rank 1's restart to wait" said "$d/err" "rank 1 failed \(exit 5\); restart 1 of 3 in 60 s"
wait_for 30 "rank 0 to run" said "$d/pid.0" .
start=$(date +%s%N)
kill -TERM "$launcher"
wait "$launcher"
rc=$?
took_ms=$((($(date +%s%N) - start) / 1000000))
check "SIGTERM in the delay: exit 143 (got $rc)" [ "$rc" -eq 143 ]
check "SIGTERM in the delay: promptly (${took_ms} ms)" [ "$took_ms" -lt "$(scaled 3)000" ]
check "SIGTERM in the delay: rank 1 never started again" lines_are "$d/starts.1" "0|"
check "SIGTERM in the delay: the restart called off, said" has_line "$d/err" \
    "hidet-nccl-run: rank 1: restart 1 of 3 called off (got signal 15 (Terminated))"
check "SIGTERM in the delay: no rank left" pids_gone "$d/pid.0"
check "SIGTERM in the delay: rendezvous directory removed" rdv_empty

# A failure that stops the job calls off a restart still waiting: rank 2 fails, and when its
# restart starts rank 1 fails (its restart due a delay later); rank 2's restart then fails, with
# no restarts left: the job stops at once, rank 1 is not started again. The launcher's lines order
# it.
d=$tmp/calloff
mkdir -p "$d"
delay=$(scaled 5)
start=$(date +%s)
"$run" -n 3 --grace 2 --max-restarts 1 --restart-delay "$delay" --rendezvous-dir "$rdv" sh -c '
    d=$0 r=$HIDET_NCCL_RANK c=$HIDET_NCCL_RESTART_COUNT
    echo "$c" >>"$d/starts.$r"
    until_said() { until grep -q "$1" "$d/err"; do sleep 0.01; done; }
    case "$r.$c" in
        0.0) echo $$ >"$d/pid.0.tmp"; mv "$d/pid.0.tmp" "$d/pid.0"; exec sleep 60 ;;
        1.0) until_said "rank 2: restart 1 of 1 started"; exit 5 ;;
        2.0) until [ -s "$d/pid.0" ]; do sleep 0.01; done; exit 3 ;;
        2.1) until_said "rank 1 failed (exit 5); restart 1 of 1 in "; exit 3 ;;
    esac
    exit 9' "$d" 2>"$d/err"
rc=$?
took=$(($(date +%s) - start))
check "failure in a delay: exit 3 (got $rc)" [ "$rc" -eq 3 ]
check "failure in a delay: rank 1's restart called off, said" has_line "$d/err" \
    "hidet-nccl-run: rank 1: restart 1 of 1 called off (rank 2 failed)"
check "failure in a delay: rank 1 never started again" lines_are "$d/starts.1" "0|"
check "failure in a delay: the job did not wait for rank 1's delay (${took}s)" [ "$took" -lt $((delay + delay / 2)) ]
check "failure in a delay: no rank left" pids_gone "$d/pid.0"

# One process per rank at any time: what a dead rank left in its group (here deaf to SIGTERM) is
# gone before the rank starts again, even with no delay; the restart never meets it.
d=$tmp/one
mkdir -p "$d"
"$run" -n 2 --grace 5 --max-restarts 2 --restart-delay 0 --rendezvous-dir "$rdv" sh -c '
    d=$0 c=$HIDET_NCCL_RESTART_COUNT
    [ "$HIDET_NCCL_RANK" = 1 ] || exit 0
    for p in $(cat "$d/earlier" 2>/dev/null); do
        [ -e /proc/$p ] && echo "start $c met pid $p" >>"$d/met"
    done
    echo "$c" >>"$d/starts"
    [ "$c" = 2 ] && exit 0
    echo $$ >>"$d/earlier"
    sh -c "trap \"\" TERM; echo \$\$ >>$d/earlier; echo >$d/deaf.$c; exec sleep 300" &
    until [ -e "$d/deaf.$c" ]; do sleep 0.01; done
    kill -9 $$' "$d" 2>"$d/err"
rc=$?
check "one process per rank: exit 0 (got $rc)" [ "$rc" -eq 0 ]
check "one process per rank: started 3 times" lines_are "$d/starts" "0|1|2|"
check "one process per rank: no start met an earlier process of the rank" [ ! -e "$d/met" ]
check "one process per rank: nothing left" pids_gone "$d/earlier"

# The watchdog knows the restarted rank's group: the launcher killed (SIGKILL) after a restart,
# the restarted rank and what it started are killed.
d=$tmp/watch
mkdir -p "$d"
"$run" -n 2 --max-restarts 1 --restart-delay 0 --rendezvous-dir "$rdv" sh -c '
    d=$0 c=$HIDET_NCCL_RESTART_COUNT
    [ "$HIDET_NCCL_RANK" = 0 ] && exec sleep 300
    [ "$c" = 0 ] && kill -9 $$
    sleep 300 & echo "$$ $!" >"$d/pids.tmp"; mv "$d/pids.tmp" "$d/pids"; wait' "$d" 2>"$d/err" &
launcher=$!
wait_for 30 "the restarted rank 1" said "$d/pids" .
{ kill -KILL "$launcher"; wait "$launcher"; } 2>/dev/null # the shell's "Killed" notice: not ours
check "launcher killed after a restart: the restarted rank and its child are killed" gone_within 10 "$d/pids"

# Across nodes each node's launcher restarts its own ranks: node 1's rank 3 (its local rank 1).
d=$tmp/nodes
mkdir -p "$d/shared"
chmod 700 "$d/shared"
nodes_rank='echo "$RANK $LOCAL_RANK $HIDET_NCCL_RESTART_COUNT" >>"$0/starts.$RANK"
    [ "$RANK" = 3 ] && [ "$HIDET_NCCL_RESTART_COUNT" = 0 ] && kill -9 $$; exit 0'
for k in 0 1; do
    "$run" --nnodes 2 --node-rank $k -n 2 --max-restarts 1 --restart-delay 0 --rendezvous-dir "$d/shared" \
        --job-key restart-nodes sh -c "$nodes_rank" "$d" 2>"$d/err.$k" &
    eval "node$k=\$!"
done
wait "$node0"
rc0=$?
wait "$node1"
rc1=$?
check "nodes: both launchers exit 0 ($rc0, $rc1)" [ "$rc0" -eq 0 -a "$rc1" -eq 0 ]
check "nodes: rank 3 started again as rank 3, local rank 1" lines_are "$d/starts.3" "3 1 0|3 1 1|"
check "nodes: node 1 said it" has_line "$d/err.1" \
    "hidet-nccl-run: rank 3 failed (killed by signal 9 (SIGKILL)); restart 1 of 1 in 0 s"
check "nodes: node 0 restarted nothing" no_match "$d/err.0" "restart"

# With the bootstrap (launcher_child): a rank that dies before the job's first bootstrap round
# ends takes its place in it when restarted (file and served socket rendezvous alike).
for kind in file socket; do
    d=$tmp/boot_$kind
    mkdir -p "$d"
    "$run" -n 3 --grace 2 --timeout 20 --rendezvous "$kind" --max-restarts 1 --restart-delay 0.2 sh -c '
        [ "$HIDET_NCCL_RANK" = 1 ] && [ "$HIDET_NCCL_RESTART_COUNT" = 0 ] && kill -9 $$
        exec "$0" bootstrap' "$child" >"$d/out" 2>"$d/err"
    rc=$?
    check "$kind: a rank dead before the first round, restarted: exit 0 (got $rc)" [ "$rc" -eq 0 ]
    check "$kind: ... 3 ranks with one id" [ "$(awk '/^rank [0-2] of 3 id /{print $6}' "$d/out" | sort -u | wc -l)" \
        -eq 1 -a "$(grep -c '^rank [0-2] of 3 id ' "$d/out")" -eq 3 ]
done
# A rank restarted after that round, while the others hold their bootstrap, is a joiner
# (docs/recovery.md, "Healing"): its bootstrap says so, and a broadcast before its heal round is
# refused at once; nobody here heals, so its restart spent, the job fails. Restarted the moment
# its first round returned, too (the restart delay is 0): the rendezvous directory holds the first
# round's announce or rank 0's roster at every moment, and the restarted rank looks at the
# announce first (it looked at the roster first, and about 1 restart in 6 missed both and waited
# for a first round that never came, until its deadline).
d=$tmp/boot_late
mkdir -p "$d"
"$run" -n 3 --grace 2 --timeout 20 --max-restarts 1 --restart-delay 0 --tag-output "$child" hold 1 >"$d/out" \
    2>"$d/err"
rc=$?
# (ranks 0 and 2 may still be in that round when the refused restart stops the job: rank 1's own
# first life is what went through it)
check "late: rank 1's first round went well" grep -q '^\[1\] rank 1 of 3 id ' "$d/out"
check "late: exit 1 (got $rc)" [ "$rc" -eq 1 ]
check "late: the restarted rank is told it joins a job that goes on" grep -qE \
    "^\[1\] hidet_nccl: .*joins a job that goes on without it \(this is a restarted rank 1 of 3\)" "$d/err"
check "late: then no restarts left" has_line "$d/err" \
    "hidet-nccl-run: rank 1 failed 2 times; no restarts left (--max-restarts 1; the last: exit 1)"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
