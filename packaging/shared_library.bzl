"""The shared libraries: one rule for libhidet_nccl.so and libhidet_nccl_mpi.so."""

def hidet_nccl_shared_library(name, srcs, deps):
    """`name` (e.g. libhidet_nccl.so, soname name.0) from srcs, exporting only the public
    hidet_nccl_* API (packaging/exports.map), CUDA's runtime linked in statically."""
    native.cc_binary(
        name = name,
        srcs = srcs,
        additional_linker_inputs = ["//packaging:exports.map"],
        linkopts = [
            "-Wl,--version-script=$(location //packaging:exports.map)",
            "-Wl,-soname," + name + ".0",
            "-ldl",
            "-lpthread",
            "-lm",
            "-lz",
        ],
        linkshared = True,
        deps = deps + ["@local_cuda//:cudart_static"],
    )
