#!/usr/bin/env bash
# Survivors of a dead rank go on, on GPUs (hidet_nccl_comm_recover; docs/recovery.md):
#   recover.sh BIN_DIR [file|socket] [RANDOM_JOBS]
# Under hidet-nccl-run --keep-going, with the file rendezvous or the launcher's socket rendezvous;
# each rank is a fake node (own NCCL_HOSTID, NET/Socket over lo) when there are fewer GPUs than
# ranks, as NCCL tells nodes apart:
#   1/0 on 3 ranks:      kill rank 1 mid-loop, recover, 100 exact all_reduces; then kill rank 0
#                        (the old root), recover, 100 exact all_reduces
#   hang:1 on 3 ranks:   rank 1 stops calling; the others recover without it at their deadline
#                        (NCCL saw no error: shrink), 100 exact all_reduces; rank 1 is told it was
#                        left out
#   random:3 on 4 ranks: RANDOM_JOBS jobs (default 17: 51 kills) of 3 kills each at random
#                        iterations, in flight or not; every all_reduce checked
# Passes with 0 hangs, 0 wrong, 0 FAILED, and every survivor's OK; prints the timing lines
# (kill->error, error->ready) and, at the end, their summary by stage.
set -u
bin=$1 bootstrap=${2:-file} random_jobs=${3:-17}
timeout_s=5
launcher=$bin/hidet-nccl-run
[ -x "$launcher" ] || launcher=tools/hidet-nccl-run
ngpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export NCCL_NVLS_ENABLE=0 HIDET_NCCL_TRACE_DIR=$work/trace
mkdir -p "$HIDET_NCCL_TRACE_DIR"
failures=0 hangs=0 port=29650

run_job() { # NAME N PLAN [SEED]
    local name=$1 n=$2 plan=$3 seed=${4:-1} wrap=() mode=()
    if [ "$ngpus" -lt "$n" ]; then
        export NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo
        wrap=(bash -c 'export NCCL_HOSTID=fakenode$HIDET_NCCL_RANK; exec "$0" "$@"')
    fi
    if [ "$bootstrap" = socket ]; then
        port=$((port + 1))
        mode=(--nnodes 1 --node-rank 0 --master-addr 127.0.0.1 --master-port "$port")
    fi
    mkdir -p "$work/$name"
    RECOVER_TEST_DIR=$work/$name timeout 90 "$launcher" -n "$n" "${mode[@]}" --keep-going --tag-output "${wrap[@]}" \
        "$bin/recover_gpu_test" "$plan" "$timeout_s" "$seed" >"$work/$name.log" 2>&1
    local rc=$?
    [ "$rc" -eq 124 ] && { echo "recover.sh: $name HUNG (killed after 90 s)"; hangs=$((hangs + 1)); }
    grep -E "timing:|FAILED|WRONG|exact|left out|recover:|: OK" "$work/$name.log" | sed "s/^/$name: /"
    local ok want=$5
    ok=$(grep -c "recover_gpu_test ($plan): OK" "$work/$name.log")
    if [ "$ok" -ne "$want" ] || grep -q "FAILED\|WRONG" "$work/$name.log"; then
        echo "recover.sh: $name: $ok of $want survivors OK (launcher exit $rc); the log:"
        tail -40 "$work/$name.log"
        failures=$((failures + 1))
    fi
}

run_job seq 3 1/0 1 1       # rank 2 is the last one standing
run_job hang 3 hang:1 1 3   # ranks 0 and 2 go on, rank 1 is told it was left out
for j in $(seq 1 "$random_jobs"); do run_job "random$j" 4 random:3 "$j" 1; done
recovered=$(grep -h '"how":"recover"' "$HIDET_NCCL_TRACE_DIR"/* 2>/dev/null | wc -l)
echo "flight recorder dumps naming the communicator a recovery came from: $recovered"
grep -h "timing:" "$work"/*.log | sed 's/^\[[0-9]*\] //' | awk -v b="$bootstrap" '
    /kill->error/ { v = $(NF - 1) + 0; k[n_k++] = v; if (v > kmax) kmax = v }
    /error->ready/ { v = $7 + 0; r[n_r++] = v; if (v > rmax) rmax = v }
    END {
        for (i = 0; i < n_k; i++) ks += k[i]
        for (i = 0; i < n_r; i++) rs += r[i]
        printf "recover.sh %s: kill->error %d samples, mean %.3f s, max %.3f s; error->ready %d samples, mean %.3f s, max %.3f s\n",
            b, n_k, n_k ? ks / n_k : 0, kmax, n_r, n_r ? rs / n_r : 0, rmax
    }'
echo "recover.sh $bootstrap: $((random_jobs * 3 + 3)) kills/hangs, $hangs hung, $failures jobs failed"
[ "$hangs" -eq 0 ] && [ "$failures" -eq 0 ] && [ "$recovered" -gt 0 ]
