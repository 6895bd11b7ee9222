"""init_mpi with mpi4py communicators on the CPU (Debian's python3 and python3-mpi4py), under
mpirun -np 2, through the recording stand-in for NCCL: the mpi4py handle reaches the C library
(MPI_COMM_NULL is refused by name; a real communicator, even a split one, gets through MPI to
the GPU choice, which fails for want of a GPU with a CUDA error, not an MPI one), and an object
that is not an mpi4py communicator is refused in Python.
    mpirun -np 2 python3 mpi4py_test.py LIBHIDET_NCCL_MPI_SO LIBFAKE_NCCL_SO   (bindings/python on PYTHONPATH)"""
import os
import sys

os.environ["HIDET_NCCL_SO"] = os.path.realpath(sys.argv[1])
os.environ["HIDET_NCCL_LIBRARY"] = os.path.realpath(sys.argv[2])

from mpi4py import MPI  # noqa: E402

import hidet_nccl  # noqa: E402

rank = MPI.COMM_WORLD.Get_rank()
failures = []


def expect_failure(what, call, status_name, needle):
    try:
        call()
    except hidet_nccl.HidetNcclError as e:
        if e.status_name != status_name or needle not in str(e):
            failures.append("%s: %s (%s), wanted %s with '%s'" % (what, e, e.status_name, status_name, needle))
        return
    except Exception as e:  # noqa: BLE001 - anything else is a failure of the test
        failures.append("%s: %r" % (what, e))
        return
    failures.append("%s: no error" % what)


expect_failure("MPI_COMM_NULL", lambda: hidet_nccl.init_mpi(MPI.COMM_NULL), "invalid argument", "MPI_COMM_NULL")
split = MPI.COMM_WORLD.Split(0, MPI.COMM_WORLD.Get_size() - rank)
expect_failure("a split communicator", lambda: hidet_nccl.init_mpi(split), "CUDA error", "cuda")
expect_failure("MPI_COMM_WORLD", lambda: hidet_nccl.init_mpi(MPI.COMM_WORLD), "CUDA error", "cuda")
try:
    hidet_nccl.init_mpi(object())
    failures.append("a non-communicator: no error")
except hidet_nccl.HidetNcclError as e:
    failures.append("a non-communicator reached the C library: %s" % e)
except Exception:  # noqa: BLE001 - mpi4py's own refusal (TypeError) is what we want
    pass
split.Free()
for f in failures:
    print("rank %d: FAILED %s" % (rank, f), file=sys.stderr)
print("rank %d: mpi4py %s, %d failures" % (rank, __import__("mpi4py").__version__, len(failures)))
sys.exit(1 if failures else 0)
