#!/bin/bash
# The shared-file bootstrap's recovery round under hidet-nccl-run: ROUNDS jobs (200; 100 under
# ASan/UBSan, whose ranks start and run about twice as slow) of tests/recover_peer, each a fresh
# launcher with --keep-going and a rendezvous directory of the test's own, ranks killing
# themselves in stages, alternating "1/0" on 3 ranks (rank 1 dies, then rank 0), "r2" on 5 ranks
# (two drawn from the job's seed, in one stage) and, every fifth job, "0" on 3 ranks. Each job runs
# under a hard timeout. For every job:
#   - every rank either printed DONE or killed itself (KILL): no hang, no other failure, no rank
#     left out (every survivor joins well within the decider's wait);
#   - the ranks that killed themselves are the plan's (rK: K of them);
#   - every survivor printed the same EPOCH line for each epoch, the same ID for each epoch it
#     printed one for (a broadcast can end well on some ranks and fail on others when a rank dies
#     in it: they recover again), the last epoch's ID on every survivor, and the same DONE list,
#     which is the ranks that did not die;
#   - the rendezvous directory is empty after the job.
# Every twentieth job (a "1/0" one) runs with HN_RECOVER_REAPED_LATE_MS (tests/recover_peer.c):
# its victims stay zombies the launcher cannot reap for half a second, and the survivor sees each
# one reaped between the library's two looks at it in its finalize (kill(pid, 0), then /proc): a
# process seen gone must stay gone, or the files that wait for it stay (a CI run under ASan on a
# loaded machine once left a round's decision so). At least one survivor must have met that case
# ("REAPED").
# It prints how fast survivors saw each death (from a victim's KILL to each survivor's next
# failed call) and how long the rounds took.
#   usage: recover_file_test.sh HIDET_NCCL_RUN RECOVER_PEER
set -u
if [ -n "${TEST_SRCDIR:-}" ]; then . "$TEST_SRCDIR/$TEST_WORKSPACE/tests/wait_for.sh"; else . "$(dirname "$(realpath "$0")")/wait_for.sh"; fi
RUN=$(realpath "$1")
PEER=$(realpath "$2")
ROUNDS=${HN_RECOVER_ROUNDS:-200}
if [ -n "${ASAN_OPTIONS:-}${UBSAN_OPTIONS:-}" ] && [ -z "${HN_RECOVER_ROUNDS:-}" ]; then
    ROUNDS=100 # under ASan a job takes 0.38 s here, not 0.16 s: 200 would take most of 2 minutes
fi
# Scaled on a slower build (tests/wait_for.sh):
CALL_TIMEOUT=$(scaled 10) # each call's deadline on the ranks (the decider waits half of it for a rank that is neither in nor gone)
JOB_TIMEOUT=$(scaled 20)  # the hard bound of one job
BASE=$(mktemp -d "${TEST_TMPDIR:-/tmp}/recover_file.XXXXXX")
trap 'rm -rf "$BASE"' EXIT
fail=0
hangs=0
late_jobs=0
late_reaped=0
stats="$BASE/stats"
: >"$stats"
t_start=$(date +%s%N)

# check_job DIR N PLAN: the rules above, on the job's outputs; prints what is wrong.
check_job() {
    local dir=$1 n=$2 plan=$3 r
    local killed="" survivors="" expect_dead=""
    for ((r = 0; r < n; r++)); do
        local log="$dir/out/rank.$r.log"
        [ -f "$log" ] || { echo "rank $r: no output"; return 1; }
        if grep -q "^KILL $r " "$log"; then
            killed="$killed $r"
        elif grep -q "^DONE" "$log"; then
            survivors="$survivors $r"
        else
            echo "rank $r neither finished nor died:"; sed 's/^/    /' "$log" | tail -n 8
            return 1
        fi
    done
    case $plan in
        r*) [ "$(echo $killed | wc -w)" -eq "${plan#r}" ] || { echo "plan $plan, but ranks [$killed ] died"; return 1; } ;;
        *) expect_dead=$(echo "$plan" | tr '/,' '  ' | tr ' ' '\n' | sort -n | tr '\n' ' ')
           [ "$(echo $killed)" = "$(echo $expect_dead)" ] || { echo "plan $plan, but ranks [$killed ] died"; return 1; } ;;
    esac
    local first="" want_done="DONE$(for r in $survivors; do printf ' %d' "$r"; done)"
    for r in $survivors; do
        local log="$dir/out/rank.$r.log"
        grep -q "^LEFT OUT" "$log" && { echo "rank $r was left out"; return 1; }
        [ "$(grep '^DONE' "$log")" = "$want_done" ] || { echo "rank $r: $(grep '^DONE' "$log"), expected $want_done"; return 1; }
        grep '^EPOCH' "$log" >"$dir/epochs.$r"
        if [ -z "$first" ]; then first=$r; continue; fi
        cmp -s "$dir/epochs.$first" "$dir/epochs.$r" || {
            echo "ranks $first and $r saw different rounds:"; paste "$dir/epochs.$first" "$dir/epochs.$r" | sed 's/^/    /'
            return 1
        }
    done
    # the same id per epoch wherever printed; the last epoch's on every survivor
    local last
    last=$(tail -n 1 "$dir/epochs.$first" | awk '{print $2}')
    [ -n "$last" ] || { echo "no recovery round at all"; return 1; }
    cat $(for r in $survivors; do echo "$dir/out/rank.$r.log"; done) | awk '/^ID /{ if (($2 in id) && id[$2] != $3) { print "epoch " $2 ": ids " id[$2] " and " $3; bad = 1 } id[$2] = $3 } END { exit bad }' || return 1
    for r in $survivors; do
        grep -q "^ID $last " "$dir/out/rank.$r.log" || { echo "rank $r has no id of the last epoch $last"; return 1; }
    done
    # measurements: each survivor's first failed call after each death; the rounds' times
    cat "$dir"/out/rank.*.log | awk -v n="$n" '
        /^KILL /{ kill[++nk] = $3 } /^SAW /{ saw[++ns] = $3 } /^ROUND /{ print "round" n, $3 / 1000 }
        END { for (i = 1; i <= ns; i++) { best = -1; for (k = 1; k <= nk; k++) if (kill[k] <= saw[i] && kill[k] > best) best = kill[k];
              if (best >= 0) print "saw", (saw[i] - best) / 1000 } }' >>"$stats"
    return 0
}

