"""The Python and Fortran bindings say what the public C header says.

Both bindings restate the C API by hand (Python: the ctypes `_PROTOTYPES` tables of
bindings/python/hidet_nccl/_lib.py; Fortran: the `bind(c)` interfaces, derived types and
parameters of bindings/fortran/hidet_nccl.f90), and nothing in the build compares them with
include/hidet_nccl/*.h: a C argument added or retyped leaves a binding that still loads and
links, then passes garbage. This test reads the headers' declarations with a small parser and
checks, by the mapping rules of python_choices and fortran_choices below (one table each):

  * every public function (each hidet_nccl_* the headers declare) is in each binding, unless
    it is in that binding's commented exception list, with the same number of arguments and,
    argument by argument and for the result, the ctypes / Fortran declaration the mapping
    gives for its C type (bootstrap_mpi.h's functions in _MPI_PROTOTYPES, the others in
    _PROTOTYPES);
  * no binding declares a hidet_nccl_* function the headers lack (nor is an exception stale);
  * the Fortran bind(c) types have the fields of the C structs they mirror, and the Fortran
    parameters, Python's DTYPES/OPS/STATUS_NAMES and the package's constants have the
    header's values;
  * the Python package's extension module (bindings/python/calls.c, the collectives' calls)
    has a signature for each function of the package's CALLS, whose letters (i: int or enum,
    s: size_t, p: a pointer or handle) and argument names are the header's, and each call in
    its invoke() reads the union member of each argument's letter (the compiler checks the
    function types against the header, not which member a call reads);
  * the checks catch drift: a header copy with an argument added, a type changed, a function
    added or removed, a struct field or enum value changed, and bindings edited the same ways
    each make the check fail (test_drift_is_caught, test_extension_drift_is_caught).

    bindings_match_header_test.py HEADER.h... PACKAGE/__init__.py MODULE.f90 CALLS.c
"""
import importlib
import os
import re
import sys
import tempfile
import unittest
from collections import namedtuple
from itertools import zip_longest
from ctypes import POINTER, c_char, c_char_p, c_double, c_int, c_size_t, c_uint64, c_void_p

# The header whose functions live only in libhidet_nccl_mpi.so (Python: _MPI_PROTOTYPES).
MPI_HEADER = "bootstrap_mpi.h"

# Public functions a binding leaves out on purpose, with the reason.
PYTHON_EXCEPTIONS = {}
FORTRAN_EXCEPTIONS = {
    # A C MPI_Comm has no portable Fortran form (a pointer in Open MPI, an int in MPICH);
    # Fortran passes its MPI_Fint to hidet_nccl_mpi_comm_init_fortran instead.
    "hidet_nccl_bootstrap_mpi": "takes a C MPI_Comm",
    "hidet_nccl_mpi_comm_init": "takes a C MPI_Comm",
}
# Numeric #defines of the header that the Fortran module need not restate.
FORTRAN_CONSTANT_EXCEPTIONS = {
    "HIDET_NCCL_VERSION_MAJOR", "HIDET_NCCL_VERSION_MINOR", "HIDET_NCCL_VERSION_PATCH",  # the C header's own
    "HIDET_NCCL_BOOTSTRAP_API_VERSION", "HIDET_NCCL_BOOTSTRAP_API_VERSION_V1",  # for plug-ins, written in C
    "HIDET_NCCL_BOOTSTRAP_API_VERSION_V2", "HIDET_NCCL_BOOTSTRAP_API_VERSION_V3",
}
# C functions outside the library that the Fortran module binds for its own helpers.
FORTRAN_LIBC_HELPERS = {"strlen"}

# ------------------------------------------------------------------ the C side

# Types from outside the headers, by what they are on this platform (Open MPI, CUDA, NCCL).
EXTERNAL_TYPES = {
    "int": "int", "size_t": "size_t", "double": "double", "char": "char", "void": "void", "uint64_t": "uint64",
    "cudaStream_t": "handle",      # struct CUstream_st *
    "ncclComm_t": "handle",        # struct ncclComm *
    "MPI_Comm": "handle",          # Open MPI: struct ompi_communicator_t *
    "MPI_Fint": "int",             # Open MPI: ompi_fortran_integer_t, an int
    "ncclDataType_t": "int", "ncclRedOp_t": "int",  # enums
    "ncclUniqueId": "struct",
}
# A C type as written: the base type's name, how many '*', whether the base is const, and
# (struct fields) the array length.
CType = namedtuple("CType", "base depth const array")
# nccl.h: typedef struct { char internal[NCCL_UNIQUE_ID_BYTES]; } ncclUniqueId; (128 bytes)
EXTERNAL_STRUCTS = {"ncclUniqueId": [("internal", CType("char", 0, False, 128))]}
EXTERNAL_CONSTANTS = {"NCCL_SPLIT_NOCOLOR": -1}  # nccl.h
C_TYPE_WORDS = {"int", "char", "void", "double", "float", "long", "short", "unsigned", "signed", "const"}
Function = namedtuple("Function", "name ret args header")  # args: [(CType, name)]
# What a C type is, after typedefs: kind is int, size_t, double, char, uint64, void, handle,
# funcptr or struct (then struct names the struct's typedef).
Kind = namedtuple("Kind", "kind depth const struct array")


class ParseError(Exception):
    pass


