#!/usr/bin/env bash
# The GPU checks that need two ranks, as two fake nodes sharing one GPU (own NCCL_HOSTID, P2P and
# SHM off, NET/Socket over lo): for a 1-GPU machine, where run.sh 1 cannot run them (a 1-GPU
# machine proves correctness this way, never NVLink speed). Ends with "N passed, N failed".
#   fake_nodes.sh            in a bundle made by tools/gpu/make_gpu_bundle.sh; logs in $LOG_DIR (./gpu_logs)
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=$here/bin
out=${LOG_DIR:-$PWD/gpu_logs}
mkdir -p "$out"
export NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo NCCL_NVLS_ENABLE=0
cat >"$here/as_node.sh" <<'W'
#!/usr/bin/env bash
export NCCL_HOSTID=fakenode${HIDET_NCCL_RANK:-$OMPI_COMM_WORLD_RANK}
exec "$PROG" "$@"
W
chmod +x "$here/as_node.sh"
p=0
f=0
t() { # name command...
    local name=$1
    shift
    if "$@" >"$out/$name.log" 2>&1; then p=$((p + 1)); echo "PASS $name"; else f=$((f + 1)); echo "FAIL $name"; fi
    grep -E "checks|OK|WRONG|FAILED|refused|different tuning|roots" "$out/$name.log" | sort -u | head -6
}
for prog in collectives_gpu_test mem_gpu_test launcher_gpu_test; do
    t "fake2_$prog" env PROG=$bin/$prog "$bin/hidet-nccl-run" -n 2 --tag-output "$here/as_node.sh"
done
for table in window plain mismatch; do
    t "fake2_mem_$table" env PROG=$bin/mem_gpu_test "$here/mem_table.sh" "$bin/hidet-nccl-run" 2 "$here/as_node.sh" $table
done
t fake2_roots env PROG=$bin/launcher_gpu_test HIDET_NCCL_RANKS_PER_ROOT=1 HIDET_NCCL_DEBUG=INFO \
    "$bin/hidet-nccl-run" -n 2 --tag-output "$here/as_node.sh"
grep -q "2 roots" "$out/fake2_roots.log" && echo "roots: 2 roots used" || { echo "roots: no '2 roots' line"; f=$((f+1)); }
echo "$p passed, $f failed"
[ "$f" -eq 0 ]
