#!/usr/bin/env python3
"""The house in layers: no circle between the tree's C files or folders, no layer that uses a
higher one, tools on the public API alone.

Two graphs, each read off what the compiler sees rather than off names:
  includes  file -> file, from the `#include` lines of every C file of the tree: the library
            (core/, the backends), tools/, bindings/, examples/ and tests/ (a header stands for
            the source file it belongs to: x_int.h or x.h for x.c in its folder);
  calls     object -> object, from `nm`: of the archives (an object that leaves a hidet_nccl_*
            symbol undefined uses the object that defines it), and of the tools' objects as Bazel
            compiled them (an object that leaves any symbol undefined uses the object of its own
            program that defines it, else the tools' library that does, else the archive's).
Either graph fails the check on a circle between files or between folders, on an edge from a
folder to one that comes later in LAYERS, and on a use that LIMITS does not allow (the tools:
the public headers and calls, core/base/number.h, tools/support). Every source under tools/ must
come with its object, so a file the call graph cannot see is an error, not a pass.

Usage: check_layers.py ROOT ARCHIVE_OR_OBJECT...   (ROOT holds the tree; .a files are the
       library's archives, .o files the tools' objects, each under its target's _objs/ folder)
"""
import collections
import os
import re
import subprocess
import sys

BACKENDS = "bootstrap_*"  # in LAYERS: stands for every bootstrap_<name>/ folder but bootstrap_mpi
TOOLS = "tools/*"  # in LAYERS: stands for every tools/<name>/ folder with C in it but tools/support

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
    "bootstrap_mpi",  # libhidet_nccl_mpi.a, on top of the library
    "tools/support",  # what the bench and the tests share: raw NCCL, references, the stand-in NCCL
    TOOLS,  # the programs, a folder each (found by name): run, bench, trace, dev
    "bindings",  # the bindings' C, if any (today Python over ctypes and Fortran: none)
    "examples",  # small programs a user copies
    "tests",  # the tests' own C (they may reach into internals: only circles are theirs to avoid)
]
KIT = ["include/hidet_nccl", "core/base"]
PUBLIC = ["include/hidet_nccl"]
TOOL_KIT = ["include/hidet_nccl", "core/base/number.h", "tools/support"]  # a file, or a folder
OPTIONAL = {"bindings"}  # a layer that may have no C


def layers(root):
    """LAYERS with BACKENDS and TOOLS replaced by the folders found under root, and LIMITS: every
    backend (the MPI one too) may use only the kit, the tools only TOOL_KIT (tools/support not
    itself), bindings and examples only the public headers."""
    backends = sorted(d for d in os.listdir(root) if d.startswith("bootstrap_") and d != "bootstrap_mpi"
                      and os.path.isdir(os.path.join(root, d)))
    tools = []
    if os.path.isdir(os.path.join(root, "tools")):
        for d in sorted(os.listdir(os.path.join(root, "tools"))):
            path = os.path.join(root, "tools", d)
            if d != "support" and os.path.isdir(path) and any(
                    f.endswith((".c", ".h")) for _, _, files in os.walk(path) for f in files):
                tools.append("tools/" + d)
    out = []
    for d in LAYERS:
        out += backends if d == BACKENDS else tools if d == TOOLS else [d]
    limits = {d: KIT for d in backends + ["bootstrap_mpi"]}
    limits.update({d: TOOL_KIT for d in tools})
    limits.update({"tools/support": ["include/hidet_nccl", "core/base/number.h"], "bindings": PUBLIC, "examples": PUBLIC})
    return out, limits, set(backends + ["bootstrap_mpi"])


ORDER, LIMITS, BACKS = LAYERS, {}, set()  # main() resolves them for the tree it checks


# What a backend may call outside the kit's folder: the kit's one function that lives higher up
# (core/base/kit.h declares hidet_nccl__comm_init_over for the MPI backend's one-call init).
KIT_CALLS = {"hidet_nccl__comm_init_over"}

INCLUDE = re.compile(r'^\s*#\s*include\s+["<]([^">]+)[">]', re.M)