def _split_top(text, sep):
    """text split at sep outside (), {} and []."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


def _c_value(text):
    """An integer or real C constant expression of literals (and known NCCL macros), else None."""
    text = EXTERNAL_CONSTANTS.get(text.strip(), text)
    if isinstance(text, int):
        return text
    if not re.fullmatch(r"[\d\s().+\-]+", text) or not re.search(r"\d", text):
        return None
    return eval(text, {"__builtins__": {}})  # digits, dots, signs and parentheses only


def parse_param(text):
    """(CType, name or None) of one parameter or struct field: 'const char **name',
    'hidet_nccl_status_t (*init)(void *)', 'char internal[128]', 'int'."""
    m = re.fullmatch(r"(.+?)\(\s*\*\s*(\w*)\s*\)\s*\((.*)\)", text, re.S)
    if m:
        return CType("(*)()", 0, False, None), m.group(2) or None
    tokens = re.findall(r"\[[^\]]*\]|\w+|\*", text)
    array = None
    while tokens and tokens[-1].startswith("["):
        dim = tokens.pop()[1:-1].strip()
        array = int(dim) if dim.isdigit() else 0
    name = None
    type_words = [t for t in tokens[:-1] if t not in ("const", "*", "volatile", "restrict", "struct", "enum")]
    if type_words and re.fullmatch(r"\w+", tokens[-1]) and tokens[-1] not in C_TYPE_WORDS:
        name = tokens.pop()
    stars = tokens.count("*")
    first_star = tokens.index("*") if stars else len(tokens)
    const = "const" in tokens[:first_star]
    base = " ".join(t for t in tokens if t not in ("const", "*", "volatile", "restrict", "struct", "enum"))
    if not base or not re.fullmatch(r"\w+( \w+)*", base):
        raise ParseError("cannot read the C type of %r" % text)
    if array == 0:  # a parameter T x[]: a pointer
        stars, array = stars + 1, None
    return CType(base, stars, const, array), name


class Api:
    """What the public headers declare: functions, enums, structs, typedefs, numeric constants."""

    def __init__(self, paths):
        self.functions, self.enums, self.structs, self.constants = {}, {}, dict(EXTERNAL_STRUCTS), {}
        self.handles, self.funcptrs, self.aliases, self.variables = set(), set(), {}, set()
        for path in paths:
            with open(path) as f:
                self._parse(f.read(), os.path.basename(path))
        for enum in self.enums.values():
            self.constants.update(enum)

    def _parse(self, text, header):
        # Comments out (string literals kept), continuation lines joined.
        text = re.sub(r'"(?:\\.|[^"\\\n])*"|/\*.*?\*/|//[^\n]*',
                      lambda m: m.group() if m.group().startswith('"') else " " + "\n" * m.group().count("\n"),
                      text, flags=re.S).replace("\\\n", " ")
        # Preprocessor lines out, keeping numeric #defines; C++-only blocks dropped.
        code, blocks = [], []
        for line in text.split("\n"):
            words = line.strip()[1:].split() if line.strip().startswith("#") else None
            if words is None:
                if "cxx" not in blocks:
                    code.append(line)
            elif not words:
                continue
            elif words[0] in ("if", "ifdef", "ifndef", "elif"):
                if words[0] == "elif":
                    blocks.pop()
                blocks.append("cxx" if words[:2] == ["ifdef", "__cplusplus"] else "other")
            elif words[0] == "else":
                blocks[-1] = {"cxx": "cxx-else", "cxx-else": "cxx"}.get(blocks[-1], blocks[-1])
            elif words[0] == "endif":
                blocks.pop()
            elif words[0] == "define" and "cxx" not in blocks and re.fullmatch(r"HIDET_NCCL_\w+", words[1]):
                value = _c_value(" ".join(words[2:]))
                if value is not None:
                    self.constants[words[1]] = value
        for statement in _split_top(" ".join(" ".join(code).split()), ";"):
            if statement:
                self._statement(statement, header)

    def _statement(self, s, header):
        m = re.fullmatch(r"typedef (enum|struct) ?(\w+)? ?\{(.*)\} ?(\w+)", s)
        if m and m.group(1) == "enum":
            values, value = {}, -1
            for item in filter(None, _split_top(m.group(3), ",")):
                name, _, expr = (x.strip() for x in item.partition("="))
                value = (_c_value(expr) if expr else value + 1)
                if value is None:
                    raise ParseError("cannot evaluate %s = %s" % (name, expr))
                values[name] = value
            self.enums[m.group(4)] = values
        elif m:
            fields = []
            for member in filter(None, _split_top(m.group(3), ";")):
                if "(" in member:
                    fields.append(parse_param(member)[::-1])
                    continue
                first, *more = _split_top(member, ",")
                ctype, name = parse_param(first)
                fields.append((name, ctype))
                for extra in more:  # int rank, nranks: the same type for each
                    stars, rest = re.fullmatch(r"(\**)\s*(.*)", extra).groups()
                    t, n = parse_param(ctype.base + " " + rest)
                    fields.append((n, t._replace(depth=t.depth + len(stars), const=ctype.const)))
            self.structs[m.group(4)] = fields
        elif re.fullmatch(r"typedef .+\(\s*\*\s*\w+\s*\)\s*\(.*\)", s):
            self.funcptrs.add(re.search(r"\(\s*\*\s*(\w+)\s*\)", s).group(1))
        elif re.fullmatch(r"typedef struct \w+ ?\* ?(\w+)", s):
            self.handles.add(s.split("*")[-1].strip())
        elif re.fullmatch(r"typedef [\w ]+ \w+", s):
            old, new = s[len("typedef "):].rsplit(" ", 1)
            self.aliases[new] = old
        elif s.startswith("extern ") and "(" not in s:
            self.variables.add(s.split()[-1])
        else:
            m = re.fullmatch(r"(?:extern )?(.*?[ *])(hidet_nccl_\w+) ?\((.*)\)", s)
            if not m:
                raise ParseError("%s: cannot read this declaration: %s" % (header, s[:120]))
            args = [] if m.group(3).strip() in ("", "void") else [parse_param(a) for a in _split_top(m.group(3), ",")]
            ret, _ = parse_param(m.group(1).strip())
            self.functions[m.group(2)] = Function(m.group(2), ret, args, header)

    def kind(self, ctype):
        """The Kind of a CType, typedefs followed; an unknown type is an error (extend the tables)."""
        base = ctype.base
        while base in self.aliases:
            base = self.aliases[base]
        if base == "(*)()" or base in self.funcptrs:
            kind, struct = "funcptr", None
        elif base in self.handles:
            kind, struct = "handle", None
        elif base in self.enums:
            kind, struct = "int", None
        elif base in self.structs:
            kind, struct = "struct", base
        elif base in EXTERNAL_TYPES:
            kind, struct = EXTERNAL_TYPES[base], (base if EXTERNAL_TYPES[base] == "struct" else None)
        else:
            raise ParseError("no mapping for the C type %r: add it to EXTERNAL_TYPES" % base)
        return Kind(kind, ctype.depth, ctype.const, struct, ctype.array)


def c_text(ctype):
    return ("const " if ctype.const else "") + ctype.base + (" " + "*" * ctype.depth if ctype.depth else "")


# ------------------------------------------------------------------ MAPPING: C -> ctypes

PY_SCALARS = {"int": c_int, "size_t": c_size_t, "double": c_double, "uint64": c_uint64, "char": c_char,
              "handle": c_void_p, "funcptr": c_void_p}


def python_choices(k):
    """The ctypes that may stand for a C type (its Kind), strictly:
    int and every enum -> c_int; size_t -> c_size_t; double -> c_double; void (result) -> None;
    a handle (cudaStream_t, ncclComm_t, MPI_Comm, hidet_nccl_bootstrap_h) or function pointer
    -> c_void_p; const char * -> c_char_p; char * (a buffer) -> c_char_p or POINTER(c_char);
    void * and any struct * -> c_void_p (the package has no Structure mirrors to check);
    any other T * -> POINTER(what T maps to) (int * -> POINTER(c_int), void ** ->
    POINTER(c_void_p), const char ** -> POINTER(c_char_p), ncclComm_t * -> POINTER(c_void_p))."""
    if k.depth == 0:
        return [None] if k.kind == "void" else [PY_SCALARS[k.kind]]
    if k.depth == 1 and k.kind == "char":
        return [c_char_p] if k.const else [c_char_p, POINTER(c_char)]
    if k.depth == 1 and k.kind in ("void", "struct"):
        return [c_void_p]
    return [POINTER(t) for t in python_choices(k._replace(depth=k.depth - 1))]


def _py_name(t):
    if t is None:
        return "None"
    if hasattr(t, "_type_") and isinstance(t._type_, type):
        return "POINTER(%s)" % _py_name(t._type_)
    return "ctypes." + ("c_size_t" if t is c_size_t else t.__name__)


def python_problems(api, prototypes, mpi_prototypes):
    """Where the ctypes tables and the headers disagree, one line each."""
    problems = []
    for name in PYTHON_EXCEPTIONS:
        if name not in api.functions or name in prototypes or name in mpi_prototypes:
            problems.append("Python: exception %s is stale (not in the headers, or bound after all)" % name)
    for name, f in api.functions.items():
        if name in PYTHON_EXCEPTIONS:
            continue
        mpi = f.header == MPI_HEADER
        table, other = (mpi_prototypes, prototypes) if mpi else (prototypes, mpi_prototypes)
        where = "_MPI_PROTOTYPES" if mpi else "_PROTOTYPES"
        if name not in table:
            problems.append("Python: %s (%s) is not in %s%s" % (
                name, f.header, where, " but in the other table" if name in other else ""))
            continue
        restype, argtypes = table[name]
        if len(argtypes) != len(f.args):
            problems.append("Python: %s takes %d arguments in C, %d in %s" % (
                name, len(f.args), len(argtypes), where))
            continue
        checks = [("the result", f.ret, restype)] + [("argument %d (%s)" % (i, arg), ctype, got)
                                                      for i, ((ctype, arg), got) in enumerate(zip(f.args, argtypes), 1)]
        for what, ctype, got in checks:
            choices = python_choices(api.kind(ctype))
            if got not in choices:
                problems.append("Python: %s %s is %s in C, %s in %s; expected %s" % (
                    name, what, c_text(ctype), _py_name(got), where, " or ".join(map(_py_name, choices))))
    for name in list(prototypes) + list(mpi_prototypes):
        if name not in api.functions:
            problems.append("Python: %s is declared but not in the headers" % name)
    return problems


def python_constant_problems(api, package):
    """DTYPES, OPS, STATUS_NAMES and the package's NAME = value constants against the headers."""
    def names(enum):
        return {k[len("HIDET_NCCL_"):].lower(): v for k, v in api.enums[enum].items() if "_NUM_" not in k}
    problems = []
    for table, enum in (("DTYPES", "hidet_nccl_dtype_t"), ("OPS", "hidet_nccl_op_t")):
        mine, header = getattr(package, table), names(enum)
        for key in sorted(set(mine) | set(header)):
            if mine.get(key) != header.get(key):
                problems.append("Python: %s[%r] is %s, the header's %s says %s" % (
                    table, key, mine.get(key, "missing"), enum, header.get(key, "no such name")))
    if len(package._lib.STATUS_NAMES) != len(names("hidet_nccl_status_t")):
        problems.append("Python: STATUS_NAMES names %d statuses, the header has %d" % (
            len(package._lib.STATUS_NAMES), len(names("hidet_nccl_status_t"))))
    for attr in dir(package):
        c_name = "HIDET_NCCL_" + attr
        if attr.isupper() and c_name in api.constants and getattr(package, attr) != api.constants[c_name]:
            problems.append("Python: %s is %r, the header's %s %r" % (attr, getattr(package, attr), c_name,
                                                                      api.constants[c_name]))
    return problems


