"""Repository rules that locate CUDA, NCCL headers, Open MPI and CUnit on this machine.

Each rule tries a documented list of places in order, symlinks what it found into the
repository, and generates a BUILD file. When nothing is found it still generates a BUILD
file, whose targets fail at analysis with a message that lists every place searched and
the variable to set, so that targets which do not need the dependency still build.

Search orders (also in docs/building.md):
  CUDA:  $CUDA_HOME, the nvcc on PATH (its ../), /usr/local/cuda
  NCCL:  $NCCL_HOME/include, <site-packages>/nvidia/nccl/include of $VIRTUAL_ENV, of
         $CONDA_PREFIX and of the python3 on PATH (wheels nvidia-nccl-cu11/cu12/cu13),
         <cuda>/include, /usr/include
  MPI:   $MPI_HOME, `mpicc --showme:incdirs/libdirs`, /usr/lib/x86_64-linux-gnu/openmpi
  CUnit: $CUNIT_HOME, /usr (Debian's libcunit1-dev)
  Python.h (the Python package's extension, headers only): the include folder that sysconfig
         names for $PYTHON_BIN_PATH, else for the python3 on PATH (Debian: python3-dev), then
         /usr/include/python3.N, newest first; 3.10 or later (the stable ABI it builds on)
"""

_MISSING_BZL = '''
def _missing_impl(ctx):
    fail(ctx.attr.message)

missing = rule(implementation = _missing_impl, attrs = {"message": attr.string()})
'''

def _write_missing(rctx, targets, what, searched, variable):
    """BUILD whose every target fails with a message naming what was searched."""
    message = "{} not found. Searched, in order:\\n  {}\\nSet {} to its location and run again.".format(
        what,
        "\\n  ".join(searched),
        variable,
    )
    rctx.file("missing.bzl", _MISSING_BZL)
    lines = ['load(":missing.bzl", "missing")', 'package(default_visibility = ["//visibility:public"])']
    for t in targets:
        lines.append('missing(name = "{}", message = "{}")'.format(t, message))
    rctx.file("BUILD", "\n".join(lines) + "\n")

def _first_with(rctx, candidates, relative):
    """The first directory of candidates that holds the file `relative`, or None."""
    for c in candidates:
        if c and rctx.path(c + "/" + relative).exists:
            return c
    return None

def _python_site_packages(rctx):
    """site-packages folders of the active venv, conda env and the python3 on PATH."""
    dirs = []
    script = "import site, sys; print('\\n'.join(site.getsitepackages() + [site.getusersitepackages()]))"
    for prefix in [rctx.os.environ.get("VIRTUAL_ENV"), rctx.os.environ.get("CONDA_PREFIX")]:
        if prefix:
            for py in ["python3", "python"]:
                exe = rctx.path(prefix + "/bin/" + py)
                if exe.exists:
                    r = rctx.execute([exe, "-c", script])
                    if r.return_code == 0:
                        dirs += [d for d in r.stdout.splitlines() if d]
                    break
    py = rctx.which("python3")
    if py:
        r = rctx.execute([py, "-c", script])
        if r.return_code == 0:
            dirs += [d for d in r.stdout.splitlines() if d]
    return dirs

def _cuda_candidates(rctx):
    out = []
    if rctx.os.environ.get("CUDA_HOME"):
        out.append(rctx.os.environ["CUDA_HOME"])
    nvcc = rctx.which("nvcc")
    if nvcc:
        out.append(str(nvcc.dirname.dirname))
    out.append("/usr/local/cuda")
    return out

def _local_cuda_impl(rctx):
    candidates = _cuda_candidates(rctx)
    root = _first_with(rctx, candidates, "include/cuda_runtime_api.h")
    if not root:
        _write_missing(rctx, ["cuda_headers", "cudart_static"], "CUDA (include/cuda_runtime_api.h)",
                       candidates, "CUDA_HOME")
        return
    rctx.symlink(root + "/include", "include")
    libdir = _first_with(rctx, [root + "/lib64", root + "/lib", root + "/targets/x86_64-linux/lib"],
                         "libcudart_static.a")
    if libdir:
        rctx.symlink(libdir + "/libcudart_static.a", "lib/libcudart_static.a")
    rctx.file("root.txt", root + "\n")
    rctx.file("BUILD", """package(default_visibility = ["//visibility:public"])
# Found at {root}
exports_files(["root.txt"])
cc_library(
    name = "cuda_headers",
    hdrs = glob(["include/*.h", "include/*.hpp", "include/crt/**", "include/nv/**"]),
    includes = ["include"],
)
cc_import(
    name = "cudart_static_import",
    static_library = "lib/libcudart_static.a",
)
# The CUDA runtime linked statically, so that a binary needs nothing of CUDA's at run time
# but the driver.
cc_library(
    name = "cudart_static",
    deps = [":cuda_headers", ":cudart_static_import"],
    linkopts = ["-ldl", "-lpthread", "-lrt"],
)
""".format(root = root))

