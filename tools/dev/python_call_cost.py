"""What the Python package (bindings/python) adds to a collective call, on the host, with the
recording stand-in for NCCL (no GPU, no torch needed): time per call of `comm.all_reduce(x)`
and the other collectives, through the package's extension module and through ctypes, against
the C call itself.

    python3 tools/dev/python_call_cost.py LIBHIDET_NCCL_SO LIBFAKE_NCCL_SO [--calls N] [--rounds R] [--before DIR]
        [--torch] [--extension _calls.abi3.so]

with bindings/python on PYTHONPATH; from Bazel outputs:

    bazel build //:libhidet_nccl.so //tools/support:libfake_nccl.so //bindings/python:hidet_nccl/_calls.abi3.so
    B=$(bazel info bazel-bin)
    PYTHONPATH=bindings/python python3 tools/dev/python_call_cost.py $B/libhidet_nccl.so \
        $B/tools/support/libfake_nccl.so --extension $B/bindings/python/hidet_nccl/_calls.abi3.so

--extension names the package's extension module where it is not beside the package's files
(a source tree: Bazel builds it elsewhere); in the GPU bundle and an install it is there:

    cd gpu_bundle && PYTHONPATH=python python3 python/python_call_cost.py python/hidet_nccl/lib/libhidet_nccl.so.0 \
        bin/libfake_nccl.so --torch --calls 10000

(--calls 10000 there: the default 100000 takes minutes with real torch on a slow host CPU; the
run prints how long it took.)

--before DIR times another copy of the package side by side, in the same process and the same
rounds (DIR holds a hidet_nccl/ folder; e.g. an earlier commit's:
`mkdir -p /tmp/old/hidet_nccl; for f in __init__ _arrays _check _lib; do git show
REV:bindings/python/hidet_nccl/$f.py > /tmp/old/hidet_nccl/$f.py; done`).

NCCL is the recording stand-in (tools/support/fake_nccl.c). Two communicators are adopted per
package: one of 1 rank, on which an in-place all_reduce is the identity and the library queues
nothing (what tools/dev/torch_compare_bench.py times on one GPU: nearly all of it is this
package), and rank 1 of 4, on which every collective reaches the stand-in. Arrays:

  cai    an object with __cuda_array_interface__ (as CuPy's and Numba's arrays; never touched);
  torch* a STAND-IN for a torch tensor, not torch: an instance of a stand-in module's
         torch.Tensor (its class also says it is of module "torch", which is what earlier
         versions of the package looked for) that answers what the package asks of a tensor
         (is_cuda, is_contiguous(), dtype, get_device(), data_ptr(), numel()) with builtin
         calls, as torch's C methods are; torch._C._cuda_getCurrentRawStream(device) gives
         stream 0. Real torch's methods cost more (about 0.1 us more for the six, Debian's
         torch 1.13 on the CPU): this row shows the package's own work. --torch (on a GPU
         machine with torch; NCCL still the stand-in) uses real float32 CUDA tensors instead,
         and adds what torch's calls and its two ways to the current stream cost.

Columns: "C" is the C call alone, made N times in a loop in C (the extension's repeat(): no
Python per call); "ctypes" the hidet_nccl_* function called through ctypes (argtypes set, as
the package sets them) with the arguments the package passes, status checked; "ext" the same
through the extension module; then the package's call, each with "+", its difference from "C"
(what the package costs over the C call: issue 37's target is 1 us on the GPU machine):
"torch* fused" the package as it is (a torch tensor's call done whole in the extension,
calls.c's torch_ functions), "torch* ext" the extension without them (hidet_nccl._lib.calls.bind(
"extension", fused=False): _arrays.array in Python, then the extension's C function),
"torch* ctypes" the ctypes path forced; "cai ext" and "cai ctypes" the same for the
__cuda_array_interface__ object (its call is offered to the fused function first, which
declines it). With --before, the other copy ("torch* before", "cai before") through whatever
path it has. Each value is the best of R (default 9) rounds of N (default 100000) back-to-back
calls, the cases and columns taking turns in each round (the loop's own cost, about 10 ns a
call, is in all but C): the best, not the median, as other work on the machine only ever adds
time."""
import argparse
import ctypes
import importlib.util
import os
import sys
import time
import timeit
import types

