#!/usr/bin/env python3
"""Issue 17's targets, read off `hidet-nccl-bench --modes` output (one or more runs in one file or
several): per collective, dtype and size, the library against the fastest raw mode (the bench's
lib/best column: the fastest of plain, registered and window, whatever its `best` column, which
names a registered mode only if it beats plain by 5%) and against raw plain (lib/plain).

    tools/check_buffer_targets.py OUTPUT... [--min-best 0.98] [--min-plain 0.99] [--mid 1.3]

Targets: library >= 0.98 x the best raw mode at every size, >= 0.99 x raw plain at every size,
and >= 1.3 x raw plain from 1 to 4 MiB (all_reduce's buffer, all_gather's output,
reduce_scatter's input). Prints each miss and one summary line per table; exits 1 if any
missed."""
import sys

MIB = 1 << 20


def tables(lines):
    """Yields (collective, dtype, rows) for each `--modes` table; a row is (size, lib/best, lib/plain)."""
    coll, rows = None, []
    for line in lines:
        s = line.strip()
        if s.startswith("# ") and s[2:] in ("all_reduce", "all_gather", "reduce_scatter"):
            if coll and rows:
                yield coll, rows[0][1], [r[0] for r in rows]
            coll, rows = s[2:], []
            continue
        if coll is None or "|" not in s or s.startswith("#"):
            if coll and rows and (s.startswith("#") or not s):
                yield coll, rows[0][1], [r[0] for r in rows]
                coll, rows = None, []
            continue
        parts = s.split("|")
        head, ratios = parts[0].split(), parts[-1].split()
        if len(parts) != 3 or len(head) != 2 or len(ratios) != 3:
            continue
        rows.append(((int(head[0]), float(ratios[1]), float(ratios[2])), head[1]))
    if coll and rows:
        yield coll, rows[0][1], [r[0] for r in rows]


def check(coll, dtype, rows, min_best, min_plain, mid):
    misses = []
    worst_best, worst_plain = 9.0, 9.0
    for size, rb, rp in rows:
        worst_best, worst_plain = min(worst_best, rb), min(worst_plain, rp)
        if rb < min_best:
            misses.append(f"{size:>12} B: {rb:.3f} x the best raw mode (< {min_best})")
        if rp < min_plain:
            misses.append(f"{size:>12} B: {rp:.3f} x raw plain (< {min_plain})")
        if MIB <= size <= 4 * MIB and rp < mid:
            misses.append(f"{size:>12} B: {rp:.3f} x raw plain at 1-4 MiB (< {mid})")
    for m in misses:
        print(f"  {coll} {dtype}: {m}")
    verdict = "met" if not misses else f"{len(misses)} missed"
    print(f"{coll} {dtype}: {len(rows)} sizes, worst {worst_best:.3f} x best raw, {worst_plain:.3f} x raw plain: "
          f"{verdict}")
    return not misses


def main(argv):
    limits = {"--min-best": 0.98, "--min-plain": 0.99, "--mid": 1.3}
    paths = []
    i = 0
    while i < len(argv):
        if argv[i] in limits and i + 1 < len(argv):
            limits[argv[i]] = float(argv[i + 1])
            i += 2
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
            for coll, dtype, rows in tables(f):
                found += 1
                ok &= check(coll, dtype, rows, limits["--min-best"], limits["--min-plain"], limits["--mid"])
    if not found:
        print("no hidet-nccl-bench --modes table found", file=sys.stderr)
        return 2
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
