#!/usr/bin/env bash
# The GPU suite of a bundle made by tools/make_gpu_bundle.sh, through both bootstraps.
#   run.sh [NGPUS]     (default: every visible GPU)      logs: $LOG_DIR (default ./gpu_logs)
# Ends with "N passed, N failed". Needs the NVIDIA driver, NCCL and Open MPI's mpirun.
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=$here/bin
logs=${LOG_DIR:-$PWD/gpu_logs}
mkdir -p "$logs"
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
n=${1:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')}
mpirun_args=(-np "$n" -x NCCL_NVLS_ENABLE --bind-to none)
[ "$(id -u)" -eq 0 ] && mpirun_args+=(--allow-run-as-root)
passed=0
failed=0
run() { # name command...
    local name=$1
    shift
    echo "=== $name: $*"
    local start=$(date +%s%N)
    if "$@" >"$logs/$name.log" 2>&1; then
        passed=$((passed + 1))
        echo "PASS $name ($(( ($(date +%s%N) - start) / 1000000 )) ms)"
    else
        local rc=$?
        failed=$((failed + 1))
        echo "FAIL $name (exit $rc)"
    fi
    grep -E "checks|ready|OK|WRONG|FAILED|sum over|Run Summary|tests |asserts |hidet_nccl:" "$logs/$name.log" | head -12
}
run all_reduce_gpu_test "$bin/all_reduce_gpu_test"
run mpi_gpu_test mpirun "${mpirun_args[@]}" "$bin/mpi_gpu_test"
run launcher_gpu_test "$bin/hidet-nccl-run" -n "$n" --tag-output "$bin/launcher_gpu_test"
run hello_all_reduce "$bin/hello_all_reduce"
run mpi_all_reduce mpirun "${mpirun_args[@]}" "$bin/mpi_all_reduce"
run file_all_reduce "$bin/hidet-nccl-run" -n "$n" --tag-output "$bin/file_all_reduce"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
