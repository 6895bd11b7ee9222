#!/bin/bash
# Heal over the shared-file rendezvous (issue 39): jobs of tests/heal/heal_driver under
# `hidet-nccl-run --rendezvous-dir DIR --max-restarts N --restart-delay 0` (a directory of the test's
# own, so that what the job leaves there can be seen), 3 to 6 ranks, in
# which a rank drawn from the job's seed kills itself (SIGKILL) at a random moment (within 0 .. 2 ms of
# the start of every KILL_EVERY-th round, at the latest KILL_EVERY/2 rounds later: inside a call or
# between calls, now and then two at once), is started again by the launcher under its own rank, and is
# taken back in by a heal round; until HEALS heal rounds were done in all (200; 60 under the
# sanitizers). For every job:
#   - no hang (the job's hard timeout), the launcher exits 0, and no process of the job is left;
#   - every death was restarted (the launcher said so), and the restarted process started as the
#     same job rank and said joining 1 (its init found the job formed);
#   - every heal round: the same members and joined on every rank that printed it (the driver also
#     compares them across ranks by an allgather), every member of the job back in, and every rank
#     killed since the previous round among the joined;
#   - every rank's last line the same: done, every round, the last epoch, members 0 .. n-1;
#   - nothing left in the rendezvous directory.
# It prints how long from a kill to the end of the heal round that took the restarted rank in
# (detection, restart, round), median of the first 20 kills at 3 ranks, and of all.
#   usage: heal_file_test.sh HIDET_NCCL_RUN HEAL_DRIVER
set -u
if [ -n "${TEST_SRCDIR:-}" ]; then . "$TEST_SRCDIR/$TEST_WORKSPACE/tests/wait_for.sh"; else . "$(dirname "$(realpath "$0")")/../../wait_for.sh"; fi
if [ -n "${TEST_SRCDIR:-}" ]; then . "$TEST_SRCDIR/$TEST_WORKSPACE/tests/heal/deaths.sh"; else . "$(dirname "$(realpath "$0")")/../deaths.sh"; fi
RUN=$(realpath "$1")
DRIVER=$(realpath "$2")
HEALS=${HN_HEAL_ROUNDS:-200}
if [ -n "${ASAN_OPTIONS:-}${UBSAN_OPTIONS:-}" ] && [ -z "${HN_HEAL_ROUNDS:-}" ]; then
    HEALS=60 # every process under the sanitizers starts several times slower
fi
KILL_EVERY=4
CALL_TIMEOUT=$(scaled 10) # every call's deadline on the ranks; a heal's decider waits half of it
JOB_TIMEOUT=$(scaled 90)  # the hard bound of one job
BASE=$(mktemp -d "${TEST_TMPDIR:-/tmp}/heal_file.XXXXXX")
trap 'rm -rf "$BASE"' EXIT
fail=0
stats=$BASE/stats
: >"$stats"
t_start=$(date +%s%N)

# verdict DIR N: the rules above on one job's output; says what is wrong, returns 1.
verdict() {
    local dir=$1 n=$2 out=$1/out err=$1/err
    local kills restarts joiners
    kills=$(grep -c '^\[[0-9]*\] kill rank ' "$out")
    restarts=$(grep -c 'hidet-nccl-run: rank [0-9]*: restart [0-9]* of [0-9]* started' "$err")
    joiners=$(grep -c '^\[[0-9]*\] start rank [0-9]* of [0-9]* pid [0-9]* restart [1-9][0-9]* joining 1$' "$out")
    [ "$kills" -gt 0 ] || { echo "no rank was killed"; return 1; }
    if [ "$restarts" -ne "$kills" ]; then # why the others ended: the launcher's lines, the ranks' own
        echo "$kills kills but $restarts restarts; the deaths that were not a kill of the driver's, and what the ranks said:"
        extra_deaths "$out" "$err"
        return 1
    fi
    [ "$joiners" -eq "$kills" ] || { echo "$kills kills but $joiners restarted processes said joining 1"; return 1; }
    # a restarted process is the rank it replaces: [R] start rank R ... joining 1
    awk '/^\[[0-9]+\] start rank / { tag = substr($1, 2, length($1) - 2); if (tag != $4) { print "process tagged " $1 " started as rank " $4; bad = 1 } }
         END { exit bad }' "$out" || return 1
    grep -q "^\[[0-9]*\] heal_driver\|hidet_nccl WARN" "$out" "$err" &&
        { echo "a failure or warning:"; grep -h "heal_driver\|hidet_nccl WARN" "$out" "$err" | head -n 5 | sed 's/^/    /'; return 1; }
    local all
    all=$(seq -s ' ' 0 $((n - 1)))
    # Every heal round: one set of members and joined across the ranks that printed it, the job whole.
    awk -v all="$all" '
        /^\[[0-9]+\] heal round [0-9]+ members / {
            e = $4; line = $0; sub(/^\[[0-9]+\] heal round [0-9]+ /, "", line); sub(/ rank [0-9]+ took .*/, "", line)
            if ((e in seen) && seen[e] != line) { print "heal round " e ": \"" seen[e] "\" and \"" line "\""; bad = 1 }
            seen[e] = line
            m = line; sub(/^members /, "", m); sub(/ joined .*/, "", m)
            if (m != all) { print "heal round " e ": members " m ", not " all; bad = 1 }
        }
        END { exit bad }' "$out" || return 1
    # every kill is followed by a heal round that took that rank in; its latest end is the measure
    awk -v n="$n" '
        /^\[[0-9]+\] kill rank / { nk++; kr[nk] = $4; kt[nk] = $8; next }
        /^\[[0-9]+\] heal round [0-9]+ members / {
            line = $0; sub(/ rank [0-9]+ took .*/, "", line); j = line; sub(/.* joined /, "", j)
            nh++; hj[nh] = " " j " "; he[nh] = $NF; hr[nh] = $4
        }
        END {
            for (k = 1; k <= nk; k++) { best = -1
                for (h = 1; h <= nh; h++) if (he[h] > kt[k] && index(hj[h], " " kr[k] " ")) {
                    if (best < 0 || hr[h] < hr[best]) best = h }
                if (best < 0) { print "rank " kr[k] " killed at " kt[k] " was never taken back in"; bad = 1; continue }
                e = hr[best]; end = 0
                for (h = 1; h <= nh; h++) if (hr[h] == e && he[h] > end) end = he[h]
                print "heal" n, (end - kt[k]) / 1000 > "/dev/stderr"
            }
            exit bad
        }' "$out" 2>>"$stats" || return 1
    local r first="" line
    for ((r = 0; r < n; r++)); do
        line=$(grep "^\[$r\] done " "$out" | sed 's/^\[[0-9]*\] done rank [0-9]* //')
        [ -n "$line" ] || { echo "rank $r did not finish"; return 1; }
        [ -z "$first" ] && first=$line
        [ "$line" = "$first" ] || { echo "rank $r ended '$line', rank 0 '$first'"; return 1; }
    done
    case $first in *" members $all") ;; *) echo "the job ended as '$first', not whole"; return 1 ;; esac
    echo "$(echo "$first" | awk '{ print $4 }')" >"$dir/epochs"
    return 0
}

