#!/bin/bash
# Heal over the shared-file rendezvous (issue 39): the refusals and the hard cases, one job of
# tests/heal/heal_driver each (3 ranks under hidet-nccl-run with a rendezvous directory of the
# test's own, --restart-delay 0), with processes started by hand from a rank's own environment
# (the driver's --env-out: the job's directory, key and secret); after each job nothing is left in
# the directory:
#   live         a process started by hand as live rank 1 says joining 1 and asks; the members'
#                next heal round refuses it (the reason at it, a WARN at the decider); rank 1 goes on
#   race         two processes for one dead rank: the one that asked first is taken in under the
#                rank, the second refused (its reason, a WARN)
#   secret       a joiner without the secret, and one with another, are refused (their requests
#                fail the decider's checks: a WARN each, the reason at each); one with it is taken in
#   nobody       a heal with nobody to take in ends at its wait, within its deadline; the job goes on
#                without the rank
#   joiner dies  the restarted rank dies again after its init, before its heal: the next is taken in
#   member dies  a member dies inside the heal round: the round goes on, and it comes back too
#   late         a joiner that comes after the round waits for the next; with none, it times out
#                naming the job and its rank
#   usage: heal_file_cases_test.sh HIDET_NCCL_RUN HEAL_DRIVER
set -u
if [ -n "${TEST_SRCDIR:-}" ]; then . "$TEST_SRCDIR/$TEST_WORKSPACE/tests/wait_for.sh"; else . "$(dirname "$(realpath "$0")")/../../wait_for.sh"; fi
RUN=$(realpath "$1")
DRIVER=$(realpath "$2")
T=$(scaled 10)           # every call's deadline on the ranks (a heal's decider waits half of it)
JOB_TIMEOUT=$(scaled 60) # the hard bound of one job
BASE=$(mktemp -d "${TEST_TMPDIR:-/tmp}/heal_file_cases.XXXXXX")
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$BASE"' EXIT
passed=0
failed=0
check() { # check WHAT COMMAND...
    local what=$1
    shift
    if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $what"; fi
}
has() { grep -q -- "$2" "$1"; }
count_is() { [ "$(grep -c -- "$2" "$1")" -eq "$3" ]; }
show() { sed 's/^/    /' "$@" | tail -n 12; }
empty() { [ -z "$(ls -A "$1")" ] || { echo "    left in $1: $(ls -A "$1" | tr '\n' ' ')"; return 1; }; }

