#!/usr/bin/env bash
# hidet-nccl-run across "nodes": two launcher invocations on this host, one per node, meeting
# through the socket rendezvous (--master-addr/--master-port) and through a shared directory
# (--rendezvous-dir with --job-key); the multi-node options checked; a node that never comes.
#   launcher_nodes_test.sh HIDET_NCCL_RUN BOOTSTRAP_ENV_PEER LAUNCHER_CHILD
set -u
if [ -n "${TEST_SRCDIR:-}" ]; then . "$TEST_SRCDIR/$TEST_WORKSPACE/tests/wait_for.sh"; else . "$(dirname "$(realpath "$0")")/wait_for.sh"; fi
run=$(realpath "$1")
peer=$(realpath "$2")
child=$(realpath "$3")
tmp=${TEST_TMPDIR:-$(mktemp -d)}/nodes
rm -rf "$tmp"
mkdir -p "$tmp"
passed=0
failed=0
check() { local what=$1; shift; if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $what"; fi; }
not_in() { ! grep -q "$1" "$2"; }
# Below Linux's ephemeral range (32768-60999), where a port may be held by any outgoing
# connection: a master port in use would leave the other node waiting out its deadline.
port() { echo $((20000 + (RANDOM * 32768 + RANDOM) % 12000)); }

# Two nodes of 3 ranks through the socket rendezvous.
p=$(port)
"$run" --nnodes 2 --node-rank 1 --master-addr 127.0.0.1 --master-port "$p" -n 3 --timeout "$(scaled 60)" "$peer" socket \
    >"$tmp/s1.log" 2>&1 &
node1=$!
"$run" --nnodes 2 --node-rank 0 --master-addr 127.0.0.1 --master-port "$p" -n 3 --timeout "$(scaled 60)" "$peer" socket \
    >"$tmp/s0.log" 2>&1
rc0=$?
wait $node1
rc1=$?
cat "$tmp/s0.log" "$tmp/s1.log"
check "socket: node 0 exits 0" [ "$rc0" -eq 0 ]
check "socket: node 1 exits 0" [ "$rc1" -eq 0 ]
check "socket: ranks 0 .. 5 of 6 each say 0 failed" [ "$(cat "$tmp/s0.log" "$tmp/s1.log" | grep -c 'of 6: bootstrap_env_peer socket: .* 0 failed')" -eq 6 ]

check "socket without a secret: rank 0 says the rendezvous is unauthenticated" grep -q "without a job secret" "$tmp/s0.log"

# The same with a job secret file on both nodes: no warning; a node with another secret is refused.
two_nodes_secret() { # log prefix, node 0's secret file, node 1's
    local p
    p=$(port)
    "$run" --nnodes 2 --node-rank 1 --master-addr 127.0.0.1 --master-port "$p" -n 2 --timeout 20 \
        --job-secret-file "$3" "$peer" socket >"$tmp/$1.1.log" 2>&1 &
    local node1=$!
    "$run" --nnodes 2 --node-rank 0 --master-addr 127.0.0.1 --master-port "$p" -n 2 --timeout 20 \
        --job-secret-file "$2" "$peer" socket >"$tmp/$1.0.log" 2>&1
    rc0=$?
    wait $node1
    rc1=$?
}
(umask 077 && echo "a-secret-for-the-nodes-test-0001" >"$tmp/secret" && echo "another-secret-of-another-job-02" >"$tmp/other")
two_nodes_secret secret "$tmp/secret" "$tmp/secret"
cat "$tmp/secret.0.log" "$tmp/secret.1.log"
check "socket with a secret file: both nodes exit 0" [ "$rc0" -eq 0 -a "$rc1" -eq 0 ]
check "socket with a secret file: 4 ranks say 0 failed" [ "$(cat "$tmp/secret.0.log" "$tmp/secret.1.log" | grep -c 'of 4: bootstrap_env_peer socket: .* 0 failed')" -eq 4 ]
check "socket with a secret file: no warning" not_in "without a job secret" "$tmp/secret.0.log"
two_nodes_secret wrong "$tmp/secret" "$tmp/other"
check "a node with another secret: it fails" [ "$rc1" -ne 0 ]
check "a node with another secret: refused, saying why" grep -q "proof of the job secret does not match" "$tmp/wrong.1.log"

# A rank is named by its rank in the job, never its index on the node (issue 31): two nodes of
# 2 ranks with one --output-dir and --tag-output write rank.0.log .. rank.3.log, each holding its
# own rank's lines under its own tag (node 1 wrote its ranks 2 and 3 over node 0's rank.0.log
# and rank.1.log, tagged [0] and [1]).
p=$(port)
logs=$tmp/shared_logs
"$run" --nnodes 2 --node-rank 1 --master-addr 127.0.0.1 --master-port "$p" -n 2 --timeout "$(scaled 60)" --output-dir "$logs" \
    --tag-output "$peer" socket >"$tmp/o1.log" 2>&1 &
node1=$!
"$run" --nnodes 2 --node-rank 0 --master-addr 127.0.0.1 --master-port "$p" -n 2 --timeout "$(scaled 60)" --output-dir "$logs" \
    --tag-output "$peer" socket >"$tmp/o0.log" 2>&1
rc0=$?
wait $node1
rc1=$?
head -n 5 "$logs"/* "$tmp/o0.log" "$tmp/o1.log"
check "one --output-dir: both nodes exit 0" [ "$rc0" -eq 0 -a "$rc1" -eq 0 ]
check "one --output-dir: rank.0.log .. rank.3.log and nothing else" \
    [ "$(cd "$logs" && ls | tr '\n' ' ')" = "rank.0.log rank.1.log rank.2.log rank.3.log " ]
own_log() { # rank: its log holds its own line, and only lines tagged with its rank
    local f=$logs/rank.$1.log
    grep -q "^\[$1\] rank $1 of 4: bootstrap_env_peer socket: .* 0 failed" "$f" && [ "$(grep -cv "^\[$1\] " "$f")" -eq 0 ]
}
for r in 0 1 2 3; do check "one --output-dir: rank.$r.log is rank $r's, tagged [$r]" own_log $r; done
# Node 1 alone (its ranks never meet anyone): tags on the terminal, the exit summary and the
# message of a program that cannot run name ranks 2 and 3.
p=$(port)
node1=(--nnodes 2 --node-rank 1 --master-addr 127.0.0.1 --master-port "$p" -n 2 --grace 1)
"$run" "${node1[@]}" --tag-output sh -c 'echo "local $HIDET_NCCL_LOCAL_RANK"' >"$tmp/t1.out" 2>&1
check "node 1: tags [2] and [3] on the terminal" [ "$(sort "$tmp/t1.out" | tr '\n' '|')" = "[2] local 0|[3] local 1|" ]
"$run" "${node1[@]}" sh -c '[ "$HIDET_NCCL_LOCAL_RANK" = 1 ] && exit 3; sleep 30' >"$tmp/fail1.out" 2>&1
rc=$?
check "node 1: a failing rank's code ($rc)" [ "$rc" -eq 3 ]
check "node 1: the summary names rank 3" grep -q "rank 3 exited with code 3" "$tmp/fail1.out"
"$run" "${node1[@]}" --keep-going /no/such/program >"$tmp/none1.out" 2>&1 # both say it
check "node 1: 'cannot run' names ranks 2 and 3" [ "$(grep -c "rank [23]: cannot run" "$tmp/none1.out")" -eq 2 ]

# Two nodes of 2 ranks through a directory both see.
mkdir -m 700 "$tmp/shared"
"$run" --nnodes 2 --node-rank 1 --rendezvous-dir "$tmp/shared" --job-key nodes-test -n 2 "$peer" file >"$tmp/f1.log" 2>&1 &
node1=$!
"$run" --nnodes 2 --node-rank 0 --rendezvous-dir "$tmp/shared" --job-key nodes-test -n 2 "$peer" file >"$tmp/f0.log" 2>&1
rc0=$?
wait $node1
rc1=$?
cat "$tmp/f0.log" "$tmp/f1.log"
check "shared directory: both nodes exit 0" [ "$rc0" -eq 0 -a "$rc1" -eq 0 ]
check "shared directory: 4 ranks say 0 failed" [ "$(cat "$tmp/f0.log" "$tmp/f1.log" | grep -c 'of 4: bootstrap_env_peer file: .* 0 failed')" -eq 4 ]
check "shared directory: still there, and empty" [ -d "$tmp/shared" -a -z "$(ls -A "$tmp/shared")" ]

# The options must agree.
bad() { # expected message, options...
    local want=$1
    shift
    "$run" "$@" -n 1 /bin/true >"$tmp/bad.log" 2>&1
    local rc=$?
    [ "$rc" -eq 2 ] && grep -q -- "$want" "$tmp/bad.log" || { echo "rc $rc:"; cat "$tmp/bad.log"; return 1; }
}
check "--nnodes 2 alone" bad "needs --master-addr and --master-port" --nnodes 2
check "--node-rank past --nnodes" bad "--node-rank 2 is not in 0 .. 1" --nnodes 2 --node-rank 2 --master-addr h --master-port 1
check "--master-addr without --master-port" bad "--master-addr needs --master-port" --master-addr h
check "a shared directory without --job-key" bad "needs a --job-key" --nnodes 2 --rendezvous-dir "$tmp"
check "--master-port out of range" bad "--master-port '70000'" --master-addr h --master-port 70000
# Numbers by the one grammar (issue 27, item 3): a space, an empty value, a sign or a hex prefix
# is refused at once, naming the option, the value and the range; strtol took them.
two=(--nnodes 2 --master-addr h --master-port 1)
addr=(--master-addr h)
check "--node-rank ''" bad "--node-rank '' is not a whole number in 0 .. 4095" "${two[@]}" --node-rank ''
check "--node-rank ' 1'" bad "--node-rank ' 1' is not a whole number in 0 .. 4095" "${two[@]}" --node-rank ' 1'
check "--node-rank +1" bad "--node-rank '+1' is not a whole number" "${two[@]}" --node-rank +1
check "--nnodes ' 2'" bad "--nnodes ' 2' is not a whole number in 1 .. 4096" "${addr[@]}" --master-port 1 --nnodes ' 2'
check "--nnodes 0x2" bad "--nnodes '0x2' is not a whole number" "${addr[@]}" --master-port 1 --nnodes 0x2
check "--master-port ' 29500'" bad "--master-port ' 29500' is not a whole number in 1 .. 65535" "${addr[@]}" \
    --master-port ' 29500'
check "--master-port 3e4" bad "--master-port '3e4' is not a whole number in 1 .. 65535" "${addr[@]}" --master-port 3e4
# An empty --master-addr was passed on, and every rank failed with "no bootstrap found".
check "--master-addr ''" bad "--master-addr '' is empty" --master-addr '' --master-port 29500
check "--master-addr 'a b'" bad "--master-addr 'a b' is not a host name or address" --master-addr 'a b' --master-port 1
check "--job-secret-file that does not exist" bad "--job-secret-file $tmp/none: No such file" --job-secret-file "$tmp/none"
# A link to the secret is refused, as HIDET_NCCL_JOB_SECRET_FILE refuses it (issue 38): the launcher
# resolved it and passed the ranks its target.
ln -sf "$tmp/secret" "$tmp/secret.link"
check "--job-secret-file that is a symbolic link" bad "--job-secret-file $tmp/secret.link: a symbolic link" \
    --job-secret-file "$tmp/secret.link"
check "--rendezvous bogus" bad "--rendezvous 'bogus' is not file or socket" --rendezvous bogus
check "--rendezvous file with --master-addr" bad "--rendezvous file does not go with --master-addr" --rendezvous file \
    --master-addr h --master-port 1
check "--rendezvous socket across nodes alone" bad "--rendezvous socket across nodes needs --master-addr" \
    --rendezvous socket --nnodes 2
check "--rendezvous socket with --rendezvous-dir" bad "--rendezvous-dir goes with the file rendezvous" \
    --rendezvous socket --rendezvous-dir "$tmp"
check "-x HIDET_NCCL_RENDEZVOUS_SERVED" bad "-x HIDET_NCCL_RENDEZVOUS_SERVED: hidet-nccl-run sets" \
    -x HIDET_NCCL_RENDEZVOUS_SERVED=0

# One host, the socket rendezvous the launcher serves (--rendezvous socket): a port of the
# system's, a fresh key and secret; node 0's port in use stops the launcher before any rank.
"$run" --rendezvous socket -n 3 --timeout "$(scaled 60)" "$peer" socket >"$tmp/one.log" 2>&1
rc=$?
check "--rendezvous socket on one host: exit 0" [ "$rc" -eq 0 ]
check "--rendezvous socket on one host: 3 ranks say 0 failed" \
    [ "$(grep -c 'of 3: bootstrap_env_peer socket: .* 0 failed' "$tmp/one.log")" -eq 3 ]
check "--rendezvous socket on one host: a secret, no warning" not_in "without a job secret" "$tmp/one.log"
"$run" --rendezvous socket -n 1 sh -c 'echo "served=$HIDET_NCCL_RENDEZVOUS_SERVED at $MASTER_ADDR:$MASTER_PORT"' \
    >"$tmp/env.log" 2>&1
check "--rendezvous socket: the ranks are told" grep -q "^served=1 at 127.0.0.1:[0-9]" "$tmp/env.log"
# What the ranks inherit stays theirs and the served rendezvous': a HIDET_NCCL_JOB_KEY exported to
# the launchers is the key it serves; torchrun's agent variable does not move the ranks off the
# port it serves.
p=$(port)
export HIDET_NCCL_JOB_KEY=inherited-key TORCHELASTIC_USE_AGENT_STORE=True
"$run" --nnodes 2 --node-rank 1 --master-addr 127.0.0.1 --master-port "$p" -n 1 --timeout "$(scaled 30)" "$peer" socket \
    >"$tmp/k1.log" 2>&1 &
node1=$!
"$run" --nnodes 2 --node-rank 0 --master-addr 127.0.0.1 --master-port "$p" -n 1 --timeout "$(scaled 30)" "$peer" socket \
    >"$tmp/k0.log" 2>&1
rc0=$?
wait $node1
rc1=$?
unset HIDET_NCCL_JOB_KEY TORCHELASTIC_USE_AGENT_STORE
check "an inherited job key and torchrun's agent variable: both nodes exit 0" [ "$rc0" -eq 0 -a "$rc1" -eq 0 ]
# The port's holder listens on a port of the system's, says which once it listens, and holds it
# until killed (10 minutes at most, should this script die first); the launcher starts only then.
python3 -c 'import socket, time; s = socket.socket(); s.bind(("", 0)); s.listen(); print("listening on", s.getsockname()[1], flush=True); time.sleep(600)' \
    >"$tmp/holder.log" 2>&1 &
holder=$!
check "node 0's port in use: the holder listens" wait_for 60 "the port holder's 'listening on'" grep -q "^listening on " "$tmp/holder.log"
p=$(sed -n 's/^listening on //p' "$tmp/holder.log")
"$run" --nnodes 2 --node-rank 0 --master-addr 127.0.0.1 --master-port "$p" -n 1 sh -c 'echo started' >"$tmp/busy.log" 2>&1
rc=$?
kill $holder 2>/dev/null
wait $holder 2>/dev/null
check "node 0's port in use: exit 1" [ "$rc" -eq 1 ]
check "node 0's port in use: said, and no rank started" \
    eval 'grep -q "cannot serve the socket rendezvous: .*port $p on this host is in use" "$tmp/busy.log" && not_in started "$tmp/busy.log"'

# The served rendezvous under the usual open-files limit (issue 38, item 5): it polled its 1024
# admission slots beside its ranks' connections, more descriptors than `ulimit -n 1024` allows:
# poll failed (EINVAL) every second, nobody was admitted, and the launcher never ended. A limit
# too small for the job is said at start, naming it, before any rank starts.
for limit in 1024 256; do
    (ulimit -n $limit && timeout -k 2 "$(scaled 20)" "$run" --rendezvous socket -n 3 --timeout "$(scaled 5)" "$peer" socket) \
        >"$tmp/nofile$limit.log" 2>&1
    rc=$?
    check "ulimit -n $limit: exit 0 (rc $rc)" [ "$rc" -eq 0 ]
    check "ulimit -n $limit: 3 ranks say 0 failed" \
        [ "$(grep -c 'of 3: bootstrap_env_peer socket: .* 0 failed' "$tmp/nofile$limit.log")" -eq 3 ]
done
p=$(port)
(ulimit -n 128 && timeout -k 2 10 "$run" --nnodes 100 --node-rank 0 --master-addr 127.0.0.1 --master-port "$p" -n 1 \
    sh -c 'echo started') >"$tmp/nofile_small.log" 2>&1
rc=$?
cat "$tmp/nofile_small.log"
check "ulimit -n 128 for 100 ranks: exit 1 (rc $rc)" [ "$rc" -eq 1 ]
check "ulimit -n 128 for 100 ranks: said at start, naming the limit; no rank started" eval \
    'grep -q "cannot serve the socket rendezvous: .*the open-files limit (ulimit -n) is 128" "$tmp/nofile_small.log" &&
     not_in started "$tmp/nofile_small.log"'

# SIGUSR1 and SIGUSR2 to node 0's launcher while it serves the rendezvous for node 1's ranks, its
# own ranks ended (--keep-going; issue 38, item 6): they are the ranks' signals, so it serves on.
# It ended at once, saying nothing, and node 1's ranks found the rendezvous gone ("send: Broken
# pipe"). Node 1's ranks recover without node 0's once the signals are taken.
p=$(port)
go=$tmp/usr.go
for node in 1 0; do
    "$run" --nnodes 2 --node-rank $node --master-addr 127.0.0.1 --master-port "$p" -n 2 --keep-going \
        --timeout "$(scaled 30)" "$child" outlive 2 "$go" >"$tmp/usr$node.log" 2>&1 &
    eval "usr$node=\$!"
done
check "SIGUSR1, SIGUSR2 to node 0 serving node 1: node 0 serves, its ranks ended" \
    wait_for 30 "node 0's 'serving the rendezvous while'" grep -q "serving the rendezvous while" "$tmp/usr0.log"
kill -USR1 "$usr0"
kill -USR2 "$usr0"
taken() { # none pending any more (or the launcher is gone)
    local pending
    pending=$(sed -n 's/^ShdPnd:[[:space:]]*//p' "/proc/$usr0/status" 2>/dev/null)
    [ -z "$pending" ] || [ "$pending" = 0000000000000000 ]
}
check "SIGUSR1, SIGUSR2 to node 0 serving node 1: taken" wait_for 10 "node 0 to take the signals" taken
touch "$go"
wait "$usr1"
rc1=$?
wait "$usr0"
rc0=$?
cat "$tmp/usr0.log" "$tmp/usr1.log"
check "SIGUSR1, SIGUSR2 to node 0 serving node 1: node 1's ranks went on (rc $rc1)" eval \
    '[ "$rc1" -eq 0 ] && grep -q "rank 2 went on as rank 0 of 2" "$tmp/usr1.log" &&
     grep -q "rank 3 went on as rank 1 of 2" "$tmp/usr1.log"'