for ((i = 0; i < ROUNDS; i++)); do
    if ((i % 5 == 4)); then plan=0; n=3; elif ((i % 2 == 0)); then plan=1/0; n=3; else plan=r2; n=5; fi
    late_ms=0
    if ((i % 20 == 2)); then late_ms=$((500 * hn_slowdown)); late_jobs=$((late_jobs + 1)); fi # plan 1/0
    dir="$BASE/job$i"
    mkdir -p "$dir/rdv" "$dir/out"
    chmod 700 "$dir/rdv"
    # The ranks meet in rdv as it is (--rendezvous-dir with --job-key), which the test looks at
    # afterwards: the launcher leaves a directory of the user's.
    t0=$(date +%s%N)
    # At INFO the ranks say in their logs why a round's files stay (shown if any are left).
    HN_RECOVER_REAPED_LATE_MS=$late_ms HIDET_NCCL_DEBUG=INFO timeout -k 2 "$JOB_TIMEOUT" "$RUN" -n "$n" --keep-going --rendezvous-dir "$dir/rdv" --job-key "recover$i" \
        --output-dir "$dir/out" "$PEER" "$plan" "$((1000 + i))" "$CALL_TIMEOUT" >"$dir/launcher.log" 2>&1
    rc=$? # 137 also when it ends well: a rank killed itself
    took_ms=$((($(date +%s%N) - t0) / 1000000))
    echo "job $took_ms" >>"$stats"
    if [ $rc -eq 124 ] || [ $took_ms -ge $((JOB_TIMEOUT * 1000)) ]; then
        echo "job $i ($plan on $n ranks): HANG (killed after $JOB_TIMEOUT s)"; hangs=$((hangs + 1)); fail=1
        tail -n 5 "$dir"/out/rank.*.log 2>/dev/null | sed 's/^/    /'
        continue
    fi
    if ! why=$(check_job "$dir" "$n" "$plan"); then
        echo "job $i ($plan on $n ranks, seed $((1000 + i))): $why"
        grep -h "recover_peer" "$dir"/out/rank.*.log | sed 's/^/    /' | head -n 20
        fail=1
    fi
    if ((late_ms > 0)) && grep -q "^REAPED" "$dir"/out/rank.*.log; then late_reaped=$((late_reaped + 1)); fi
    left=$(ls -A "$dir/rdv")
    if [ -n "$left" ]; then
        echo "job $i ($plan on $n ranks): left in the rendezvous directory: $(echo $left)"; fail=1
        grep -h -e "stay" -e "^KILL" -e "^DONE" -e "^EPOCH" -e "^REAPED" "$dir"/out/rank.*.log | sed 's/^/    /' | head -n 20
    fi
    [ $fail -eq 0 ] && rm -rf "$dir"
done
t_end=$(date +%s%N)
# median, 90th percentile and largest of the values of one kind, in ms
summary() {
    grep "^$1 " "$stats" | awk '{print $2}' | sort -n | awk -v what="$2" '
        { v[NR] = $1 } END { if (NR) printf "%s: median %.1f ms, 90%% %.1f ms, max %.1f ms (%d)\n", what, v[int((NR - 1) * .5) + 1], v[int((NR - 1) * .9) + 1], v[NR], NR }'
}
echo "$ROUNDS jobs in $(((t_end - t_start) / 1000000)) ms, $hangs hangs"
if ((late_jobs > 0)); then
    echo "$late_jobs jobs whose victims were reaped late: in $late_reaped a survivor saw one reaped between its finalize's looks"
    if ((late_reaped == 0)); then echo "no survivor's finalize met a victim's late reaping: the case was not tested"; fail=1; fi
fi
summary job "a whole job (launcher, 3 or 5 ranks, every stage)"
summary saw "a death seen by a survivor's failing call, after the victim's SIGKILL"
summary round3 "a recovery round (hidet_nccl_bootstrap_recover) of a job of 3 ranks"
summary round5 "a recovery round of a job of 5 ranks"
if [ $fail -ne 0 ]; then echo "FAILED"; exit 1; fi
echo "PASSED"