# job DIR N DRIVER_ARGS...: the launcher in the background (pid in JOB), its rendezvous directory
# DIR/rdv (key: the case's name); its output in DIR.
job() {
    local d=$1 n=$2
    shift 2
    mkdir -p "$d/env" "$d/rdv"
    chmod 700 "$d/rdv"
    timeout -k 2 "$JOB_TIMEOUT" "$RUN" -n "$n" --rendezvous-dir "$d/rdv" --job-key "$(basename "$d")" --tag-output \
        --restart-delay 0 $LAUNCH "$DRIVER" "$@" --env-out "$d/env" --timeout "$T" >"$d/out" 2>"$d/err" &
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

# The ranks wait at round 1 (not in a call) while processes are started by hand; rank 2 leaves
# (exit 0: not restarted) at round 2, and the members' heal round takes in or refuses what asked.
# (A member that holds before its heal would leave the others waiting on it until their deadline:
# the file rendezvous hears of a round only from its joins.)
LAUNCH=""
STAGE="--wait-at 1 --kill-every 2 --kills 1 --victim 2 --exit0"
at_round_1() { wait_for 30 "the ranks at round 1" bash -c "[ \$(grep -c 'waiting at round 1' '$1/out') -eq 3 ]"; }
asked() { # asked DIR RANK COUNT: COUNT requests for RANK are in place (not being written)
    wait_for 30 "$3 request(s) for rank $2" bash -c \
        "[ \$(ls -A '$1/rdv' | grep '\.request\.$2\.' | grep -vc '\.tmp\.') -eq $3 ]"
}

# ---------------------------------------------------------------- live
failed_before=$failed
d=$BASE/live
job "$d" 3 20 $STAGE --wait-file "$d/go" --partial-ok --heal-timeout 4
at_round_1 "$d"
hand "$d" twin 1 -- 5
twin=$HAND
asked "$d" 1 1
check "live: a second process for live rank 1 says joining 1" has "$d/twin.out" "start rank 1 of 3 pid [0-9]* restart 0 joining 1"
touch "$d/go"
wait "$twin"
rc=$?
check "live: ... and is refused by the members' heal round (exit 2, got $rc)" [ $rc -eq 2 ]
check "live: ... saying why" has "$d/twin.err" \
    "job rank 1 of 3 (job key 'live' in .*), a restarted rank asking to be taken back in, was refused by heal round 1 .*: its job rank is a live member (job rank 1 is pid [0-9]* on host .*): two processes were started as this rank"
check "live: the decider logged it (WARN)" has "$d/err" \
    "hidet_nccl WARN heal round 1, job rank 0 (decider): refused the request .*request\.1\..* of pid [0-9]* .*: job rank 1 is a live member"
wait "$JOB"
rc=$?
check "live: rank 1 unharmed, the job went on and ended well (exit 0, got $rc)" [ $rc -eq 0 ]
check "live: ... the heal round kept ranks 0 and 1" count_is "$d/out" "heal round 1 members 0 1 joined none rank [01] took" 2
check "live: ... both done" count_is "$d/out" "done rank [01] rounds 20 epoch 1 members 0 1$" 2
check "live: nothing left in the directory" empty "$d/rdv"
[ $failed -eq $failed_before ] || show "$d/out" "$d/err" "$d"/twin.*

# ---------------------------------------------------------------- race
failed_before=$failed
d=$BASE/race
job "$d" 3 20 $STAGE --wait-file "$d/go"
at_round_1 "$d"
hand "$d" a 2 -- 20
a=$HAND
asked "$d" 2 1
t_first=$(date +%s%3N)
wait_for 5 "the clock past the first request's millisecond" bash -c "[ \$(date +%s%3N) -gt $((t_first + 1)) ]"
hand "$d" b 2 -- 20
b=$HAND
asked "$d" 2 2
touch "$d/go"
wait "$b"
rcb=$?
check "race: the second process for dead rank 2 is refused (exit 2, got $rcb)" [ $rcb -eq 2 ]
check "race: ... saying why" has "$d/b.err" \
    "was refused by heal round 1 .*: another process asked for that rank first, or was taken in as it (job rank 2 is pid [0-9]* .*, taken in by that round)"
check "race: ... logged" has "$d/err" \
    "WARN heal round 1, job rank 0 (decider): refused the request .*request\.2\..* asked for job rank 2 first and is taken in"
wait "$JOB"
rc=$?
wait "$a"
rca=$?
check "race: the job ends well (launcher $rc, joiner $rca)" [ $rc -eq 0 -a $rca -eq 0 ]
check "race: the first was taken in under rank 2" has "$d/a.out" "heal round 1 members 0 1 2 joined 2 rank 2 took"
check "race: every rank agrees" count_is "$d/out" "heal round 1 members 0 1 2 joined 2 rank [01] took" 2
check "race: nothing left in the directory" empty "$d/rdv"
[ $failed -eq $failed_before ] || show "$d/out" "$d/err" "$d"/a.* "$d"/b.*

# ---------------------------------------------------------------- secret
failed_before=$failed
d=$BASE/secret
job "$d" 3 20 $STAGE --wait-file "$d/go"
at_round_1 "$d"
hand "$d" none 2 HIDET_NCCL_JOB_SECRET= -- 20
none=$HAND
hand "$d" wrong 2 HIDET_NCCL_JOB_SECRET=not-the-jobs-secret-at-all -- 20
wrong=$HAND
asked "$d" 2 2
hand "$d" good 2 -- 20
good=$HAND
asked "$d" 2 3
touch "$d/go"
wait "$none"
rcn=$?
wait "$wrong"
rcw=$?
check "secret: a joiner without the secret, and one with another, are refused (exit 2: $rcn, $rcw)" \
    [ $rcn -eq 2 -a $rcw -eq 2 ]
check "secret: ... the one without, saying why" has "$d/none.err" \
    "refused by heal round 1 .*: the request failed the decider's checks (that decision does not carry this process's job secret"
check "secret: ... the one with another, saying why" has "$d/wrong.err" \
    "refused by heal round 1 .*: the request failed the decider's checks (that decision does not carry this process's job secret"
check "secret: ... both logged by the decider" bash -c "[ \$(grep -c 'WARN heal round 1, job rank 0 (decider): refused a request to be taken back in: .*request\.2\..*MAC' '$d/err') -eq 2 ]"
wait "$JOB"
rc=$?
wait "$good"
rcg=$?
check "secret: one started by hand with the secret is taken in (launcher $rc, joiner $rcg)" [ $rc -eq 0 -a $rcg -eq 0 ]
check "secret: ... under its old rank" has "$d/good.out" "heal round 1 members 0 1 2 joined 2 rank 2 took"
check "secret: ... to the end" has "$d/good.out" "done rank 2 rounds 20 epoch 1 members 0 1 2"
check "secret: nothing left in the directory" empty "$d/rdv"
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
check "nobody: nothing left in the directory" empty "$d/rdv"
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
check "joiner dies: nothing left in the directory" empty "$d/rdv"
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
check "member dies: nothing left in the directory" empty "$d/rdv"
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
wait_for 30 "the late joiner's request" bash -c "[ \$(ls -A '$d/rdv' | grep -c '\.request\.2\.') -eq 1 ]"
touch "$d/go"
wait "$JOB"
rc=$?
wait "$late"
rcl=$?
check "late: it waited for the members' next heal round, which took it in (launcher $rc, joiner $rcl)" [ $rc -eq 0 -a $rcl -eq 0 ]
check "late: ... round 2, on every rank" count_is "$d/out" "heal round 2 members 0 1 2 joined 2" 2
check "late: ... and on the joiner" has "$d/late.out" "heal round 2 members 0 1 2 joined 2 rank 2 took"
check "late: nothing left in the directory" empty "$d/rdv"
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
check "late, no round: ... naming the job and its rank" has "$d/late.err" \
    "the joiner's heal failed after .*(timeout).*job rank 2 of 3 (job key 'late_none' in .*), a restarted rank asking to be taken back in (its request .*), waited 2.0 s for a heal round of the job's members to take it in: none did"
touch "$d/go"
wait "$JOB"
rc=$?
check "late, no round: the members end well as two (exit $rc)" [ $rc -eq 0 ]
check "late, no round: nothing left in the directory" empty "$d/rdv"
[ $failed -eq $failed_before ] || show "$d/out" "$d/err" "$d"/late.*

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
