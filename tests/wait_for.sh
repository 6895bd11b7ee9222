# Sourced by the shell tests: waiting for a thing itself, never for a time (tests/deadline.h says
# the same for the C tests). A test that needs something to have happened (a listener bound, a
# rank started, a process gone) polls for it, and gives up only after a deadline far beyond what
# the work needs, saying what it waited for:
#   wait_for SECONDS WHAT COMMAND...   runs COMMAND every 50 ms until it succeeds; after
#                                      SECONDS * slowdown says "waited N s for WHAT" and returns 1
#   scaled SECONDS                     SECONDS * slowdown, a whole number (at least 1)
#   gone PATTERN                       no running process (not a zombie) whose command line
#                                      matches PATTERN (pgrep -f)
# slowdown: HIDET_NCCL_TEST_SLOWDOWN (.bazelrc sets it for --config=asan, ubsan and san), else 1.
# A test sources it from its runfiles under Bazel (tests/wait_for.sh in its data), else from beside
# itself:
#   if [ -n "${TEST_SRCDIR:-}" ]; then . "$TEST_SRCDIR/$TEST_WORKSPACE/tests/wait_for.sh"; else . "$(dirname "$(realpath "$0")")/wait_for.sh"; fi

hn_slowdown=${HIDET_NCCL_TEST_SLOWDOWN:-1}
case $hn_slowdown in
    '' | *[!0-9]*) echo "HIDET_NCCL_TEST_SLOWDOWN='$hn_slowdown' is not a whole number: 1 taken" >&2; hn_slowdown=1 ;;
esac
[ "$hn_slowdown" -ge 1 ] || hn_slowdown=1

scaled() { echo $(($1 * hn_slowdown)); }

wait_for() {
    local limit what start now
    limit=$(scaled "$1")
    what=$2
    shift 2
    start=$(date +%s%N)
    while ! "$@"; do
        now=$(date +%s%N)
        if [ $(((now - start) / 1000000000)) -ge "$limit" ]; then
            echo "waited $(((now - start) / 1000000000)) s for $what: it did not come"
            return 1
        fi
        sleep 0.05
    done
}

gone() {
    local pid st
    for pid in $(pgrep -f -- "$1"); do
        st=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1)
        [ -n "$st" ] && [ "$st" != Z ] && return 1
    done
    return 0
}
