"""The bootstrap backends built into libhidet_nccl.a: a folder bootstrap_<name>/ each (with the
targets srcs, internal_headers and files) and a row of core/boot/bootstrap_table.c."""

BUILTIN_BACKENDS = [
    "file",
    "pmix",
    "socket",
]