check "SIGUSR1, SIGUSR2 to node 0 serving node 1: node 0 exits 0 once they are done (rc $rc0)" [ "$rc0" -eq 0 ]

# A node started twice with one --node-rank (issue 38, item 10): both node 1s' ranks connect
# before rank 0 comes, so one waits in a bootstrap of its own for a rank 0 that is in the other's.
# Node 0's launcher, done, says so as it stops, and the waiting rank is refused, told why. Node 0
# exited 0 saying nothing, and the duplicate's rank was told "(its own message says why)".
p=$(port)
go=$tmp/dup.go
"$run" --nnodes 2 --node-rank 0 --master-addr 127.0.0.1 --master-port "$p" -n 1 --timeout "$(scaled 20)" \
    sh -c 'while [ ! -e "$0" ]; do sleep 0.05; done; exec "$1" bootstrap' "$go" "$child" >"$tmp/dup0.log" 2>&1 &
dup0=$!
for d in a b; do
    "$run" --nnodes 2 --node-rank 1 --master-addr 127.0.0.1 --master-port "$p" -n 1 --timeout "$(scaled 20)" \
        "$child" bootstrap >"$tmp/dup1$d.log" 2>&1 &
    eval "dup1$d=\$!"
done
connected_to() { awk -v port="$(printf ':%04X' "$1")" '$3 ~ port "$" && $4 == "01"' /proc/net/tcp | wc -l; }
check "one --node-rank twice: both node 1s connected" wait_for 20 "2 connections to port $p" \
    eval '[ "$(connected_to "$p")" -ge 2 ]'
