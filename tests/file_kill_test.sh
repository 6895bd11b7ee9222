#!/bin/bash
# The shared-file bootstrap under kills, for what they leave (issue 38, item 2). Jobs of
# tests/recover_peer under hidet-nccl-run, 3 to 8 ranks each, meeting in a rendezvous directory of
# the test's (--rendezvous-dir D --job-key K: the launcher leaves it as it is). In each, one rank
# kills itself (recover_peer's plan: a recovery round in every job) and another, drawn at random,
# is sent SIGKILL (two jobs in three) or SIGSTOP, half of the jobs 0 to 40 ms after it made its
# bootstrap (its BOOT line: the job is being made, its first rounds), half 0 to 15
# ms after a rank began to recover from the planned death. A stopped rank is let go on (SIGCONT)
# past the calls' deadline, or (half of them) once every other rank of its job ended: it comes
# after the others decided rounds without it (or kept it, then went on) and tidied; it must find
# the decision that answers it, never decide a round of its own. Each job's key carries the
# run's own suffix (runs side by side never signal each other's ranks). Jobs run until JOBS (100)
# were signalled in time: a signal that came after the victim ended, or after the job's work (a rank had printed DONE: the victim may then be
# the last process, with nobody left to remove what it had under way), does not count, and such
# jobs are run on top (at most twice JOBS in all). For every job:
#   - it ends before its hard timeout: no hang;
#   - every recovery round has one set of survivors: the ranks that went through round E printed
#     the same EPOCH E line, and the same id after it (a rank whose last allgather ended well
#     before a death the root saw may print DONE with the dead one among its ranks: that round
#     ended well for it, as the protocol allows, and it had no call left to hear of the death);
#   - after SIGKILL every rank but the two that died printed DONE (a death on one host is seen at
#     once); after SIGSTOP a rank may also be left out, or fail at its deadline (a stopped decider
#     cannot be told from a slow one);
#   - the rendezvous directory is empty (what is left is listed), the signal in time.
# Jobs run PARALLEL at a time (they mostly wait). Under ASan/UBSan JOBS is 50: their ranks start
# and run about twice as slow, and CI's time is bounded.
#   usage: file_kill_test.sh HIDET_NCCL_RUN RECOVER_PEER
set -u
RUN=$(realpath "$1")
PEER=$(realpath "$2")
JOBS=${HN_KILL_JOBS:-100}
if [ -n "${ASAN_OPTIONS:-}${UBSAN_OPTIONS:-}" ] && [ -z "${HN_KILL_JOBS:-}" ]; then JOBS=50; fi
PARALLEL=${HN_KILL_PARALLEL:-6}
# Each call's deadline on the ranks; the decider waits half of it for a rank neither in nor gone.
# A live rank that cannot put its join within that wait is left out, as the protocol says (it
# cannot be told from a dead one): with 2 s (a 1 s wait) CI's plain run (3 tests at once on this
# 2-CPU machine) and overloaded ASan runs here left out live ranks 3 times in ~3000 jobs, every
# rank but the decider not run (or its join not put) for over a second. 4 s: a 2 s wait.
CALL_TIMEOUT=4
JOB_TIMEOUT=40 # the hard bound of one job
FIRST=${HN_KILL_FIRST:-0} # the first job's number (each job's draws come from its number: to run one again)
BASE=$(mktemp -d "${TEST_TMPDIR:-/tmp}/file_kill.XXXXXX")
[ -n "${HN_KILL_KEEP:-}" ] || trap 'rm -rf "$BASE"' EXIT # HN_KILL_KEEP=1: keep the failed jobs' files

# pid_of_rank KEY RANK: the process of that rank of the job with that key.
pid_of_rank() {
    local files
    files=$(grep -lzx "HIDET_NCCL_JOB_KEY=$1" /proc/[0-9]*/environ 2>/dev/null)
    [ -n "$files" ] && grep -lzx "HIDET_NCCL_RANK=$2" $files 2>/dev/null | head -n 1 | cut -d/ -f3
}

# The waits for a moment to signal run in bash alone (no process started per look: under load each
# would cost the victim's job its time, and the signal would come after the victim ended).
exec {NAP}<> <(:) # a pipe nobody writes: a read on it with a timeout sleeps
nap() { read -r -t "$1" -u "$NAP" _ 2>/dev/null; }
# starts FILE PREFIX: a line of FILE starts with PREFIX.
starts() {
    local l
    { while IFS= read -r l || [ -n "$l" ]; do [[ $l == "$2"* ]] && return 0; done <"$1"; } 2>/dev/null
    return 1
}
# in_job PID KEY: process PID runs as a rank of the job with that key.
in_job() {
    local v
    { while IFS= read -r -d '' v; do [ "$v" = "HIDET_NCCL_JOB_KEY=$2" ] && return 0; done <"/proc/$1/environ"; } 2>/dev/null
    return 1
}

