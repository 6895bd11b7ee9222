#!/usr/bin/env bash
# The PMIx bootstrap without a usable libpmix, or outside a PMIx job: clear errors, no crash.
probe=$1
passed=0
failed=0
check() { local what=$1; shift; if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $what"; cat "$out"; fi; }
out=$(mktemp)
HIDET_NCCL_PMIX_LIBRARY=/no/such/libpmix.so.2 "$probe" >"$out" 2>&1
check "a missing HIDET_NCCL_PMIX_LIBRARY is a bootstrap error naming it" \
    grep -q "/no/such/libpmix.so.2: no such file" "$out"
check "... and says nothing else was tried" grep -q "nothing else was tried" "$out"
HIDET_NCCL_PMIX_LIBRARY=/bin/true "$probe" >"$out" 2>&1
check "a file that is not libpmix is refused" grep -q "/bin/true" "$out"
env -u PMIX_NAMESPACE -u PMIX_RANK -u PMIX_SERVER_URI4 -u PMIX_SERVER_URI41 -u PMIX_SERVER_URI3 \
    -u PMIX_SERVER_URI2 -u PMIX_SERVER_URI21 "$probe" >"$out" 2>&1
check "outside a PMIx job PMIx_Init fails with a hint" grep -q "PMIx launcher" "$out"
rm -f "$out"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
