#!/usr/bin/env bash
# hidet-nccl-run against a hostile neighbour in a directory others may write (issue 15, items 1
# and 2): a symbolic link planted at rank.N.log is refused and its target untouched; a private
# rendezvous directory swapped for a link to someone else's directory costs them nothing at
# exit. (Run as one user: the neighbour's moves are made by the rank itself.)
#   launcher_hostile_test.sh HIDET_NCCL_RUN
set -u
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

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