heals=0
job=0
while [ "$heals" -lt "$HEALS" ]; do
    n=$((3 + job % 4))
    seed=$((7000 + job))
    kills_left=$(((HEALS - heals + 0) < 50 ? (HEALS - heals) : 50))
    rounds=$((KILL_EVERY * (kills_left + 1) + 1))
    dir=$BASE/job$job
    mkdir -p "$dir/rdv"
    chmod 700 "$dir/rdv"
    t0=$(date +%s%N)
    moment=$(((job % 5) * 500)) # 0: at the round's start; else within 0.5 .. 2 ms of it
    timeout -k 2 "$JOB_TIMEOUT" "$RUN" -n "$n" --rendezvous-dir "$dir/rdv" --job-key "heal$job" \
        --max-restarts $((kills_left + 5)) --restart-delay 0 \
        --tag-output "$DRIVER" "$rounds" --kill-every "$KILL_EVERY" --seed "$seed" --moment "$moment" \
        --timeout "$CALL_TIMEOUT" --env-out "$dir" >"$dir/out" 2>"$dir/err" # --env-out: a mark of this job's processes
    rc=$?
    took_ms=$((($(date +%s%N) - t0) / 1000000))
    if [ $rc -eq 124 ] || [ $took_ms -ge $((JOB_TIMEOUT * 1000)) ]; then
        echo "job $job ($n ranks, seed $seed): HANG, killed after $JOB_TIMEOUT s"
        tail -n 5 "$dir/out" "$dir/err" | sed 's/^/    /'
        fail=1
        break
    fi
    if [ $rc -ne 0 ]; then
        echo "job $job ($n ranks, seed $seed): the launcher exited $rc"
        grep -v "restart [0-9]* of\|failed (killed by signal 9" "$dir/err" | tail -n 8 | sed 's/^/    /'
        fail=1
        break
    fi
    # (by its own directory: two runs of this test at once have the same seeds)
    if ! gone "$DRIVER .*--env-out $dir\$"; then
        echo "job $job: processes left behind:"; pgrep -af "$DRIVER .*--env-out $dir\$" | sed 's/^/    /'
        fail=1
    fi
    left=$(ls -A "$dir/rdv")
    if [ -n "$left" ]; then
        echo "job $job ($n ranks, seed $seed): left in the rendezvous directory: $(echo $left)"
        fail=1
        break
    fi
    if ! why=$(verdict "$dir" "$n"); then
        echo "job $job ($n ranks, seed $seed): $why"
        fail=1
        break
    fi
    done_heals=$(cat "$dir/epochs")
    kills=$(grep -c '^\[[0-9]*\] kill rank ' "$dir/out")
    echo "job $job: $n ranks, $rounds rounds, $kills kills, $done_heals heal rounds, $took_ms ms"
    heals=$((heals + done_heals))
    job=$((job + 1))
    rm -rf "$dir"
done
t_end=$(date +%s%N)

summary() { # median, 90th percentile and largest of one kind of value, in ms
    grep "^$1 " "$stats" | awk '{ print $2 }' | head -n "${3:-100000}" | sort -n | awk -v what="$2" '
        { v[NR] = $1 } END { if (NR) printf "%s: median %.1f ms, 90%% %.1f ms, max %.1f ms (%d)\n", what,
                                         v[int((NR - 1) * .5) + 1], v[int((NR - 1) * .9) + 1], v[NR], NR }'
}
echo "$heals heal rounds in $job jobs, $(((t_end - t_start) / 1000000)) ms"
summary heal3 "a kill to the end of the heal round that took the restarted rank in, 3 ranks (first 20)" 20
for n in 3 4 5 6; do summary "heal$n" "... $n ranks, every kill"; done
if [ $fail -ne 0 ] || [ "$heals" -lt "$HEALS" ]; then echo "FAILED"; exit 1; fi
echo "PASSED"