parser = argparse.ArgumentParser(description="per-call host cost of the Python package's collectives")
parser.add_argument("so")
parser.add_argument("fake")
parser.add_argument("--calls", type=int, default=100000, help="calls per case and round (default 100000)")
parser.add_argument("--rounds", type=int, default=9, help="rounds, the best kept (default 9)")
parser.add_argument("--before", help="a folder holding another hidet_nccl/ to time side by side")
parser.add_argument("--torch", action="store_true", help="real torch tensors on CUDA device 0 (a GPU machine)")
parser.add_argument("--extension", help="the package's extension module (_calls.abi3.so), when not beside its files")
args = parser.parse_args()
ROUNDS = max(args.rounds, 1)
started = time.perf_counter()
os.environ["HIDET_NCCL_SO"] = os.path.realpath(args.so)
os.environ["HIDET_NCCL_LIBRARY"] = os.path.realpath(args.fake)


# ---- stand-ins
class FakeComm(ctypes.Structure):
    _fields_ = [("nranks", ctypes.c_int), ("rank", ctypes.c_int)]


class CudaArray:
    def __init__(self, ptr, count, typestr="<f4"):
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": (count,), "typestr": typestr,
                                         "strides": None, "version": 3}


class _Dtype:
    """What torch.float32 is to the package: a hashable key whose str is "torch.float32"."""

    def __init__(self, name):
        self.name = name

    def __str__(self):
        return "torch." + self.name


FLOAT32 = _Dtype("float32")


class StandInTensor:
    """A stand-in for a contiguous CUDA torch.Tensor on device 0 (see the module's text)."""

    def __init__(self, ptr, count, dtype=FLOAT32):
        self.is_cuda, self.dtype, self.device = True, dtype, "cuda:0"
        self.data_ptr, self.numel = ptr.__index__, count.__index__  # builtin calls returning ints
        self.is_contiguous, self.get_device = True.__bool__, (0).__index__


if args.torch:
    import torch

    def Tensor(ptr, count):
        """A real float32 CUDA tensor; its address is torch's (what the C calls here cost does not
        depend on it: nothing is read or written)."""
        return torch.empty(count, dtype=torch.float32, device="cuda")
else:
    Tensor = StandInTensor
    Tensor.__module__ = "torch"  # what earlier versions of the package looked at (for --before)
    fake_torch = types.ModuleType("torch")
    fake_torch.Tensor = Tensor  # what it looks at now: isinstance of torch.Tensor
    fake_torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream=[0].__getitem__)  # device 0 -> stream 0
    fake_torch.cuda = types.SimpleNamespace(is_initialized=lambda: True,
                                            current_stream=lambda *a: types.SimpleNamespace(cuda_stream=0))
    sys.modules["torch"] = fake_torch



