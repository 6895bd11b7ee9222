#!/usr/bin/env bash
# The shared-file bootstrap against a real second user (issue 27, items 20 and 23; made here
# when this runs as root, as in CI): alice runs two-rank jobs (file_bootstrap_peer), mallory
# attacks them. A rendezvous directory that mallory swapped for a link to her own directory,
# one she owns, one under a parent she can write, or a link of hers on the way, is refused,
# naming the path and the owner; a file of hers at alice's hello path fails alice's rank at
# once saying whose file it is; files of hers at the claim's or the announce's place stop the
# job, never give it her bytes. Alice's private directory under a sticky world-writable parent
# (like /tmp) works.
#   bootstrap_file_users_test.sh FILE_BOOTSTRAP_PEER
set -u
peer=$(realpath "$1")
passed=0
failed=0
check() {
    local what=$1
    shift
    if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)) && echo "FAILED: $what"; fi
}

if [ "$(id -u)" -ne 0 ] || ! command -v useradd >/dev/null || ! command -v runuser >/dev/null; then
    echo "SKIPPED: not root, or no useradd/runuser: the cases need two real users (CI runs them as root)"
    exit 0
fi
for u in hnbfalice hnbfmallory; do
    id "$u" >/dev/null 2>&1 || useradd --no-create-home --shell /usr/sbin/nologin "$u" || exit 1
done
mallory_uid=$(id -u hnbfmallory)
as_alice() { runuser -u hnbfalice -- "$@"; }
as_mallory() { runuser -u hnbfmallory -- "$@"; }
base=$(mktemp -d /tmp/hidet-nccl-users.XXXXXX) # the users cannot reach TEST_TMPDIR under /root
trap 'rm -rf "$base"' EXIT
chmod 0755 "$base"
cp "$peer" "$base/peer"
chmod 0755 "$base/peer"

# job DIR KEY TIMEOUT_S: both ranks of a job as alice, their stderr in $base/err; 0 if both succeeded.
job() {
    local rc=0 p0 p1
    as_alice "$base/peer" "$1" "$2" 1 2 -1 "$3" /dev/null 2>"$base/err.1" &
    p1=$!
    as_alice "$base/peer" "$1" "$2" 0 2 -1 "$3" /dev/null 2>"$base/err.0" &
    p0=$!
    wait $p1 || rc=1
    wait $p0 || rc=1
    cat "$base/err.0" "$base/err.1" >"$base/err"
    sed 's/^/    /' "$base/err"
    return $rc
}
says() { grep -qF -- "$1" "$base/err"; }
lacks() { ! says "$1"; }

# Alice's private directory under a sticky world-writable parent: fine.
mkdir -m 1777 "$base/sticky"
as_alice mkdir -m 0700 "$base/sticky/alice-rdv"
check "alice's own directory under a sticky parent: the job runs" job "$base/sticky/alice-rdv" ok 20
check "... and leaves nothing behind" [ -z "$(ls -A "$base/sticky/alice-rdv")" ]

# Item 20: under a parent others can write without the sticky bit: refused, before and after
# mallory renames alice's directory away and puts a link to her own 1777 directory in its place.
mkdir -m 0777 "$base/open"
as_alice mkdir -m 0700 "$base/open/rdv"
job "$base/open/rdv" open 5
check "a parent writable by others: refused" [ $? -ne 0 ]
want="$base/open, above the rendezvous directory $base/open/rdv, is writable by others without the sticky bit"
check "... naming the parent and its mode" says "$want (mode 0777"
as_mallory mkdir -m 1777 "$base/sticky/mallory-dir"
as_mallory sh -c "mv '$base/open/rdv' '$base/open/rdv.moved' && ln -s '$base/sticky/mallory-dir' '$base/open/rdv'"
check "mallory's swap: made" [ -L "$base/open/rdv" ]
job "$base/open/rdv" swapped 5
check "the swapped directory: refused" [ $? -ne 0 ]
want="rendezvous directory $base/open/rdv (that is $base/sticky/mallory-dir) is owned by uid $mallory_uid"
check "... naming the path, what it is and its owner" says "$want (hnbfmallory)"
check "... and nothing of the job was put in mallory's directory" [ -z "$(ls -A "$base/sticky/mallory-dir")" ]

