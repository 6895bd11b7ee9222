#!/usr/bin/env bash
# The GPU suite of a bundle made by tools/gpu/make_gpu_bundle.sh, through both bootstraps.
#   run.sh [NGPUS [TEST...]]   (default: every visible GPU, every test)   logs: $LOG_DIR (./gpu_logs)
# Ends with "N passed, N failed". Needs the NVIDIA driver, NCCL and Open MPI's mpirun.
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=$here/bin
logs=${LOG_DIR:-$PWD/gpu_logs}
mkdir -p "$logs"
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
n=${1:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')}
shift $(($# > 0 ? 1 : 0))
only=" $* "
mpirun_args=(-np "$n" -x NCCL_NVLS_ENABLE --bind-to none)
[ "$(id -u)" -eq 0 ] && mpirun_args+=(--allow-run-as-root)
passed=0
failed=0
run() { # name command...
    local name=$1
    shift
    [ "$only" = "  " ] || [[ "$only" == *" $name "* ]] || return 0
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
    grep -E "checks|ready|OK|WRONG|FAILED|sum over|Run Summary|tests |asserts |hidet_nccl:|replays|back-to-back|x init|error .* after|returned|peer_death|CG on" \
        "$logs/$name.log" | head -16
}
launch=("$bin/hidet-nccl-run" -n "$n" --tag-output)
run hello_all_reduce "$bin/hello_all_reduce"
run mpi_all_reduce mpirun "${mpirun_args[@]}" "$bin/mpi_all_reduce"
run file_all_reduce "${launch[@]}" "$bin/file_all_reduce"
run cg_solve "${launch[@]}" "$bin/cg_solve"
# At least 2 ranks: peer_death.sh makes fake nodes of the ranks when GPUs are fewer.
for bootstrap in mpi file; do
    for mode in kill hang policy nosplit absent shrink revoke skip count; do
        run "peer_death_${bootstrap}_$mode" "$here/peer_death.sh" "$bootstrap" "$mode" "$bin" "$((n > 2 ? n : 2))"
    done
done
run all_reduce_gpu_test "$bin/all_reduce_gpu_test"
run mpi_gpu_test mpirun "${mpirun_args[@]}" "$bin/mpi_gpu_test"
run launcher_gpu_test "${launch[@]}" "$bin/launcher_gpu_test"
run collectives_gpu_test "${launch[@]}" "$bin/collectives_gpu_test"
run mem_gpu_test "${launch[@]}" "$bin/mem_gpu_test"
for table in window plain mismatch; do
    run "mem_gpu_test_${table}_table" "$here/mem_table.sh" "$bin/hidet-nccl-run" "$n" "$bin/mem_gpu_test" "$table"
done
# Scalable init with every rank a root (HIDET_NCCL_RANKS_PER_ROOT=1): ncclCommInitRankScalable.
roots() { # command...: runs it at INFO and requires an init to have said it used n roots (the
    # whole output is read first: a reader that stops early would give the launcher a SIGPIPE)
    local out
    out=$(HIDET_NCCL_RANKS_PER_ROOT=1 HIDET_NCCL_DEBUG=INFO "$@" 2>&1)
    local rc=$?
    printf '%s\n' "$out"
    [ "$rc" -eq 0 ] && grep -qE "\b$n roots?\b" <<<"$out" # "1 root", "2 roots"
}
run mpi_gpu_test_roots roots mpirun "${mpirun_args[@]}" -x HIDET_NCCL_RANKS_PER_ROOT -x HIDET_NCCL_DEBUG "$bin/mpi_gpu_test"
run launcher_gpu_test_roots roots "${launch[@]}" "$bin/launcher_gpu_test"
run suite_gpu_test_mpi mpirun "${mpirun_args[@]}" "$bin/suite_gpu_test_mpi"
run suite_gpu_test_file "${launch[@]}" "$bin/suite_gpu_test_file"
# The bench: every collective through the library against raw NCCL, each size checked exactly
# (exit 1 on a wrong value), under the launcher and, with no MPI linked, under mpirun (PMIx).
run bench_all "$bin/hidet-nccl-run" -n "$n" "$bin/hidet-nccl-bench" -c all -b 8 -e 1M -f 4
run bench_mpirun mpirun "${mpirun_args[@]}" "$bin/hidet-nccl-bench" -c all_reduce,send_recv -b 8 -e 1M -f 4
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