local_cuda = repository_rule(
    implementation = _local_cuda_impl,
    environ = ["CUDA_HOME", "PATH"],
    local = True,
)

def _local_nccl_headers_impl(rctx):
    candidates = []
    if rctx.os.environ.get("NCCL_HOME"):
        candidates.append(rctx.os.environ["NCCL_HOME"] + "/include")
    for sp in _python_site_packages(rctx):
        candidates.append(sp + "/nvidia/nccl/include")
    for cuda in _cuda_candidates(rctx):
        candidates.append(cuda + "/include")
    candidates.append("/usr/include")
    inc = _first_with(rctx, candidates, "nccl.h")
    if not inc:
        _write_missing(rctx, ["nccl_headers"], "NCCL header nccl.h", candidates, "NCCL_HOME")
        return
    rctx.symlink(inc + "/nccl.h", "include/nccl.h")
    rctx.file("include_dir.txt", inc + "\n")
    rctx.file("BUILD", """package(default_visibility = ["//visibility:public"])
exports_files(["include_dir.txt"])
# Found at {inc}. Headers only: libnccl is loaded at run time by core/nccl/nccl_loader.c.
cc_library(
    name = "nccl_headers",
    hdrs = ["include/nccl.h"],
    includes = ["include"],
    deps = ["@local_cuda//:cuda_headers"],
)
""".format(inc = inc))

local_nccl_headers = repository_rule(
    implementation = _local_nccl_headers_impl,
    environ = ["NCCL_HOME", "CUDA_HOME", "VIRTUAL_ENV", "CONDA_PREFIX", "PATH"],
    local = True,
)

def _local_mpi_impl(rctx):
    searched = []
    inc_dirs, lib_dirs = [], []
    home = rctx.os.environ.get("MPI_HOME")
    if home:
        searched.append(home + "/include/mpi.h")
        if rctx.path(home + "/include/mpi.h").exists:
            inc_dirs, lib_dirs = [home + "/include"], [home + "/lib", home + "/lib64"]
    mpicc = rctx.which("mpicc")
    if not inc_dirs and mpicc:
        searched.append("`mpicc --showme:incdirs` ({})".format(mpicc))
        r = rctx.execute([mpicc, "--showme:incdirs"])
        r2 = rctx.execute([mpicc, "--showme:libdirs"])
        if r.return_code == 0 and r2.return_code == 0:
            inc_dirs = [d for d in r.stdout.strip().split(" ") if d]
            lib_dirs = [d for d in r2.stdout.strip().split(" ") if d]
    debian = "/usr/lib/x86_64-linux-gnu/openmpi"
    if not inc_dirs:
        searched.append(debian + "/include/mpi.h")
        if rctx.path(debian + "/include/mpi.h").exists:
            inc_dirs, lib_dirs = [debian + "/include"], [debian + "/lib"]
    inc = _first_with(rctx, inc_dirs, "mpi.h")
    lib = _first_with(rctx, lib_dirs, "libmpi.so")
    if not inc or not lib:
        _write_missing(rctx, ["mpi"], "MPI (mpi.h and libmpi.so)", searched, "MPI_HOME")
        return
    rctx.symlink(inc, "include")
    rctx.file("paths.txt", inc + "\n" + lib + "\n")
    rctx.file("BUILD", """package(default_visibility = ["//visibility:public"])
exports_files(["paths.txt"])
# Found: headers {inc}, library {lib}
cc_library(
    name = "mpi",
    hdrs = glob(["include/**/*.h"]),
    includes = ["include"],
    linkopts = ["-L{lib}", "-Wl,-rpath,{lib}", "-lmpi"],
)
""".format(inc = inc, lib = lib))

local_mpi = repository_rule(
    implementation = _local_mpi_impl,
    environ = ["MPI_HOME", "PATH"],
    local = True,
)

def _local_cunit_impl(rctx):
    candidates = []
    if rctx.os.environ.get("CUNIT_HOME"):
        candidates.append(rctx.os.environ["CUNIT_HOME"])
    candidates.append("/usr")
    root = _first_with(rctx, candidates, "include/CUnit/CUnit.h")
    lib = None
    if root:
        for d in [root + "/lib/x86_64-linux-gnu", root + "/lib64", root + "/lib"]:
            if rctx.path(d + "/libcunit.a").exists:
                lib = d + "/libcunit.a"
                break
    if not lib:
        _write_missing(rctx, ["cunit"], "CUnit (include/CUnit/CUnit.h and libcunit.a; Debian: libcunit1-dev)",
                       candidates, "CUNIT_HOME")
        return
    rctx.symlink(root + "/include/CUnit", "include/CUnit")
    rctx.symlink(lib, "lib/libcunit.a")
    rctx.file("BUILD", """package(default_visibility = ["//visibility:public"])
# Found at {root}. Linked statically so test binaries run where CUnit is not installed.
cc_import(name = "cunit_import", static_library = "lib/libcunit.a")
cc_library(
    name = "cunit",
    hdrs = glob(["include/CUnit/*.h"]),
    includes = ["include"],
    deps = [":cunit_import"],
)
""".format(root = root))

