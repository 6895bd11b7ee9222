#!/usr/bin/env python3
"""Medians of hidet-nccl-bench's same-run time ratios (library/raw, out of place and in place)
over several runs, per collective and size, for one or more files of concatenated runs (one
column group per file, e.g. a build before and after a change). Also says, per file, how many
(collective, size) points meet issue 37's target: ratio <= 1.02 or library <= raw + 0.1 us, for
the medians and for each run alone (the issue's figure is one run's).

    tools/gpu/bench_ratios.py BEFORE_RUNS AFTER_RUNS

Standard library only.
"""
import statistics
import sys


def read(path):
    """{(collective, size): [(oop ratio, ip ratio or None, lib oop us, raw oop us), ...]}"""
    points, coll = {}, None
    for line in open(path):
        if line.startswith("# collective "):
            coll = line.split()[2].rstrip(":")
            continue
        cols = line.split()
        if line.startswith("#") or coll is None or "|" not in cols or not cols[0].isdigit():
            continue
        parts = line.split("|")
        lib, raw, ratios = parts[1].split(), parts[3].split(), parts[-1].split()
        if len(ratios) < 2 or not lib or not raw:
            continue
        def num(x):
            try:
                return float(x)
            except ValueError:
                return None
        points.setdefault((coll, int(cols[0])), []).append((num(ratios[0]), num(ratios[1]), num(lib[0]), num(raw[0])))
    return points


def main():
    files = sys.argv[1:]
    if not files:
        sys.exit(__doc__)
    data = [read(f) for f in files]
    keys = sorted(set().union(*data), key=lambda k: (k[0], k[1]))
    head = "".join("  %-28s" % ("%s (n=%d)" % (f.split("/")[-1], max((len(v) for v in d.values()), default=0)))
                   for f, d in zip(files, data))
    print("# medians over runs of the same-run time ratio lib/raw: out of place [min..max], in place; +us: lib-raw oop")
    print("%-15s %8s%s" % ("collective", "size", head))
    met = [0] * len(files)
    for k in keys:
        row = "%-15s %8d" % k
        for i, d in enumerate(data):
            runs = d.get(k, [])
            oop = [r[0] for r in runs if r[0] is not None]
            ip = [r[1] for r in runs if r[1] is not None]
            diff = [r[2] - r[3] for r in runs if r[2] is not None and r[3] is not None]
            if not oop:
                row += "  %-28s" % "-"
                continue
            m, dm = statistics.median(oop), statistics.median(diff)
            if m <= 1.02 or dm <= 0.1:
                met[i] += 1
            cell = "%.3f [%.2f..%.2f] %s %+.2f" % (m, min(oop), max(oop),
                                                   "%.2f" % statistics.median(ip) if ip else "  - ", dm)
            row += "  %-28s" % cell
        print(row)
    for f, n in zip(files, met):
        print("# %s: %d of %d points meet ratio <= 1.02 or +0.1 us (medians, out of place)" % (f, n, len(keys)))
    for f, d in zip(files, data):
        print("# %s: each run alone: %s of %d" % (f, " ".join(str(n) for n in per_run(d)), len(d)))


def meets(run):
    """One run's point meets the target (out of place)."""
    ratio, _, lib, raw = run
    return ratio is not None and (ratio <= 1.02 or (lib is not None and raw is not None and lib - raw <= 0.1))


def per_run(d):
    """How many points meet the target in each run of one file (its runs in order)."""
    runs = max((len(v) for v in d.values()), default=0)
    return [sum(1 for v in d.values() if i < len(v) and meets(v[i])) for i in range(runs)]


if __name__ == "__main__":
    main()
