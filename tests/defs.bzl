"""Test rules: CUnit tests (CPU) and GPU tests (tag `gpu`, left out of CI)."""

def hidet_cunit_test(name, srcs, deps = [], tags = [], **kwargs):
    """A CUnit test linked statically (CUnit, CUDA runtime), so the binary runs on a
    machine without Bazel or CUnit, e.g. a GPU node."""
    native.cc_test(
        name = name,
        srcs = srcs,
        deps = deps + [
            "//:hidet_nccl",
            "//tests:cunit_runner",
            "@local_cuda//:cudart_static",
        ],
        linkstatic = True,
        tags = tags,
        **kwargs
    )

def hidet_gpu_test(name, srcs, deps = [], tags = [], **kwargs):
    """A test that needs GPUs: tagged `gpu` (CI filters it out) and `exclusive`."""
    hidet_cunit_test(name = name, srcs = srcs, deps = deps, tags = tags + ["gpu", "exclusive"], **kwargs)
