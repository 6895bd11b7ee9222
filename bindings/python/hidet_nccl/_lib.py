"""Finding and loading libhidet_nccl.so, its C declarations, the collectives' calls (through the
package's extension module where it is there, else through ctypes), and turning statuses into
exceptions."""
import ctypes
import os
import sys

from . import _arrays

_c_int_p = ctypes.POINTER(ctypes.c_int)
_HERE = os.path.dirname(os.path.abspath(__file__))

# Statuses (hidet_nccl_status_t), by value.
STATUS_NAMES = (
    "success", "invalid argument", "invalid communicator", "unsupported", "NCCL not found", "NCCL error",
    "CUDA error", "timeout", "bootstrap error", "system error", "invalid usage",
)


class HidetNcclError(RuntimeError):
    """A call of the C library failed: `status` is its hidet_nccl_status_t, the message its own."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.status_name = STATUS_NAMES[status] if 0 <= status < len(STATUS_NAMES) else "unknown status"


# Every public function of the headers: (restype, argument types). Enums are _INT; handles
# (streams, ncclComm_t, hidet_nccl_bootstrap_h) and pointers to structs are _VOID_P.
# tests/bindings checks both tables against include/hidet_nccl/*.h.
_VOID_P = ctypes.c_void_p
_VOID_PP = ctypes.POINTER(ctypes.c_void_p)
_SIZE = ctypes.c_size_t
_INT = ctypes.c_int
_STR_P = ctypes.POINTER(ctypes.c_char_p)
_PROTOTYPES = {
    "hidet_nccl_status_string": (ctypes.c_char_p, [_INT]),
    "hidet_nccl_last_error": (ctypes.c_char_p, []),
    "hidet_nccl_load": (_INT, []),
    "hidet_nccl_library_path": (_INT, [_STR_P]),
    "hidet_nccl_nccl_version": (_INT, [_c_int_p]),
    "hidet_nccl_dtype_name": (_INT, [_INT, _STR_P]),
    "hidet_nccl_dtype_from_name": (_INT, [ctypes.c_char_p, _c_int_p]),
    "hidet_nccl_dtype_size": (_INT, [_INT, ctypes.POINTER(_SIZE)]),
    "hidet_nccl_op_name": (_INT, [_INT, _STR_P]),
    "hidet_nccl_op_from_name": (_INT, [ctypes.c_char_p, _c_int_p]),
    "hidet_nccl_reduction": (_INT, [_INT, _INT, _VOID_P]),
    "hidet_nccl_init": (_INT, [_c_int_p]),
    "hidet_nccl_comm_init": (_INT, [_VOID_P, _VOID_P, _c_int_p]),
    "hidet_nccl_bootstrap_create": (_INT, [_VOID_P, _VOID_P, _VOID_PP]),
    "hidet_nccl_bootstrap_create_v1": (_INT, [_VOID_P, _VOID_P, _VOID_PP]),
    "hidet_nccl_bootstrap_create_v2": (_INT, [_VOID_P, _VOID_P, _VOID_PP]),
    "hidet_nccl_bootstrap_recover": (_INT, [_VOID_P, ctypes.c_double, _c_int_p, _c_int_p]),
    "hidet_nccl_bootstrap_news": (_INT, [_VOID_P, _c_int_p]),
    "hidet_nccl_bootstrap_joining": (_INT, [_VOID_P, _c_int_p]),
    "hidet_nccl_bootstrap_heal": (_INT, [_VOID_P, ctypes.c_double, _c_int_p, _c_int_p, _c_int_p, _c_int_p]),
    "hidet_nccl_bootstrap_load": (_INT, [ctypes.c_char_p, _VOID_P, _VOID_PP]),
    "hidet_nccl_bootstrap_from_env": (_INT, [_VOID_PP]),
    "hidet_nccl_bootstrap_file": (_INT, [_VOID_P, _VOID_PP]),
    "hidet_nccl_bootstrap_socket": (_INT, [_VOID_P, _VOID_PP]),
    "hidet_nccl_bootstrap_pmix": (_INT, [_VOID_PP]),
    "hidet_nccl_bootstrap_destroy": (_INT, [_VOID_P]),
    "hidet_nccl_bootstrap_name": (_INT, [_VOID_P, _STR_P]),
    "hidet_nccl_bootstrap_rank": (_INT, [_VOID_P, _c_int_p, _c_int_p]),
    "hidet_nccl_bootstrap_local_rank": (_INT, [_VOID_P, _c_int_p, _c_int_p]),
    "hidet_nccl_bootstrap_broadcast": (_INT, [_VOID_P, _VOID_P, _SIZE, _INT, ctypes.c_double]),
    "hidet_nccl_bootstrap_allgather": (_INT, [_VOID_P, _VOID_P, _VOID_P, _SIZE, ctypes.c_double]),
    "hidet_nccl_rendezvous_start": (_INT, [_VOID_P, _VOID_PP]),
    "hidet_nccl_rendezvous_port": (_INT, [_VOID_P, _c_int_p]),
    "hidet_nccl_rendezvous_live": (_INT, [_VOID_P, _c_int_p]),
    "hidet_nccl_rendezvous_stop": (_INT, [_VOID_P]),
    "hidet_nccl_set_comms": (_INT, [_INT, _VOID_PP]),
    "hidet_nccl_comm_adopt": (_INT, [_VOID_P, _c_int_p]),
    "hidet_nccl_comm_lookup": (_INT, [_VOID_P, _c_int_p]),
    "hidet_nccl_get_comm": (_INT, [_INT, _VOID_PP]),
    "hidet_nccl_comm_count": (_INT, [_c_int_p]),
    "hidet_nccl_comm_init_rank": (_INT, [_INT, _VOID_P, _INT, _c_int_p]),
    "hidet_nccl_comm_init_all": (_INT, [_INT, _c_int_p, _c_int_p]),
    "hidet_nccl_get_unique_id": (_INT, [_VOID_P]),
    "hidet_nccl_comm_split": (_INT, [_INT, _INT, _INT, _c_int_p]),
    "hidet_nccl_comm_destroy": (_INT, [_INT]),
    "hidet_nccl_comm_rank": (_INT, [_INT, _c_int_p]),
    "hidet_nccl_comm_size": (_INT, [_INT, _c_int_p]),
    "hidet_nccl_comm_device": (_INT, [_INT, _c_int_p]),
    "hidet_nccl_comm_is_owned": (_INT, [_INT, _c_int_p]),
    "hidet_nccl_comm_set_error_policy": (_INT, [_INT, _INT]),
    "hidet_nccl_comm_wait": (_INT, [_INT, _VOID_P, ctypes.c_double]),
    "hidet_nccl_comm_check": (_INT, [_INT]),
    "hidet_nccl_comm_abort": (_INT, [_INT]),
    "hidet_nccl_comm_shrink": (_INT, [_INT, _INT, _c_int_p, _INT, _c_int_p]),
    "hidet_nccl_comm_revoke": (_INT, [_INT]),
    "hidet_nccl_comm_recover": (_INT, [_INT, ctypes.c_double, _c_int_p, _c_int_p]),
    "hidet_nccl_comm_heal": (_INT, [_INT, ctypes.c_double, _c_int_p, _c_int_p]),
    "hidet_nccl_comm_joined": (_INT, [_INT, _c_int_p, _c_int_p]),
    "hidet_nccl_mem_alloc": (_INT, [_INT, _SIZE, _VOID_PP]),
    "hidet_nccl_mem_free": (_INT, [_VOID_P]),
    "hidet_nccl_register": (_INT, [_INT, _VOID_P, _SIZE, _INT, _c_int_p]),
    "hidet_nccl_deregister": (_INT, [_INT, _INT]),
    "hidet_nccl_all_reduce_route": (_INT, [_INT, _VOID_P, _VOID_P, _SIZE, _INT, _INT, ctypes.c_char_p, _SIZE]),
    "hidet_nccl_set_tag": (_INT, [ctypes.c_char_p]),
    "hidet_nccl_trace_dump": (_INT, [ctypes.c_char_p, ctypes.c_char_p, _SIZE]),
    "hidet_nccl_finalize": (_INT, []),
    "hidet_nccl_group_start": (_INT, []),
    "hidet_nccl_group_end": (_INT, []),
    "hidet_nccl_all_reduce": (_INT, [_INT, _VOID_P, _VOID_P, _SIZE, _INT, _INT, _VOID_P]),
    "hidet_nccl_broadcast": (_INT, [_INT, _VOID_P, _VOID_P, _SIZE, _INT, _INT, _VOID_P]),
    "hidet_nccl_reduce": (_INT, [_INT, _VOID_P, _VOID_P, _SIZE, _INT, _INT, _INT, _VOID_P]),
    "hidet_nccl_all_gather": (_INT, [_INT, _VOID_P, _VOID_P, _SIZE, _INT, _VOID_P]),
    "hidet_nccl_reduce_scatter": (_INT, [_INT, _VOID_P, _VOID_P, _SIZE, _INT, _INT, _VOID_P]),
    "hidet_nccl_all_to_all": (_INT, [_INT, _VOID_P, _VOID_P, _SIZE, _INT, _VOID_P]),
    "hidet_nccl_gather": (_INT, [_INT, _VOID_P, _VOID_P, _SIZE, _INT, _INT, _VOID_P]),
    "hidet_nccl_scatter": (_INT, [_INT, _VOID_P, _VOID_P, _SIZE, _INT, _INT, _VOID_P]),
    "hidet_nccl_send": (_INT, [_INT, _VOID_P, _SIZE, _INT, _INT, _VOID_P]),
    "hidet_nccl_recv": (_INT, [_INT, _VOID_P, _SIZE, _INT, _INT, _VOID_P]),
    "hidet_nccl_barrier": (_INT, [_INT, _VOID_P]),
    "hidet_nccl_op_premul_sum": (_INT, [_INT, _INT, _VOID_P, _INT, _c_int_p]),
    "hidet_nccl_op_destroy": (_INT, [_INT, _INT]),
    "hidet_nccl_setting": (_INT, [ctypes.c_char_p, _STR_P, _STR_P]),
    "hidet_nccl_settings_reload": (_INT, []),
}
# bootstrap_mpi.h: only in libhidet_nccl_mpi.so. An MPI_Comm is Open MPI's pointer (what
# mpi4py's MPI._handleof gives); _fortran takes MPI_Fint (mpi4py's Comm.py2f()).
_MPI_PROTOTYPES = {
    "hidet_nccl_mpi_init": (_INT, [_c_int_p]),
    "hidet_nccl_mpi_comm_init": (_INT, [_VOID_P, _VOID_P, _c_int_p]),
    "hidet_nccl_mpi_comm_init_fortran": (_INT, [_INT, _VOID_P, _c_int_p]),
    "hidet_nccl_bootstrap_mpi": (_INT, [_VOID_P, _VOID_PP]),
}

_lib = None
_with_mpi = False


def _candidates(mpi):
    """Where the library is looked for, in order: $HIDET_NCCL_SO, this package's lib/ (a
    wheel), PREFIX/lib beside an installed PREFIX/lib/python/hidet_nccl, the system's search
    path (LD_LIBRARY_PATH, ldconfig)."""
    name = "libhidet_nccl_mpi.so" if mpi else "libhidet_nccl.so"
    given = os.environ.get("HIDET_NCCL_SO")
    if given:
        return [given]
    installed = os.path.join(os.path.dirname(os.path.dirname(_HERE)), name + ".0")  # PREFIX/lib/python/hidet_nccl
    return [os.path.join(_HERE, "lib", name + ".0"), installed, name + ".0", name]


def load(mpi=False):
    """The C library, loaded on first use: libhidet_nccl_mpi.so when `mpi` (it holds all of
    libhidet_nccl.so; one registry per process), else libhidet_nccl.so."""
    global _lib, _with_mpi
    if _lib is not None:
        if mpi and not _with_mpi:
            raise HidetNcclError(10, "hidet_nccl: libhidet_nccl.so is loaded already, without MPI: call init_mpi() "
                                     "before any other call, or set HIDET_NCCL_SO to libhidet_nccl_mpi.so")
        return _lib
    tried = []
    for path in _candidates(mpi):
        try:
            lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
        except OSError as e:
            tried.append("%s (%s)" % (path, e))
            continue
        for name, (restype, argtypes) in _PROTOTYPES.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = restype, argtypes
        _with_mpi = hasattr(lib, "hidet_nccl_mpi_init")
        if mpi and not _with_mpi:
            tried.append("%s (no MPI bootstrap in it)" % path)
            continue
        for name, (restype, argtypes) in (_MPI_PROTOTYPES.items() if _with_mpi else ()):
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = restype, argtypes
        _lib = lib
        return lib
    raise HidetNcclError(4, "hidet_nccl: cannot load the C library; tried " + "; ".join(tried) +
                         ". Install it (bazel run //:install -- --prefix DIR, then LD_LIBRARY_PATH=DIR/lib) or "
                         "set HIDET_NCCL_SO to the .so")


class _Functions:
    """The C library's functions as attributes (functions.hidet_nccl_all_reduce), each looked up
    once: the first use of a name loads the library (load()) and keeps the ctypes function, its
    argtypes and restype set by load(), on this object; later uses are one attribute read."""

    def __getattr__(self, name):
        if name.startswith("_"):  # copy, pickle, mock and the like probing: no C function
            raise AttributeError(name)
        fn = getattr(load(), name)
        setattr(self, name, fn)
        return fn


functions = _Functions()


# ---- the collectives' calls
# The C functions a collective call makes, called through the extension module hidet_nccl/_calls
# (bindings/python/calls.c: CPython 3.10 and later, stable ABI) where it is there: the same
# arguments and status as the ctypes function of the name, each argument checked as _check.py
# checks one (never wrapped), the GIL released around the call as ctypes releases it, for a
# fraction of ctypes' cost per call (docs/python.md). Where it is not (a source install, another
# Python), the ctypes functions, as before.
CALLS = (
    "hidet_nccl_group_start", "hidet_nccl_group_end", "hidet_nccl_all_reduce", "hidet_nccl_broadcast",
    "hidet_nccl_reduce", "hidet_nccl_all_gather", "hidet_nccl_reduce_scatter", "hidet_nccl_all_to_all",
    "hidet_nccl_gather", "hidet_nccl_scatter", "hidet_nccl_send", "hidet_nccl_recv", "hidet_nccl_barrier",
)
# The Communicator methods' calls on torch tensors, done whole in the extension (calls.c,
# "torch tensors, read here"): each takes the method's arguments (comm_id first) and returns the
# status, or -1 where it declines (not a torch tensor of a class seen, anything unusual): the
# method then takes its general path (_arrays.array and the function of CALLS), which says why
# when it refuses. Through ctypes, or with fused=False, each is _declined.
TORCH_CALLS = (
    "torch_all_reduce", "torch_broadcast", "torch_reduce", "torch_all_gather", "torch_reduce_scatter",
    "torch_all_to_all", "torch_gather", "torch_scatter", "torch_send", "torch_recv",
)
_CALLS_API = 2  # calls.c's CALLS_API: the functions and arguments this package expects of it


def _declined(*args):
    """A TORCH_CALLS function where there is none: every call takes the general path."""
    return -1


def _comm_size_by_ctypes(comm_id):
    """(status, size) of hidet_nccl_comm_size through ctypes: the extension's comm_size()."""
    size = ctypes.c_int(-1)
    status = _lib.hidet_nccl_comm_size(comm_id, ctypes.byref(size))
    return status, size.value if status == 0 else -1


