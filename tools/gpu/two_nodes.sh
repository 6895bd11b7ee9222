#!/usr/bin/env bash
# Two "nodes" on one 2-GPU host (issue 14, item 5): each rank gets its own NCCL_HOSTID and GPU
# (CUDA_VISIBLE_DEVICES), P2P and SHM are off and NCCL talks NET/Socket over lo; NCCL then sees
# nNodes 2. The exact all_reduce checks run through every bootstrap: MPI, PMIx under mpirun (a
# program without MPI), the shared-file bootstrap and the socket rendezvous (two hidet-nccl-run
# invocations, one per node), and scalable init (every rank a root). On a 1-GPU host both fake
# nodes share the GPU (told apart by NCCL_HOSTID, as NCCL does).
#   two_nodes.sh            in a bundle made by tools/gpu/make_gpu_bundle.sh; logs in $LOG_DIR (./gpu_logs)
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=$here/bin
logs=${LOG_DIR:-$PWD/gpu_logs}
mkdir -p "$logs"
export NCCL_NVLS_ENABLE=0 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo
export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun_args=(-np 2 --bind-to none --allow-run-as-root -x NCCL_NVLS_ENABLE -x NCCL_P2P_DISABLE -x NCCL_SHM_DISABLE
    -x NCCL_SOCKET_IFNAME -x NCCL_DEBUG -x NCCL_DEBUG_SUBSYS)
passed=0
failed=0
judge() { # name: passes if the log shows two nodes over the network and no failed check
    local name=$1 log=$logs/$1.log
    if grep -q "nNodes 2" "$log" && grep -q "NET/Socket" "$log" && ! grep -qE "FAILED|WRONG" "$log" &&
        [ "$(grep -cE "launcher_gpu_test OK|mpi_gpu_test: OK" "$log")" -ge 1 ]; then
        passed=$((passed + 1))
        echo "PASS $name"
    else
        failed=$((failed + 1))
        echo "FAIL $name"
    fi
    grep -E "nNodes|via NET|checks|OK|FAILED|roots|hidet_nccl:" "$log" | sort -u | head -12
}
# One fake node per MPI rank: its GPU and its host id. On a host with one GPU both fake nodes
# share it: NCCL (and the library's placement check) tell them apart by NCCL_HOSTID.
ngpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "$ngpus" -ge 1 ] || { echo "no GPU"; exit 1; }
gpu1=$((1 % ngpus))
node_env="export CUDA_VISIBLE_DEVICES=\$((OMPI_COMM_WORLD_RANK % $ngpus)) NCCL_HOSTID=fakenode\$OMPI_COMM_WORLD_RANK; exec \"\$0\""
echo "two fake nodes on $ngpus GPU(s): node 0 on GPU 0, node 1 on GPU $gpu1"
mpirun "${mpirun_args[@]}" bash -c "$node_env" "$bin/mpi_gpu_test" >"$logs/two_nodes_mpi.log" 2>&1
judge two_nodes_mpi
mpirun "${mpirun_args[@]}" bash -c "$node_env" "$bin/launcher_gpu_test" >"$logs/two_nodes_pmix.log" 2>&1
judge two_nodes_pmix
two_launchers() { # name, launcher options...: node 1 in the background, node 0 here
    local name=$1
    shift
    CUDA_VISIBLE_DEVICES=$gpu1 NCCL_HOSTID=fakenode1 "$bin/hidet-nccl-run" --nnodes 2 --node-rank 1 -n 1 "$@" \
        "$bin/launcher_gpu_test" >"$logs/$name.node1.log" 2>&1 &
    local node1=$!
    CUDA_VISIBLE_DEVICES=0 NCCL_HOSTID=fakenode0 "$bin/hidet-nccl-run" --nnodes 2 --node-rank 0 -n 1 "$@" \
        "$bin/launcher_gpu_test" >"$logs/$name.log" 2>&1
    wait $node1
    cat "$logs/$name.node1.log" >>"$logs/$name.log"
    judge "$name"
}
mkdir -m 700 -p "$logs/shared"
two_launchers two_nodes_file --rendezvous-dir "$logs/shared" --job-key two-nodes-file
two_launchers two_nodes_socket --master-addr 127.0.0.1 --master-port 29517
HIDET_NCCL_RANKS_PER_ROOT=1 HIDET_NCCL_DEBUG=INFO two_launchers two_nodes_socket_roots --master-addr 127.0.0.1 \
    --master-port 29518
grep -q "2 roots" "$logs/two_nodes_socket_roots.log" || { echo "FAIL two_nodes_socket_roots: no '2 roots' line"; failed=$((failed + 1)); }
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