# others_of KEY PID: the processes of the job with that key but PID (an ended one, a zombie
# included, shows no environment).
others_of() { grep -lzx "HIDET_NCCL_JOB_KEY=$1" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 | grep -vx "$2"; }

# job I: one job; its verdict in $BASE/job$I/verdict ("ok ..." or what went wrong).
job() {
    local i=$1 dir="$BASE/job$1"
    RANDOM=$((7919 * i + 17))
    local n=$((3 + RANDOM % 6)) victim planned how=KILL when=made delay_ms key="kill$i.${BASE##*.}"
    victim=$((RANDOM % n))
    planned=$(((victim + 1 + RANDOM % (n - 1)) % n)) # the rank that kills itself: another one
    ((RANDOM % 3 == 2)) && how=STOP
    if ((RANDOM % 2)); then when=made delay_ms=$((RANDOM % 41)); else when=recovery delay_ms=$((RANDOM % 16)); fi
    local wake=timed # a stopped rank: let go on past the deadline, or once every other rank of the job ended
    ((RANDOM % 2)) && wake=last
    mkdir -p "$dir/rdv" "$dir/out"
    chmod 700 "$dir/rdv"
    local t0=$(date +%s%N)
    timeout -k 2 "$JOB_TIMEOUT" "$RUN" -n "$n" --keep-going --rendezvous-dir "$dir/rdv" --job-key "$key" \
        --output-dir "$dir/out" "$PEER" "$planned" "$((5000 + i))" "$CALL_TIMEOUT" >"$dir/launcher.log" 2>&1 &
    local launcher=$! hit=missed pid="" k f
    for ((k = 0; k < 2000; k++)); do # its bootstrap made (its BOOT line), or it ended already
        starts "$dir/out/rank.$victim.log" BOOT && break
        kill -0 "$launcher" 2>/dev/null || break
        nap 0.002
    done
    pid=$(pid_of_rank "$key" "$victim")
    for ((k = 0; k < 2000; k++)); do # for a kill in recovery: a rank began to recover (from the planned death)
        [ $when = made ] && break
        for f in "$dir"/out/rank.*.log; do starts "$f" SAW && break 2; done
        kill -0 "$launcher" 2>/dev/null || break
        nap 0.002
    done
    nap "$(printf '0.%03d' "$delay_ms")"
    # still the victim (its pid not yet another process's: tests run side by side)
    if [ -n "$pid" ] && in_job "$pid" "$key" &&
        kill "-$how" "$pid" 2>/dev/null; then hit=hit; fi
    local t_hit=$(date +%s.%N)
    if [ "$hit" = hit ] && [ "$how" = STOP ] && [ $wake = last ]; then
        # once the others ended (they wait for a stopped rank no longer than their deadlines): they
        # tidied what they could, and it must still find the decision that left it out (or that
        # kept it, with a round after it): told so, never deciding a round of its own
        for ((k = 0; k < 400; k++)); do
            [ -z "$(others_of "$key" "$pid")" ] && break
            nap 0.05
        done
        kill -CONT "$pid" 2>/dev/null
    elif [ "$hit" = hit ] && [ "$how" = STOP ]; then # past the calls' deadline, then on
        sleep $((CALL_TIMEOUT + 1))
        kill -CONT "$pid" 2>/dev/null
    fi
    wait "$launcher"
    local rc=$? took_ms=$((($(date +%s%N) - t0) / 1000000))
    local what="$how rank $victim of $n ${delay_ms} ms after its bootstrap was made ($hit)"
    [ $when = recovery ] && what="$how rank $victim of $n ${delay_ms} ms into the first recovery ($hit)"
    [ "$how" = STOP ] && [ $wake = last ] && what="$what, let go on once the others ended"
    # The signal came after the job's work when a rank had printed DONE before it (its log's time):
    # then the victim may have been the last process of the job, with nobody left to remove what
    # it had under way; that is no kill while the job is made or recovers, and what it leaves is
    # not judged (the rest is).
    local r first_done=""
    for ((r = 0; r < n; r++)); do
        if grep -qs '^DONE' "$dir/out/rank.$r.log"; then
            local t=$(stat -c '%.9Y' "$dir/out/rank.$r.log")
            if [ -z "$first_done" ] || [ "$(echo "$t < $first_done" | bc)" = 1 ]; then first_done=$t; fi
        fi
    done
    [ "$hit" = hit ] && [ -n "$first_done" ] && [ "$(echo "$first_done < $t_hit" | bc)" = 1 ] && hit=late
    if [ $rc -eq 124 ] || [ $rc -eq 137 -a $took_ms -ge $((JOB_TIMEOUT * 1000)) ]; then
        echo "HANG: $what" >"$dir/verdict"
        return
    fi
    local problems=""
    for ((r = 0; r < n; r++)); do
        local log="$dir/out/rank.$r.log"
        if grep -q "^DONE" "$log" 2>/dev/null || grep -q "^KILL $r " "$log" 2>/dev/null ||
            [ "$r" = "$victim" -a "$hit" != missed ]; then
            :
        elif [ "$how" = STOP ] && [ "$hit" != missed ]; then
            : # left out, or failed at its deadline waiting for the stopped rank
        else
            problems="$problems; rank $r neither finished nor died: $(tail -n 2 "$log" 2>/dev/null | tr '\n' ' ' | cut -c1-300)"
        fi
    done
    # one decision per round: every rank that went through round E went on with the same ranks,
    # and got the same id after it
    local split
    split=$(cat "$dir"/out/rank.*.log 2>/dev/null | awk '
        /^EPOCH /{ k = $2; v = $0; if ((k in e) && e[k] != v) print "round " k ": " e[k] " and " v; e[k] = v }
        /^ID /{ if (($2 in id) && id[$2] != $3) print "round " $2 ": ids " id[$2] " and " $3; id[$2] = $3 }')
    [ -z "$split" ] || problems="$problems; $(echo $split)"
    local left
    left=$(ls -A "$dir/rdv")
    [ -z "$left" ] || [ "$hit" = late ] || problems="$problems; left in the directory: $(echo $left)"
    if [ -n "$problems" ]; then
        echo "FAIL: $what:${problems#;}" >"$dir/verdict"
    else
        rm -rf "$dir"
        mkdir -p "$dir" && echo "ok $took_ms $how $hit" >"$dir/verdict"
    fi
}

# judged: how many jobs ended whose signal came while the job was made or recovered, or that failed
judged() { cat "$BASE"/job*/verdict 2>/dev/null | grep -c -e ' hit$' -e '^FAIL' -e '^HANG'; }

t_start=$(date +%s%N)
i=$FIRST
while [ "$(judged)" -lt "$JOBS" ] && [ $i -lt $((FIRST + 2 * JOBS)) ]; do
    running=$(jobs -rp | wc -l)
    if [ "$running" -ge "$PARALLEL" ] || [ $(($(judged) + running)) -ge "$JOBS" ]; then
        wait -n
        continue
    fi
    job "$i" &
    i=$((i + 1))
done
wait
ran=$((i - FIRST))
fail=0
for ((i = FIRST; i < FIRST + ran; i++)); do
    v=$(cat "$BASE/job$i/verdict" 2>/dev/null || echo "FAIL: job $i gave no verdict")
    case $v in
        ok*) ;;
        *) echo "job $i: $v"; fail=1 ;;
    esac
