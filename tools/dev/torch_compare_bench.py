"""all_reduce through the hidet_nccl Python package against torch.distributed (backend nccl) in the
same processes, on the same tensors and the same NCCL (torch's, which the package loads):
    hidet-nccl-run -n 2 python3 torch_compare_bench.py [ROUNDS]
8 B (2 float32): time per call of a loop of back-to-back calls, host to host (what a small
all_reduce costs a Python program). 64 MiB float32: bus bandwidth (2 (n-1)/n x bytes / time).
The two are timed in alternating rounds (ROUNDS, default 7) and the medians compared; every
round's result is checked exactly. Prints one line per size and "ratio" lines; exits non-zero
on a wrong result."""
import os
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist

import hidet_nccl

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
comm = hidet_nccl.init()
rank, n = comm.rank, comm.size
torch.cuda.set_device(comm.device)
dev = torch.device("cuda", comm.device)
# torch's rendezvous: a file named after the launcher's job key (the same on every rank)
store = os.path.join(tempfile.gettempdir(), "torch_store." + os.environ.get("HIDET_NCCL_JOB_KEY", "bench"))
dist.init_process_group("nccl", init_method="file://" + store, rank=rank, world_size=n, device_id=dev)
wrong = 0


def timed(call, t, iters):
    torch.cuda.synchronize()
    comm.barrier()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(iters):
        call(t)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / iters


results = {}
for label, count, iters in (("8 B", 2, 2000), ("64 MiB", 16 << 20, 40)):
    t = torch.empty(count, dtype=torch.float32, device=dev)
    libs = {"hidet_nccl": lambda x: comm.all_reduce(x), "torch.distributed": lambda x: dist.all_reduce(x)}
    times = {name: [] for name in libs}
    for name, call in libs.items():  # warm-up of each (NCCL connects lazily)
        t.fill_(1.0)
        timed(call, t, 5)
    for r in range(rounds):
        for name, call in (libs.items() if r % 2 == 0 else reversed(list(libs.items()))):
            # one call checked exactly (each rank's rank + 1), then timed on zeros: repeated in-place
            # sums of anything else grow out of float32's exact range
            t.fill_(float(rank + 1))
            call(t)
            torch.cuda.synchronize()
            if not torch.all(t == n * (n + 1) / 2):
                wrong += 1
                print("%d: WRONG %s %s round %d" % (rank, name, label, r), file=sys.stderr)
            t.zero_()
            times[name].append(timed(call, t, iters))
    results[label] = {name: statistics.median(v) for name, v in times.items()}
    if rank == 0:
        h, d = results[label]["hidet_nccl"], results[label]["torch.distributed"]
        if count * 4 <= 64:
            print("%s all_reduce float32: hidet_nccl %.2f us, torch.distributed %.2f us per call (median of %d "
                  "rounds x %d calls); torch / hidet_nccl = %.2f x" % (label, h * 1e6, d * 1e6, rounds, iters, d / h))
        else:
            bw = lambda s: 2.0 * (n - 1) / n * count * 4 / s / 1e9  # noqa: E731
            print("%s all_reduce float32: hidet_nccl %.1f GB/s, torch.distributed %.1f GB/s busbw (median of %d "
                  "rounds x %d calls); hidet_nccl / torch = %.3f x" % (label, bw(h), bw(d), rounds, iters, d / h))
if rank == 0:
    print("NCCL %s from %s; %d ranks, torch %s" % (hidet_nccl.nccl_version(), hidet_nccl.nccl_path(), n,
                                                    torch.__version__))
print("%d: %d wrong" % (rank, wrong))
dist.destroy_process_group()
comm.destroy()
sys.exit(1 if wrong else 0)
