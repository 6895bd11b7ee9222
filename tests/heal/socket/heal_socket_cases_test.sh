#!/bin/bash
# Heal over the socket rendezvous (issue 39): the refusals and the hard cases, one job of
# tests/heal/heal_driver each (3 ranks under hidet-nccl-run --rendezvous socket unless said), with
# processes started by hand from a rank's own environment (the driver's --env-out):
#   news         a member begins a heal round, nobody having died: the others, waiting (not in a
#                call), hear of it through hidet_nccl_bootstrap_news and join; nothing changes but
#                the epoch
#   live         a process for a live rank is refused (told and logged: a live member)
#   race         two processes for one dead rank at once: one joins, the other is refused
#   secret       a joiner without the secret, and one with another, are refused; one started by
#                hand with it is taken in, under its old rank
#   nobody       a heal with nobody to take in ends within its wait, the job goes on without the rank
#   joiner dies  the restarted rank dies again after its init, before its heal: the next one is taken
#   member dies  a member dies inside the heal round: the round goes on, and it comes back too
#   late         a joiner that comes after the round waits for the next; with none, it times out
#                saying so
#   fails        a rank that fails at once every time it is restarted: bounded by --max-restarts,
#                said by the launcher, the job stopped, nothing left
#   hub          rank 0's hub (no hidet-nccl-run): heal refused at once (UNSUPPORTED, saying how),
#                a restarted rank refused at its init, saying why; two bootstraps of a process
#                alive at once on one port (the port kept for late ranks goes to the newer one)
#   usage: heal_socket_cases_test.sh HIDET_NCCL_RUN HEAL_DRIVER
set -u
if [ -n "${TEST_SRCDIR:-}" ]; then . "$TEST_SRCDIR/$TEST_WORKSPACE/tests/wait_for.sh"; else . "$(dirname "$(realpath "$0")")/../../wait_for.sh"; fi
RUN=$(realpath "$1")
DRIVER=$(realpath "$2")
T=$(scaled 10)          # every call's deadline on the ranks (a heal's decider waits half of it)
JOB_TIMEOUT=$(scaled 60) # the hard bound of one job
BASE=$(mktemp -d "${TEST_TMPDIR:-/tmp}/heal_cases.XXXXXX")
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$BASE"' EXIT
passed=0
failed=0
check() { # check WHAT COMMAND...
    local what=$1
    shift
    if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $what"; fi
}
has() { grep -q -- "$2" "$1"; }
hasnt() { ! grep -q -- "$2" "$1"; }
count_is() { [ "$(grep -c -- "$2" "$1")" -eq "$3" ]; }
show() { sed 's/^/    /' "$@" | tail -n 12; }

# job DIR N DRIVER_ARGS...: the launcher in the background (pid in JOB); its output in DIR.
job() {
    local d=$1 n=$2
    shift 2
    mkdir -p "$d/env"
    timeout -k 2 "$JOB_TIMEOUT" "$RUN" -n "$n" --rendezvous socket --tag-output --restart-delay 0 $LAUNCH \
        "$DRIVER" "$@" --env-out "$d/env" --timeout "$T" >"$d/out" 2>"$d/err" &
    JOB=$!
}
# hand DIR NAME RANK [VAR=VALUE...] -- DRIVER_ARGS...: a process started by hand with rank RANK's
# environment (as it was at its first start), VAR=VALUE replacing or (VAR=) removing one; pid in HAND.
hand() {
    local d=$1 name=$2 rank=$3 f vars=() v
    shift 3
    f=$(ls "$d"/env/env."$rank".* | head -n 1)
    mapfile -d '' -t vars < <(grep -z -v '^HIDET_NCCL_RESTART_COUNT=' "$f")
    while [ "$1" != -- ]; do
        v=$1
        shift
        mapfile -d '' -t vars < <(printf '%s\0' "${vars[@]}" | grep -z -v "^${v%%=*}=")
        [ -n "${v#*=}" ] && vars+=("$v")
    done
    shift
    local rounds=$1
    shift
    env -i "${vars[@]}" "$DRIVER" "$rounds" --timeout "$T" "$@" >"$d/$name.out" 2>"$d/$name.err" &
    HAND=$!
}
env_of() { ls "$1"/env/env."$2".* >/dev/null 2>&1; }
ended() { ! kill -0 "$1" 2>/dev/null; }

