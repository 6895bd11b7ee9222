#!/usr/bin/env bash
# hidet-nccl-run against a hostile neighbour and a careless user (issue 15): a symbolic link
# planted at rank.N.log is refused and its target untouched (1); a private rendezvous directory
# swapped for a link to someone else's directory costs them nothing at exit (2; the neighbour's
# moves are made by the rank itself); children ranks leave behind end with the job, even one
# that holds the output open (3, 4); stopping signals and a closed output pipe remove the
# rendezvous directory (11); too many visible devices (12); a NUL in a tagged line (13); the
# launcher killed with SIGKILL, alone or with its process group: its ranks, their children and
# the private rendezvous directory go all the same (14; issue 27, items 15 and 21); a rank's
# child that left its process group (setsid) ends with the job (15).
#   launcher_hostile_test.sh HIDET_NCCL_RUN
set -u
if [ -n "${TEST_SRCDIR:-}" ]; then . "$TEST_SRCDIR/$TEST_WORKSPACE/tests/wait_for.sh"; else . "$(dirname "$(realpath "$0")")/wait_for.sh"; fi
run=$(realpath "$1")
tmp=${TEST_TMPDIR:-$(mktemp -d)}/hostile
rm -rf "$tmp"
mkdir -p "$tmp"
passed=0
failed=0
check() { local what=$1; shift; if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $what"; fi; }

# 1. --output-dir in a world-writable directory with a link planted at rank.0.log.
mkdir -m 1777 "$tmp/shared_logs"
echo victim >"$tmp/victim.txt"
ln -s "$tmp/victim.txt" "$tmp/shared_logs/rank.0.log"
"$run" -n 1 --output-dir "$tmp/shared_logs" /bin/echo overwritten >"$tmp/out1.log" 2>&1
rc=$?
cat "$tmp/out1.log"
check "a planted link: the launcher refuses (exit $rc)" [ "$rc" -ne 0 ]
check "a planted link: the message says so" grep -q "rank.0.log is a symbolic link; refused" "$tmp/out1.log"
check "a planted link: its target is untouched" [ "$(cat "$tmp/victim.txt")" = victim ]
# This user's log of an earlier run is replaced.
mkdir "$tmp/my_logs"
echo old >"$tmp/my_logs/rank.0.log"
"$run" -n 1 --output-dir "$tmp/my_logs" /bin/echo new >/dev/null 2>&1
check "an earlier log of this user is replaced" [ "$(cat "$tmp/my_logs/rank.0.log")" = new ]

# 2. The private rendezvous directory, in a world-writable parent, swapped for a link to a
# victim's directory while the job runs.
mkdir -m 0777 "$tmp/open_parent"
mkdir "$tmp/victim_dir"
echo precious >"$tmp/victim_dir/data.txt"
cat >"$tmp/swap.sh" <<'SWAP'
#!/bin/sh
mv "$HIDET_NCCL_RENDEZVOUS_DIR" "$HIDET_NCCL_RENDEZVOUS_DIR.moved" && ln -s "$VICTIM" "$HIDET_NCCL_RENDEZVOUS_DIR"
SWAP
chmod +x "$tmp/swap.sh"
VICTIM=$tmp/victim_dir "$run" -n 1 --rendezvous-dir "$tmp/open_parent" "$tmp/swap.sh" >"$tmp/out2.log" 2>&1
cat "$tmp/out2.log"
check "a swapped directory: the victim's file survives the launcher's exit" [ -f "$tmp/victim_dir/data.txt" ]
check "a swapped directory: the launcher's own directory (moved away) is emptied of nothing but its own files" \
    [ -d "$(ls -d "$tmp"/open_parent/*.moved 2>/dev/null | head -1)" ]
# Normally: nothing left behind.
mkdir -m 0700 "$tmp/private_parent"
"$run" -n 2 --rendezvous-dir "$tmp/private_parent" /bin/true
check "no swap: the rendezvous directory is gone" [ -z "$(ls -A "$tmp/private_parent")" ]

# 1 and 2 again with a real second user (made here when this runs as root, as in CI): the
# neighbour plants the link and swaps the directory from outside the job.
if [ "$(id -u)" -eq 0 ] && command -v useradd >/dev/null && command -v runuser >/dev/null; then
    id hnneighbour >/dev/null 2>&1 || useradd --no-create-home --shell /usr/sbin/nologin hnneighbour
    as_neighbour() { runuser -u hnneighbour -- "$@"; }
    shared=$(mktemp -d /tmp/hidet-nccl-hostile.XXXXXX) # the neighbour cannot reach TEST_TMPDIR under /root
    chmod 0755 "$shared"
    mkdir -m 1777 "$shared/logs"
    echo victim >"$shared/victim.txt"
    as_neighbour ln -s "$shared/victim.txt" "$shared/logs/rank.0.log"
    "$run" -n 1 --output-dir "$shared/logs" /bin/echo overwritten >"$tmp/out1u.log" 2>&1
    rc=$?
    check "second user's link: refused (exit $rc)" [ "$rc" -ne 0 ]
    check "second user's link: its target untouched" [ "$(cat "$shared/victim.txt")" = victim ]
    mkdir -m 0777 "$shared/parent"
    mkdir "$shared/victim_dir"
    echo precious >"$shared/victim_dir/data.txt"
    # The rank runs until the neighbour's swap is made (the test says so with a file; 60 s at most).
    GO=$tmp/swapped "$run" -n 1 --rendezvous-dir "$shared/parent" \
        sh -c 'for _ in $(seq 1200); do [ -e "$GO" ] && exit 0; sleep 0.05; done; exit 1' >"$tmp/out2u.log" 2>&1 &
    launcher=$!
    check "second user's swap: the private directory is made" wait_for 60 "the launcher's private directory" \
        eval 'ls "$shared/parent" | grep -q hidet-nccl'
    private=$(ls -d "$shared"/parent/hidet-nccl-* | head -1)
    as_neighbour sh -c "mv '$private' '$private.moved' && ln -s '$shared/victim_dir' '$private'"
    check "second user's swap: made" [ -L "$private" ]
    touch "$tmp/swapped"
    wait $launcher
    check "second user's swap: the victim's file survives" [ -f "$shared/victim_dir/data.txt" ]
    rm -rf "$shared"
else
    echo "(not root: the second-user cases are not made here; the rank makes the neighbour's moves above)"
fi

# 3 and 4. A rank that exits leaving a child that holds its output open (--tag-output): the
# launcher ends after the grace period and the child is gone with it; without tagging, the
# child of a rank that exits 0 is ended too.
tag=$((RANDOM * 32768 + RANDOM)) # sleep 1007.<tag>: a name pgrep finds, a time sleep takes
timeout -s KILL "$(scaled 60)" "$run" --grace 1 --tag-output -n 1 sh -c "echo hi; sleep 1007.$tag & exit 0" \
    >"$tmp/out3.log" 2>&1
rc=$?
check "a child holding the output: the launcher exits by itself, not waiting for it (exit $rc)" [ "$rc" -eq 0 ]
check "a child holding the output: the line before it came through" grep -qx "\[0\] hi" "$tmp/out3.log"
# A process killed is gone once it is reaped: it is waited for (it would sleep 1000 s and more).
check "a child holding the output: it is gone" wait_for 30 "the end of sleep 1007.$tag" gone "sleep 1007.$tag"
"$run" -n 2 sh -c "sleep 1006.$tag & exit 0" >/dev/null 2>&1
check "a rank's child outlives nothing: gone after the launcher" wait_for 30 "the end of sleep 1006.$tag" \
    gone "sleep 1006.$tag"
# ... and one that ignores SIGTERM, with a long grace: SIGINT to the launcher ends it at once, once
# the rank has exited and the launcher waits on its child (which holds the output).
"$run" --grace 300 --tag-output -n 1 sh -c "trap '' TERM; sleep 1005.$tag & echo started; exit 0" \
    >"$tmp/out4.log" 2>&1 &
launcher=$!
check "a child ignoring SIGTERM: the rank started it and was reaped" wait_for 60 "the rank's 'started' and its end" \
    eval 'grep -q started "$tmp/out4.log" && ! pgrep -P "$launcher" -x sh >/dev/null'
kill -INT $launcher
check "a child ignoring SIGTERM: SIGINT ends the launcher while it waits (not after --grace 300)" \
    wait_for 60 "the launcher's end" eval "! kill -0 $launcher 2>/dev/null"
wait $launcher
check "a child ignoring SIGTERM: killed with the launcher" wait_for 30 "the end of sleep 1005.$tag" gone "sleep 1005.$tag"
pkill -KILL -f "100[567].$tag" 2>/dev/null

# 11. A reader of the output that goes away (SIGPIPE), and SIGUSR1, SIGUSR2, SIGALRM, SIGQUIT:
# the job stops and the rendezvous directory is removed.
mkdir -m 0700 "$tmp/sig_parent"
timeout -s KILL "$(scaled 60)" "$run" --tag-output -n 2 --rendezvous-dir "$tmp/sig_parent" yes | head -1 >"$tmp/out11.log"
check "| head -1: one line through" [ "$(wc -l <"$tmp/out11.log")" -eq 1 ]
check "| head -1: the rendezvous directory is gone" [ -z "$(ls -A "$tmp/sig_parent")" ]
i=0
for sig in USR1 USR2 ALRM QUIT; do
    i=$((i + 1)) # each job's ranks a name of their own: sleep 1004.<tag><i>
    "$run" -n 2 --rendezvous-dir "$tmp/sig_parent" sleep 1004.$tag$i >/dev/null 2>&1 &
    launcher=$!
    check "SIG$sig: 2 ranks running" wait_for 60 "2 ranks (sleep 1004.$tag$i)" \
        eval '[ "$(pgrep -fc "^sleep 1004.$tag$i\$")" -eq 2 ]'
    kill -$sig $launcher
    timeout -s KILL "$(scaled 30)" tail --pid=$launcher -f /dev/null
    wait $launcher
    rc=$?
    check "SIG$sig: the launcher exits (exit $rc)" [ "$rc" -ne 0 -a "$rc" -ne 137 ]
    check "SIG$sig: the rendezvous directory is gone" [ -z "$(ls -A "$tmp/sig_parent")" ]
done
pkill -KILL -f "sleep 1004.$tag" 2>/dev/null

# 12. More devices listed than one launcher starts, and no -n: refused before any rank starts.
many=$(seq -s, 0 4999)
CUDA_VISIBLE_DEVICES=$many "$run" /bin/true >"$tmp/out12.log" 2>&1
rc=$?
check "5000 visible devices: refused (exit $rc)" [ "$rc" -eq 2 ]
check "5000 visible devices: the message names the limit" grep -q "5000 devices, more than the 4096" "$tmp/out12.log"

# 13. --tag-output passes a NUL inside a line on, byte for byte.
"$run" --tag-output -n 1 printf 'a\0b\nnext\n' >"$tmp/out13.bin" 2>/dev/null
printf '[0] a\0b\n[0] next\n' >"$tmp/want13.bin"
check "--tag-output: a NUL in a line is passed on" cmp -s "$tmp/out13.bin" "$tmp/want13.bin"

# 14. SIGKILL to the launcher runs none of its code: the ranks die with it (PDEATHSIG), their
# children and the rendezvous directory were left (their children are no rank's, and only
# the launcher killed the ranks' groups); its watchdog now kills the groups and removes the
# directory. Each of 2 ranks starts a sleep and waits; their pids are written down. A rank
# killed is gone when it is no longer there or a zombie (its new parent reaps it when it will).
running() { # pid: there and not a zombie
    local st
    st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
    [ -n "$st" ] && [ "$st" != Z ]
}
all_gone() { # the pids in the files of directory $1, and that the rendezvous parent $2 is empty
    local f ok=1
    for f in "$1"/*; do
        [ -e "$f" ] || return 1
        if running "$(cat "$f")"; then ok=0; fi
    done
    [ "$ok" -eq 1 ] && [ -z "$(ls -A "$2")" ]
}
gone_within() { # seconds, directory of pid files, rendezvous parent
    wait_for "$1" "the end of the job's processes and its rendezvous directory" all_gone "$2" "$3" && return 0
    for f in "$2"/*; do running "$(cat "$f")" && echo "$(basename "$f") (pid $(cat "$f")) still running"; done
    ls -A "$3"
    return 1
}
leads_group() { # pid: setsid ran it in place (it forks when its caller leads a group), so it is $!
    [ "$(ps -o pgid= -p "$1" | tr -d ' ')" = "$1" ]
}
# $! is the shell's child before it has run setsid(2): on a busy machine ps may still see the
# shell's group (CI saw it once), so wait for the new group a while.
leads_group_soon() { wait_for 10 "pid $1 to lead its own process group" leads_group "$1"; }
started() { # directory, count: that many pid files
    [ "$(ls "$1" | wc -l)" -ge "$2" ]
}
kill_case() { # name, how to kill ("pid" or "group"), then the launcher's extra options
    local name=$1 how=$2
    shift 2
    local pids=$tmp/pids_$name parent=$tmp/rdv_$name
    mkdir -p "$pids"
    mkdir -m 0700 "$parent"
    PIDS=$pids setsid "$run" "$@" -n 2 --rendezvous-dir "$parent" sh -c '
        echo $$ >"$PIDS/rank.$HIDET_NCCL_RANK"
        sleep 1008.'$tag' &
        echo $! >"$PIDS/child.$HIDET_NCCL_RANK"
        wait' >"$tmp/out14_$name.log" 2>&1 &
    local launcher=$!
    check "$name: the launcher leads its own group" leads_group_soon "$launcher"
    check "$name: 2 ranks and 2 children started" wait_for 60 "4 pid files in $pids" started "$pids" 4
    check "$name: the rendezvous directory is made" [ -n "$(ls -A "$parent")" ]
    if [ "$how" = group ]; then kill -KILL -- "-$launcher"; else kill -KILL "$launcher"; fi
    wait "$launcher" 2>/dev/null
    check "$name: ranks and their children gone, the rendezvous directory removed" \
        gone_within 30 "$pids" "$parent"
}
kill_case "SIGKILL to the launcher" pid
kill_case "SIGKILL to the launcher's process group" group
kill_case "SIGKILL to the launcher, tagged output" pid --tag-output
pkill -KILL -f "sleep 1008.$tag" 2>/dev/null
# Ctrl-C reaches the launcher's whole group, the watchdog's too: the job stops as before, with
# nothing left and no word from the watchdog.
mkdir -m 0700 "$tmp/rdv_int"
setsid "$run" -n 2 --grace 1 --rendezvous-dir "$tmp/rdv_int" sleep 1009.$tag >"$tmp/out14_int.log" 2>&1 &
launcher=$!
check "SIGINT to the launcher's group: the launcher leads its own group" leads_group_soon "$launcher"
check "SIGINT to the launcher's group: 2 ranks running" wait_for 60 "2 ranks (sleep 1009.$tag)" \
    eval '[ "$(pgrep -fc "^sleep 1009.$tag")" -eq 2 ]'
kill -INT -- "-$launcher"
wait "$launcher"
rc=$?
check "SIGINT to the launcher's group: exit 130 (got $rc)" [ "$rc" -eq 130 ]
check "SIGINT to the launcher's group: nothing left" wait_for 30 "the end of the job's processes" gone "1009.$tag"
check "SIGINT to the launcher's group: the directory removed" [ -z "$(ls -A "$tmp/rdv_int")" ]
check "SIGINT to the launcher's group: the watchdog says nothing" bash -c "! grep -q watchdog '$tmp/out14_int.log'"

# 15. A rank's child in a session of its own (setsid) is out of reach of its group's kill; the
# launcher is its subreaper, so it is the launcher's child once the rank has exited, and the
# launcher's end kills it: after a rank that exits 0, and after one that fails.
"$run" -n 2 sh -c "setsid sleep 1010.$tag & exit 0" >"$tmp/out15.log" 2>&1
rc=$?
check "setsid child, ranks exit 0: launcher exits 0 (got $rc)" [ "$rc" -eq 0 ]
check "setsid child, ranks exit 0: gone with the launcher" wait_for 30 "the end of sleep 1010.$tag" gone "sleep 1010.$tag"
# Each rank fails once both ranks' sessions run their two sleeps (they say so with a file each;
# 60 s at most): the first failure stops the other rank, whose session must be there by then.
mkdir -p "$tmp/ready15"
READY=$tmp/ready15 "$run" -n 2 --grace 1 sh -c "setsid sh -c 'sleep 1011.$tag & sleep 1012.$tag & touch \"\$READY/\$HIDET_NCCL_RANK\"; wait' &
    for _ in \$(seq 1200); do [ -e \"\$READY/0\" ] && [ -e \"\$READY/1\" ] && break; sleep 0.05; done; exit 3" \
    >"$tmp/out15b.log" 2>&1
rc=$?
check "setsid children, a rank fails: launcher exits 3 (got $rc)" [ "$rc" -eq 3 ]
check "setsid children, a rank fails: both ranks' sessions ran" [ -e "$tmp/ready15/0" -a -e "$tmp/ready15/1" ]
check "setsid children, a rank fails: all gone with the launcher" wait_for 30 "the end of sleep 101[12].$tag" \
    gone "sleep 101[12].$tag"
check "no watchdog left behind" wait_for 30 "the watchdog's end" gone "101[0-2].$tag"
pkill -KILL -f "101[0-2].$tag" 2>/dev/null

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
