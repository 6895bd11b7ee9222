"""MPI tests: a hidden binary run under `mpirun -np N` by an sh_test per N."""

def hidet_mpi_test(name, srcs, nps, deps = [], tags = []):
    native.cc_binary(
        name = name + "_bin",
        testonly = True,
        srcs = srcs,
        linkstatic = True,
        deps = deps + [
            "//:hidet_nccl_mpi",
            "@local_cuda//:cudart_static",
        ],
    )
    for np in nps:
        native.sh_test(
            name = "{}_np{}".format(name, np),
            srcs = ["//tests/mpi:mpi_run.sh"],
            args = [str(np), "$(location :{}_bin)".format(name)],
            data = [":{}_bin".format(name)],
            size = "medium",
            timeout = "short",  # a hang fails in a minute, not five
            tags = tags + ["mpi"],
        )