def sources(root):
    """Every .c and .h of the tree, and the library's device code (.cu): path relative to root."""
    tops = sorted({d.split("/")[0] for d in ORDER})
    found = []
    for top in tops:
        for folder, _, files in os.walk(os.path.join(root, top)):
            found += [os.path.relpath(os.path.join(folder, f), root) for f in files
                      if f.endswith((".c", ".h", ".cu"))]
    return sorted(found)


def owner(path, paths):
    """The file a header stands for: x.c beside x_int.h or x.h, else the header itself."""
    for tail in ("_int.h", ".h"):
        if path.endswith(tail):
            c = path[: -len(tail)] + ".c"
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
            near = os.path.normpath(os.path.join(os.path.dirname(p), inc))
            target = next((t for t in (inc, "include/" + inc, near) if t in known), None)
            if target is None:
                continue  # a system header
            a, b = owner(p, known), owner(target, known)
            if a != b:
                graph[a].add(b)
    return graph


def nm(files):
    """(file, archive member or None, kind, symbol) of every symbol nm lists in files."""
    out = []
    for i in range(0, len(files), 200):
        text = subprocess.run(["nm", "-A"] + files[i:i + 200], capture_output=True, text=True, check=True).stdout
        for line in text.splitlines():
            fields = line.split()
            if len(fields) < 2:
                continue
            where = fields[0].split(":")
            member = where[1] if len(where) > 2 else None  # archive:member:address, file:address
            out.append((where[0], member, fields[-2], fields[-1]))
    return out


def object_source(obj, c_paths):
    """The source an object under <package>/_objs/<target>/ was compiled from: the longest tail
    of <package> that names a source there (the object's path may be absolute or relative)."""
    parts = os.path.normpath(obj).split(os.sep)
    if "_objs" not in parts:
        return None
    package = parts[: len(parts) - 1 - parts[::-1].index("_objs")]
    name = os.path.basename(obj).split(".")[0]
    for k in range(len(package) + 1):
        for ext in (".c", ".cc"):
            source = "/".join(package[k:] + [name + ext])
            if source in c_paths:
                return source
    return None


def call_graph(archives, objects, paths):
    """Object -> object from nm; archive members named by their source file (stems are unique in
    the library), tools' objects by the source under their package. calls: edge -> symbols."""
    problems = []
    by_stem = {}
    for p in paths:
        if folder(p) not in ORDER[: ORDER.index("bootstrap_mpi") + 1]:  # what the archives hold
            continue
        if p.endswith(".c"):
            stem = os.path.basename(p)[:-2]
            if stem in by_stem:
                sys.exit("two sources named %s.c: %s and %s (their objects would collide)" % (stem, by_stem[stem], p))
            by_stem[stem] = p
        elif p.endswith(".cu"):  # device code: its fatbin, as C, is the object <stem>_fatbin (core/BUILD)
            by_stem[os.path.basename(p)[:-3] + "_fatbin"] = p
    defined, used = {}, collections.defaultdict(set)
    for archive, obj, kind, symbol in nm(archives):
        if not symbol.startswith("hidet_nccl_"):
            continue
        source = by_stem.get((obj or "").split(".")[0])
        if source is None:
            sys.exit("%s in %s has no source file in the library's folders" % (obj, archive))
        if kind == "U":
            used[source].add(symbol)
        elif kind.isupper():
            defined[symbol] = source

    # The tools: a symbol is looked for in the object's own program (its _objs/<target>/ folder),
    # then in the other tools' objects (their libraries), then in the archive.
    c_paths = {p for p in paths if p.endswith((".c", ".cc"))}
    target_of, tool_defined = {}, collections.defaultdict(lambda: collections.defaultdict(set))
    tool_used = collections.defaultdict(set)
    for obj, _, kind, symbol in nm(objects):
        source = object_source(obj, c_paths)
        if source is None:
            sys.exit("%s: no source file under its package for this object" % obj)
        target = os.path.dirname(obj)
        target_of[obj] = (target, source)
        if kind == "U":
            tool_used[obj].add(symbol)
        elif kind.isupper():
            tool_defined[symbol][target].add(source)
    seen = {s for _, s in target_of.values()}
    problems += ["%s: no object of it was given (its target belongs in tests/layers/BUILD's tools)" % p
                 for p in sorted(c_paths) if p.startswith("tools/") and p not in seen]

    graph, calls = collections.defaultdict(set), collections.defaultdict(set)

    def edge(a, b, symbol):
        if a != b:
            graph[a].add(b)
            calls[(a, b)].add(symbol)

    for source, symbols in used.items():
        for s in symbols:
            if s in defined:
                edge(source, defined[s], s)
    for obj, symbols in tool_used.items():
        target, source = target_of[obj]
        for s in symbols:
            where = tool_defined.get(s, {})
            if target in where:
                definers = where[target]
            else:
                definers = set().union(*where.values()) if where else ({defined[s]} if s in defined else set())
            for d in definers:
                edge(source, d, s)
    return graph, calls, problems


