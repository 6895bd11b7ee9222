"""all_reduce through the hidet_nccl Python package against torch.distributed (backend nccl) in the
same processes, on the same tensors and the same NCCL (torch's, which the package loads):
    hidet-nccl-run -n 2 python3 torch_compare_bench.py [ROUNDS]
    hidet-nccl-run -n 1 python3 torch_compare_bench.py [ROUNDS]     (issue 37: the package over the C call)
8 B (2 float32): time per call of a loop of back-to-back calls, host to host (what a small
all_reduce costs a Python program): the C call alone (hidet_nccl_all_reduce n times in a loop
in C, the package's extension module's repeat(): no Python per call), the package's
comm.all_reduce(t) as it is ("fused": the call done whole in the extension, calls.c's
torch_all_reduce), through its extension module without that ("extension, unfused":
_arrays.array in Python, then the extension's C function), and with the ctypes path forced, and
torch.distributed.all_reduce(t). At one rank an in-place all_reduce is the identity (NCCL queues
nothing), so the time is all host: the package's "+C" is what it costs over the C call (issue
37's target: under 1 us). 64 MiB float32: bus bandwidth (2 (n-1)/n x bytes / time), the package
(its default path) against torch. The ways are timed in alternating rounds (ROUNDS, default 7)
and the medians compared; every round's result is checked exactly. Prints one line per size and
the ratios, how many calls the fused path made, and how long the run took; exits non-zero on a
wrong result. Without the extension module (a source tree without it), the C and the
extension's rows are left out and it says so. About 40 s on one H200 (mostly torch's and NCCL's
start); 5 rounds to keep it well under a minute."""
import os
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist

import hidet_nccl

started = time.perf_counter()
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
comm = hidet_nccl.init()
rank, n = comm.rank, comm.size
torch.cuda.set_device(comm.device)
dev = torch.device("cuda", comm.device)
# torch's rendezvous: a file named after the launcher's job key (the same on every rank)
store = os.path.join(tempfile.gettempdir(), "torch_store." + os.environ.get("HIDET_NCCL_JOB_KEY", "bench"))
dist.init_process_group("nccl", init_method="file://" + store, rank=rank, world_size=n, device_id=dev)
wrong = 0
ext = hidet_nccl._lib.extension


def timed(loop, t, iters):
    torch.cuda.synchronize()
    comm.barrier()
    torch.cuda.synchronize()
    start = time.perf_counter()
    loop(t, iters)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / iters


def package(path, fused=True):
    """comm.all_reduce(t), iters times, through path ("extension" or "ctypes"; fused: with the
    extension's torch_ functions)."""
    def loop(t, iters):
        hidet_nccl._lib.calls.bind(path, fused)
        for _ in range(iters):
            comm.all_reduce(t)
    return loop


def in_c(t, iters):
    """hidet_nccl_all_reduce iters times from C, with what comm.all_reduce(t) passes it."""
    ptr, count, code, stream, _ = hidet_nccl._arrays.array(t, None, "t")
    hidet_nccl.check(ext.repeat(iters, "hidet_nccl_all_reduce", comm.id, ptr, ptr, count, code, 0, stream))


def torch_dist(t, iters):
    for _ in range(iters):
        dist.all_reduce(t)


results = {}
default = hidet_nccl.call_path()
if ext is None and rank == 0:
    print("no extension module (%s): hidet_nccl through ctypes only" % hidet_nccl._lib.extension_missing)
for label, count, iters in (("8 B", 2, 2000), ("64 MiB", 16 << 20, 40)):
    t = torch.empty(count, dtype=torch.float32, device=dev)
    if count * 4 <= 64 and ext is not None:
        libs = {"C call": in_c, "hidet_nccl fused": package("extension"),
                "hidet_nccl extension, unfused": package("extension", False), "hidet_nccl ctypes": package("ctypes")}
    else:
        libs = {"hidet_nccl " + default: package(default)}
    libs["torch.distributed"] = torch_dist
    times = {name: [] for name in libs}
    for name, loop in libs.items():  # warm-up of each (NCCL connects lazily)
        t.fill_(1.0)
        timed(loop, t, 5)
    for r in range(rounds):
        for name, loop in (libs.items() if r % 2 == 0 else reversed(list(libs.items()))):
            # one call checked exactly (each rank's rank + 1), then timed on zeros: repeated in-place
            # sums of anything else grow out of float32's exact range
            t.fill_(float(rank + 1))
            loop(t, 1)
            torch.cuda.synchronize()
            if not torch.all(t == n * (n + 1) / 2):
                wrong += 1
                print("%d: WRONG %s %s round %d" % (rank, name, label, r), file=sys.stderr)
            t.zero_()
            times[name].append(timed(loop, t, iters))
    hidet_nccl._lib.calls.bind(default)
    results[label] = {name: statistics.median(v) for name, v in times.items()}
    if rank == 0:
        h, d = results[label][[x for x in libs if x.startswith("hidet_nccl")][0]], results[label]["torch.distributed"]
        if count * 4 <= 64:
            c, parts = results[label].get("C call"), []
            for name, v in results[label].items():
                over = c is not None and name.startswith("hidet_nccl")
                parts.append("%s %.2f%s" % (name, v * 1e6, " (+%.2f over the C call)" % ((v - c) * 1e6) if over else ""))
            print("%s all_reduce float32, us per call (median of %d rounds x %d calls): %s" % (
                label, rounds, iters, ", ".join(parts)))
            print("%s all_reduce: torch / hidet_nccl = %.2f x" % (label, d / h))
        else:
            bw = lambda s: 2.0 * (n - 1) / n * count * 4 / s / 1e9  # noqa: E731
            print("%s all_reduce float32: hidet_nccl %.1f GB/s, torch.distributed %.1f GB/s busbw (median of %d "
                  "rounds x %d calls); hidet_nccl / torch = %.3f x" % (label, bw(h), bw(d), rounds, iters, d / h))
if rank == 0:
    print("NCCL %s from %s; %d ranks, torch %s, Python %s; the package calls through %s by default" % (
        hidet_nccl.nccl_version(), hidet_nccl.nccl_path(), n, torch.__version__, sys.version.split()[0], default))
    if ext is not None:
        made, declined = ext.torch_counts()
        print("fused path: %d calls made, %d declined (the first of each tensor class); took %.0f s" % (
            made, declined, time.perf_counter() - started))
        if made == 0:
            wrong += 1
            print("%d: WRONG the fused path was never taken" % rank, file=sys.stderr)
print("%d: %d wrong" % (rank, wrong))
dist.destroy_process_group()
comm.destroy()
sys.exit(1 if wrong else 0)
