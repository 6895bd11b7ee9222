#!/usr/bin/env bash
# Runs tests/python/mpi4py_test.py under mpirun -np 2 with Debian's python3 (for which Debian's
# python3-mpi4py is built) and the package from bindings/python (Bazel runfiles).
#   run_mpi4py_test.sh MPI4PY_TEST_PY LIBHIDET_NCCL_MPI_SO LIBFAKE_NCCL_SO PACKAGE_INIT_PY
set -eu
export PYTHONPATH=$(dirname "$(dirname "$(realpath "$4")")")
exec mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 --mca btl self,vader \
    --mca btl_vader_single_copy_mechanism none -x PYTHONPATH /usr/bin/python3 "$1" "$2" "$3"