def public(symbol):
    """The public API (hidet_nccl_x, not hidet_nccl__x): any layer above its definer may call it."""
    return symbol.startswith("hidet_nccl_") and not symbol.startswith("hidet_nccl__")


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
        edges = ["%s -> %s%s" % (a, b, " (%s)" % ", ".join(sorted(calls[(a, b)])) if calls else "")
                 for a in comp for b in sorted(graph.get(a, ())) if b in comp]
        problems.append("%s: circle between files %s\n    %s" % (name, ", ".join(comp), "\n    ".join(edges)))
    folders = collections.defaultdict(set)
    for a, bs in graph.items():
        for b in bs:
            fa, fb = folder(a), folder(b)
            if fa == fb:
                continue
            symbols = sorted(calls[(a, b)]) if calls else []
            if symbols and fa in BACKS and all(s in KIT_CALLS for s in symbols):
                continue
            private = [s for s in symbols if not public(s)]
            why = " (%s)" % (private or symbols)[0] if symbols else ""
            folders[fa].add(fb)
            allowed = fb in LIMITS.get(fa, ()) or b in LIMITS.get(fa, ())
            if fa not in ORDER or fb not in ORDER:
                problems.append("%s: %s -> %s%s: %s is not a layer of LAYERS" % (
                    name, a, b, why, fa if fa not in ORDER else fb))
            elif fa in LIMITS and not allowed and not (symbols and not private):
                problems.append("%s: %s -> %s%s: %s may use only %s" % (name, a, b, why, fa, ", ".join(LIMITS[fa])))
            elif ORDER.index(fb) > ORDER.index(fa):
                problems.append("%s: %s -> %s%s: %s is below %s" % (name, a, b, why, fa, fb))
    for comp in circles(folders):
        problems.append("%s: circle between folders %s" % (name, ", ".join(comp)))
    return problems


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    root = argv[1]
    archives = [a for a in argv[2:] if a.endswith(".a")]
    objects = [o for o in argv[2:] if o.endswith(".o")]
    global ORDER, LIMITS, BACKS
    ORDER, LIMITS, BACKS = layers(root)
    paths = sources(root)
    stray = [p for p in paths if folder(p) not in ORDER]
    problems = ["%s: not in a layer folder (core/ has no source at its top level, tools/ one folder a program)" % p
                for p in stray]
    empty = [d for d in ORDER[1:] if d not in OPTIONAL and not any(folder(p) == d and p.endswith(".c") for p in paths)]
    problems += ["%s: no source found (a layer without files, or a tree not all here)" % d for d in empty]
    problems += check("includes", include_graph(root, paths))
    graph, calls, missing = call_graph(archives, objects, paths)
    problems += missing
    problems += check("calls", graph, calls)
    for p in problems:
        print(p)
    files = len([p for p in paths if p.endswith(".c")])
    print("%d source files in %d folders, %d objects: %d problems" % (
        files, len({folder(p) for p in paths}), len(objects), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
