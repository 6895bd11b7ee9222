#!/usr/bin/env python3
"""Medians of nccl-tests' times over several runs of three variants of each test (issue 37):
stock, lib (through the library by LD_PRELOAD=libhidet_nccl_tests_shim.so) and static (the test
relinked with the shim and libhidet_nccl.a), as tools/gpu/nccl_tests_compare.sh writes them:

    tools/gpu/nccl_tests_ratios.py RUN_DIR TEST...

RUN_DIR/TEST.stock, TEST.lib and TEST.static each hold that variant's runs one after another,
each run begun by a line '## run N' (and followed by '## exit RC' when it failed), stdout and
stderr together. nccl-tests' rows are 'size count type redop root' then, out of place and in
place, 'time algbw busbw #wrong'. Prints, per test and size, the median time (us) of each variant
and the ratios of the medians lib/stock and static/stock, out of place and in place; a line per
test (ratio ranges over sizes, median over sizes of variant - stock in us); and how many (test,
size) points meet issue 37's target, ratio <= 1.02 or variant <= stock + 0.1 us. Standard library
only.
"""
import re
import statistics
import sys

VARIANTS = ("stock", "lib", "static")
ADOPTED = re.compile(r"hidet_nccl_tests_shim: (\d+) communicator\(s\) adopted")
RANK = re.compile(r"^#\s+Rank\s+(\d+)\s")
# On one rank the library does these without NCCL (core: in place nothing, out of place one copy).
ONE_RANK_LOCAL = ("all_reduce", "reduce", "reduce_scatter")


def num(x):
    try:
        return float(x)
    except ValueError:
        return None


def read(path):
    """[{'rows': {size: (oop us, ip us, oop wrong, ip wrong)}, 'adopted': int or None,
    'exit': int or None, 'ranks': set}, ...], one per run."""
    runs = []
    try:
        lines = open(path, errors="replace").read().splitlines()
    except OSError:
        return runs
    for line in lines:
        if line.startswith("## run "):
            runs.append({"rows": {}, "adopted": None, "exit": None, "ranks": set()})
            continue
        if not runs:
            continue
        run = runs[-1]
        if line.startswith("## exit "):
            run["exit"] = int(line.split()[2])
            continue
        m = ADOPTED.search(line)
        if m:
            run["adopted"] = int(m.group(1))
            continue
        m = RANK.match(line)
        if m:
            run["ranks"].add(int(m.group(1)))
            continue
        cols = line.split()
        if line.startswith("#") or len(cols) < 13 or not cols[0].isdigit() or not cols[1].isdigit():
            continue
        oop, ip = num(cols[5]), num(cols[9])
        if oop is None or ip is None:
            continue
        run["rows"][int(cols[0])] = (oop, ip, num(cols[8]), num(cols[12]))
    return runs


def median_of(runs, size, i):
    vals = [r["rows"][size][i] for r in runs if size in r["rows"]]
    return statistics.median(vals) if vals else None


def ratio(a, b):
    return a / b if a is not None and b else None


def fmt(x, spec):
    return spec % x if x is not None else "-".rjust(len(spec % 0.0))


