"""examples/cg_heal.c in Python: a distributed conjugate-gradient solve (2-D Poisson, 5-point
stencil on an N x N grid, the rows split across ranks) that survives the death of a rank and
comes back whole; torch tensors on the GPU hold the state and carry every collective.

    hidet-nccl-run -n 3 --max-restarts 2 python3 cg_heal.py [N] [--every K] [--kill-rank R --kill-at I]

N: the grid (default 128). K: a checkpoint every K iterations (default 10). Rank R kills itself
(SIGKILL) at iteration I in its first life (HIDET_NCCL_RESTART_COUNT unset or 0); hidet-nccl-run
starts it again. The four steps, as in the C example:

  1. checkpoint()  every K iterations each rank keeps its state in host memory AND at its buddy,
                   rank + 1 mod n, which holds it in GPU memory (a send right, a receive left);
  2. detect        any call that fails raises HidetNcclError (Communicator.wait's NCCL error or
                   deadline: the collective the dead rank never joins), which ends solve();
  3. heal()        the survivors call Communicator.heal; the restarted rank's hidet_nccl.init() is
                   its side of the same round: one communicator of the whole job, ranks in job order;
  4. catch_up()    Communicator.joined() says who is new; the ranks agree on the last checkpoint they
                   all have; each new rank's buddy sends it its copy; every rank rolls back to it.

Every rank prints the answer (iterations, and a checksum of x as the bits of a float64), equal bit
for bit to an undisturbed run's: every global sum is an all_gather of the ranks' parts added in rank
order, never NCCL's own sum (whose order follows the ring or tree it picked, which a rebuilt
communicator may pick differently), and torch's GPU arithmetic here is run-to-run deterministic.
Before reading a result on the host the program always waits with Communicator.wait (a deadline):
a copy to the host behind a collective that the dead rank never joins would block with none.
"""
import os
import signal
import struct
import sys

import torch

import hidet_nccl

WAIT_S = 60.0   # seconds a collective may take before this rank takes its peer for dead
HEAL_S = 240.0  # seconds for a heal; the round waits up to half of it for the restarted rank
F64 = torch.float64


