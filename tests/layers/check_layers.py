#!/usr/bin/env python3
"""The house in layers: no circle between the library's files or folders, no layer that uses a
higher one.

Two graphs, each read off what the compiler sees rather than off names:
  includes  file -> file, from the `#include "..."` lines of core/ and the backends (a header
            stands for the source file it belongs to: x_int.h for x.c in its folder);
  calls     object -> object, from `nm` of the archives: an object that leaves a hidet_nccl_*
            symbol undefined uses the object that defines it.
Either graph fails the check on a circle between files or between folders, and on an edge from a
folder to one that comes later in LAYERS.

Usage: check_layers.py ROOT ARCHIVE...   (ROOT holds core/ and the bootstrap_*/ folders)
"""
import collections
import os
import re
import subprocess
import sys

BACKENDS = "bootstrap_*"  # in LAYERS: stands for every bootstrap_<name>/ folder but bootstrap_mpi

# The layers, lowest first: a folder may use only the folders before it, and where LIMITS names
# it, of their internals only what LIMITS allows (the public API of a lower layer is anyone's).
LAYERS = [
    "include/hidet_nccl",  # the public headers
    "core/base",  # settings, log, status, parsing, polling, framing, finalize hooks: the kit
    "core/nccl",  # the NCCL loader, versions, config knobs, dtype map, CUDA
    "core/trace",  # the flight recorder (learns of communicators through a hook the registry gives it)
    "core/comm",  # registry, init, split, shrink, revoke, destroy, health, wait, groups, device choice
    BACKENDS,  # the built-in backends, bootstrap_<name>/ (found by name): plug-ins standing on the kit
    "core/boot",  # the bootstrap handle, the backend table, the v1 adapter, init over a bootstrap
    "core/mem",  # library memory, registrations, siblings, the tuning table
    "core/coll",  # one file per collective and what they share
    "bootstrap_mpi",  # libhidet_nccl_mpi.a, on top of everything
]
KIT = ["include/hidet_nccl", "core/base"]

def layers(root):
    """LAYERS with BACKENDS replaced by the backend folders found under root, and LIMITS: every
    backend (the MPI one too) may use only the kit."""
    found = sorted(d for d in os.listdir(root) if d.startswith("bootstrap_") and d != "bootstrap_mpi"
                   and os.path.isdir(os.path.join(root, d)))
    out = []
    for d in LAYERS:
        out += found if d == BACKENDS else [d]
    return out, {d: KIT for d in found + ["bootstrap_mpi"]}


ORDER, LIMITS = LAYERS, {}  # main() resolves them for the tree it checks


# What a backend may call outside the kit's folder: the kit's one function that lives higher up
# (core/base/kit.h declares hidet_nccl__comm_init_over for the MPI backend's one-call init).
KIT_CALLS = {"hidet_nccl__comm_init_over"}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources(root):
    """Every .c and .h of the library, and its device code (.cu): path relative to root."""
    found = []
    for top in [d for d in ORDER if not d.startswith("core/")] + ["core"]:
        for folder, _, files in os.walk(os.path.join(root, top)):
            found += [os.path.relpath(os.path.join(folder, f), root) for f in files
                      if f.endswith((".c", ".h", ".cu"))]
    return sorted(found)


def owner(path, paths):
    """The file a header stands for: x.c beside x_int.h, else the header itself."""
    if path.endswith("_int.h"):
        c = path[: -len("_int.h")] + ".c"
        if c in paths:
            return c
    return path


def include_graph(root, paths):
    known = set(paths)
    graph = collections.defaultdict(set)
    for p in paths:
        with open(os.path.join(root, p), encoding="utf-8") as f:
            text = f.read()
        for inc in INCLUDE.findall(text):
            target = inc if inc in known else "include/" + inc if "include/" + inc in known else None
            if target is None:
                continue
            a, b = owner(p, known), owner(target, known)
            if a != b:
                graph[a].add(b)
    return graph