# ---------------------------------------------------------------- news
failed_before=$failed
d=$BASE/news
LAUNCH=""
job "$d" 3 10 --wait-at 3 --wait-file "$d/never" --heal-at 3 --healer 1 --healer-file "$d/heal"
wait_for 30 "ranks 0 and 2 at round 3" bash -c "[ \$(grep -c '^\[[02]\] waiting at round 3' '$d/out') -eq 2 ]"
touch "$d/heal"
wait "$JOB"
rc=$?
check "news: the job ends well (exit $rc)" [ $rc -eq 0 ]
check "news: ranks 0 and 2 heard of rank 1's heal round while they waited" bash -c \
    "grep -q '^\[0\] news at round 3' '$d/out' && grep -q '^\[2\] news at round 3' '$d/out'"
check "news: a round with nobody lost or taken in: the same on every rank" count_is "$d/out" \
    "heal round 1 members 0 1 2 joined none rank [0-2] took" 3
check "news: every rank done" count_is "$d/out" "done rank [0-2] rounds 10 epoch 1 members 0 1 2$" 3
[ $failed -eq $failed_before ] || show "$d/out" "$d/err"

# ---------------------------------------------------------------- live
failed_before=$failed
d=$BASE/live
job "$d" 3 20 --wait-at 2 --wait-file "$d/go"
wait_for 30 "the ranks at round 2" bash -c "[ \$(grep -c 'waiting at round 2' '$d/out') -eq 3 ]"
hand "$d" twin 1 -- 5
wait "$HAND"
rc=$?
check "live: a second process for live rank 1 fails its init (exit 2, got $rc)" [ $rc -eq 2 ]
check "live: ... saying it is a live member" has "$d/twin.err" \
    "heal_driver rank -1: init: .*rank 1 (job key '.*'): the rendezvous (hidet-nccl-run) at .* refused it: job rank 1 is a live member of the job (its process connected from .*): one process per rank"
check "live: the rendezvous logged it (WARN)" has "$d/err" "hidet_nccl WARN socket rendezvous at port .*: refused job rank 1 from .*: job rank 1 is a live member"
touch "$d/go"
wait "$JOB"
rc=$?
check "live: the job went on and ended well (exit 0, got $rc)" [ $rc -eq 0 ]
check "live: ... every rank done" count_is "$d/out" "done rank [0-2] rounds 20 epoch 0 members 0 1 2" 3
[ $failed -eq $failed_before ] || show "$d/out" "$d/err" "$d/twin.err"

# ---------------------------------------------------------------- race
failed_before=$failed
d=$BASE/race
job "$d" 3 20 --kill-every 2 --kills 1 --victim 2 --exit0 --hold-heal "$d/go"
wait_for 30 "the members holding before heal" bash -c "[ \$(grep -c 'holding before heal' '$d/out') -eq 2 ]"
hand "$d" a 2 -- 20
a=$HAND
hand "$d" b 2 -- 20
b=$HAND
either_ended() { ended "$a" || ended "$b"; }
wait_for 30 "one of the two refused" either_ended
if ended "$a"; then loser=a winner=b wpid=$b; else loser=b winner=a wpid=$a; fi
check "race: one of two processes for dead rank 2 waits as a joiner" has "$d/$winner.out" "start rank 2 of 3 pid [0-9]* restart 0 joining 1"
check "race: the other is refused: one joiner per rank" has "$d/$loser.err" \
    "refused it: a restarted process for job rank 2 waits already to join the job (it connected from .*): one joiner per rank"
