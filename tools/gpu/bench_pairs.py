#!/usr/bin/env python3
"""Issue 37's verdict from every timed run a bench kept (hidet-nccl-bench --samples FILE), not
from the fastest of each column: for each (collective, size), out of place, the median over the
run pairs of library - raw (us) and of library / raw, where each pair is a library run and the
raw run timed right after it (they share the machine's moment, so drift between runs cancels).
A point meets the target when the median ratio <= 1.02 or the median difference <= 0.1 us.

    tools/gpu/bench_pairs.py SAMPLES [SAMPLES ...]
    tools/gpu/bench_pairs.py --by-collective DIR LABEL [LABEL ...]

The second form pools each label's runs (the files DIR/LABEL.*) and prints, per collective,
out of place (ip 0) and in place (ip 1), the median over every size and run pair of library -
raw (us) and of library / raw, and raw's median time: where a build's cost sits, beside others.

One column per file; a file holds one bench run (or several appended: their pairs pool). With
--reps 5 a median of five pairs strays about as far as the fastest-of-five does; with --reps 25
the A/A bench (--aa, raw NCCL in both columns) met 58 of 58 in both of two runs on one H200
(docs/data/overhead_1xh200_mask.txt), which is what lets such a run judge 0.1 us.
Standard library only.
"""
import collections
import glob
import statistics
import sys


def read(path):
    """{(collective, size): [(lib us, raw us), ...]} for out of place."""
    pairs = collections.defaultdict(list)
    for line in open(path):
        cols = line.split()
        if len(cols) != 6 or cols[2] != "0":
            continue
        pairs[(cols[0], int(cols[1]))].append((float(cols[4]), float(cols[5])))
    return pairs


def by_collective(directory, labels):
    """Per (collective, in place) and label: medians over every size and run pair."""
    data = {}
    for label in labels:
        pooled = collections.defaultdict(list)
        for path in sorted(glob.glob("%s/%s.*" % (directory, label))):
            for line in open(path):
                cols = line.split()
                if len(cols) == 6:
                    pooled[(cols[0], cols[2])].append((float(cols[4]), float(cols[5])))
        data[label] = pooled
    print("# per collective, medians over every size and run pair: lib-raw us, lib/raw (raw's median us)")
    print("%-15s %2s %s" % ("collective", "ip", "".join("%-27s" % label for label in labels)))
    for k in sorted(set().union(*data.values())):
        row = "%-15s %2s " % k
        for label in labels:
            runs = data[label].get(k)
            if not runs:
                row += "%-27s" % "-"
                continue
            row += "%-27s" % ("%+.3f %.3f (raw %.2f)" % (statistics.median(a - b for a, b in runs),
                                                        statistics.median(a / b for a, b in runs),
                                                        statistics.median(b for _, b in runs)))
        print(row)


def main():
    files = sys.argv[1:]
    if len(files) >= 3 and files[0] == "--by-collective":
        return by_collective(files[1], files[2:])
    if not files or files[0].startswith("-"):
        sys.exit(__doc__)
    data = [read(f) for f in files]
    keys = sorted(set().union(*data))
    print("# out of place, medians over run pairs: lib/raw, lib-raw us (pairs); * misses ratio <= 1.02 and +0.1 us")
    print("%-15s %8s%s" % ("collective", "size", "".join("  %-26s" % f.split("/")[-1] for f in files)))
    met = [0] * len(files)
    for k in keys:
        row = "%-15s %8d" % k
        for i, d in enumerate(data):
            runs = d.get(k, [])
            if not runs:
                row += "  %-26s" % "-"
                continue
            ratio = statistics.median(a / b for a, b in runs)
            diff = statistics.median(a - b for a, b in runs)
            ok = ratio <= 1.02 or diff <= 0.1
            met[i] += ok
            row += "  %-26s" % ("%.3f %+.3f (%d)%s" % (ratio, diff, len(runs), "" if ok else " *"))
        print(row)
    for f, d, n in zip(files, data, met):
        print("# %s: %d of %d points meet" % (f, n, len(d)))


if __name__ == "__main__":
    main()