def import_package(directory, name, extra=()):
    """The hidet_nccl package in directory/hidet_nccl, imported as `name`; its submodules are
    also looked for in the folders `extra`."""
    folder = os.path.join(directory, "hidet_nccl")
    spec = importlib.util.spec_from_file_location(name, os.path.join(folder, "__init__.py"),
                                                  submodule_search_locations=[folder] + list(extra))
    module = sys.modules[name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


if args.extension:
    if os.path.basename(args.extension) != "_calls.abi3.so":
        sys.exit("--extension: the module is hidet_nccl/_calls.abi3.so, not %s" % args.extension)
    home = importlib.util.find_spec("hidet_nccl").submodule_search_locations[0]
    hidet_nccl = import_package(os.path.dirname(home), "hidet_nccl", [os.path.dirname(os.path.realpath(args.extension))])
else:
    import hidet_nccl

packages = [("", hidet_nccl)] + ([("before", import_package(args.before, "hidet_nccl_before"))] if args.before else [])
lib = hidet_nccl._lib.load()
ext = hidet_nccl._lib.extension
if ext is None:
    print("no extension module (%s): the ctypes path alone" % hidet_nccl._lib.extension_missing)
else:
    hidet_nccl._lib.calls.bind("extension")
check = hidet_nccl._lib.check
fake_comms = []  # kept alive: the library holds their addresses


def comms(hn):
    """A 1-rank and a 4-rank (rank 1) communicator of package hn, over fresh stand-ins."""
    one, four = FakeComm(1, 0), FakeComm(4, 1)
    fake_comms.extend((one, four))
    c1, c4 = hn.adopt(ctypes.addressof(one)), hn.adopt(ctypes.addressof(four))
    assert (c1.size, c4.size, c4.rank) == (1, 4, 1)
    return c1, c4


def raw(source, name, *call_args):
    """The C function through source (the ctypes library or the extension), status checked as
    the package checks it."""
    fn = getattr(source, name)

    def loop(n):
        for _ in range(n):
            check(fn(*call_args))
    return loop


def in_c(name, *call_args):
    """The C function alone, n times from C (the extension's repeat)."""
    def loop(n):
        check(ext.repeat(n, name, *call_args))
    return loop


def package(method, *call_args, **kw):
    def loop(n):
        for _ in range(n):
            method(*call_args, **kw)
    return loop


A, B = 0x10000, 0x20000
F32 = hidet_nccl.DTYPES["float32"]


def calls(c1, c4, X):
    """Each case's package call on arrays of class X (CudaArray or Tensor), by label."""
    return {
        "all_reduce 8 B in place, 1 rank (identity)": package(c1.all_reduce, X(A, 2)),
        "all_reduce 8 B in place, 4 ranks": package(c4.all_reduce, X(A, 2)),
        "all_reduce 8 B out of place, op max": package(c4.all_reduce, X(A, 2), out=X(B, 2), op="max"),
        "broadcast root 0, in place": package(c4.broadcast, X(A, 2)),
        "reduce root 0": package(c4.reduce, X(A, 2)),
        "all_gather": package(c4.all_gather, X(A, 2), X(B, 8)),
        "reduce_scatter": package(c4.reduce_scatter, X(B, 8), X(A, 2)),
        "all_to_all": package(c4.all_to_all, X(A, 8), X(B, 8)),
        "send peer 2": package(c4.send, X(A, 2), 2),
    }


def direct(c1, c4, through):
    """What the package passes to C in each case, called directly through `through` (raw with
    a source, or in_c)."""
    return {
        "all_reduce 8 B in place, 1 rank (identity)": through("hidet_nccl_all_reduce", c1.id, A, A, 2, F32, 0, 0),
        "all_reduce 8 B in place, 4 ranks": through("hidet_nccl_all_reduce", c4.id, A, A, 2, F32, 0, 0),
        "all_reduce 8 B out of place, op max": through("hidet_nccl_all_reduce", c4.id, A, B, 2, F32, 2, 0),
        "broadcast root 0, in place": through("hidet_nccl_broadcast", c4.id, A, A, 2, F32, 0, 0),
        "reduce root 0": through("hidet_nccl_reduce", c4.id, A, A, 2, F32, 0, 0, 0),
        "all_gather": through("hidet_nccl_all_gather", c4.id, A, B, 2, F32, 0),
        "reduce_scatter": through("hidet_nccl_reduce_scatter", c4.id, B, A, 2, F32, 0, 0),
        "all_to_all": through("hidet_nccl_all_to_all", c4.id, A, B, 2, F32, 0),
        "send peer 2": through("hidet_nccl_send", c4.id, A, 2, F32, 2, 0),
    }


TORCH = "torch" if args.torch else "torch*"
columns = []  # (heading, {label: loop}, (the path to bind first, fused) or None)
for tag, hn in packages:
    c1, c4 = comms(hn)
    if not columns:
        if ext is not None:
            columns.append(("C", direct(c1, c4, in_c), None))
        columns.append(("ctypes", direct(c1, c4, lambda *a: raw(lib, *a)), None))
        if ext is not None:
            columns.append(("ext", direct(c1, c4, lambda *a: raw(ext, *a)), None))
    for kind, X in ((TORCH, Tensor), ("cai", CudaArray)):
        if tag:
            columns.append(("%s %s" % (kind, tag), calls(c1, c4, X), None))
            continue
        ways = [("ctypes", False)]
        if ext is not None:
            ways[:0] = [("extension", True), ("extension", False)] if X is Tensor else [("extension", True)]
        for path, fused in ways:
            name = path if path == "ctypes" else "fused" if fused and X is Tensor else "ext"
            columns.append(("%s %s" % (kind, name), calls(c1, c4, X), (path, fused)))

best = {}  # (heading, label) -> us per call
for heading, loops, path in columns:
    if path:
        hidet_nccl._lib.calls.bind(*path)
    for loop in loops.values():
        loop(args.calls // 10)  # warm
for _ in range(ROUNDS):
    for label in columns[0][1]:
        for heading, loops, path in columns:
            if path:
                hidet_nccl._lib.calls.bind(*path)
            start = time.perf_counter()
            loops[label](args.calls)
            us = (time.perf_counter() - start) / args.calls * 1e6
            best[heading, label] = min(us, best.get((heading, label), us))
if ext is not None:
    hidet_nccl._lib.calls.bind("extension")
    fused_counts = ext.torch_counts()

print("us per call (best of %d rounds x %d calls), Python %s; NCCL: the recording stand-in"
      % (ROUNDS, args.calls, sys.version.split()[0]))
headings = [h for h, _, _ in columns]
floor = "C" if ext is not None else "ctypes"  # what "+" is over
plain = [h for h in headings if h in ("C", "ctypes", "ext")]
print("%-44s" % "" + "".join("%8s" % h for h in plain) + "".join("%19s" % (h + "     +") for h in headings
                                                                  if h not in plain))
for label in columns[0][1]:
    f = best[floor, label]
    print("%-44s" % label + "".join("%8.3f" % best[h, label] for h in plain) +
          "".join("%12.3f %6.3f" % (best[h, label], best[h, label] - f) for h in headings if h not in plain))
print('"+": over the %s call; the C call is the extension\'s repeat() (n calls in a loop in C)' % floor)
t = Tensor(A, 2)
asked = "t.is_cuda; t.is_contiguous(); t.dtype; t.get_device(); t.data_ptr(); t.numel()"
print("what the package asks of the tensor (%s): %.3f us" % (asked, min(
    timeit.repeat(asked, globals={"t": t}, number=args.calls, repeat=ROUNDS)) / args.calls * 1e6))
if args.torch:
    for how in ("torch._C._cuda_getCurrentRawStream(0)", "torch.cuda.current_stream(0).cuda_stream"):
        if how.startswith("torch.cuda") or hasattr(torch._C, "_cuda_getCurrentRawStream"):
            print("torch's current stream through %s: %.3f us" % (how, min(
                timeit.repeat(how, globals={"torch": torch}, number=args.calls, repeat=ROUNDS)) / args.calls * 1e6))
    print("the package asks for torch's stream through %s; torch %s, CUDA device %s"
          % (getattr(hidet_nccl._arrays._torch_stream, "__name__", "?"), torch.__version__,
             torch.cuda.get_device_name(0)))
else:
    print("torch*: a stand-in for a torch tensor (builtin methods; see the top of this file), not torch")
if ext is not None:
    print("%s fused: %d calls made in the extension, %d declined (the cai calls; the first of a class)"
          % (TORCH, fused_counts[0], fused_counts[1]))
print("took %.0f s (%d rounds x %d calls)" % (time.perf_counter() - started, ROUNDS, args.calls))
