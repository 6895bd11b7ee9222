#!/usr/bin/env python3
"""Plots the cost of id distribution against ranks, one line per bootstrap, from
bootstrap_cost_bench output, as SVG (log-log).

    tools/dev/plot_cost.py docs/data/cost_2core.txt docs/cost_2core.svg

Standard library only (no matplotlib), so it runs wherever python3 does.
"""
import math
import sys

COLORS = {"file": "#1f77b4", "socket": "#d62728", "pmix": "#2ca02c", "mpi": "#9467bd"}


def read(path):
    lines = {}
    for line in open(path):
        cols = line.split()
        if line.startswith("#") or len(cols) < 3 or cols[2] == "failed":
            continue
        try:
            lines.setdefault(cols[0], []).append((int(cols[1]), float(cols[2])))
        except ValueError:
            continue
    return lines


def svg(lines, title):
    w, h, left, right, top, bottom = 760, 440, 80, 120, 40, 60
    pts = [p for ps in lines.values() for p in ps]
    x0, x1 = math.log10(min(p[0] for p in pts)), math.log10(max(p[0] for p in pts))
    y0, y1 = math.floor(math.log10(min(p[1] for p in pts))), math.ceil(math.log10(max(p[1] for p in pts)))

    def px(x):
        return left + (math.log10(x) - x0) / (x1 - x0) * (w - left - right)

    def py(y):
        return h - bottom - (math.log10(y) - y0) / (y1 - y0) * (h - top - bottom)

    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">' % (w, h),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="24" font-size="14">%s</text>' % (left, title)]
    for e in range(y0, y1 + 1):
        y = py(10 ** e)
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (left, y, w - right, y))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%g s</text>' % (left - 6, y + 4, 10 ** e))
    for n in sorted({p[0] for p in pts}):
        x = px(n)
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/>' % (x, top, x, h - bottom))
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%d</text>' % (x, h - bottom + 18, n))
    out.append('<text x="%d" y="%d" text-anchor="middle">ranks</text>' % ((left + w - right) // 2, h - 16))
    for i, (name, ps) in enumerate(sorted(lines.items())):
        color = COLORS.get(name, "black")
        ps = sorted(ps)
        out.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>' %
                   (color, " ".join("%.1f,%.1f" % (px(n), py(t)) for n, t in ps)))
        for n, t in ps:
            out.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>' % (px(n), py(t), color))
        out.append('<text x="%d" y="%d" fill="%s">%s</text>' % (w - right + 10, top + 20 + 18 * i, color, name))
    out.append("</svg>")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: plot_cost.py BENCH_OUTPUT OUT.svg")
    open(sys.argv[2], "w").write(svg(read(sys.argv[1]), "id distribution: last rank holds the id (s), log-log"))
