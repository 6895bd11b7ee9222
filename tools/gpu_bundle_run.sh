#!/usr/bin/env bash
# Runs the GPU suite of a bundle made by tools/make_gpu_bundle.sh; ends with "N passed, N failed".
# Logs go to $LOG_DIR (default: ./gpu_logs).
set -u
here=$(cd "$(dirname "$0")" && pwd)
logs=${LOG_DIR:-$PWD/gpu_logs}
mkdir -p "$logs"
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
passed=0
failed=0
run() { # name command...
    local name=$1
    shift
    echo "=== $name"
    local start=$(date +%s%N)
    if "$@" >"$logs/$name.log" 2>&1; then
        passed=$((passed + 1))
        echo "PASS $name ($(( ($(date +%s%N) - start) / 1000000 )) ms)"
    else
        failed=$((failed + 1))
        echo "FAIL $name (exit $?)"
        tail -30 "$logs/$name.log"
    fi
}
bin=$here/bin
[ -x "$bin/all_reduce_gpu_test" ] && run all_reduce_gpu_test "$bin/all_reduce_gpu_test"
[ -x "$bin/hello_all_reduce" ] && run hello_all_reduce "$bin/hello_all_reduce"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
