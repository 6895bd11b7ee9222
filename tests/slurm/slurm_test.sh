#!/usr/bin/env bash
# Slurm for real (a one-host cluster started by slurm_cluster.sh): a program with no MPI in it
# bootstraps through PMIx under `srun --mpi=pmix`, through the shared-file backend under a plain
# `srun` (job key from SLURM_JOB_ID/SLURM_STEP_ID, rank from SLURM_PROCID), and through PMIx
# inside an `sbatch` script.
#   slurm_test.sh PEER CLUSTER_SCRIPT          (PEER: //tests:bootstrap_env_peer)
set -u
peer=$(realpath "$1")
cluster=$(realpath "$2")
dir=${TEST_TMPDIR:-$(mktemp -d)}/slurm
rm -rf "$dir"
mkdir -p "$dir"
passed=0
failed=0
check() { local what=$1; shift; if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $what"; fi; }

"$cluster" start "$dir" || { echo "FAILED: the one-host Slurm cluster did not start"; echo "0 passed, 1 failed"; exit 1; }
export SLURM_CONF=$dir/slurm.conf
trap '"$cluster" stop "$dir"' EXIT
echo "Slurm $(sinfo --version); MPI plug-ins: $(srun --mpi=list 2>&1 | tr -s '\n\t ' ' ')"

ran() { # log command...: runs it, shows its output, passes if it exits 0 and every rank says "0 failed"
    local log=$1
    shift
    timeout 120 "$@" >"$log" 2>&1
    local rc=$?
    cat "$log"
    [ "$rc" -eq 0 ] && [ "$(grep -c ', 0 failed' "$log")" -eq 4 ]
}
check "srun --mpi=pmix -n 4: the PMIx bootstrap, chosen from the environment" \
    ran "$dir/pmix.log" srun --mpi=pmix -n 4 "$peer" pmix

mkdir -m 700 "$dir/rendezvous"
check "srun -n 4 with a rendezvous directory: the shared-file bootstrap" \
    ran "$dir/file.log" env HIDET_NCCL_RENDEZVOUS_DIR="$dir/rendezvous" srun -n 4 "$peer" file
check "the rendezvous directory is empty afterwards" [ -z "$(ls -A "$dir/rendezvous")" ]

cat >"$dir/job.sh" <<JOB
#!/bin/bash
srun --mpi=pmix -n 4 "$peer" pmix
JOB
check "sbatch --wait: srun --mpi=pmix inside a batch job" \
    ran "$dir/batch.log" bash -c "sbatch --wait -n 4 -o '$dir/job.out' '$dir/job.sh' >/dev/null && cat '$dir/job.out'"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