# ------------------------------------------------------------------ the extension's signatures

EXTENSION_LETTERS = {"int": "i", "size_t": "s", "handle": "p"}  # and any pointer: p


def extension_signatures(text):
    """calls.c's signature table: {C name: (letters, [argument names])}, and its invoke()'s
    calls: {C name: letters read} (a[k].i -> i, .s -> s, .p -> p), through the enum names."""
    table, enum_of = {}, {}
    for m in re.finditer(r'\[(\w+)\] = \{"(hidet_nccl_\w+)", "(\w*)", \{([^}]*)\}\}', text):
        enum_of[m.group(1)] = m.group(2)
        table[m.group(2)] = (m.group(3), re.findall(r'"(\w+)"', m.group(4)))
    body = re.search(r"static hidet_nccl_status_t invoke\(.*?\n\}\n", text, re.S).group(0)
    reads = {}
    for m in re.finditer(r"((?:case \w+:\s*)+)return \(\(\w+ \*\)f\)\(([^;]*)\);", body):
        letters = "".join(re.findall(r"a\[\d+\]\.([isp])", m.group(2)))
        for case in re.findall(r"case (\w+):", m.group(1)):
            reads[enum_of.get(case, case)] = letters
    return table, reads


def extension_problems(api, calls, text):
    """Where calls.c's signatures disagree with the headers or the package's CALLS, one line each."""
    table, reads = extension_signatures(text)
    problems = []
    for name in sorted(set(calls) ^ set(table)):
        problems.append("calls.c: %s is %s" % (name, "in CALLS but has no signature" if name in calls
                                                else "in the signatures but not in the package's CALLS"))
    for name in sorted(set(calls) & set(table)):
        f = api.functions.get(name)
        letters, names = table[name]
        if f is None:
            problems.append("calls.c: %s is not in the headers" % name)
            continue
        want = "".join("p" if api.kind(t).depth else EXTENSION_LETTERS.get(api.kind(t).kind, "?") for t, _ in f.args)
        if letters != want or names != [a for _, a in f.args]:
            problems.append("calls.c: %s is %r %s, the header's %r %s" % (name, letters, names, want,
                                                                          [a for _, a in f.args]))
        if reads.get(name) != letters:
            problems.append("calls.c: invoke() calls %s reading %r, its signature is %r" % (name, reads.get(name),
                                                                                            letters))
    return problems


