#!/usr/bin/env python3
"""Plots busbw against size, library and raw NCCL, from hidet-nccl-bench output, as SVG.

    tools/bench/plot_bench.py docs/data/bench_2xh200_mpi.txt docs/busbw_2xh200.svg
    tools/bench/plot_bench.py --modes docs/data/buffers_2xh200.txt docs/buffers_2xh200.svg   (-m output: the library
        on its memory against raw plain, registered and window; the first table of the file)
    tools/bench/plot_bench.py [--title TEXT] [--modes] [--collective NAME] INPUT OUTPUT.svg   (default title: the
        input's header; default collective: all_reduce's table, else the first of `-c all` output)

Standard library only (no matplotlib), so it runs wherever python3 does.
"""
import math
import sys


def number(text):
    """A column's value; "n/a" (no in-place form) is NaN, left out of the plot."""
    return math.nan if text == "n/a" else float(text)


def read(path, collective=None):
    """(size, library oop, library ip, raw oop, raw ip) busbw of one collective's table: each
    table of hidet-nccl-bench's output starts with "# collective NAME: ..." (output from before
    -c has one table, all_reduce's, and no such line). collective None: all_reduce, else the first."""
    tables, current = {}, "all_reduce"
    for line in open(path):
        if line.startswith("# collective "):
            current = line[len("# collective "):].split(":")[0].strip()
            continue
        if line.startswith("#") or "|" not in line:
            continue
        cols = line.split("|")
        head, oop, ip, raw = cols[0].split(), cols[1].split(), cols[2].split(), cols[3].split()
        tables.setdefault(current, []).append(
            (int(head[0]), number(oop[2]), number(ip[2]), number(raw[1]), number(raw[3])))
    if collective is None:
        collective = "all_reduce" if "all_reduce" in tables or not tables else next(iter(tables))
    return collective, tables.get(collective, [])


def read_modes(path):
    """The first table of hidet-nccl-bench -m output: (size, library, plain, buffer, window) busbw,
    from 128 B (smaller sizes are printed in microseconds)."""
    rows, started = [], False
    for line in open(path):
        if "|" not in line or line.startswith("#"):
            if started and line.startswith("#"):
                break
            continue
        head, vals = line.split("|")[0].split(), line.split("|")[1].split()
        started = True
        if int(head[0]) > 64:
            rows.append((int(head[0]),) + tuple(float(v) for v in vals))
    return rows


RAW_CALLS = {"all_reduce": "ncclAllReduce", "broadcast": "ncclBroadcast", "reduce": "ncclReduce",
             "all_gather": "ncclAllGather", "reduce_scatter": "ncclReduceScatter", "all_to_all": "ncclAlltoAll",
             "gather": "ncclGather", "scatter": "ncclScatter", "send_recv": "ncclSend/ncclRecv"}


def table_series(collective):
    raw = RAW_CALLS.get(collective, "NCCL")
    return [(1, "#1f77b4", "hidet-nccl, out of place", ""), (2, "#2ca02c", "hidet-nccl, in place", ""),
            (3, "#d62728", f"raw {raw}, out of place", "6,4"), (4, "#ff7f0e", f"raw {raw}, in place", "2,3")]


TABLE_SERIES = table_series("all_reduce")
MODES_SERIES = [(1, "#1f77b4", "hidet-nccl on its memory (AUTO)", ""), (2, "#d62728", "raw, plain", "6,4"),
                (3, "#ff7f0e", "raw, registered buffer", "2,3"), (4, "#2ca02c", "raw, symmetric window", "8,3,2,3")]


def svg(rows, title, series):
    w, h, left, right, top, bottom = 760, 440, 70, 20, 40, 60
    xs = [math.log2(r[0]) for r in rows]
    ymax = max([v for r in rows for v in r[1:] if not math.isnan(v)] + [0]) * 1.1 or 1.0  # all 0 on one rank
    x0, x1 = min(xs), max(xs)

    def px(x):
        return left + (x - x0) / (x1 - x0) * (w - left - right)

    def py(y):
        return h - bottom - y / ymax * (h - top - bottom)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{w / 2}" y="22" text-anchor="middle" font-size="15">{title}</text>']
    for i in range(6):  # y grid
        y = ymax * i / 5
        out.append(f'<line x1="{left}" y1="{py(y):.1f}" x2="{w - right}" y2="{py(y):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{y:.0f}</text>')
    for r, x in zip(rows, xs):  # x ticks every 4 sizes
        if int(x) % 4 == 3:
            size = r[0]
            label = next(f"{size / d:g}{u}" for d, u in ((1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K"), (1, ""))
                         if size >= d)
            out.append(f'<line x1="{px(x):.1f}" y1="{h - bottom}" x2="{px(x):.1f}" y2="{top}" stroke="#eee"/>')
            out.append(f'<text x="{px(x):.1f}" y="{h - bottom + 16}" text-anchor="middle">{label}B</text>')
    out.append(f'<text x="{w / 2}" y="{h - 18}" text-anchor="middle">message size (bytes, log scale)</text>')
    out.append(f'<text x="18" y="{h / 2}" text-anchor="middle" transform="rotate(-90 18 {h / 2})">busbw (GB/s)</text>')
    for k, (col, color, name, dash) in enumerate(series):
        pts = " ".join(f"{px(x):.1f},{py(r[col]):.1f}" for r, x in zip(rows, xs) if not math.isnan(r[col]))
        out.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="2" stroke-dasharray="{dash}"/>')
        out.append(f'<line x1="{left + 14}" y1="{top + 14 + 18 * k}" x2="{left + 44}" y2="{top + 14 + 18 * k}" '
                   f'stroke="{color}" stroke-width="2" stroke-dasharray="{dash}"/>')
        out.append(f'<text x="{left + 50}" y="{top + 18 + 18 * k}">{name}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    args = sys.argv[1:]
    title = None
    if args[:1] == ["--title"] and len(args) > 1:
        title, args = html_escape(args[1]), args[2:]
    modes = args[:1] == ["--modes"]
    if modes:
        args = args[1:]
    collective = None
    if args[:1] == ["--collective"] and len(args) > 1:
        collective, args = args[1], args[2:]
    if len(args) != 2:
        sys.exit(__doc__)
    if modes:
        rows, series = read_modes(args[0]), MODES_SERIES
    else:
        collective, rows = read(args[0], collective)
        series = table_series(collective)
    if not rows:
        sys.exit(f"no rows in {args[0]}" + (f" for {collective}" if collective else ""))
    title = title or describe(args[0], modes) + ("" if modes or collective == "all_reduce" else f", {collective}")
    open(args[1], "w").write(svg(rows, title, series))


def describe(path, modes):
    """A title from the input: its first comment line naming the machine or NCCL (the bench's
    header), else the file's name; what the table holds is said after it."""
    for line in open(path):
        if line.startswith("#") and ("NCCL" in line or " x " in line):
            head = line.lstrip("# ").strip()
            if head.startswith("hidet-nccl-bench:"):
                head = head[len("hidet-nccl-bench:"):].strip()
            nccl = line.split("; ")[1].split(" from ")[0] if "; NCCL" in line else ""
            head = head.split("; ")[0] + (" (" + nccl + ")" if nccl else "")
            break
    else:
        head = path.rsplit("/", 1)[-1]
    return html_escape(head + (", in place, 3 modes" if modes else ""))


def html_escape(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


if __name__ == "__main__":
    main()