local_cunit = repository_rule(
    implementation = _local_cunit_impl,
    environ = ["CUNIT_HOME"],
    local = True,
)

def _local_pmix_headers_impl(rctx):
    """pmix.h for the PMIx bootstrap (types only: libpmix is loaded at run time). When it is
    not found the library still builds, and the PMIx bootstrap says at run time that it was
    built without PMIx."""
    candidates = []
    if rctx.os.environ.get("PMIX_HOME"):
        candidates.append(rctx.os.environ["PMIX_HOME"] + "/include")
    pkg = rctx.which("pkg-config")
    if pkg:
        r = rctx.execute([pkg, "--variable=includedir", "pmix"])
        if r.return_code == 0 and r.stdout.strip():
            candidates.append(r.stdout.strip())
    candidates += ["/usr/lib/x86_64-linux-gnu/pmix2/include", "/usr/include/pmix", "/usr/include", "/usr/local/include"]
    inc = _first_with(rctx, candidates, "pmix.h")
    if not inc:
        rctx.file("BUILD", """package(default_visibility = ["//visibility:public"])
# pmix.h was not found (searched: {searched}; set PMIX_HOME, or install libpmix-dev):
# the PMIx bootstrap is built as a stub that says so.
cc_library(name = "pmix_headers", defines = ["HIDET_NCCL_NO_PMIX_HEADERS"])
""".format(searched = ", ".join(candidates)))
        return
    rctx.symlink(inc, "include")
    rctx.file("BUILD", """package(default_visibility = ["//visibility:public"])
# Found: {inc}
cc_library(
    name = "pmix_headers",
    hdrs = glob(["include/pmix*.h"]),
    includes = ["include"],
)
""".format(inc = inc))

local_pmix_headers = repository_rule(
    implementation = _local_pmix_headers_impl,
    environ = ["PMIX_HOME", "PATH"],
    local = True,
)

_PYTHON_INCLUDE = "import sysconfig; print(sysconfig.get_path('include'))"

def _python_version(rctx, inc):
    """(major, minor) that inc/patchlevel.h says, or None."""
    patchlevel = rctx.path(inc + "/patchlevel.h")
    if not patchlevel.exists:
        return None
    major, minor = None, None
    for line in rctx.read(patchlevel).splitlines():
        words = [w for w in line.replace("\t", " ").split(" ") if w]
        if len(words) >= 3 and words[0] == "#define" and words[2].isdigit():
            if words[1] == "PY_MAJOR_VERSION":
                major = int(words[2])
            elif words[1] == "PY_MINOR_VERSION":
                minor = int(words[2])
    return (major, minor) if major != None and minor != None else None

def _minor_of(folder):
    """11 of /usr/include/python3.11 (0 when there is no number)."""
    minor = folder.split("python3.")[-1]
    return int(minor) if minor.isdigit() else 0

def _local_python_headers_impl(rctx):
    """Python.h for bindings/python's extension (hidet_nccl/_calls.abi3.so). It is built on the
    stable ABI of 3.10, so any CPython 3.10 or later headers do, and the one binary loads in
    every later CPython; it links no libpython."""
    candidates = []
    py = rctx.os.environ.get("PYTHON_BIN_PATH") or rctx.which("python3")
    if py:
        r = rctx.execute([py, "-c", _PYTHON_INCLUDE])
        if r.return_code == 0 and r.stdout.strip():
            candidates.append(r.stdout.strip())
    system = rctx.path("/usr/include")
    if system.exists:
        found = [str(d) for d in system.readdir() if d.basename.startswith("python3.")]
        candidates += sorted(found, key = _minor_of, reverse = True)
    searched = []
    inc = None
    for c in candidates:
        version = _python_version(rctx, c)
        if not rctx.path(c + "/Python.h").exists or version == None:
            searched.append(c + "/Python.h")
        elif version[0] != 3 or version[1] < 10:
            searched.append("{}/Python.h (Python {}.{}: 3.10 or later needed)".format(c, version[0], version[1]))
        else:
            inc = c
            break
    if not inc:
        _write_missing(rctx, ["python_headers"], "Python.h of CPython 3.10 or later (Debian: python3-dev)", searched,
                       "PYTHON_BIN_PATH (a python3 whose headers are installed)")
        return
    rctx.symlink(inc, "include")
    rctx.file("include_dir.txt", inc + "\n")
    rctx.file("BUILD", """package(default_visibility = ["//visibility:public"])
exports_files(["include_dir.txt"])
# Found at {inc}. Headers only: an extension module links no libpython.
cc_library(
    name = "python_headers",
    hdrs = glob(["include/**/*.h"]),
    includes = ["include"],
)
""".format(inc = inc))

local_python_headers = repository_rule(
    implementation = _local_python_headers_impl,
    environ = ["PYTHON_BIN_PATH", "PATH"],
    local = True,
)
