#!/usr/bin/env python3
"""The targets of library memory, read off `hidet-nccl-bench --modes` output (one or more runs in one
file or several): per collective, dtype and size, the library against the fastest raw NCCL mode
(the bench's lib/best column: the fastest of plain, registered and window, whatever its `best`
column, which names a registered mode only if it beats plain by 5%) and against raw plain
(lib/plain).

    tools/gpu/check_buffer_targets.py OUTPUT... [--own] [--min-best 0.98] [--min-plain 0.99] [--mid 1.3]
                                            [--max-8b-us 3.5] [--max-8b-graph-us 2.5]

Issue 17's targets (the default): library >= 0.98 x the best raw mode at every size, >= 0.99 x raw
plain at every size, and >= 1.3 x raw plain from 1 to 4 MiB (all_reduce's buffer, all_gather's
output, reduce_scatter's input).

Issue 29's (--own, all_reduce tables only, the library on its memory with its own kernels): >=
1.3 x the best raw mode at every size from 8 KiB to 1 MiB, >= 0.98 x it at every size, and an
8-byte all_reduce in at most 3.5 us per call (2.5 us in a table timed in CUDA graphs, -G).

Prints each miss and one summary line per table; exits 1 if any missed."""
import sys

KIB, MIB = 1 << 10, 1 << 20


def tables(lines):
    """Yields (collective, dtype, graph, rows) for each `--modes` table; a row is (size, library
    column, lib/best, lib/plain). graph: the table was timed in CUDA graphs."""
    coll, rows, graph = None, [], False
    for line in lines:
        s = line.strip()
        if s.startswith("# library memory:"):
            graph = False
        if s.startswith("#") and "in CUDA graphs" in s:
            graph = True
        if s.startswith("# ") and s[2:] in ("all_reduce", "all_gather", "reduce_scatter"):
            if coll and rows:
                yield coll, rows[0][1], graph, [r[0] for r in rows]
            coll, rows = s[2:], []
            continue
        if coll is None or "|" not in s or s.startswith("#"):
            if coll and rows and (s.startswith("#") or not s):
                yield coll, rows[0][1], graph, [r[0] for r in rows]
                coll, rows = None, []
            continue
        parts = s.split("|")
        if len(parts) != 3:
            continue
        head, values, ratios = parts[0].split(), parts[1].split(), parts[-1].split()
        if len(head) != 2 or len(ratios) not in (3, 4) or not values:
            continue
        rows.append(((int(head[0]), float(values[0]), float(ratios[1]), float(ratios[2])), head[1]))
    if coll and rows:
        yield coll, rows[0][1], graph, [r[0] for r in rows]


def check(coll, dtype, rows, min_best, min_plain, mid):
    """Issue 17's targets."""
    misses = []
    worst_best, worst_plain = 9.0, 9.0
    for size, _, rb, rp in rows:
        worst_best, worst_plain = min(worst_best, rb), min(worst_plain, rp)
        if rb < min_best:
            misses.append(f"{size:>12} B: {rb:.3f} x the best raw mode (< {min_best})")
        if rp < min_plain:
            misses.append(f"{size:>12} B: {rp:.3f} x raw plain (< {min_plain})")
        if MIB <= size <= 4 * MIB and rp < mid:
            misses.append(f"{size:>12} B: {rp:.3f} x raw plain at 1-4 MiB (< {mid})")
    return report(f"{coll} {dtype}", rows, misses,
                  f"worst {worst_best:.3f} x best raw, {worst_plain:.3f} x raw plain")


def check_own(coll, dtype, graph, rows, min_best, mid, max_8b_us, max_8b_graph_us):
    """Issue 29's targets (all_reduce)."""
    misses = []
    worst_best, worst_mid = 9.0, 9.0
    limit_8b = max_8b_graph_us if graph else max_8b_us
    for size, lib, rb, _ in rows:
        worst_best = min(worst_best, rb)
        if rb < min_best:
            misses.append(f"{size:>12} B: {rb:.3f} x the best raw mode (< {min_best})")
        if 8 * KIB <= size <= MIB:
            worst_mid = min(worst_mid, rb)
            if rb < mid:
                misses.append(f"{size:>12} B: {rb:.3f} x the best raw mode at 8 KiB-1 MiB (< {mid})")
        if size == 8 and lib > limit_8b:
            misses.append(f"{size:>12} B: {lib:.2f} us per call (> {limit_8b}{' in a graph' if graph else ''})")
    name = f"{coll} {dtype}{' (CUDA graphs)' if graph else ''}"
    return report(name, rows, misses, f"worst {worst_best:.3f} x best raw, {worst_mid:.3f} at 8 KiB-1 MiB")


def report(name, rows, misses, worst):
    for m in misses:
        print(f"  {name}: {m}")
    verdict = "met" if not misses else f"{len(misses)} missed"
    print(f"{name}: {len(rows)} sizes, {worst}: {verdict}")
    return not misses


def main(argv):
    limits = {"--min-best": 0.98, "--min-plain": 0.99, "--mid": 1.3, "--max-8b-us": 3.5, "--max-8b-graph-us": 2.5}
    paths, own = [], False
    i = 0
    while i < len(argv):
        if argv[i] in limits and i + 1 < len(argv):
            limits[argv[i]] = float(argv[i + 1])
            i += 2
        elif argv[i] == "--own":
            own = True
            i += 1
        elif argv[i].startswith("-"):
            print(__doc__, file=sys.stderr)
            return 2
        else:
            paths.append(argv[i])
            i += 1
    if not paths:
        print(__doc__, file=sys.stderr)
        return 2
    ok, found = True, 0
    for path in paths:
        with open(path) as f:
            for coll, dtype, graph, rows in tables(f):
                if own and coll != "all_reduce":
                    continue
                found += 1
                if own:
                    ok &= check_own(coll, dtype, graph, rows, limits["--min-best"], limits["--mid"],
                                    limits["--max-8b-us"], limits["--max-8b-graph-us"])
                else:
                    ok &= check(coll, dtype, rows, limits["--min-best"], limits["--min-plain"], limits["--mid"])
    if not found:
        print("no hidet-nccl-bench --modes table found", file=sys.stderr)
        return 2
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
