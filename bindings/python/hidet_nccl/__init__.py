"""hidet_nccl: NCCL communicators and dtype-mapped collectives for torch, CuPy and hidet arrays.

    import hidet_nccl
    comm = hidet_nccl.init()               # hidet-nccl-run, torchrun, Slurm, a PMIx launcher
    comm.all_reduce(tensor)                # in place, on torch's current stream
    comm.all_gather(part, out=whole)

Python over libhidet_nccl.so (ctypes), the collectives called through the package's small
extension module where it is there (call_path() says which); every failure raises
HidetNcclError with the C library's message. The guide: docs/python.md.
"""
import contextlib
import ctypes
import os
import sys

from . import _arrays, _check
from ._arrays import DTYPES, NAMES, OPS, array as _array, dtype_from_dlpack, dtype_from_torch, dtype_from_typestr
from ._lib import HidetNcclError, call, check, load
from ._lib import calls as _calls
from ._lib import functions as _c

__version__ = "0.1.0"
SHRINK_DEFAULT, SHRINK_ABORT = 0, 1  # Communicator.shrink flags (HIDET_NCCL_SHRINK_*)
# Communicator.register flags (HIDET_NCCL_REGISTER_*)
REGISTER_AUTO, REGISTER_BUFFER, REGISTER_WINDOW, REGISTER_OWN = 0, 1, 2, 3
__all__ = [
    "HidetNcclError", "Communicator", "Op", "init", "init_mpi", "adopt", "group", "finalize", "nccl_version",
    "nccl_path", "set_tag", "trace_dump", "SHRINK_DEFAULT", "SHRINK_ABORT", "REGISTER_AUTO", "REGISTER_BUFFER",
    "REGISTER_WINDOW", "REGISTER_OWN", "mem_free", "dtype_of", "dtype_from_torch", "dtype_from_typestr",
    "dtype_from_dlpack", "DTYPES", "OPS", "call_path", "__version__",
]


def _out_int(name, *args):
    value = ctypes.c_int(-1)
    check(getattr(_c, name)(*args, ctypes.byref(value)))
    return value.value


def nccl_version():
    """The loaded NCCL's version as (major, minor, patch)."""
    code = _out_int("hidet_nccl_nccl_version")
    return code // 10000, code // 100 % 100, code % 100


def nccl_path():
    """Where NCCL was loaded from (the same NCCL torch loaded, when torch is in the process)."""
    path = ctypes.c_char_p()
    call("hidet_nccl_library_path", ctypes.byref(path))
    return os.fsdecode(path.value)


def call_path():
    """How the collectives reach the C library: "extension" (the package's compiled module
    hidet_nccl/_calls, CPython 3.10 and later) or "ctypes" (where it is not there; why:
    hidet_nccl._lib.extension_missing). The same calls and checks either way; the extension
    costs a fraction of ctypes' time per call."""
    return _calls.path


def dtype_of(array):
    """hidet's name of an array's data type ("bfloat16", "complex64", ...)."""
    return NAMES[_array(array, 0, "array")[2]]


def init():
    """A communicator over every rank of the job, from the environment: hidet-nccl-run,
    torchrun (MASTER_ADDR/MASTER_PORT), Slurm with HIDET_NCCL_RENDEZVOUS_DIR, a PMIx launcher."""
    return Communicator(_out_int("hidet_nccl_init"))


def init_mpi(comm=None):
    """A communicator over an MPI communicator (an mpi4py one; None: MPI_COMM_WORLD, with MPI
    initialized by the library if nobody did). Loads libhidet_nccl_mpi.so: call it before any
    other function of this package."""
    load(mpi=True)
    if comm is None:
        return Communicator(_out_int("hidet_nccl_mpi_init"))
    from mpi4py import MPI
    handle = MPI._handleof(comm)
    return Communicator(_out_int("hidet_nccl_mpi_comm_init", ctypes.c_void_p(handle), None))


def adopt(nccl_comm):
    """Borrows an NCCL communicator made elsewhere (an ncclComm_t as an int); the library never
    destroys it."""
    return Communicator(_out_int("hidet_nccl_comm_adopt", _check.pointer("nccl_comm", nccl_comm)))


def finalize():
    """Destroys every owned communicator and drops the borrowed ones."""
    call("hidet_nccl_finalize")


def mem_free(ptr):
    """Frees memory from Communicator.mem_alloc (an int address)."""
    call("hidet_nccl_mem_free", _check.pointer("ptr", ptr))


