#!/usr/bin/env bash
# Install into a temporary prefix, then build the examples out of tree with mpicc + pkg-config
# and with CMake's find_package(HidetNccl), and run them up to the point where a GPU is needed.
# Arguments: the //:install target's arguments (files), then a file of examples/fortran, a file
# of examples/ and tests/install_project/CMakeLists.txt.
set -u
args=("$@")
n=${#args[@]}
fortran=$(dirname "$(realpath "${args[n - 3]}")")
examples=$(dirname "$(realpath "${args[n - 2]}")")
project=$(dirname "$(realpath "${args[n - 1]}")")
files=("${args[@]:0:n-3}")
tmp=${TEST_TMPDIR:-$(mktemp -d)}/install
rm -rf "$tmp"
mkdir -p "$tmp"
prefix=$tmp/prefix
passed=0
failed=0
check() { local what=$1; shift; if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $what"; fi; }
no_gpu_said() { grep -qiE "no CUDA device is visible|No usable GPU" "$1" || { echo "--- $1:"; cat "$1"; return 1; }; }

bash packaging/install.sh "${files[@]}" --prefix "$prefix" >"$tmp/install.log" 2>&1
check "install succeeds" [ $? -eq 0 ]
for f in include/hidet_nccl/hidet_nccl.h include/hidet_nccl/bootstrap.h include/hidet_nccl/bootstrap_mpi.h \
    lib/libhidet_nccl.a lib/libhidet_nccl_mpi.a lib/pkgconfig/hidet_nccl.pc lib/pkgconfig/hidet_nccl_mpi.pc \
    lib/cmake/HidetNccl/HidetNcclConfig.cmake lib/cmake/HidetNccl/HidetNcclConfigVersion.cmake \
    bin/hidet-nccl-run bin/hidet-nccl-bench bin/hidet-nccl-trace lib/libhidet_nccl.so.0.1.0 lib/libhidet_nccl_mpi.so.0.1.0 \
    lib/pkgconfig/hidet_nccl_shared.pc lib/pkgconfig/hidet_nccl_mpi_shared.pc lib/python/hidet_nccl/__init__.py \
    include/hidet_nccl/fortran/hidet_nccl.f90; do
    check "installed $f" [ -f "$prefix/$f" ]
done
check "no nccl symbol is undefined in libhidet_nccl.a" [ -z "$(nm -u "$prefix/lib/libhidet_nccl.a" | grep -E ' nccl')" ]
check "no MPI symbol in libhidet_nccl.a" [ -z "$(nm "$prefix/lib/libhidet_nccl.a" | grep -E ' MPI_')" ]
for so in libhidet_nccl libhidet_nccl_mpi; do
    check "$so.so -> .so.0 -> .so.0.1.0" [ "$(readlink -f "$prefix/lib/$so.so")" = "$prefix/lib/$so.so.0.1.0" ]
    check "$so.so's soname is $so.so.0" bash -c "readelf -d '$prefix/lib/$so.so' | grep -q 'SONAME.*\[$so.so.0\]'"
    exported=$(nm -D --defined-only "$prefix/lib/$so.so" | awk '$2 ~ /^[TDBR]$/ {sub(/@.*/, "", $3); print $3}')
    check "$so.so exports only hidet_nccl_* functions" [ -z "$(echo "$exported" | grep -v '^hidet_nccl_[a-z]')" ]
    check "$so.so exports hidet_nccl_all_gather" grep -qx hidet_nccl_all_gather <<<"$exported"
    functions=$(nm -D --defined-only "$prefix/lib/$so.so" | awk '$2 == "T" {sub(/@.*/, "", $3); print $3}')
    # what takes a C MPI_Comm is reached through hidet_nccl_mpi_comm_init_fortran
    unbound=$(for f in $functions; do grep -q "name=\"$f\"" "$prefix/include/hidet_nccl/fortran/hidet_nccl.f90" ||
        grep -q "$f(MPI_Comm" "$prefix/include/hidet_nccl/bootstrap_mpi.h" || echo "$f"; done)
    check "the Fortran module binds every function of $so.so${unbound:+ (not: $unbound)}" [ -z "$unbound" ]
done
check "hidet-nccl-trace --help" grep -q "^usage: hidet-nccl-trace" <("$prefix/bin/hidet-nccl-trace" --help)
check "libhidet_nccl_mpi.so exports the MPI bootstrap" bash -c "nm -D --defined-only '$prefix/lib/libhidet_nccl_mpi.so' | grep -q ' hidet_nccl_mpi_init'"

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# mpicc and pkg-config, static link lines
mpicc -o "$tmp/mpi_pc" "$examples/mpi_all_reduce.c" $(pkg-config --static --cflags --libs hidet_nccl_mpi) 2>"$tmp/mpicc.log"
check "mpicc + pkg-config builds mpi_all_reduce" [ -x "$tmp/mpi_pc" ]
cc -o "$tmp/file_pc" "$examples/file_all_reduce.c" $(pkg-config --static --cflags --libs hidet_nccl) 2>"$tmp/cc.log"
check "cc + pkg-config builds file_all_reduce (no MPI)" [ -x "$tmp/file_pc" ]
check "file_all_reduce needs no libmpi" [ -z "$(ldd "$tmp/file_pc" 2>/dev/null | grep libmpi)" ]
mpirun --oversubscribe -np 1 "$tmp/mpi_pc" >"$tmp/mpi_pc.out" 2>&1
check "mpi_all_reduce says there is no GPU" no_gpu_said "$tmp/mpi_pc.out"
"$prefix/bin/hidet-nccl-run" -n 2 "$tmp/file_pc" >"$tmp/file_pc.out" 2>&1
check "file_all_reduce under hidet-nccl-run says there is no GPU" no_gpu_said "$tmp/file_pc.out"

# The shared library, through pkg-config: linked by soname, run from the prefix (rpath).
cc -o "$tmp/file_so" "$examples/file_all_reduce.c" $(pkg-config --cflags --libs hidet_nccl_shared) 2>"$tmp/cc_so.log"
check "cc + pkg-config builds file_all_reduce on libhidet_nccl.so" [ -x "$tmp/file_so" ] || cat "$tmp/cc_so.log"
check "it loads libhidet_nccl.so.0 from the prefix" bash -c "ldd '$tmp/file_so' | grep -q '$prefix/lib/libhidet_nccl.so.0'"
"$prefix/bin/hidet-nccl-run" -n 2 "$tmp/file_so" >"$tmp/file_so.out" 2>&1
check "file_all_reduce on the shared library says there is no GPU" no_gpu_said "$tmp/file_so.out"
mpicc -o "$tmp/mpi_so" "$examples/mpi_all_reduce.c" $(pkg-config --cflags --libs hidet_nccl_mpi_shared) 2>"$tmp/mpicc_so.log"
check "mpicc + pkg-config builds mpi_all_reduce on libhidet_nccl_mpi.so" [ -x "$tmp/mpi_so" ] || cat "$tmp/mpicc_so.log"
mpirun --oversubscribe -np 1 "$tmp/mpi_so" >"$tmp/mpi_so.out" 2>&1
check "mpi_all_reduce on the shared library says there is no GPU" no_gpu_said "$tmp/mpi_so.out"

# Python: the installed package (PYTHONPATH=PREFIX/lib/python) finds PREFIX/lib's .so; under
# the launcher init() reaches the GPU choice and says there is none.
cat >"$tmp/client.py" <<'PY'
import hidet_nccl
print("hidet_nccl", hidet_nccl.__version__, "from", hidet_nccl._lib.load()._name)
try:
    hidet_nccl.init()
except hidet_nccl.HidetNcclError as e:
    print("HidetNcclError:", e)
PY
PYTHONPATH=$prefix/lib/python "$prefix/bin/hidet-nccl-run" -n 1 python3 "$tmp/client.py" >"$tmp/py.out" 2>&1
check "the installed Python package loads the prefix's libhidet_nccl.so" grep -q "from $prefix/lib/libhidet_nccl.so.0" "$tmp/py.out" || cat "$tmp/py.out"
check "a Python client under hidet-nccl-run says there is no GPU" no_gpu_said "$tmp/py.out"

# Fortran: the installed module source compiled with the program (gfortran; mpifort for MPI).
mkdir -p "$tmp/fortran"
(cd "$tmp/fortran" &&
    gfortran -c "$prefix/include/hidet_nccl/fortran/hidet_nccl.f90" "$fortran/cuda_runtime.f90" \
        "$fortran/all_reduce_check.f90" &&
    gfortran -o all_reduce "$fortran/all_reduce.f90" hidet_nccl.o cuda_runtime.o all_reduce_check.o \
        $(pkg-config --static --libs hidet_nccl) &&
    mpifort -o mpi_all_reduce "$fortran/mpi_all_reduce.f90" hidet_nccl.o cuda_runtime.o all_reduce_check.o \
        $(pkg-config --static --libs hidet_nccl_mpi) &&
    gfortran -o cg_solve "$fortran/cg_solve.f90" hidet_nccl.o cuda_runtime.o \
        $(pkg-config --static --libs hidet_nccl)) >"$tmp/fortran.log" 2>&1
check "gfortran builds the Fortran example against the prefix" [ -x "$tmp/fortran/all_reduce" ] || cat "$tmp/fortran.log"
check "mpifort builds the Fortran MPI example against the prefix" [ -x "$tmp/fortran/mpi_all_reduce" ]
check "gfortran builds the Fortran CG example against the prefix" [ -x "$tmp/fortran/cg_solve" ]
"$prefix/bin/hidet-nccl-run" -n 2 "$tmp/fortran/all_reduce" >"$tmp/fortran.out" 2>&1
check "the Fortran example under hidet-nccl-run says there is no GPU" no_gpu_said "$tmp/fortran.out"
mpirun --oversubscribe -np 2 "$tmp/fortran/mpi_all_reduce" >"$tmp/fortran_mpi.out" 2>&1
check "the Fortran MPI example says there is no GPU" no_gpu_said "$tmp/fortran_mpi.out"

# CMake: find_package(HidetNccl)
cmake -S "$project" -B "$tmp/cmake" -DCMAKE_PREFIX_PATH="$prefix" -DEXAMPLES="$examples" >"$tmp/cmake.log" 2>&1 &&
    cmake --build "$tmp/cmake" >>"$tmp/cmake.log" 2>&1
check "CMake configures and builds" [ -x "$tmp/cmake/file_all_reduce" ] && [ -x "$tmp/cmake/mpi_all_reduce" ] &&
    [ -x "$tmp/cmake/file_all_reduce_shared" ] || tail -20 "$tmp/cmake.log"
check "CMake's HidetNccl::shared links libhidet_nccl.so.0" bash -c "readelf -d '$tmp/cmake/file_all_reduce_shared' | grep -q 'NEEDED.*libhidet_nccl.so.0'"
mpirun --oversubscribe -np 1 "$tmp/cmake/mpi_all_reduce" >"$tmp/mpi_cmake.out" 2>&1
check "CMake-built mpi_all_reduce says there is no GPU" no_gpu_said "$tmp/mpi_cmake.out"
"$prefix/bin/hidet-nccl-run" -n 1 "$tmp/cmake/file_all_reduce" >"$tmp/file_cmake.out" 2>&1
check "CMake-built file_all_reduce says there is no GPU" no_gpu_said "$tmp/file_cmake.out"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
