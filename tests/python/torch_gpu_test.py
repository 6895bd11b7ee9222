"""GPU test of the Python package with torch, one process per rank: under hidet-nccl-run (or
fake nodes sharing a GPU: NCCL_HOSTID per rank) and under torchrun. Every torch dtype through
all_reduce (sum where the dtype sums, else max), broadcast, all_gather, reduce_scatter and a
send/recv ring, exact; a scaled sum; the same NCCL as torch's in one process.
    hidet-nccl-run -n N python3 torch_gpu_test.py      torchrun --nproc-per-node N torch_gpu_test.py
    mpirun -np N python3 torch_gpu_test.py mpi         (init_mpi: libhidet_nccl_mpi.so over MPI_COMM_WORLD)
    hidet-nccl-run -n N python3 torch_gpu_test.py ctypes     (the ctypes path forced; with mpi too)
The collectives go through the package's extension module (hidet_nccl/_calls.abi3.so, beside
the package in the GPU bundle and a wheel): a check fails when it is not there or not used,
unless "ctypes" is given; and a torch tensor's call is done whole in it (the fused path,
calls.c's torch_ functions): a check fails when no call took it, or when what it reads of a
tensor is not what the general path reads. Prints "<rank>: N checks, N wrong (..., calls
through PATH, fused path: N calls made, N declined)" and exits non-zero on any wrong result."""
import os
import sys

if os.environ.get("FAKE_NODES_FROM_LOCAL_RANK"):  # torchrun with all ranks on one GPU: one "host" each
    os.environ["NCCL_HOSTID"] = "fakenode" + os.environ.get("LOCAL_RANK", "0")
    os.environ["CUDA_VISIBLE_DEVICES"] = "0"

import torch  # noqa: E402

import hidet_nccl  # noqa: E402

want_path = "ctypes" if "ctypes" in sys.argv[1:] else "extension"
if want_path == "ctypes":
    hidet_nccl._lib.calls.path = "ctypes"  # what the first collective binds (the library loaded by then)
comm = hidet_nccl.init_mpi() if "mpi" in sys.argv[1:] else hidet_nccl.init()
rank, n = comm.rank, comm.size
torch.cuda.set_device(comm.device)
dev = torch.device("cuda", comm.device)
checks = wrong = 0


def check(ok, what):
    global checks, wrong
    checks += 1
    if not ok:
        wrong += 1
        print("%d: WRONG %s" % (rank, what), file=sys.stderr)


check(hidet_nccl.call_path() == want_path, "the collectives call through %s, not %s (%s)" % (
    hidet_nccl.call_path(), want_path, hidet_nccl._lib.extension_missing or "the extension is there"))


def values(dtype, r, count):
    """Small integers that every dtype holds exactly (bool: alternating)."""
    base = torch.arange(count, device=dev) % 3 + r + 1
    if dtype == torch.bool:
        return ((torch.arange(count, device=dev) + r) % 2).to(torch.bool)
    return base.to(dtype)


def raw(t):
    """The bytes of t: compared byte for byte (torch has no equality for every dtype)."""
    return t.contiguous().view(torch.uint8)


DTYPES = [torch.bool, torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64, torch.float16, torch.bfloat16,
          torch.float32, torch.float64, torch.complex64, torch.complex128]
for name in ("uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2"):
    if hasattr(torch, name):
        DTYPES.append(getattr(torch, name))

SUMS = {torch.int8, torch.uint8, torch.int32, torch.int64, torch.float16, torch.bfloat16, torch.float32,
        torch.float64, torch.complex64, torch.complex128}