touch "$go"
wait "$dup0"
rc0=$?
wait "$dup1a"
rca=$?
wait "$dup1b"
rcb=$?
cat "$tmp/dup0.log" "$tmp/dup1a.log" "$tmp/dup1b.log"
check "one --node-rank twice: node 0 exits 0 (its rank did its part) (rc $rc0)" [ "$rc0" -eq 0 ]
check "one --node-rank twice: one node 1 exits 0, the other fails (rc $rca, $rcb)" \
    [ $((rca == 0)) -ne $((rcb == 0)) ]
check "one --node-rank twice: node 0's launcher says a bootstrap waited for rank 0" grep -q \
    "stopped while a bootstrap of the job waited for ranks 0 (1 of 2 ranks); the ranks that came, 1 (1 of 2 ranks), are refused (a node started twice with one --node-rank?" \
    "$tmp/dup0.log"
check "one --node-rank twice: the waiting rank is refused, told why" eval \
    'cat "$tmp/dup1a.log" "$tmp/dup1b.log" | grep -q "refused it: it ended, its launcher (node 0.s) done or stopped, while this bootstrap waited for ranks 0 (1 of 2 ranks), which never came to it (a node started twice with one --node-rank?"'
check "one --node-rank twice: no message points at one that is not there" \
    eval '! cat "$tmp/dup1a.log" "$tmp/dup1b.log" | grep -q "own message says why"'

# A node that never comes: node 0's rank 0 gives up at the deadline, naming the missing ranks.
p=$(port)
start=$(date +%s)
"$run" --nnodes 2 --node-rank 0 --master-addr 127.0.0.1 --master-port "$p" -n 1 --timeout 2 "$peer" socket \
    >"$tmp/alone.log" 2>&1
rc=$?
took=$(($(date +%s) - start))
cat "$tmp/alone.log"
check "a missing node: node 0 fails" [ "$rc" -ne 0 ]
check "a missing node: the message names rank 1" grep -q "ranks 1 (1 of 2 ranks) never connected" "$tmp/alone.log"
check "a missing node: within the deadline and a few seconds ($took s)" [ "$took" -le $((2 + $(scaled 8))) ]

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