# ------------------------------------------------------------------ MAPPING: C -> Fortran

F_SCALARS = {"int": "integer(c_int)", "size_t": "integer(c_size_t)", "double": "real(c_double)",
             "uint64": "integer(c_int64_t)", "char": "character(c_char)", "handle": "type(c_ptr)",
             "funcptr": "type(c_funptr)"}
# The C structs and the bind(c) derived types that mirror them.
FORTRAN_TYPES = {"ncclUniqueId": "hidet_nccl_unique_id", "hidet_nccl_reduction_t": "hidet_nccl_reduction",
                 "hidet_nccl_init_options_t": "hidet_nccl_init_options_t"}
# A dummy argument or a component: normalized type, value, intent (None if unsaid), array
# (dimension(...) or name(...)), and the array's extent as written.
Decl = namedtuple("Decl", "type value intent array extent")


def fortran_choices(k):
    """The dummy arguments that may stand for a C argument (Decl patterns: array None is either
    way), strictly, as the module does it:
    int, enums, MPI_Fint -> integer(c_int), value; size_t -> integer(c_size_t), value; double ->
    real(c_double), value; a handle (cudaStream_t, ncclComm_t, hidet_nccl_bootstrap_h) or
    void * -> type(c_ptr), value; a function pointer -> type(c_funptr), value;
    int *, size_t *, double *, ncclComm_t * -> the same type by reference (no value), a scalar
    or an array (dimension(*));
    const char * -> character(kind=c_char), dimension(*), or type(c_ptr), value (c_loc of a
    NUL-terminated string, or c_null_ptr where C takes NULL); char * (a buffer) the same;
    struct S * -> type(<S's mirror>) by reference, or type(c_ptr), value (c_loc, c_null_ptr);
    T ** (const char **, void **) -> type(c_ptr) by reference.
    A value argument, and a pointer to const, is intent(in) or says no intent."""
    if k.depth == 0:
        return [Decl(F_SCALARS[k.kind], True, None, False, None)]
    c_ptr = Decl("type(c_ptr)", True, None, False, None)
    if k.depth == 1 and k.kind == "void":
        return [c_ptr]
    if k.depth == 1 and k.kind == "char":
        return [Decl("character(c_char)", False, None, True, None), c_ptr]
    if k.depth == 1 and k.kind == "struct":
        return [Decl("type(%s)" % FORTRAN_TYPES.get(k.struct, "?" + k.struct), False, None, None, None), c_ptr]
    if k.depth == 1:
        return [Decl(F_SCALARS[k.kind], False, None, None, None)]
    return [Decl("type(c_ptr)", False, None, None, None)]