count = 1001
for dtype in DTYPES:
    label = str(dtype)
    movable = dtype not in (getattr(torch, "float8_e4m3fn", None), getattr(torch, "float8_e5m2", None))
    mine = values(dtype, rank, count) if movable else values(torch.float32, rank, count).to(dtype)
    as_int = raw
    # all_reduce: sum where the dtype sums (exact: small integers), else max (bool: or)
    if dtype in SUMS:
        t = mine.clone()
        comm.all_reduce(t)
        expect = sum(values(dtype, r, count).to(torch.complex128 if dtype.is_complex else torch.float64)
                     for r in range(n))
        got = t.to(torch.complex128 if dtype.is_complex else torch.float64)
        check(torch.equal(got, expect), "all_reduce sum " + label)
    elif dtype in (torch.bool,):
        t = mine.clone()
        comm.all_reduce(t, op="max")
        expect = values(dtype, 0, count)
        for r in range(1, n):
            expect = expect | values(dtype, r, count)
        check(torch.equal(t, expect), "all_reduce max " + label)
    # broadcast from the last rank, byte for byte
    t = mine.clone()
    comm.broadcast(t, root=n - 1)
    src = values(dtype, n - 1, count) if movable else values(torch.float32, n - 1, count).to(dtype)
    check(torch.equal(as_int(t), as_int(src)), "broadcast " + label)
    # all_gather
    out = torch.empty(n * count, dtype=dtype, device=dev)
    comm.all_gather(mine, out=out)
    ok = all(torch.equal(as_int(out[r * count:(r + 1) * count]),
                         as_int(values(dtype, r, count) if movable else values(torch.float32, r, count).to(dtype)))
             for r in range(n))
    check(ok, "all_gather " + label)
    # a ring of send/recv
    t = torch.empty(count, dtype=dtype, device=dev)
    with hidet_nccl.group():
        comm.send(mine, peer=(rank + 1) % n)
        comm.recv(t, peer=(rank - 1) % n)
    prev = (rank - 1) % n
    check(torch.equal(as_int(t), as_int(values(dtype, prev, count) if movable else
                                        values(torch.float32, prev, count).to(dtype))), "send/recv " + label)

# reduce_scatter of float32, and a scaled sum (0.5) through all_reduce
big = torch.cat([values(torch.float32, rank, count) for _ in range(n)])
part = torch.empty(count, dtype=torch.float32, device=dev)
comm.reduce_scatter(big, out=part)
check(torch.equal(part, sum(values(torch.float32, r, count) for r in range(n))), "reduce_scatter float32")
with comm.premul_sum("float32", 0.5) as half:
    t = values(torch.float32, rank, count) * 2
    comm.all_reduce(t, op=half)
    check(torch.equal(t, sum(values(torch.float32, r, count) for r in range(n))), "scaled sum")


# The other array paths on a GPU: an object with only __dlpack__ (every dtype DLPack names,
# bfloat16 included), and one with only __cuda_array_interface__ (which has no bfloat16).
class OnlyDLPack:
    def __init__(self, t):
        self.t = t

    def __dlpack__(self, stream=None):
        return self.t.__dlpack__()

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


class OnlyCAI:
    def __init__(self, t):
        self.t = t
        self.__cuda_array_interface__ = t.__cuda_array_interface__


for dtype, wrap in ((torch.float32, OnlyDLPack), (torch.bfloat16, OnlyDLPack), (torch.int64, OnlyDLPack),
                    (torch.float32, OnlyCAI), (torch.float16, OnlyCAI)):
    t = values(dtype, rank, count)
    torch.cuda.synchronize()  # the wrappers name no stream: the default one
    comm.all_reduce(wrap(t))
    torch.cuda.synchronize()
    expect = sum(values(dtype, r, count).to(torch.float64) for r in range(n))
    check(torch.equal(t.to(torch.float64), expect), "all_reduce %s through %s" % (dtype, wrap.__name__))
comm.barrier()
torch.cuda.synchronize()


# What reaches the C library from real torch tensors: torch's pointer and count, the dtype's
# code, torch's current stream of the tensor's device (a side stream too), for a tensor, a view
# at an offset and an nn.Parameter; and bad tensors refused, each time.
class Spy:
    """Stands in for hidet_nccl._calls (the functions the collectives call, the extension's or
    ctypes'): records each call's arguments and makes it; with `decline`, the fused torch_
    functions decline (-1), as through ctypes: the general path's C call is then recorded."""

    def __init__(self, c):
        self.c, self.seen, self.decline = c, [], False

    def __getattr__(self, name):
        fn = getattr(self.c, name)

        def spy(*args):
            self.seen.append((name, args))
            return -1 if self.decline and name in hidet_nccl._lib.TORCH_CALLS else fn(*args)
        return spy