check "race: ... logged" has "$d/err" "WARN socket rendezvous at port .*: refused job rank 2 from .*: a restarted process for job rank 2 waits already"
touch "$d/go"
wait "$JOB"
rc=$?
wait "$wpid"
rcw=$?
check "race: the job ends well (launcher $rc, joiner $rcw)" [ $rc -eq 0 -a $rcw -eq 0 ]
check "race: the joiner was taken in under rank 2" has "$d/$winner.out" "heal round 1 members 0 1 2 joined 2 rank 2 took"
check "race: every rank agrees" count_is "$d/out" "heal round 1 members 0 1 2 joined 2 rank [01] took" 2
[ $failed -eq $failed_before ] || show "$d/out" "$d/err" "$d"/a.* "$d"/b.*

# ---------------------------------------------------------------- secret
failed_before=$failed
d=$BASE/secret
job "$d" 3 20 --kill-every 2 --kills 1 --victim 2 --exit0 --hold-heal "$d/go"
wait_for 30 "the members holding before heal" bash -c "[ \$(grep -c 'holding before heal' '$d/out') -eq 2 ]"
hand "$d" none 2 HIDET_NCCL_JOB_SECRET= -- 20
wait "$HAND"
check "secret: a joiner without the secret is refused" has "$d/none.err" \
    "refused it: the rendezvous holds a job secret and this rank does not"
hand "$d" wrong 2 HIDET_NCCL_JOB_SECRET=not-the-jobs-secret-at-all -- 20
wait "$HAND"
check "secret: a joiner with another secret is refused" has "$d/wrong.err" \
    "refused it: this rank's proof of the job secret does not match the rendezvous's secret"
check "secret: ... both logged, neither welcomed" has "$d/err" "dropped a connection from .*: a claim to be rank 2 without the job secret"
hand "$d" good 2 -- 20
good=$HAND
wait_for 30 "the joiner with the secret" has "$d/good.out" "joining 1"
touch "$d/go"
wait "$JOB"
rc=$?
wait "$good"
rcg=$?
check "secret: one started by hand with the secret is taken in (launcher $rc, joiner $rcg)" [ $rc -eq 0 -a $rcg -eq 0 ]
check "secret: ... under its old rank" has "$d/good.out" "heal round 1 members 0 1 2 joined 2 rank 2 took"
check "secret: ... to the end" has "$d/good.out" "done rank 2 rounds 20 epoch 1 members 0 1 2"
[ $failed -eq $failed_before ] || show "$d/out" "$d/err" "$d"/none.* "$d"/wrong.* "$d"/good.*

# ---------------------------------------------------------------- nobody
failed_before=$failed
d=$BASE/nobody
job "$d" 3 20 --kill-every 2 --kills 1 --victim 2 --exit0 --partial-ok --heal-timeout 2
wait "$JOB"
rc=$?
check "nobody: the job goes on without rank 2 and ends well (exit $rc)" [ $rc -eq 0 ]
check "nobody: the heal took nobody in" count_is "$d/out" "heal round 1 members 0 1 joined none rank [01] took" 2
ms=$(sed -n 's/.*heal round 1 members 0 1 joined none rank 0 took \([0-9]*\)\..*/\1/p' "$d/out")
check "nobody: ... after its wait, 1 s, within its deadline, 2 s (took ${ms:-?} ms)" \
    [ -n "$ms" ] && [ "$ms" -ge 900 ] && [ "$ms" -lt 2000 ]
check "nobody: the members finished as two" count_is "$d/out" "done rank [01] rounds 20 epoch 1 members 0 1$" 2
[ $failed -eq $failed_before ] || show "$d/out" "$d/err"