def _import_extension():
    """(the extension module, None), or (None, why it is not used)."""
    if sys.implementation.name != "cpython" or sys.version_info < (3, 10):
        return None, "the extension is for CPython 3.10 or later, not %s %d.%d" % (
            sys.implementation.name, sys.version_info[0], sys.version_info[1])
    try:
        from . import _calls
    except ImportError as e:
        return None, "no extension module hidet_nccl/_calls (%s)" % e
    if (getattr(_calls, "API", None) != _CALLS_API or not set(CALLS) <= set(getattr(_calls, "FUNCTIONS", ()))
            or not all(hasattr(_calls, name) for name in TORCH_CALLS + ("bind_torch",))):
        return None, "%s is of another version (API %r; this package's is %d)" % (
            getattr(_calls, "__file__", "hidet_nccl._calls"), getattr(_calls, "API", None), _CALLS_API)
    return _calls, None


extension, extension_missing = _import_extension()


class _Calls:
    """The functions of CALLS as attributes (calls.hidet_nccl_all_reduce(...) -> status),
    comm_size(comm_id) -> (status, size), and those of TORCH_CALLS, through `path`: "extension"
    (the module `extension`) when it imported, else "ctypes". The first use of any loads the
    library (load(), as functions.NAME does) and binds them all; after that each is a plain
    attribute of this object (read as fast as Python reads one). bind("ctypes") or
    bind("extension") chooses again (the tests run both); bind("extension", fused=False) leaves
    the TORCH_CALLS out (they decline: the benchmarks' "unfused" column). `fused` says whether
    they are the extension's."""

    def __init__(self):
        self.path = "ctypes" if extension is None else "extension"
        self.fused = False
        for name in CALLS + TORCH_CALLS + ("comm_size",):
            setattr(self, name, self._first_use(name))

    def _first_use(self, name):
        def first(*args):
            self.bind(self.path)
            return getattr(self, name)(*args)
        first.__name__ = name
        return first

    def bind(self, path, fused=True):
        lib = load()
        if path == "extension":
            if extension is None:
                raise HidetNcclError(3, "hidet_nccl: " + extension_missing)
            # The addresses of the functions in the copy ctypes loaded: one library, one registry.
            extension.bind({name: ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
                            for name in CALLS + ("hidet_nccl_comm_size",)})
            # What the torch_ functions mirror: _arrays' own set, dicts and namespace, read as they
            # are at each call (a class or dtype _arrays takes in is taken there from then on).
            extension.bind_torch(_arrays._tensor_classes, _arrays._torch_codes, _arrays.OPS, vars(_arrays))
            source, self.comm_size = extension, extension.comm_size
        elif path == "ctypes":
            source, self.comm_size, fused = lib, _comm_size_by_ctypes, False
        else:
            raise ValueError("hidet_nccl: a call path is 'extension' or 'ctypes', not %r" % (path,))
        for name in CALLS:
            setattr(self, name, getattr(source, name))
        for name in TORCH_CALLS:
            setattr(self, name, getattr(source, name) if fused else _declined)
        self.path, self.fused = path, bool(fused)


calls = _Calls()


def check(status):
    """Raises HidetNcclError with the library's message when status is not success."""
    if status != 0:
        message = _lib.hidet_nccl_last_error()
        raise HidetNcclError(status, message.decode("utf-8", "replace") if message else STATUS_NAMES[status])


def call(name, *args):
    """Calls the C function `name` and raises on failure."""
    check(getattr(functions, name)(*args))