class CG:
    def __init__(self, comm, n, every):
        self.comm, self.n, self.every = comm, n, every
        self.rank, self.size = comm.rank, comm.size
        self.first_row = [k * n // self.size for k in range(self.size + 1)]
        self.row0, self.rows = self.first_row[self.rank], self.first_row[self.rank + 1] - self.first_row[self.rank]
        self.gpu = torch.device("cuda", comm.device)
        self.left, self.right = (self.rank - 1) % self.size, (self.rank + 1) % self.size
        self.saved = -1               # iteration of this rank's last complete checkpoint; -1: none
        self.mine = [None, None]      # host: its own checkpoints, slot (iteration // every) % 2
        self.held = [torch.empty(self.record(self.left), dtype=F64, device=self.gpu) for _ in range(2)]  # GPU
        index = torch.arange(self.row0 * n, (self.row0 + self.rows) * n, device=self.gpu).reshape(self.rows, n)
        self.b = 1.0 + (index % 5).to(F64)
        self.weights = 1.0 + (index % 7).to(F64)
        self.zeros = torch.zeros(n, dtype=F64, device=self.gpu)

    def record(self, k):
        """Length of rank k's checkpoint: iteration, rr, bb, then x, r and p."""
        return 3 + 3 * (self.first_row[k + 1] - self.first_row[k]) * self.n

    def finish(self):
        self.comm.wait(timeout_s=WAIT_S)

    def gather_one(self, value):
        """Every rank's value (a one-element GPU tensor or a float), in rank order, as floats."""
        mine = value.reshape(1) if torch.is_tensor(value) else torch.tensor([float(value)], dtype=F64, device=self.gpu)
        out = torch.empty(self.size, dtype=F64, device=self.gpu)
        self.comm.all_gather(mine, out=out)
        self.finish()
        return out.tolist()

    def global_sum(self, value):
        total = 0.0
        for part in self.gather_one(value):  # in rank order: the same bits on every rank, in every run
            total += part
        return total

    def start(self):
        """The state at iteration 0: x = 0, r = p = b."""
        self.saved, self.it = -1, 0
        self.x = torch.zeros_like(self.b)
        self.r, self.p = self.b.clone(), self.b.clone()
        self.rr = self.global_sum(torch.sum(self.r * self.r))
        self.bb = self.rr

    def iterate(self):
        edges = torch.stack([self.p[0], self.p[-1]])  # this rank's first and last row
        every = torch.empty(self.size, 2, self.n, dtype=F64, device=self.gpu)
        self.comm.all_gather(edges, out=every)
        self.finish()
        above = every[self.rank - 1, 1] if self.rank > 0 else self.zeros
        below = every[self.rank + 1, 0] if self.rank < self.size - 1 else self.zeros
        p = self.p
        rows = torch.cat([above[None], p, below[None]])
        ap = 4 * p - rows[:-2] - rows[2:]  # ap = A p
        ap[:, 1:] -= p[:, :-1]
        ap[:, :-1] -= p[:, 1:]
        alpha = self.rr / self.global_sum(torch.sum(p * ap))
        self.x += alpha * p
        self.r -= alpha * ap
        rr_new = self.global_sum(torch.sum(self.r * self.r))
        self.p = self.r + (rr_new / self.rr) * p
        self.rr = rr_new
        self.it += 1

    def checkpoint(self):
        """1. CHECKPOINT: kept here (host) and at the buddy rank + 1 (GPU, the slot of its iteration);
        this rank's only once the send and the receive are done."""
        slot = self.it // self.every % 2
        rec = torch.cat([torch.tensor([self.it, self.rr, self.bb], dtype=F64, device=self.gpu),
                         self.x.flatten(), self.r.flatten(), self.p.flatten()])
        self.mine[slot] = rec.cpu()
        if self.size > 1:
            with hidet_nccl.group():
                self.comm.send(rec, peer=self.right)
                self.comm.recv(self.held[slot], peer=self.left)
            self.finish()
        self.saved = self.it

    def solve(self, kill_rank, kill_at, first_life):
        """Iterates to convergence, checkpointing every `every` iterations (again after a rollback,
        so a new rank holds its left neighbour's copy anew). 2. DETECT: a failure raises."""
        while self.it < 10 * self.n and (self.rr / self.bb) ** 0.5 > 1e-10:
            if first_life and self.rank == kill_rank and self.it == kill_at:
                print("cg_heal.py: rank %d: SIGKILL to itself at iteration %d" % (self.rank, self.it), flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
            if self.it % self.every == 0:
                self.checkpoint()
            self.iterate()
        self.checksum = self.global_sum(torch.sum(self.x * self.weights))

    def heal(self, failure):
        """3. HEAL: the survivors and the restarted rank (its init) make one communicator again."""
        print("cg_heal.py: rank %d: iteration %d: %s" % (self.rank, self.it, failure), flush=True)
        old = self.comm
        try:
            new, n_joined = old.heal(HEAL_S)
        except hidet_nccl.HidetNcclError as e:
            sys.exit("cg_heal.py: rank %d: heal: %s" % (self.rank, e))
        if new is not old:
            old.destroy()  # it stays failed until then; its work left on the stream ends with it
        torch.cuda.current_stream(self.gpu).synchronize()
        self.comm = new
        if (new.rank, new.size) != (self.rank, self.size):
            sys.exit("cg_heal.py: rank %d: after the heal this rank is rank %d of %d, not %d of %d: a restarted rank "
                     "did not come within the heal's wait" % (self.rank, new.rank, new.size, self.rank, self.size))
        print("cg_heal.py: rank %d: healed at iteration %d: %d taken in, communicator id %d -> %d"
              % (self.rank, self.it, n_joined, old.id, new.id), flush=True)

    def catch_up(self):
        """4. CATCH UP: back to the newest checkpoint every rank that was there holds (two ranks'
        differ by one at most); the new ranks get theirs from their buddies."""
        joined = self.comm.joined()
        new = self.rank in joined
        saved = self.gather_one(-1 if new else self.saved)
        kept = [saved[k] for k in range(self.size) if k not in joined]
        target = int(min(kept)) if kept else -1
        if any((k + 1) % self.size in joined for k in joined):  # a new rank whose buddy is new too
            target = -1
        if target < 0:
            print("cg_heal.py: rank %d: no checkpoint every rank can have: starting over" % self.rank, flush=True)
            return self.start()
        slot = target // self.every % 2
        if joined:  # each new rank's buddy sends it its copy
            if new:
                copy = torch.empty(self.record(self.rank), dtype=F64, device=self.gpu)
                print("cg_heal.py: rank %d: new (restarted); its checkpoint of iteration %d comes from its buddy "
                      "rank %d" % (self.rank, target, self.right), flush=True)
            with hidet_nccl.group():
                if self.left in joined:
                    self.comm.send(self.held[slot], peer=self.left)
                if new:
                    self.comm.recv(copy, peer=self.right)
            self.finish()
            if new:
                self.mine[slot] = copy.cpu()
        rec = self.mine[slot]
        if rec is None or int(rec[0]) != target:
            sys.exit("cg_heal.py: rank %d: no checkpoint of iteration %d in slot %d" % (self.rank, target, slot))
        m = self.rows * self.n
        self.it, self.rr, self.bb = target, float(rec[1]), float(rec[2])
        body = rec[3:].to(self.gpu).reshape(3, self.rows, self.n)
        self.x, self.r, self.p = body[0].clone(), body[1].clone(), body[2].clone()
        assert body.numel() == 3 * m
        self.saved = target
        print("cg_heal.py: rank %d: back at iteration %d (%s)"
              % (self.rank, target, "its buddy's copy" if new else "its own copy"), flush=True)


def attempt(step, *args):
    """None when step(*args) ran through; the library's failure when it raised one."""
    try:
        step(*args)
        return None
    except hidet_nccl.HidetNcclError as failure:
        return failure


def main(argv):
    usage = ("usage: hidet-nccl-run -n 3 --max-restarts 2 python3 cg_heal.py [N] [--every K] "
             "[--kill-rank R --kill-at I]")
    n, opts, args = 128, {"--every": 10, "--kill-rank": -1, "--kill-at": -1}, list(argv)
    if args and args[0].isdigit():
        n = int(args.pop(0))
    while args:
        name = args.pop(0)
        if name not in opts or not args or not args[0].isdigit():
            sys.exit(usage)
        opts[name] = int(args.pop(0))
    if n < 1 or opts["--every"] < 1:
        sys.exit(usage)
    first_life = int(os.environ.get("HIDET_NCCL_RESTART_COUNT", "0") or 0) == 0

    comm = hidet_nccl.init()  # a restarted rank: its side of the survivors' heal, the whole communicator
    torch.cuda.set_device(comm.device)
    # A stream of its own (torch makes it non-blocking): a failed communicator's kernel left on it
    # holds up no work on CUDA's default stream (which a new communicator's init may use).
    torch.cuda.set_stream(torch.cuda.Stream(comm.device))
    if comm.size > n:
        sys.exit("cg_heal.py: the grid (%d rows) needs at least one row per rank (%d)" % (n, comm.size))
    cg = CG(comm, n, opts["--every"])
    # A new rank (restarted, taken in by its init) catches up; a first start begins at iteration 0.
    failure = attempt(cg.catch_up if comm.joined() else cg.start)
    while True:
        if failure is None:
            failure = attempt(cg.solve, opts["--kill-rank"], opts["--kill-at"], first_life)  # 1. checkpoint, 2. detect
            if failure is None:
                break
        cg.heal(failure)                # 3. heal
        failure = attempt(cg.catch_up)  # 4. catch up
    bits = struct.unpack("<Q", struct.pack("<d", cg.checksum))[0]
    print("cg_heal.py: rank %d of %d: answer: N=%d: %d iterations, checksum 0x%016x (%r)"
          % (cg.rank, cg.size, n, cg.it, bits, cg.checksum), flush=True)
    hidet_nccl.finalize()


if __name__ == "__main__":
    main(sys.argv[1:])