def set_tag(tag):
    """The calling thread's tag (a str of at most 47 bytes in UTF-8; None: none), recorded by
    the flight recorder with each of its later collectives."""
    call("hidet_nccl_set_tag", None if tag is None else _check.text("tag", tag))


def trace_dump(directory=None):
    """Dumps every communicator's flight recorder into directory (a str, bytes or os.PathLike;
    None: $HIDET_NCCL_TRACE_DIR); returns the file written. `hidet-nccl-trace DIR` reads the
    ranks' dumps."""
    path = ctypes.create_string_buffer(4352)
    call("hidet_nccl_trace_dump", None if directory is None else _check.path("directory", directory), path,
         len(path))
    return os.fsdecode(path.value)


@contextlib.contextmanager
def group():
    """Collectives (sends and receives of a halo exchange, ...) launched together."""
    check(_calls.hidet_nccl_group_start())
    try:
        yield
    finally:
        check(_calls.hidet_nccl_group_end())


def _op_code(op):
    """An op argument: a name of OPS, an Op, or a hidet_nccl_op_t value (an int, checked by the
    C library; a float is refused, never truncated into another op)."""
    if type(op) is str and op in OPS:  # nearly every call
        return OPS[op]
    if isinstance(op, str):
        if op not in OPS:
            raise ValueError("hidet_nccl: op %r is not one of %s" % (op, ", ".join(OPS)))
        return OPS[op]
    if isinstance(op, Op):
        if op.code is None:
            raise ValueError("hidet_nccl: op is a scaled sum of %s that was destroyed" % op.dtype)
        return op.code
    return _check.c_int("op", op)


def _default_stream(stream):
    """The stream a call that takes no array means when none is given: the one collectives on
    torch tensors default to (torch's current stream) when the program uses torch, else CUDA's
    legacy default stream 0. torch is looked for, never imported (importing it takes seconds)."""
    if stream is not None:
        return _arrays.stream_handle(stream)
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return _check.pointer("torch's current stream", _arrays.torch_stream(torch.cuda.current_device()))
    return 0


class Op:
    """A scaled sum (Communicator.premul_sum); use it as `op` of all_reduce, reduce and
    reduce_scatter of its communicator and dtype; destroy() (or a with-block) frees it."""

    def __init__(self, comm, code, dtype):
        self.comm, self.code, self.dtype = comm, code, dtype

    def destroy(self):
        if self.code is not None:
            call("hidet_nccl_op_destroy", self.comm.id, self.code)
            self.code = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()


