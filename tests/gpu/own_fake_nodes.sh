#!/usr/bin/env bash
# own_gpu_test as 2 ranks sharing ONE GPU, two fake nodes for NCCL (each rank its own NCCL_HOSTID, P2P
# and SHM off, NET/Socket over lo, CUDA_VISIBLE_DEVICES=0): NCCL's calls cross the loopback network,
# while the own kernels map each other's memory by CUDA IPC on the one device. For a 1-GPU machine;
# where there are 2 GPUs, own_gpu_test_n2 (hidet-nccl-run -n 2 own_gpu_test) runs one rank a GPU.
#   own_fake_nodes.sh [BIN_DIR]   BIN_DIR holds own_gpu_test and hidet-nccl-run; by default bin/ beside
#                                 this script (a bundle of tools/gpu/make_gpu_bundle.sh), else the bazel-bin
#                                 of the checkout this script is in (bazel build //tests:own_gpu_test
#                                 //tools/run:hidet-nccl-run)
# Passes (exit 0) only if the launcher exits 0 and both ranks print "own_gpu_test: N checks, 0 wrong",
# and then, with OWN_GPU_TEST_PEER_DEATH=1 (rank 1 leaves), rank 0 does too.
# A hang is stopped after $OWN_TIMEOUT_S seconds (default 900) and fails.
set -u
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -ge 1 ]; then
    bin=$1 prog=$1/own_gpu_test launcher=$1/hidet-nccl-run
elif [ -x "$here/bin/own_gpu_test" ]; then
    bin=$here/bin prog=$here/bin/own_gpu_test launcher=$here/bin/hidet-nccl-run
else
    bin=$(cd "$here/../.." && pwd)/bazel-bin
    prog=$bin/tests/own_gpu_test launcher=$bin/tools/hidet-nccl-run
fi
for f in "$prog" "$launcher"; do
    [ -x "$f" ] || { echo "own_fake_nodes.sh: FAILED: no program $f (looked in $bin)"; exit 1; }
done
export CUDA_VISIBLE_DEVICES=0 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo NCCL_NVLS_ENABLE=0
limit=${OWN_TIMEOUT_S:-900}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
timeout "$limit" "$launcher" -n 2 --tag-output \
    bash -c 'export NCCL_HOSTID=fakenode$HIDET_NCCL_RANK; exec "$0" "$@"' "$prog" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
[ "$rc" -eq 124 ] && echo "own_fake_nodes.sh: HUNG: stopped after $limit s"
ok=$(grep -c "own_gpu_test: [0-9]* checks, 0 wrong" "$log")
if [ "$rc" -ne 0 ] || [ "$ok" -ne 2 ]; then
    echo "own_fake_nodes.sh: FAILED (launcher exit $rc; $ok of 2 ranks reported 0 wrong)"
    exit 1
fi
# Then a peer that leaves: rank 1 exits after the registration, rank 0's own kernel must end once
# the communicator fails (OWN_GPU_TEST_PEER_DEATH in own_gpu_test.c).
OWN_GPU_TEST_PEER_DEATH=1 timeout 120 "$launcher" -n 2 --tag-output \
    bash -c 'export NCCL_HOSTID=fakenode$HIDET_NCCL_RANK; exec "$0" "$@"' "$prog" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
[ "$rc" -eq 124 ] && echo "own_fake_nodes.sh: HUNG after a peer left: stopped after 120 s"
if [ "$rc" -eq 0 ] && grep -q "^\[0\] own_gpu_test: [0-9]* checks, 0 wrong" "$log"; then
    echo "own_fake_nodes.sh: PASS (2 ranks on one GPU as fake nodes; a peer that leaves stops rank 0's kernel)"
    exit 0
fi
echo "own_fake_nodes.sh: FAILED after a peer left (launcher exit $rc)"
exit 1