done
kills=$(grep -h '^ok .* KILL hit' "$BASE"/job*/verdict | wc -l)
stops=$(grep -h '^ok .* STOP hit' "$BASE"/job*/verdict | wc -l)
late=$(grep -h '^ok .* late' "$BASE"/job*/verdict | wc -l)
missed=$(grep -h '^ok .* missed' "$BASE"/job*/verdict | wc -l)
[ "$(judged)" -ge "$JOBS" ] || { echo "only $(judged) jobs of $ran were signalled in time"; fail=1; }
echo "$ran jobs in $((($(date +%s%N) - t_start) / 1000000)) ms, $PARALLEL at a time, passed: a rank killed while" \
    "the job was made or recovered in $kills, stopped in $stops (an empty directory after each); the signal came" \
    "after the job's work in $late (what they left not judged), after the rank ended in $missed"
grep -h '^ok' "$BASE"/job*/verdict | awk '{print $2}' | sort -n |
    awk '{ v[NR] = $1 } END { if (NR) printf "a job: median %d ms, 90%% %d ms, max %d ms\n", v[int((NR - 1) * .5) + 1], v[int((NR - 1) * .9) + 1], v[NR] }'
if [ $fail -ne 0 ]; then echo "FAILED"; exit 1; fi
echo "PASSED"
