#!/usr/bin/env bash
# Peer failure on GPUs through one bootstrap:  peer_death.sh mpi|file kill|policy|nosplit|absent BIN_DIR [N]
# Runs BIN_DIR/peer_death_gpu_test_<bootstrap> with N ranks (default 2) so that the failing
# rank does not take the others down (mpirun --enable-recovery, hidet-nccl-run --keep-going)
# and passes when every surviving rank printed "peer_death (...): OK" (policy: when every
# surviving rank printed its failure and aborted itself under the ABORT_PROCESS policy).
set -u
bootstrap=$1 mode=$2 bin=$3 n=${4:-2}
timeout_s=5
launcher=$bin/hidet-nccl-run
[ -x "$launcher" ] || launcher=tools/hidet-nccl-run # under bazel test
out=$(mktemp)
trap 'rm -f "$out"' EXIT
if [ "$bootstrap" = mpi ]; then
    args=(-np "$n" --enable-recovery --bind-to none -x NCCL_NVLS_ENABLE)
    [ "$(id -u)" -eq 0 ] && args+=(--allow-run-as-root)
    timeout 120 mpirun "${args[@]}" "$bin/peer_death_gpu_test_mpi" "$mode" "$timeout_s" >"$out" 2>&1
else
    timeout 120 "$launcher" -n "$n" --keep-going --tag-output "$bin/peer_death_gpu_test_file" "$mode" \
        "$timeout_s" >"$out" 2>&1
fi
rc=$?
cat "$out"
[ "$rc" -eq 124 ] && { echo "peer_death.sh: HUNG (killed after 120 s)"; exit 1; }
if [ "$mode" = policy ]; then
    ok=$(grep -c "has the error policy HIDET_NCCL_ON_ERROR_ABORT_PROCESS: aborting the process" "$out")
else
    ok=$(grep -c "peer_death (.*): OK" "$out")
fi
echo "peer_death.sh: $bootstrap $mode: $ok of $((n - 1)) surviving ranks OK (launcher exit $rc)"
[ "$ok" -eq $((n - 1)) ] && ! grep -q "FAILED" "$out"