# ---------------------------------------------------------------- joiner dies
failed_before=$failed
d=$BASE/joiner_dies
LAUNCH="--max-restarts 3"
job "$d" 3 20 --kill-every 2 --kills 1 --victim 2 --joiner-dies 1
wait "$JOB"
rc=$?
check "joiner dies: the job ends whole (exit $rc)" [ $rc -eq 0 ]
check "joiner dies: the first restarted process died before its heal" has "$d/out" "^\[2\] kill rank 2 round -1 at .* (a joiner, before its heal)"
check "joiner dies: ... the second was taken in" has "$d/out" "^\[2\] heal round [0-9]* members 0 1 2 joined 2 rank 2 took"
check "joiner dies: ... restarted twice" has "$d/err" "hidet-nccl-run: rank 2: restart 2 of 3 started"
check "joiner dies: every rank done" count_is "$d/out" "done rank [0-2] rounds 20 epoch [0-9]* members 0 1 2$" 3
[ $failed -eq $failed_before ] || show "$d/out" "$d/err"

# ---------------------------------------------------------------- member dies
failed_before=$failed
d=$BASE/member_dies
job "$d" 3 20 --kill-every 2 --kills 1 --victim 2 --member-dies-in-heal 1 --moment 3000
wait "$JOB"
rc=$?
check "member dies: the job ends whole (exit $rc)" [ $rc -eq 0 ]
check "member dies: rank 1 died in its heal" has "$d/out" "^\[1\] kill rank 1 round [0-9]* at .* (in its heal)"
check "member dies: ranks 1 and 2 both taken back in" bash -c \
    "grep -q 'heal round [0-9]* members 0 1 2 joined .*1' '$d/out' && grep -q 'heal round [0-9]* members 0 1 2 joined .*2' '$d/out'"
check "member dies: every rank done" count_is "$d/out" "done rank [0-2] rounds 20 epoch [0-9]* members 0 1 2$" 3
[ $failed -eq $failed_before ] || show "$d/out" "$d/err"

# ---------------------------------------------------------------- late: waits for the next round
failed_before=$failed
d=$BASE/late_next
LAUNCH=""
job "$d" 3 30 --kill-every 2 --kills 1 --victim 2 --exit0 --partial-ok --heal-every 3 --heal-timeout 2 --wait-at 4 --wait-file "$d/go"
wait_for 30 "the members at round 4" bash -c "[ \$(grep -c 'waiting at round 4' '$d/out') -eq 2 ]"
check "late: the first heal round went on without rank 2" count_is "$d/out" "heal round 1 members 0 1 joined none" 2
hand "$d" late 2 -- 30
late=$HAND
wait_for 30 "the late joiner" has "$d/late.out" "joining 1"
touch "$d/go"
wait "$JOB"
rc=$?
wait "$late"
rcl=$?
check "late: it waited for the members' next heal round, which took it in (launcher $rc, joiner $rcl)" [ $rc -eq 0 -a $rcl -eq 0 ]
check "late: ... round 2, on every rank" count_is "$d/out" "heal round 2 members 0 1 2 joined 2" 2
check "late: ... and on the joiner" has "$d/late.out" "heal round 2 members 0 1 2 joined 2 rank 2 took"
[ $failed -eq $failed_before ] || show "$d/out" "$d/err" "$d"/late.*

# ---------------------------------------------------------------- late: no next round
failed_before=$failed
d=$BASE/late_none
job "$d" 3 10 --kill-every 2 --kills 1 --victim 2 --exit0 --partial-ok --heal-timeout 2 --wait-at 4 --wait-file "$d/go"
wait_for 30 "the members at round 4" bash -c "[ \$(grep -c 'waiting at round 4' '$d/out') -eq 2 ]"
hand "$d" late 2 HIDET_NCCL_TIMEOUT=2 -- 10 --timeout 2
t0=$(date +%s%N)
wait "$HAND"
rc=$?
took=$((($(date +%s%N) - t0) / 1000000))
check "late, no round: the joiner's heal times out (exit 2, got $rc) within its deadline and a bit ($took ms)" \
    [ $rc -eq 2 -a $took -lt $((2000 + 1000 * $(scaled 3))) ]