def _f_text(d):
    return ", ".join([d.type] + (["value"] if d.value else []) + (["intent(%s)" % d.intent] if d.intent else []) +
                     (["dimension(%s)" % (d.extent or "*")] if d.array else []))


def _pattern_text(p):
    return p.type + (", value" if p.value else " by reference") + (
        {True: ", an array", False: ", a scalar", None: ""}[p.array])


def _fortran_arg_ok(k, d):
    fits = any(p.type == d.type and p.value == d.value and p.array in (None, d.array) for p in fortran_choices(k))
    read_only = d.value or (k.depth == 1 and k.const)
    return fits and not (read_only and d.intent not in (None, "in"))


def _fortran_field(k):
    """A component's type for a C field: pointers are type(c_ptr); structs their mirror."""
    if k.depth:
        return "type(c_ptr)"
    return "type(%s)" % FORTRAN_TYPES.get(k.struct, "?") if k.kind == "struct" else F_SCALARS[k.kind]


def _decls(line):
    """[(name, Decl)] of a declaration line 'integer(c_int), value, intent(in) :: a, b(*)'."""
    left, _, right = line.partition("::")
    spec, *attrs = _split_top(left, ",")
    spec = re.sub(r"kind=|,len=1\b", "", re.sub(r"\s+", "", spec.lower()))
    value, intent, extent = False, None, None
    for attr in (a.lower().replace(" ", "") for a in attrs):
        if attr == "value":
            value = True
        elif attr.startswith("intent("):
            intent = attr[len("intent("):-1]
        elif attr.startswith("dimension("):
            extent = attr[len("dimension("):-1]
        elif attr != "parameter" and attr != "bind(c)":
            raise ParseError("Fortran: attribute %r in %r: not understood by this test" % (attr, line))
    out = []
    for item in _split_top(right, ","):
        m = re.fullmatch(r"(\w+)\s*(?:\((.*)\))?\s*(?:=\s*(.*))?", item, re.S)
        name, own_extent, init = m.group(1).lower(), m.group(2), m.group(3)
        ext = own_extent or extent
        out.append((name, Decl(spec, value, intent, ext is not None, ext), init))
    return out


class FortranModule:
    """The interfaces, bind(c) types and parameters of the module's source."""

    def __init__(self, text):
        text = "\n".join(re.sub(r"""("[^"]*"|'[^']*')|!.*""", lambda m: m.group(1) or "", line)
                         for line in text.split("\n"))
        lines = [ln.strip() for ln in re.sub(r"&\s*\n\s*&?", " ", text).split("\n") if ln.strip()]
        self.interfaces, self.types, self.parameters = {}, {}, {}
        current, fields, in_interface = None, None, False
        for line in lines:
            low = line.lower()
            if low == "contains":
                break
            if low == "interface":
                in_interface = True
            elif low == "end interface":
                in_interface = False
            elif in_interface and current is None:
                m = re.fullmatch(r"(.*?)\b(function|subroutine)\s+(\w+)\s*\(([^)]*)\)\s*(.*)", line, re.I)
                bind = m and re.search(r"""bind\s*\(\s*c\s*,\s*name\s*=\s*["']([^"']*)["']\s*\)""", m.group(5), re.I)
                if not bind:
                    raise ParseError("Fortran: an interface without bind(c, name=...): %s" % line)
                result = re.sub(r"\s+|kind=", "", m.group(1).lower()) or None
                current = {"name": m.group(3).lower(), "bind": bind.group(1), "result": result,
                           "dummies": [a.strip().lower() for a in m.group(4).split(",") if a.strip()], "decls": {}}
            elif in_interface:
                if re.fullmatch(r"end(\s+(function|subroutine)(\s+\w+)?)?", low):
                    self.interfaces[current["bind"]] = current
                    current = None
                elif low != "import" and not low.startswith("import "):
                    current["decls"].update((n, d) for n, d, _ in _decls(line))
            elif re.fullmatch(r"type\s*,\s*bind\s*\(\s*c\s*\)\s*::\s*\w+", low):
                fields = self.types.setdefault(low.split("::")[1].strip(), [])
            elif fields is not None and re.fullmatch(r"end\s*type(\s+\w+)?", low):
                fields = None
            elif fields is not None:
                fields.extend((n, d) for n, d, _ in _decls(line))
            elif "parameter" in low.split("::")[0]:
                for name, _, init in _decls(line):
                    self.parameters[name] = self._value(init)

    def _value(self, expr):
        """A parameter's value: literals, huge(0_c_int), other parameters."""
        expr = re.sub(r"huge\(\s*0_c_int\s*\)", str(2 ** 31 - 1), expr.lower())
        expr = re.sub(r"(\d)_c_\w+", r"\1", expr)
        expr = re.sub(r"[a-z_]\w*", lambda m: repr(self.parameters.get(m.group(), m.group())), expr)
        return eval(expr, {"__builtins__": {}}) if re.fullmatch(r"[\d\s().+\-*/]+", expr) else expr