def call_graph(archives, paths):
    """Object -> object from nm; objects named by their source file (stems are unique)."""
    by_stem = {}
    for p in paths:
        if p.endswith(".c"):
            stem = os.path.basename(p)[:-2]
            if stem in by_stem:
                sys.exit("two sources named %s.c: %s and %s (their objects would collide)" % (stem, by_stem[stem], p))
            by_stem[stem] = p
        elif p.endswith(".cu"):  # device code: its fatbin, as C, is the object <stem>_fatbin (core/BUILD)
            by_stem[os.path.basename(p)[:-3] + "_fatbin"] = p
    defined, used = {}, collections.defaultdict(set)
    for archive in archives:
        out = subprocess.run(["nm", "-A", archive], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            fields = line.split()
            obj = fields[0].split(":")[1]
            kind, symbol = fields[-2], fields[-1]
            if not symbol.startswith("hidet_nccl_"):
                continue
            source = by_stem.get(obj.split(".")[0])
            if source is None:
                sys.exit("%s in %s has no source file under core/ or bootstrap_*/" % (obj, archive))
            if kind == "U":
                used[source].add(symbol)
            elif kind.isupper():
                defined[symbol] = source
    graph = collections.defaultdict(set)
    calls = {}
    for source, symbols in used.items():
        for s in symbols:
            if s in defined and defined[s] != source:
                graph[source].add(defined[s])
                calls.setdefault((source, defined[s]), s)
    return graph, calls


def public(symbol):
    """The public API (hidet_nccl_x, not hidet_nccl__x): any layer above its definer may call it."""
    return not symbol.startswith("hidet_nccl__")


def folder(path):
    for d in sorted(ORDER, key=len, reverse=True):
        if path.startswith(d + "/"):
            return d
    return os.path.dirname(path)


def circles(graph):
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    nodes = sorted(set(graph) | {b for bs in graph.values() for b in bs})
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                elif nxt in on:
                    low[v] = min(low[v], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def check(name, graph, calls=None):
    problems = []
    for comp in circles(graph):
        edges = ["%s -> %s" % (a, b) for a in comp for b in sorted(graph.get(a, ())) if b in comp]
        problems.append("%s: circle between files %s\n    %s" % (name, ", ".join(comp), "\n    ".join(edges)))
    folders = collections.defaultdict(set)
    for a, bs in graph.items():
        for b in bs:
            fa, fb = folder(a), folder(b)
            if fa == fb:
                continue
            why = " (%s)" % calls[(a, b)] if calls else ""
            if calls and calls[(a, b)] in KIT_CALLS and fa in LIMITS:
                continue
            folders[fa].add(fb)
            if fa not in ORDER or fb not in ORDER:
                problems.append("%s: %s -> %s%s: %s is not a layer of LAYERS" % (
                    name, a, b, why, fa if fa not in ORDER else fb))
            elif fa in LIMITS and fb not in LIMITS[fa] and not (calls and public(calls[(a, b)])):
                problems.append("%s: %s -> %s%s: %s may use only %s" % (name, a, b, why, fa, ", ".join(LIMITS[fa])))
            elif ORDER.index(fb) > ORDER.index(fa):
                problems.append("%s: %s -> %s%s: %s is below %s" % (name, a, b, why, fa, fb))
    for comp in circles(folders):
        problems.append("%s: circle between folders %s" % (name, ", ".join(comp)))
    return problems


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    root, archives = argv[1], argv[2:]
    global ORDER, LIMITS
    ORDER, LIMITS = layers(root)
    paths = sources(root)
    stray = [p for p in paths if folder(p) not in ORDER]
    problems = ["%s: not in a layer folder (core/ has no source at its top level)" % p for p in stray]
    empty = [d for d in ORDER[1:] if not any(folder(p) == d and p.endswith(".c") for p in paths)]
    problems += ["%s: no source found (a layer without files, or a tree not all here)" % d for d in empty]
    problems += check("includes", include_graph(root, paths))
    graph, calls = call_graph(archives, paths)
    problems += check("calls", graph, calls)
    for p in problems:
        print(p)
    files = len([p for p in paths if p.endswith(".c")])
    print("%d source files in %d folders: %d problems" % (files, len({folder(p) for p in paths}), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
