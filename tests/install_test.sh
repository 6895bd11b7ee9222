#!/usr/bin/env bash
# Install into a temporary prefix, then build the examples out of tree with mpicc + pkg-config
# and with CMake's find_package(HidetNccl), and run them up to the point where a GPU is needed.
# Arguments: the //:install target's arguments (files), then a file of examples/ and
# tests/install_project/CMakeLists.txt.
set -u
args=("$@")
n=${#args[@]}
examples=$(dirname "$(realpath "${args[n - 2]}")")
project=$(dirname "$(realpath "${args[n - 1]}")")
files=("${args[@]:0:n-2}")
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
    bin/hidet-nccl-run bin/hidet-nccl-bench; do
    check "installed $f" [ -f "$prefix/$f" ]
done
check "no nccl symbol is undefined in libhidet_nccl.a" [ -z "$(nm -u "$prefix/lib/libhidet_nccl.a" | grep -E ' nccl')" ]
check "no MPI symbol in libhidet_nccl.a" [ -z "$(nm "$prefix/lib/libhidet_nccl.a" | grep -E ' MPI_')" ]

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

# CMake: find_package(HidetNccl)
cmake -S "$project" -B "$tmp/cmake" -DCMAKE_PREFIX_PATH="$prefix" -DEXAMPLES="$examples" >"$tmp/cmake.log" 2>&1 &&
    cmake --build "$tmp/cmake" >>"$tmp/cmake.log" 2>&1
check "CMake configures and builds" [ -x "$tmp/cmake/file_all_reduce" ] && [ -x "$tmp/cmake/mpi_all_reduce" ] || tail -20 "$tmp/cmake.log"
mpirun --oversubscribe -np 1 "$tmp/cmake/mpi_all_reduce" >"$tmp/mpi_cmake.out" 2>&1
check "CMake-built mpi_all_reduce says there is no GPU" no_gpu_said "$tmp/mpi_cmake.out"
"$prefix/bin/hidet-nccl-run" -n 1 "$tmp/cmake/file_all_reduce" >"$tmp/file_cmake.out" 2>&1
check "CMake-built file_all_reduce says there is no GPU" no_gpu_said "$tmp/file_cmake.out"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