check "late, no round: ... saying so" has "$d/late.err" \
    "the joiner's heal failed after .*(timeout).*job '.*', job rank 2 (a restarted rank, taken by the rendezvous as a joiner): no heal round took it in within 2.0 s"
touch "$d/go"
wait "$JOB"
rc=$?
check "late, no round: the members end well as two (exit $rc)" [ $rc -eq 0 ]
[ $failed -eq $failed_before ] || show "$d/out" "$d/err" "$d"/late.*

# ---------------------------------------------------------------- fails
failed_before=$failed
d=$BASE/fails
LAUNCH="--max-restarts 3"
t0=$(date +%s%N)
job "$d" 3 20 --kill-every 2 --kills 1 --victim 2 --restarted-fails
wait "$JOB"
rc=$?
took=$((($(date +%s%N) - t0) / 1000000))
check "fails: the launcher exits 3, the rank's code (got $rc, $took ms)" [ $rc -eq 3 ]
check "fails: restarted exactly 3 times" count_is "$d/err" "hidet-nccl-run: rank 2: restart [0-9] of 3 started" 3
check "fails: ... then said so" has "$d/err" "hidet-nccl-run: rank 2 failed 4 times; no restarts left (--max-restarts 3; the last: exit 3)"
check "fails: nothing left" wait_for 10 "the job's processes gone" gone "$DRIVER .*--env-out $d/env "
[ $failed -eq $failed_before ] || show "$d/out" "$d/err"

# ---------------------------------------------------------------- hub (rank 0's, no launcher)
failed_before=$failed
d=$BASE/hub
mkdir -p "$d/env"
port=$((20000 + (RANDOM * 32768 + RANDOM) % 12000))
pids=""
for r in 0 1 2; do
    env -i PATH="$PATH" MASTER_ADDR=127.0.0.1 MASTER_PORT=$port HIDET_NCCL_RANK=$r HIDET_NCCL_WORLD_SIZE=3 \
        HIDET_NCCL_JOB_KEY=hub-test HIDET_NCCL_JOB_SECRET=hub-secret-0123456789 \
        "$DRIVER" 20 --two --kill-every 2 --kills 1 --victim 2 --exit0 --hold-heal "$d/go" --env-out "$d/env" --timeout "$T" \
        >"$d/r$r.out" 2>"$d/r$r.err" &
    pids="$pids $!"
done
wait_for 30 "the members holding before heal" bash -c "grep -q 'holding before heal' '$d/r0.out' && grep -q 'holding before heal' '$d/r1.out'"
hand "$d" again 2 -- 20
t0=$(date +%s%N)
wait "$HAND"
rc=$?
took=$((($(date +%s%N) - t0) / 1000000))
check "hub: two bootstraps alive at once on one port (the second took it over)" \
    count_is <(cat "$d"/r?.out) "second bootstrap rank [0-2] of 3" 3
check "hub: a restarted rank at rank 0's hub fails its init at once (exit 2, got $rc, $took ms)" [ $rc -eq 2 -a $took -lt $((T * 1000 / 2)) ]
check "hub: ... saying why" has "$d/again.err" \
    "refused it: the job (3 ranks) formed before this rank came: its socket rendezvous lives in rank 0 and cannot take a restarted rank back in; heal needs hidet-nccl-run's (--rendezvous socket)"
check "hub: ... logged by rank 0" has "$d/r0.err" "WARN socket rendezvous at port $port (job key 'hub-test'): rank 2 came from .* after the job formed"
touch "$d/go"
for p in $pids; do wait "$p"; done
check "hub: the members' heal is refused at once (UNSUPPORTED), saying how" has "$d/r1.err" \
    "a member's heal failed after [0-9.]* ms (unsupported): .*no hidet-nccl-run serves it.*start the job with hidet-nccl-run --rendezvous socket"
[ $failed -eq $failed_before ] || show "$d"/r*.out "$d"/r*.err "$d"/again.*

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