# The collectives so far went through the path asked for: each function is that path's own; on
# the extension's, the torch tensors' calls were done whole there (the fused path).
ext = hidet_nccl._lib.extension
source = ext if want_path == "extension" else hidet_nccl._lib.load()
check(source is not None and all(getattr(hidet_nccl._calls, name) is getattr(source, name)
                                 for name in hidet_nccl._lib.CALLS), "every collective through " + want_path)
fused = want_path == "extension" and ext is not None
if fused:
    check(all(getattr(hidet_nccl._calls, name) is getattr(ext, name) for name in hidet_nccl._lib.TORCH_CALLS),
          "the torch tensors' calls through the extension's torch_ functions")
    check(ext.torch_counts()[0] > 0, "the fused path was never taken for torch tensors (made, declined: %s)"
          % (ext.torch_counts(),))
spy = hidet_nccl._calls = Spy(hidet_nccl._calls)
try:
    base = torch.zeros(64, device=dev)
    side = torch.cuda.Stream(device=dev)
    for label, t in (("tensor", base), ("view at offset 8", base[8:40]), ("nn.Parameter", torch.nn.Parameter(base))):
        comm.all_reduce(t)  # a class seen the first time is taken in by the general path
        for stream in (None, side):
            where = "a side stream" if stream else "the current stream"
            with torch.cuda.stream(stream):  # None: the stream as it is
                expect = (t.data_ptr(), t.data_ptr(), t.numel(), hidet_nccl.DTYPES["float32"], 0,
                          torch.cuda.current_stream(dev).cuda_stream)
                spy.seen.clear()
                spy.decline = True  # the general path
                comm.all_reduce(t)
                general = [(name, args[1:]) for name, args in spy.seen if name not in hidet_nccl._lib.TORCH_CALLS]
                spy.seen.clear()
                spy.decline = False  # as it is: fused on the extension's path
                comm.all_reduce(t)
                seen = list(spy.seen)
                read = ext.torch_read(t, None) if fused else None
            check(general == [("hidet_nccl_all_reduce", expect)],
                  "%s on %s: %s, expected %s" % (label, where, general, expect))
            if fused:
                check(seen == [("torch_all_reduce", (comm.id, t, None, "sum", None))],
                      "%s on %s, fused: %s" % (label, where, seen))
                check(read == (expect[0],) + expect[2:4] + expect[5:],
                      "%s on %s, what the fused path reads: %s, expected %s" % (label, where, read, expect))
    torch.cuda.synchronize()
    for _ in range(2):
        for label, t, error in (("a CPU tensor", torch.zeros(4), ValueError),
                                ("a transposed tensor", base.view(8, 8).t(), ValueError),
                                ("complex32", torch.empty(4, dtype=torch.complex32, device=dev), TypeError)):
            try:
                comm.all_reduce(t)
                check(False, "all_reduce of %s: not refused" % label)
            except error:
                check(True, label)
finally:
    hidet_nccl._calls = spy.c
raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
stream_path = ("torch._C._cuda_getCurrentRawStream" if hidet_nccl._arrays._torch_stream is raw else
               "torch.cuda.current_stream (the raw call is %s)" % ("absent" if raw is None else "not used"))

# The same NCCL as torch's, when torch has loaded one (torch.cuda.nccl is in libtorch_cuda).
maps = open("/proc/self/maps").read()
ncc = sorted({line.split()[-1] for line in maps.splitlines() if "libnccl" in line.split()[-1]})
ours = hidet_nccl.nccl_path().split(" (")[0]  # "<path> (already loaded)" when found in the process
check(len(ncc) == 1 and os.path.realpath(ncc[0]) == os.path.realpath(ours),
      "one NCCL in the process: %s, hidet_nccl's %s" % (ncc, ours))
made, declined = ext.torch_counts() if ext is not None else (0, 0)
print("%d: %d checks, %d wrong (NCCL %s from %s, %d ranks; torch's stream through %s; calls through %s, Python %s; "
      "fused path: %d calls made, %d declined)"
      % (rank, checks, wrong, hidet_nccl.nccl_version(), hidet_nccl.nccl_path(), n, stream_path,
         hidet_nccl.call_path(), sys.version.split()[0], made, declined))
hidet_nccl.finalize()
sys.exit(1 if wrong else 0)