# Item 20: mallory's directory given as it is (alice was told to use it), sticky or not.
job "$base/sticky/mallory-dir" hers 5
check "mallory's 1777 directory: refused" [ $? -ne 0 ]
check "... naming its owner" says "rendezvous directory $base/sticky/mallory-dir is owned by uid $mallory_uid"

# Item 20: a link of mallory's in the sticky directory, to alice's own private directory: she
# could point it elsewhere at any time.
as_mallory ln -s "$base/sticky/alice-rdv" "$base/sticky/link"
job "$base/sticky/link" link 5
check "mallory's link to alice's directory: refused" [ $? -ne 0 ]
want="rendezvous directory $base/sticky/link is a symbolic link owned by uid $mallory_uid (hnbfmallory)"
check "... naming the link and its owner" says "$want"

# Item 23: a file of mallory's at alice's hello path in a shared sticky directory: rank 1
# fails at once saying whose file is in the way (alice cannot remove it), not "its hello file
# kept coming back"; the file is left as it is.
as_mallory sh -c "echo not-a-hello >'$base/sticky/hidet-nccl.planted.0.hello.1'"
start=$(date +%s%N)
as_alice "$base/peer" "$base/sticky" planted 1 2 -1 20 /dev/null 2>"$base/err" &
p1=$!
as_alice "$base/peer" "$base/sticky" planted 0 2 -1 3 /dev/null 2>/dev/null &
p0=$!
wait $p1
rc=$?
took=$((($(date +%s%N) - start) / 1000000))
wait $p0
sed 's/^/    /' "$base/err"
check "a file of mallory's at the hello path: rank 1 fails" [ $rc -ne 0 ]
check "... at once (${took} ms, its deadline 20 s)" [ "$took" -lt 10000 ]
want="$base/sticky/hidet-nccl.planted.0.hello.1 is a regular file owned by uid $mallory_uid (hnbfmallory)"
check "... saying what is there and whose it is" says "$want"
check "... and leaves it there" [ -f "$base/sticky/hidet-nccl.planted.0.hello.1" ]

# Files of mallory's at the claim's and the announce's places: the job stops (a second user
# who can guess the names in a shared directory can deny it), and never takes her bytes.
as_mallory sh -c "echo not-a-claim >'$base/sticky/hidet-nccl.claimed.0.root'"
job "$base/sticky" claimed 2
check "mallory's file at the claim's place: the job fails" [ $? -ne 0 ]
want="hidet-nccl.claimed.0.root is a regular file owned by uid $mallory_uid (hnbfmallory)"
check "... the root names the file and refuses it" says "$want"
as_mallory sh -c "echo not-an-announce >'$base/sticky/hidet-nccl.announced.0.id'"
job "$base/sticky" announced 2
check "mallory's file at the announce's place: the job fails" [ $? -ne 0 ]
check "... the root cannot publish over it" says "could not publish $base/sticky/hidet-nccl.announced.0.id"

# Issue 38, item 11: files of hers that alice cannot even read (0600) at the announce's and the
# claim's places: the message names the file, what it is and whose, not only "Operation not
# permitted" or "Permission denied".
alice_uid=$(id -u hnbfalice)
for place in id root; do
    as_mallory sh -c "umask 077; echo not-yours >'$base/sticky/hidet-nccl.priv$place.0.$place'"
    job "$base/sticky" "priv$place" 2
    check "mallory's private file at the job's .$place: the job fails" [ $? -ne 0 ]
    want="$base/sticky/hidet-nccl.priv$place.0.$place is a regular file owned by uid $mallory_uid (hnbfmallory), mode 0600"
    check "... naming the file, what it is and its owner" says "$want"
done
# Alice's own directory and her own link at her hello path: said to be hers and not a regular file.
as_alice mkdir "$base/sticky/hidet-nccl.owndirectory.0.hello.1"
as_alice ln -s /nowhere "$base/sticky/hidet-nccl.ownlink.0.hello.1"
for what in directory link; do
    job "$base/sticky" "own$what" 3
    check "alice's own $what at her hello path: the job fails" [ $? -ne 0 ]
    [ $what = link ] && what="symbolic link"
    want="$base/sticky/hidet-nccl.own${what#symbolic }.0.hello.1 is a $what owned by uid $alice_uid (hnbfalice)"
    check "... saying what it is and that it is hers" says "$want"
    check "... not that it is another user's" lacks "not this user's file"
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
