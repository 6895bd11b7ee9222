#!/usr/bin/env bash
# The job whole again after a rank's death, on GPUs (hidet_nccl_comm_heal; docs/recovery.md):
#   heal.sh BIN_DIR [file|socket] [RANDOM_JOBS]
# Under hidet-nccl-run --max-restarts (the dead rank started again at once), with the file
# rendezvous or the launcher's socket rendezvous; each rank is a fake node (own NCCL_HOSTID,
# NET/Socket over lo) when there are fewer GPUs than ranks, as NCCL tells nodes apart:
#   1/0 on 3 ranks:       kill rank 1 mid-loop, it is restarted and joins, 100 exact all_reduces;
#                         then kill rank 0 (the old root), the same
#   random:2 on 3 ranks:  RANDOM_JOBS jobs (default 10: 20 kills) of 2 kills each, victim,
#                         iteration and point (in flight or not) from the job's seed
#   start on 3 ranks:     a fresh job's start to its first all_reduce, 5 times: what a whole-job
#                         restart (torchrun's) pays after the same detection
# Passes with 0 hangs, 0 wrong, 0 FAILED, every rank's last process OK and the launcher's exit 0;
# prints the timing lines and their summary.
set -u
bin=$1 bootstrap=${2:-file} random_jobs=${3:-10}
timeout_s=5
launcher=$bin/hidet-nccl-run
[ -x "$launcher" ] || launcher=tools/run/hidet-nccl-run
ngpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export NCCL_NVLS_ENABLE=0 HIDET_NCCL_TRACE_DIR=$work/trace
mkdir -p "$HIDET_NCCL_TRACE_DIR"
failures=0 hangs=0 kills=0

run_job() { # NAME N PLAN SEED RESTARTS
    local name=$1 n=$2 plan=$3 seed=$4 restarts=$5 wrap=() mode=()
    if [ "$ngpus" -lt "$n" ]; then
        export NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo
        wrap=(bash -c 'export NCCL_HOSTID=fakenode$HIDET_NCCL_RANK; exec "$0" "$@"')
    fi
    [ "$bootstrap" = socket ] && mode=(--rendezvous socket)
    mkdir -p "$work/$name"
    local t0 t1 rc
    t0=$(date +%s.%N)
    HEAL_TEST_DIR=$work/$name timeout 120 "$launcher" -n "$n" "${mode[@]}" --max-restarts "$restarts" \
        --restart-delay 0 --tag-output "${wrap[@]}" "$bin/heal_gpu_test" "$plan" "$timeout_s" "$seed" \
        >"$work/$name.log" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    echo "$name: launcher exit $rc after $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }') s" >>"$work/$name.log"
    [ "$rc" -eq 124 ] && { echo "heal.sh: $name HUNG (killed after 120 s)"; hangs=$((hangs + 1)); }
    grep -E "timing:|FAILED|WRONG|exact|heal:|: OK|restart|launcher exit|ready in" "$work/$name.log" | sed "s/^/$name: /"
    local ok
    ok=$(grep -c "heal_gpu_test ($plan): OK" "$work/$name.log")
    if [ "$rc" -ne 0 ] || [ "$ok" -ne "$n" ] || grep -q "FAILED\|WRONG" "$work/$name.log"; then
        echo "heal.sh: $name: $ok of $n ranks OK (launcher exit $rc); the log:"
        tail -60 "$work/$name.log"
        failures=$((failures + 1))
    fi
}

run_job seq 3 1/0 1 2
kills=2
for j in $(seq 1 "$random_jobs"); do
    run_job "random$j" 3 random:2 "$j" 2
    kills=$((kills + 2))
done
for j in 1 2 3 4 5; do run_job "start$j" 3 start 1 0; done
healed=$(grep -h '"how":"heal-' "$HIDET_NCCL_TRACE_DIR"/* 2>/dev/null | wc -l)
echo "flight recorder dumps naming the communicator a heal came from: $healed"
cat "$work"/*.log | grep -h "timing:\|launcher exit" | sed 's/^\[[0-9]*\] //' | awk -v b="$bootstrap" '
    function stat(name, a, n,   i, s, mx) { s = 0; mx = 0; for (i = 0; i < n; i++) { s += a[i]; if (a[i] > mx) mx = a[i] }
        printf "heal.sh %s: %-28s %3d samples, mean %.3f s, max %.3f s\n", b, name, n, n ? s / n : 0, mx }
    /kill->error/ { for (i = 1; i <= NF; i++) { if ($i == "kill->error") ke[nke++] = $(i + 1) + 0; if ($i == "error->whole") ew[new++] = $(i + 1) + 0; if ($i == "kill->whole") kw[nkw++] = $(i + 1) + 0 } }
    /joined \(restart/ { for (i = 1; i <= NF; i++) if ($i == "start->whole") js[njs++] = $(i + 1) + 0; for (i = 1; i <= NF; i++) if ($i == "began") jb[njb++] = $(i + 1) + 0 }
    /start: init/ { for (i = 1; i <= NF; i++) if ($i == "init") si[nsi++] = $(i + 1) + 0 }
    /^start[0-9]: launcher exit 0 after/ { sw[nsw++] = $(NF - 1) + 0 }
    END {
        stat("kill->error (detection)", ke, nke); stat("error->whole (survivors)", ew, new);
        stat("kill->whole", kw, nkw); stat("kill->newcomer start", jb, njb);
        stat("newcomer start->whole", js, njs); stat("whole-job start: init", si, nsi);
        stat("whole-job start: launcher", sw, nsw)
    }'
echo "heal.sh $bootstrap: $kills kills, $hangs hung, $failures jobs failed"
[ "$hangs" -eq 0 ] && [ "$failures" -eq 0 ] && [ "$healed" -gt 0 ]