def fortran_problems(api, module):
    """Where the Fortran module and the headers disagree, one line each."""
    problems = []
    for name in FORTRAN_EXCEPTIONS:
        if name not in api.functions or name in module.interfaces:
            problems.append("Fortran: exception %s is stale (not in the headers, or bound after all)" % name)
    for name, f in api.functions.items():
        if name in FORTRAN_EXCEPTIONS:
            continue
        if name not in module.interfaces:
            problems.append("Fortran: %s (%s) has no interface" % (name, f.header))
            continue
        face = module.interfaces[name]
        if face["name"] != name:
            problems.append("Fortran: bind(c, name=%r) is named %s, not its C name" % (name, face["name"]))
        ret = api.kind(f.ret)
        want = None if ret.kind == "void" and ret.depth == 0 else (
            "type(c_ptr)" if ret.depth else F_SCALARS[ret.kind])
        if face["result"] != want:
            problems.append("Fortran: %s returns %s in C, %s in Fortran; expected %s" % (
                name, c_text(f.ret), face["result"] or "nothing (a subroutine)", want or "a subroutine"))
        if len(face["dummies"]) != len(f.args):
            problems.append("Fortran: %s takes %d arguments in C, %d in Fortran" % (
                name, len(f.args), len(face["dummies"])))
            continue
        for i, ((ctype, arg), dummy) in enumerate(zip(f.args, face["dummies"]), 1):
            decl, k = face["decls"].get(dummy), api.kind(ctype)
            if decl is None or not _fortran_arg_ok(k, decl):
                problems.append("Fortran: %s argument %d (%s: %s) is %s; expected %s%s" % (
                    name, i, arg, c_text(ctype), _f_text(decl) if decl else "undeclared",
                    " or ".join(map(_pattern_text, fortran_choices(k))),
                    ", intent(in) or none" if k.depth == 0 or (k.depth == 1 and k.const) else ""))
    for bind in module.interfaces:
        if bind not in api.functions and bind not in FORTRAN_LIBC_HELPERS:
            problems.append("Fortran: binds %s, which the headers do not declare" % bind)
    # The derived types, field by field.
    for c_struct, f_type in FORTRAN_TYPES.items():
        if f_type not in module.types:
            problems.append("Fortran: type %s (mirror of %s) is missing" % (f_type, c_struct))
            continue
        want = ["%s %s%s" % (_fortran_field(api.kind(t)), n, "(%d)" % t.array if t.array else "")
                for n, t in api.structs[c_struct]]
        got = ["%s %s%s" % (d.type, n, "(%s)" % d.extent if d.extent else "") for n, d in module.types[f_type]]
        for i, (w, g) in enumerate(zip_longest(want, got), 1):
            if w != g:  # the first difference only
                problems.append("Fortran: type %s field %d is %s; %s's would be %s" % (
                    f_type, i, g or "missing", c_struct, w or "nothing (it has fewer fields)"))
                break
    for f_type in module.types:
        if f_type not in FORTRAN_TYPES.values():
            problems.append("Fortran: bind(c) type %s mirrors no header struct (add it to FORTRAN_TYPES)" % f_type)
    # Parameters: every enumerator (but the NUM_ counts) and numeric #define, with its value.
    for c_name, value in api.constants.items():
        f_value = module.parameters.get(c_name.lower())
        if f_value is None and ("_NUM_" in c_name or c_name in FORTRAN_CONSTANT_EXCEPTIONS):
            continue
        if f_value != value:
            problems.append("Fortran: %s is %s, the header's %r" % (
                c_name, "missing" if f_value is None else repr(f_value), value))
    return problems


# ------------------------------------------------------------------ the tests

def _args():
    headers = [a for a in sys.argv[1:] if a.endswith(".h")]
    package = [a for a in sys.argv[1:] if a.endswith("__init__.py")]
    fortran = [a for a in sys.argv[1:] if a.endswith(".f90")]
    extension = [a for a in sys.argv[1:] if a.endswith(".c")]
    if not headers or len(package) != 1 or len(fortran) != 1 or len(extension) != 1:
        sys.exit(__doc__.rsplit("\n\n", 1)[-1])
    return headers, package[0], fortran[0], extension[0]


HEADERS, PACKAGE_INIT, FORTRAN, EXTENSION = _args()
del sys.argv[1:]
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.realpath(PACKAGE_INIT))))
package = importlib.import_module("hidet_nccl")
with open(FORTRAN) as _f:
    FORTRAN_TEXT = _f.read()
with open(EXTENSION) as _f:
    EXTENSION_TEXT = _f.read()


