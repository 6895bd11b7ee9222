#!/usr/bin/env bash
# Peer failure on GPUs through one bootstrap:
#   peer_death.sh mpi|file kill|hang|policy|nosplit|absent|shrink|revoke|skip|count BIN_DIR [N]
# Runs BIN_DIR/peer_death_gpu_test_<bootstrap> with N ranks (default 2) so that the failing
# rank does not take the others down (mpirun --enable-recovery, hidet-nccl-run --keep-going)
# and passes when every surviving rank printed "peer_death (...): OK" (policy: when every
# surviving rank printed its failure and aborted itself under the ABORT_PROCESS policy; skip
# and count: when every rank printed OK and hidet-nccl-trace names seq 5 in its first line).
# With fewer GPUs than ranks, the ranks are fake nodes sharing the GPUs (their own
# NCCL_HOSTID, NET/Socket over lo), as NCCL tells nodes apart.
set -u
bootstrap=$1 mode=$2 bin=$3 n=${4:-2}
timeout_s=5
launcher=$bin/hidet-nccl-run
[ -x "$launcher" ] || launcher=tools/hidet-nccl-run # under bazel test
out=$(mktemp)
traces=$(mktemp -d)
trap 'rm -rf "$out" "$traces"' EXIT
export HIDET_NCCL_TRACE_DIR=$traces HIDET_NCCL_TRACE_COMPLETION=1
tracer=$bin/hidet-nccl-trace
[ -x "$tracer" ] || tracer=tools/hidet-nccl-trace
ngpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
wrap=()
if [ "$ngpus" -lt "$n" ]; then
    export NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo
    wrap=(bash -c 'export NCCL_HOSTID=fakenode${OMPI_COMM_WORLD_RANK:-$HIDET_NCCL_RANK}; exec "$0" "$@"')
fi
if [ "$bootstrap" = mpi ]; then
    args=(-np "$n" --enable-recovery --bind-to none -x NCCL_NVLS_ENABLE -x HIDET_NCCL_TRACE_DIR
        -x HIDET_NCCL_TRACE_COMPLETION)
    [ ${#wrap[@]} -gt 0 ] && args+=(-x NCCL_P2P_DISABLE -x NCCL_SHM_DISABLE -x NCCL_SOCKET_IFNAME)
    [ "$(id -u)" -eq 0 ] && args+=(--allow-run-as-root)
    timeout 120 mpirun "${args[@]}" "${wrap[@]}" "$bin/peer_death_gpu_test_mpi" "$mode" "$timeout_s" >"$out" 2>&1
else
    timeout 120 "$launcher" -n "$n" --keep-going --tag-output "${wrap[@]}" "$bin/peer_death_gpu_test_file" "$mode" \
        "$timeout_s" >"$out" 2>&1
fi
rc=$?
cat "$out"
[ "$rc" -eq 124 ] && { echo "peer_death.sh: HUNG (killed after 120 s)"; exit 1; }
want=$((n - 1))
case $mode in
policy) ok=$(grep -c "has the error policy HIDET_NCCL_ON_ERROR_ABORT_PROCESS: aborting the process" "$out") ;;
shrink | revoke | skip | count) ok=$(grep -c "peer_death (.*): OK" "$out") want=$n ;;
*) ok=$(grep -c "peer_death (.*): OK" "$out") ;;
esac
if [ "$mode" = skip ] || [ "$mode" = count ] || [ "$mode" = kill ] || [ "$mode" = hang ]; then
    echo "hidet-nccl-trace $traces:"
    "$tracer" "$traces" | tee "$out.trace"
    verdict=$(head -1 "$out.trace")
    rm -f "$out.trace"
    case $mode in
    skip) echo "$verdict" | grep -q "seq 5" || ok=-1 ;;
    count) echo "$verdict" | grep -q "seq 5.*count 1024 on rank 0, 1000 on rank 1" || ok=-1 ;;
    esac
fi
echo "peer_death.sh: $bootstrap $mode: $ok of $want ranks OK (launcher exit $rc)"
[ "$ok" -eq "$want" ] && ! grep -q "FAILED" "$out"