def summary(test, per_size, notes):
    """'test: lib/stock out of place a-b, in place c-d (median +x / +y us); static/stock ...'"""
    parts = []
    for v in ("lib", "static"):
        halves = []
        diffs = []
        for half in (0, 1):
            rs = [p[v][half] / p["stock"][half] for p in per_size
                  if p[v][half] is not None and p["stock"][half]]
            ds = [p[v][half] - p["stock"][half] for p in per_size
                  if p[v][half] is not None and p["stock"][half] is not None]
            halves.append("%.2f-%.2f" % (min(rs), max(rs)) if rs else "-")
            diffs.append("%+.2f" % statistics.median(ds) if ds else "-")
        parts.append("%s/stock out of place %s, in place %s (median %s / %s us)" % (v, halves[0], halves[1], diffs[0], diffs[1]))
    return "%s: %s%s" % (test, "; ".join(parts), notes)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    run_dir, tests = sys.argv[1], sys.argv[2:]
    lines = []
    met = {(v, half): 0 for v in ("lib", "static") for half in (0, 1)}
    points = {(v, half): 0 for v in ("lib", "static") for half in (0, 1)}
    for test in tests:
        data = {v: read("%s/%s.%s" % (run_dir, test, v)) for v in VARIANTS}
        print()
        print("## %s: %s" % (test, ", ".join("%d %s runs" % (len(data[v]), v) for v in VARIANTS)))
        for v in VARIANTS:
            failed = [r["exit"] for r in data[v] if r["exit"] is not None]
            if failed:
                print("#   %s: %d run(s) failed (exit %s); their rows, if any, are counted" % (v, len(failed), failed))
            wrong = sum(1 for r in data[v] for row in r["rows"].values() for w in row[2:] if w)
            if wrong:
                print("#   %s: %d row(s) with #wrong > 0" % (v, wrong))
        for v in ("lib", "static"):
            lost = sum(1 for r in data[v] if not r["adopted"])
            if lost:
                print("#   WARNING %s: %d of %d runs did not say they adopted a communicator: not through the library"
                      % (v, lost, len(data[v])))
        if any(r["adopted"] is not None for r in data["stock"]):
            print("#   WARNING stock: the shim spoke in a stock run (LD_PRELOAD leaked?)")
        ranks = {len(r["ranks"]) for v in VARIANTS for r in data[v] if r["ranks"]}
        notes = ""
        if ranks == {1} and test in ONE_RANK_LOCAL:
            print("#   one rank: the library does this without NCCL (in place nothing, out of place a cudaMemcpyAsync):"
                  " its time against NCCL's one-rank kernel, not a cost on top of NCCL")
        if test == "alltoall":
            print("#   in place: the shim passes in-place ncclAlltoAll to NCCL unchanged (the library has no in-place"
                  " all_to_all): raw NCCL on both sides")
            notes = " (in place raw both sides)"
        sizes = sorted(set().union(*(r["rows"] for v in VARIANTS for r in data[v])))
        if not sizes:
            print("#   no rows")
            continue
        print("  size (B) | stock oop  lib oop stat oop  lib/st stat/st | stock ip   lib ip  stat ip  lib/st stat/st")
        per_size = []
        for size in sizes:
            p = {v: (median_of(data[v], size, 0), median_of(data[v], size, 1)) for v in VARIANTS}
            per_size.append(p)
            cells = []
            for half in (0, 1):
                s, l, t = p["stock"][half], p["lib"][half], p["static"][half]
                cells.append("%s %s %s %s %s" % (fmt(s, "%8.2f"), fmt(l, "%8.2f"), fmt(t, "%8.2f"),
                                                 fmt(ratio(l, s), "%7.3f"), fmt(ratio(t, s), "%7.3f")))
                for v, x in (("lib", l), ("static", t)):
                    if x is None or s is None or (test == "alltoall" and half == 1):
                        continue
                    points[(v, half)] += 1
                    if (s and x / s <= 1.02 + 1e-9) or x - s <= 0.1 + 1e-9:
                        met[(v, half)] += 1
            print("%10d | %s | %s" % (size, cells[0], cells[1]))
        line = summary(test, per_size, notes)
        print(line)
        lines.append(line)
    print()
    print("# ranges over sizes of the ratio of medians (> 1: slower than stock), and in brackets the median over sizes"
          " of (variant - stock) in us, out of place / in place")
    for line in lines:
        print(line)
    for v in ("lib", "static"):
        print("# %s: %d of %d (test, size) points out of place, %d of %d in place, meet ratio <= 1.02 or +0.1 us"
              " (medians; alltoall in place left out)" % (v, met[(v, 0)], points[(v, 0)], met[(v, 1)], points[(v, 1)]))


if __name__ == "__main__":
    main()