class BindingsMatchHeaderTest(unittest.TestCase):

    def setUp(self):
        self.api = Api(HEADERS)

    def test_headers_read(self):
        # Every header has functions, and all three kinds of them were found.
        by_header = {os.path.basename(h): [f for f in self.api.functions.values() if f.header == os.path.basename(h)]
                     for h in HEADERS}
        for header in ("hidet_nccl.h", "bootstrap.h", MPI_HEADER):
            self.assertTrue(by_header.get(header), header)
        for f in self.api.functions.values():  # every type has a mapping
            for ctype in [f.ret] + [t for t, _ in f.args]:
                self.api.kind(ctype)

    def test_python_matches_header(self):
        problems = python_problems(self.api, package._lib._PROTOTYPES, package._lib._MPI_PROTOTYPES)
        problems += python_constant_problems(self.api, package)
        self.assertEqual(problems, [], "\n" + "\n".join(problems))

    def test_extension_matches_header(self):
        problems = extension_problems(self.api, package._lib.CALLS, EXTENSION_TEXT)
        self.assertEqual(problems, [], "\n" + "\n".join(problems))
        table, reads = extension_signatures(EXTENSION_TEXT)  # the table was read whole
        self.assertEqual(len(table), len(package._lib.CALLS))
        self.assertEqual(set(reads), set(table))

    def test_extension_drift_is_caught(self):
        """A collective of the header retyped, or calls.c's table, invoke() or CALLS edited."""
        def problems(headers=None, text=EXTENSION_TEXT, calls=package._lib.CALLS):
            with tempfile.TemporaryDirectory() as tmp:
                paths = []
                for h in HEADERS:
                    with open(h) as f:
                        header = f.read()
                    for old, new in (headers or {}).items():
                        header = header.replace(old, new)
                    paths.append(os.path.join(tmp, os.path.basename(h)))
                    with open(paths[-1], "w") as f:
                        f.write(header)
                return extension_problems(Api(paths), calls, text)
        self.assertEqual(problems(), [])
        send = "hidet_nccl_send(int comm_id, const void *sendbuff, size_t count"
        edits = [
            ({send: send.replace("size_t count", "int count")}, EXTENSION_TEXT, "hidet_nccl_send"),
            ({send: send.replace("comm_id", "comm")}, EXTENSION_TEXT, "hidet_nccl_send"),
            (None, EXTENSION_TEXT.replace('"ipsiip", {"comm_id", "recvbuff"', '"ipiiip", {"comm_id", "recvbuff"'),
             "hidet_nccl_recv"),
            (None, EXTENSION_TEXT.replace("(a[0].i, a[1].p, a[2].s, a[3].i, a[4].i, a[5].p);\n    case RECV",
                                          "(a[0].i, a[1].p, a[2].i, a[3].i, a[4].i, a[5].p);\n    case RECV"),
             "hidet_nccl_send"),
            (None, EXTENSION_TEXT.replace("    case BARRIER:\n", ""), "hidet_nccl_barrier"),
        ]
        for headers, text, named in edits:
            with self.subTest(named=named, header=headers):
                self.assertNotEqual((headers, text), (None, EXTENSION_TEXT))
                found = problems(headers, text)
                self.assertTrue(any(named in p for p in found), found)
        found = problems(calls=package._lib.CALLS + ("hidet_nccl_comm_check",))
        self.assertTrue(any("hidet_nccl_comm_check" in p for p in found), found)

    def test_fortran_matches_header(self):
        problems = fortran_problems(self.api, FortranModule(FORTRAN_TEXT))
        self.assertEqual(problems, [], "\n" + "\n".join(problems))

    def test_parser_reads_tricky_declarations(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "tricky.h")
            with open(path, "w") as f:
                f.write('#ifdef __cplusplus\nextern "C" {\n#endif\n#define HIDET_NCCL_X (-3) /* c */\n'
                        "typedef struct hidet_nccl_thing *hidet_nccl_thing_h;\n"
                        "typedef int (*hidet_nccl_cb_t)(void *arg, const char *s);\n"
                        "typedef enum { HIDET_NCCL_A = 2, HIDET_NCCL_B, HIDET_NCCL_NUM_AB } hidet_nccl_ab_t;\n"
                        "hidet_nccl_ab_t hidet_nccl_f(const char **names, // a comment\n"
                        "    void **ptrs,\n  hidet_nccl_cb_t cb, int (*fn)(int, int), hidet_nccl_thing_h *out,\n"
                        "    const int arr[], size_t n);\n"
                        "const char *hidet_nccl_g(void);\n#ifdef __cplusplus\n}\n#endif\n")
            api = Api([path])
        self.assertEqual(api.constants, {"HIDET_NCCL_X": -3, "HIDET_NCCL_A": 2, "HIDET_NCCL_B": 3,
                                         "HIDET_NCCL_NUM_AB": 4})
        f = api.functions["hidet_nccl_f"]
        self.assertEqual([a for _, a in f.args], ["names", "ptrs", "cb", "fn", "out", "arr", "n"])
        self.assertEqual([api.kind(t)[:3] for t, _ in [(f.ret, None)] + f.args], [
            ("int", 0, False), ("char", 2, True), ("void", 2, False), ("funcptr", 0, False),
            ("funcptr", 0, False), ("handle", 1, False), ("int", 1, True), ("size_t", 0, False)])
        self.assertEqual(api.kind(api.functions["hidet_nccl_g"].ret)[:3], ("char", 1, True))
        self.assertEqual(python_choices(api.kind(f.args[0][0])), [POINTER(c_char_p)])
        self.assertEqual(python_choices(api.kind(f.args[4][0])), [POINTER(c_void_p)])

    def test_drift_is_caught(self):
        """Each edit of a header copy or a binding makes the check fail, naming the function."""
        header_edits = [  # (file, old, new, function named in both bindings' problems)
            ("hidet_nccl.h", "hidet_nccl_comm_rank(int comm_id, int *rank)",
             "hidet_nccl_comm_rank(int comm_id, int *rank, int extra)", "hidet_nccl_comm_rank"),
            ("hidet_nccl.h", "hidet_nccl_send(int comm_id, const void *sendbuff, size_t count",
             "hidet_nccl_send(int comm_id, const void *sendbuff, int count", "hidet_nccl_send"),
            ("hidet_nccl.h", "hidet_nccl_comm_wait(int comm_id, cudaStream_t stream, double",
             "hidet_nccl_comm_wait(int comm_id, cudaStream_t *stream, double", "hidet_nccl_comm_wait"),
            ("hidet_nccl.h", "const char *hidet_nccl_last_error(void);", "int hidet_nccl_last_error(void);",
             "hidet_nccl_last_error"),
            ("hidet_nccl.h", "hidet_nccl_status_t hidet_nccl_comm_check(int comm_id);", "",
             "hidet_nccl_comm_check"),
            ("hidet_nccl.h", "hidet_nccl_status_t hidet_nccl_finalize(void);",
             "hidet_nccl_status_t hidet_nccl_finalize(void);\nhidet_nccl_status_t hidet_nccl_new(int x);",
             "hidet_nccl_new"),
            ("bootstrap.h", "hidet_nccl_bootstrap_local_rank(hidet_nccl_bootstrap_h bs, int *local_rank,",
             "hidet_nccl_bootstrap_local_rank(hidet_nccl_bootstrap_h bs, size_t *local_rank,",
             "hidet_nccl_bootstrap_local_rank"),
            (MPI_HEADER, "hidet_nccl_mpi_init(int *comm_id)", "hidet_nccl_mpi_init(int *comm_id, double t)",
             "hidet_nccl_mpi_init"),
            ("hidet_nccl.h", "HIDET_NCCL_FLOAT64,", "HIDET_NCCL_FLOAT64, HIDET_NCCL_FLOAT128,", "FLOAT8_E4M3"),
            ("hidet_nccl.h", "#define HIDET_NCCL_SHRINK_ABORT 1", "#define HIDET_NCCL_SHRINK_ABORT 2",
             "SHRINK_ABORT"),
        ]
        fortran_only = [
            ("hidet_nccl.h", "hidet_nccl_comm_size(int comm_id, int *size)",
             "hidet_nccl_comm_size(int comm_id, const int *size)", "hidet_nccl_comm_size"),
            ("bootstrap.h", "    int split_share; ", "    int split_share; int new_knob; ", "init_options"),
        ]
        module = FortranModule(FORTRAN_TEXT)
        for file, old, new, named in header_edits + fortran_only:
            with self.subTest(edit=new or "removed " + old), tempfile.TemporaryDirectory() as tmp:
                paths = []
                for h in HEADERS:
                    with open(h) as f:
                        text = f.read()
                    if os.path.basename(h) == file:
                        self.assertIn(old, text)
                        text = text.replace(old, new)
                    paths.append(os.path.join(tmp, os.path.basename(h)))
                    with open(paths[-1], "w") as f:
                        f.write(text)
                api = Api(paths)
                f_problems = fortran_problems(api, module)
                self.assertTrue(any(named in p for p in f_problems), f_problems)
                if (file, old, new, named) in header_edits:
                    py_problems = python_problems(api, package._lib._PROTOTYPES, package._lib._MPI_PROTOTYPES)
                    py_problems += python_constant_problems(api, package)
                    self.assertTrue(any(named.lower() in p.lower() for p in py_problems), py_problems)
        # The bindings edited, the headers as they are.
        api = Api(HEADERS)
        fortran_edits = [
            ("integer(c_int), value, intent(in) :: peer", "integer(c_int), intent(in) :: peer", "hidet_nccl_send"),
            ("type(c_ptr), value, intent(in) :: scalar", "type(c_ptr), intent(in) :: scalar",
             "hidet_nccl_op_premul_sum"),
            ("integer(c_size_t), intent(out) :: bytes", "integer(c_int), intent(out) :: bytes",
             "hidet_nccl_dtype_size"),
            ('bind(c, name="hidet_nccl_group_end")', 'bind(c, name="hidet_nccl_group_ends")', "hidet_nccl_group_end"),
            ("HIDET_NCCL_AVG = 4", "HIDET_NCCL_AVG = 5", "HIDET_NCCL_AVG"),
            ("    real(c_double) :: timeout_s\n", "    integer(c_int) :: timeout_s\n", "init_options"),
        ]
        for old, new, named in fortran_edits:
            with self.subTest(fortran=new):
                self.assertIn(old, FORTRAN_TEXT)
                problems = fortran_problems(api, FortranModule(FORTRAN_TEXT.replace(old, new, 1)))
                self.assertTrue(any(named in p for p in problems), problems)
        c_int_p = POINTER(c_int)
        python_edits = [  # (table edit, function named)
            (("hidet_nccl_all_reduce", 3, c_int), "hidet_nccl_all_reduce"),      # size_t count as c_int
            (("hidet_nccl_comm_wait", 1, c_int_p), "hidet_nccl_comm_wait"),      # a stream as int *
            (("hidet_nccl_mem_alloc", 2, c_void_p), "hidet_nccl_mem_alloc"),     # void ** as void *
            (("hidet_nccl_setting", None, None), "hidet_nccl_setting"),          # an argument dropped
            (("hidet_nccl_mpi_init", None, None), "hidet_nccl_mpi_init"),
        ]
        for (name, index, new), named in python_edits:
            with self.subTest(python=name):
                tables = [dict(package._lib._PROTOTYPES), dict(package._lib._MPI_PROTOTYPES)]
                table = tables[0] if name in tables[0] else tables[1]
                restype, argtypes = table[name]
                argtypes = list(argtypes)
                if index is None:
                    argtypes.pop()
                else:
                    argtypes[index] = new
                table[name] = (restype, argtypes)
                problems = python_problems(api, *tables)
                self.assertTrue(any(named in p for p in problems), problems)
        tables = [dict(package._lib._PROTOTYPES, hidet_nccl_gone=(c_int, [])), dict(package._lib._MPI_PROTOTYPES)]
        self.assertTrue(any("hidet_nccl_gone" in p for p in python_problems(api, *tables)))
        tables = [dict(package._lib._PROTOTYPES), dict(package._lib._MPI_PROTOTYPES)]
        tables[0]["hidet_nccl_status_string"] = (c_void_p, tables[0]["hidet_nccl_status_string"][1])
        self.assertTrue(any("hidet_nccl_status_string" in p for p in python_problems(api, *tables)))


if __name__ == "__main__":
    unittest.main(verbosity=2)