class Communicator:
    """One communicator id of the C library's registry, with its collectives. Buffers are torch
    tensors or arrays with __cuda_array_interface__ or DLPack, contiguous, on the communicator's
    GPU; the dtype is the array's; the stream is `stream` or the array framework's current one."""

    def __init__(self, comm_id):
        self.id = _check.c_int("comm_id", comm_id)

    def __repr__(self):
        return "<hidet_nccl.Communicator id %d>" % self.id

    @property
    def rank(self):
        return _out_int("hidet_nccl_comm_rank", self.id)

    @property
    def size(self):
        status, size = _calls.comm_size(self.id)  # asked at each all_gather, ...
        if status:
            check(status)
        return size

    @property
    def device(self):
        return _out_int("hidet_nccl_comm_device", self.id)

    @property
    def owned(self):
        return bool(_out_int("hidet_nccl_comm_is_owned", self.id))

    def split(self, color, key=0):
        """ncclCommSplit: the ranks of the same color, ordered by key; color None: no part."""
        color = -1 if color is None else _check.c_int("color", color)  # HIDET_NCCL_SPLIT_NOCOLOR
        return Communicator(_out_int("hidet_nccl_comm_split", self.id, color, _check.c_int("key", key)))

    def shrink(self, exclude=(), flags=SHRINK_DEFAULT):
        """ncclCommShrink: a new communicator without the ranks in exclude (they do not call);
        flags SHRINK_ABORT on a communicator that failed. This one stays: destroy it."""
        ranks = [_check.c_int("exclude[%d]" % i, r) for i, r in enumerate(exclude)]
        array = (ctypes.c_int * max(len(ranks), 1))(*ranks)
        return Communicator(_out_int("hidet_nccl_comm_shrink", self.id, len(ranks), array,
                                     _check.c_int("flags", flags)))

    def revoke(self):
        """ncclCommRevoke: stops this rank's unfinished work; the communicator is then failed."""
        call("hidet_nccl_comm_revoke", self.id)

    def recover(self, timeout_s=0.0):
        """After this communicator failed (a peer died): the survivors agree on who is left
        through its bootstrap and go on as a new communicator (shrunk, or rebuilt from a fresh
        id). Returns (new Communicator, ranks lost); this one stays failed: destroy it.
        docs/recovery.md."""
        new_id, lost = ctypes.c_int(-1), ctypes.c_int(-1)
        call("hidet_nccl_comm_recover", self.id, _check.real("timeout_s", timeout_s), ctypes.byref(new_id),
             ctypes.byref(lost))
        return Communicator(new_id.value), lost.value

    def heal(self, timeout_s=0.0):
        """The job whole again: where recover() would be called (this communicator failed), or on
        a healthy one that recovery left smaller, the members still alive and the ranks that
        hidet-nccl-run --max-restarts started again (their init() is their side) go on as one
        communicator, ranked in job order. Returns (new Communicator, ranks taken in); the new
        ranks are joined() of it, and their state is the program's to send them. This one stays
        failed: destroy it, unless nothing changed (nobody lost, nobody taken in, healthy): then
        this same object is returned. docs/recovery.md, "Healing"."""
        new_id, joined = ctypes.c_int(-1), ctypes.c_int(-1)
        call("hidet_nccl_comm_heal", self.id, _check.real("timeout_s", timeout_s), ctypes.byref(new_id),
             ctypes.byref(joined))
        return (self if new_id.value == self.id else Communicator(new_id.value)), joined.value

    def joined(self):
        """The ranks of this communicator that are new: taken in by the heal() that made it, or by
        the init() of a restarted rank (the same list on every rank; [] for any other
        communicator)."""
        size = self.size
        flags, count = (ctypes.c_int * max(size, 1))(), ctypes.c_int(-1)
        call("hidet_nccl_comm_joined", self.id, flags, ctypes.byref(count))
        return [r for r in range(size) if flags[r]]

    def destroy(self):
        call("hidet_nccl_comm_destroy", self.id)

    def mem_alloc(self, nbytes):
        """ncclMemAlloc on this communicator's GPU: the device address (an int); free it with
        hidet_nccl.mem_free. Wrap it for torch or CuPy with their from-pointer helpers."""
        ptr = ctypes.c_void_p()
        call("hidet_nccl_mem_alloc", self.id, _check.size("nbytes", nbytes), ctypes.byref(ptr))
        return ptr.value

    def register(self, ptr, nbytes, flags=REGISTER_AUTO):
        """Registers [ptr, ptr + nbytes) (REGISTER_AUTO, _WINDOW and _OWN: collective, library
        memory); returns the handle for deregister."""
        return _out_int("hidet_nccl_register", self.id, _check.pointer("ptr", ptr), _check.size("nbytes", nbytes),
                        _check.c_int("flags", flags))

    def deregister(self, handle):
        call("hidet_nccl_deregister", self.id, _check.c_int("handle", handle))

    def abort(self):
        call("hidet_nccl_comm_abort", self.id)

    def check(self):
        """Raises if NCCL reported an asynchronous error on this communicator."""
        call("hidet_nccl_comm_check", self.id)

    def wait(self, stream=None, timeout_s=0.0):
        """Waits from the host for the work on `stream` (None: the stream collectives default to:
        torch's current stream when torch is in use, else 0), up to timeout_s (0: $HIDET_NCCL_TIMEOUT)."""
        check(_c.hidet_nccl_comm_wait(self.id, _default_stream(stream), _check.real("timeout_s", timeout_s)))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()

    # ------------------------------------------------------------ collectives
    # Each buffer is read once per call by _arrays.array: (pointer, count, dtype code, stream,
    # hold); the first buffer's stream (stream= as given, else its framework's) is the call's.
    # `hold` and `out_hold` keep what the C call reads alive until it returns (a DLPack
    # capsule). The C functions are _calls' (the extension's, else ctypes'), each a plain
    # attribute; a status that is not success raises (check). Every argument is checked as
    # before, and the extension checks each again as it converts it.
    # A torch tensor's call is first offered whole to the extension (_calls.torch_NAME, calls.c:
    # the tensors read there as _arrays.array reads them, the method's checks, the C call): its
    # status, or -1 where it declines (not a torch tensor of a class seen, anything unusual;
    # through ctypes always), and then the general path below it, which says why it refuses.

    def all_reduce(self, tensor, out=None, op="sum", stream=None):
        """out = op over ranks of tensor (out None: in place)."""
        status = _calls.torch_all_reduce(self.id, tensor, out, op, stream)
        if status < 0:
            ptr, count, code, s, hold = _array(tensor, stream, "tensor")
            out_ptr, out_hold = (ptr, None) if out is None else _same(out, s, count, code, "out")
            status = _calls.hidet_nccl_all_reduce(self.id, ptr, out_ptr, count, code, _op_code(op), s)
        if status:
            check(status)

    def all_reduce_route(self, tensor, out=None, op="sum"):
        """How all_reduce(tensor, out, op) would run on this rank, in words: "own one-shot",
        "own two-shot", "nccl plain", "nccl buffer" or "nccl window", then ": " and why when the
        tuning table named own kernels that cannot run it. Checks the arguments as all_reduce
        does; queues nothing, touches no GPU."""
        ptr, count, code, s, hold = _array(tensor, 0, "tensor")
        out_ptr, out_hold = (ptr, None) if out is None else _same(out, 0, count, code, "out")
        route = ctypes.create_string_buffer(512)
        check(_c.hidet_nccl_all_reduce_route(self.id, ptr, out_ptr, count, code, _op_code(op), route, len(route)))
        return route.value.decode("utf-8", "replace")

    def broadcast(self, tensor, root=0, out=None, stream=None):
        """out on every rank = tensor of root (out None: in place)."""
        status = _calls.torch_broadcast(self.id, tensor, root, out, stream)
        if status < 0:
            ptr, count, code, s, hold = _array(tensor, stream, "tensor")
            out_ptr, out_hold = (ptr, None) if out is None else _same(out, s, count, code, "out")
            status = _calls.hidet_nccl_broadcast(self.id, ptr, out_ptr, count, code, _check.c_int("root", root), s)
        if status:
            check(status)

    def reduce(self, tensor, root=0, out=None, op="sum", stream=None):
        """out on root = op over ranks of tensor (out None: in place; unused elsewhere)."""
        status = _calls.torch_reduce(self.id, tensor, root, out, op, stream)
        if status < 0:
            ptr, count, code, s, hold = _array(tensor, stream, "tensor")
            out_ptr, out_hold = (ptr, None) if out is None else _same(out, s, count, code, "out")
            status = _calls.hidet_nccl_reduce(self.id, ptr, out_ptr, count, code, _op_code(op),
                                              _check.c_int("root", root), s)
        if status:
            check(status)

    def all_gather(self, tensor, out, stream=None):
        """out (size times tensor's elements) = every rank's tensor, in rank order."""
        status = _calls.torch_all_gather(self.id, tensor, out, stream)
        if status < 0:
            ptr, count, code, s, hold = _array(tensor, stream, "tensor")
            out_ptr, out_hold = self._blocks(out, s, count, code, "out")
            status = _calls.hidet_nccl_all_gather(self.id, ptr, out_ptr, count, code, s)
        if status:
            check(status)

    def reduce_scatter(self, tensor, out, op="sum", stream=None):
        """out on rank r = op over ranks of block r of tensor (size times out's elements)."""
        status = _calls.torch_reduce_scatter(self.id, tensor, out, op, stream)
        if status < 0:
            out_ptr, count, code, s, out_hold = _array(out, stream, "out")
            ptr, hold = self._blocks(tensor, s, count, code, "tensor")
            status = _calls.hidet_nccl_reduce_scatter(self.id, ptr, out_ptr, count, code, _op_code(op), s)
        if status:
            check(status)

    def all_to_all(self, tensor, out, stream=None):
        """Block j of tensor to rank j, landing as block r (the sender) of out."""
        status = _calls.torch_all_to_all(self.id, tensor, out, stream)
        if status < 0:
            ptr, count, code, s, hold = _array(tensor, stream, "tensor")
            out_ptr, out_hold = _same(out, s, count, code, "out")
            size = self.size
            if count % size:
                raise ValueError("hidet_nccl: all_to_all of %d elements over %d ranks: not whole blocks"
                                 % (count, size))
            status = _calls.hidet_nccl_all_to_all(self.id, ptr, out_ptr, count // size, code, s)
        if status:
            check(status)

    def gather(self, tensor, out=None, root=0, stream=None):
        """out on root (size times tensor's elements) = every rank's tensor, in rank order."""
        status = _calls.torch_gather(self.id, tensor, out, root, stream)
        if status < 0:
            ptr, count, code, s, hold = _array(tensor, stream, "tensor")
            out_ptr, out_hold = (None, None) if out is None else self._blocks(out, s, count, code, "out")
            status = _calls.hidet_nccl_gather(self.id, ptr, out_ptr, count, code, _check.c_int("root", root), s)
        if status:
            check(status)

    def scatter(self, tensor, out, root=0, stream=None):
        """out on rank r = block r of root's tensor (size times out's elements; None elsewhere)."""
        status = _calls.torch_scatter(self.id, tensor, out, root, stream)
        if status < 0:
            out_ptr, count, code, s, out_hold = _array(out, stream, "out")
            ptr, hold = (None, None) if tensor is None else self._blocks(tensor, s, count, code, "tensor")
            status = _calls.hidet_nccl_scatter(self.id, ptr, out_ptr, count, code, _check.c_int("root", root), s)
        if status:
            check(status)

    def send(self, tensor, peer, stream=None):
        status = _calls.torch_send(self.id, tensor, peer, stream)
        if status < 0:
            ptr, count, code, s, hold = _array(tensor, stream, "tensor")
            status = _calls.hidet_nccl_send(self.id, ptr, count, code, _check.c_int("peer", peer), s)
        if status:
            check(status)

    def recv(self, tensor, peer, stream=None):
        status = _calls.torch_recv(self.id, tensor, peer, stream)
        if status < 0:
            ptr, count, code, s, hold = _array(tensor, stream, "tensor")
            status = _calls.hidet_nccl_recv(self.id, ptr, count, code, _check.c_int("peer", peer), s)
        if status:
            check(status)

    def barrier(self, stream=None):
        """Stream-ordered: work queued after it starts once every rank has reached it."""
        status = _calls.hidet_nccl_barrier(self.id, _default_stream(stream))
        if status:
            check(status)

    def premul_sum(self, dtype, scalar):
        """A scaled sum for `dtype` (a hidet name, or an array whose dtype to take): scalar is a
        number (read now; refused where the dtype cannot hold it) or a one-element device array
        of the dtype (of its real part's type for complex; read when each collective runs)."""
        name = dtype if isinstance(dtype, str) else NAMES[_array(dtype, 0, "dtype")[2]]
        if name not in DTYPES:
            raise ValueError("hidet_nccl: dtype %r is not one of %s" % (name, ", ".join(DTYPES)))
        code = ctypes.c_int(-1)
        if isinstance(scalar, (int, float)):
            value = _check.scalar(name, scalar)
            call("hidet_nccl_op_premul_sum", self.id, DTYPES[name], ctypes.byref(value), 0, ctypes.byref(code))
        else:
            ptr, count, scalar_code, _, hold = _array(scalar, 0, "scalar")
            real = {"complex64": "float32", "complex128": "float64", "tfloat32": "float32"}.get(name, name)
            if count != 1 or NAMES[scalar_code] != real:
                raise ValueError("hidet_nccl: the scalar of a %s scaled sum is one %s, not %d %s"
                                 % (name, real, count, NAMES[scalar_code]))
            call("hidet_nccl_op_premul_sum", self.id, DTYPES[name], ptr, 1, ctypes.byref(code))
        return Op(self, code.value, name)

    # ------------------------------------------------------------ checks of the buffers' sizes

    def _blocks(self, big, stream, count, code, name):
        """(pointer, hold) of array `big`, which must hold size blocks of count elements of
        dtype code. The size is asked of the C library each time (an id's communicator can
        change after finalize)."""
        ptr, n, c, _, hold = _array(big, stream, name)
        size = self.size
        if n != count * size or c != code:
            raise ValueError("hidet_nccl: %s holds %d %s, expected %d x %d %s (the number of ranks times the block)"
                             % (name, n, NAMES[c], size, count, NAMES[code]))
        return ptr, hold


def _same(out, stream, count, code, name):
    """(pointer, hold) of array `out`, which must hold count elements of dtype code."""
    ptr, n, c, _, hold = _array(out, stream, name)
    if n != count or c != code:
        raise ValueError("hidet_nccl: %s holds %d %s, the input %d %s" % (name, n, NAMES[c], count, NAMES[code]))
    return ptr, hold


# The C library's dtype and op tables, checked against this package's at first load.
def _check_tables():
    lib = load()
    for name, code in DTYPES.items():
        got = ctypes.c_int(-1)
        if lib.hidet_nccl_dtype_from_name(name.encode(), ctypes.byref(got)) != 0 or got.value != code:
            raise HidetNcclError(3, "hidet_nccl: the C library's dtype %s is %d, this package's %d" %
                                 (name, got.value, code))
