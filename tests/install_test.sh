#!/usr/bin/env bash
# Install into a temporary prefix, then build the examples out of tree with mpicc + pkg-config
# and with CMake's find_package(HidetNccl), and run them up to the point where a GPU is needed.
# The README's program and the link lines of the README and the user guide are taken from the
# documents (by their <!-- ... --> markers) and run as written.
# Arguments: the //:install target's arguments (files), then a file of examples/fortran, a file
# of examples/ and tests/install_project/CMakeLists.txt (its folder holds the other CMake
# projects: components/, fortran/). README.md and docs/user_guide.md are read from the runfiles.
set -u
args=("$@")
n=${#args[@]}
fortran=$(dirname "$(realpath "${args[n - 3]}")")
examples=$(dirname "$(realpath "${args[n - 2]}")")
project=$(dirname "$(realpath "${args[n - 1]}")")
files=("${args[@]:0:n-3}")
cuda_root=$(head -1 "${files[7]}") # the CUDA the build used (@local_cuda//:root.txt)
readme=$(realpath README.md)
guide=$(realpath docs/user_guide.md)
tmp=${TEST_TMPDIR:-$(mktemp -d)}/install
rm -rf "$tmp"
mkdir -p "$tmp"
prefix=$tmp/prefix
passed=0
failed=0
check() { local what=$1; shift; if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $what"; return 1; fi; }
no_gpu_said() { grep -qiE "no CUDA device is visible|No usable GPU" "$1" || { echo "--- $1:"; cat "$1"; return 1; }; }
# The fenced block after the first line of FILE that holds MARKER.
block() { awk -v m="$2" 'index($0, m) {found = 1; next} found && /^```/ {if (inside) exit; inside = 1; next} inside {print}' "$1"; }
# PROGRAM needs no libhidet_nccl*.so and the loader finds all it needs without LD_LIBRARY_PATH.
static_only() {
    [ -x "$1" ] || { echo "--- no $1"; return 1; }
    if readelf -d "$1" | grep -q 'NEEDED.*libhidet_nccl'; then echo "--- $1 needs:"; readelf -d "$1" | grep NEEDED; return 1; fi
    if env -u LD_LIBRARY_PATH ldd "$1" | grep -q "not found"; then echo "--- ldd $1:"; env -u LD_LIBRARY_PATH ldd "$1"; return 1; fi
}
# CMake configure that must fail: LOG TEXT cmake-arguments... (TEXT in the message, wrapping undone)
configure_fails() {
    local log=$1 want=$2
    shift 2
    if cmake "$@" >"$log" 2>&1; then echo "--- the configure succeeded: $log"; return 1; fi
    tr -s ' \n' '  ' <"$log" | grep -qF "$want" || { echo "--- no '$want' in $log:"; cat "$log"; return 1; }
}
# Each line of the block under MARKER in DOC, run as written with PREFIX and CUDA_HOME set and no
# PKG_CONFIG_PATH or LD_LIBRARY_PATH, in a folder outside the repository that holds app.c (the
# README's program; examples/mpi_all_reduce.c for a line that names hidet_nccl_mpi); the program it
# makes needs no libhidet_nccl*.so, starts, and says there is no GPU.
link_lines() {
    local doc=$1 marker=$2 name=$3 k=0 line dir
    block "$doc" "$marker" >"$tmp/$name/lines"
    while IFS= read -r line <&3; do # fd 3: mpirun reads stdin
        [ -n "$line" ] || continue
        k=$((k + 1))
        case $line in *hidet_nccl_mpi*) dir=$tmp/$name/mpi ;; *) dir=$tmp/$name/plain ;; esac
        rm -f "$dir/app"
        (cd "$dir" && env -u PKG_CONFIG_PATH -u LD_LIBRARY_PATH PREFIX="$prefix" CUDA_HOME="$cuda_root" bash -ec "$line") \
            </dev/null >"$dir/link$k.log" 2>&1
        check "$name, link line $k builds app.c: $line" [ -x "$dir/app" ] || cat "$dir/link$k.log"
        check "$name, link line $k: the program needs no libhidet_nccl*.so, nor LD_LIBRARY_PATH" static_only "$dir/app"
        case $dir in
            */mpi) env -u LD_LIBRARY_PATH mpirun --oversubscribe -np 1 "$dir/app" ;;
            *) env -u LD_LIBRARY_PATH "$prefix/bin/hidet-nccl-run" -n 1 "$dir/app" ;;
        esac </dev/null >"$dir/run$k.out" 2>&1
        check "$name, link line $k: the program runs and says there is no GPU" no_gpu_said "$dir/run$k.out"
    done 3<"$tmp/$name/lines"
    check "$name: every line of its link lines ran ($k)" test "$k" -ge 1 -a "$k" -eq "$(grep -c . "$tmp/$name/lines")"
    check "$name has a link line by hand (no pkg-config) that names the archive" \
        bash -c "grep -v pkg-config '$tmp/$name/lines' | grep -q -- '-l:libhidet_nccl.a'"
}

bash packaging/install.sh "${files[@]}" --prefix "$prefix" >"$tmp/install.log" 2>&1
check "install succeeds" [ $? -eq 0 ]
for f in include/hidet_nccl/hidet_nccl.h include/hidet_nccl/bootstrap.h include/hidet_nccl/bootstrap_mpi.h \
    lib/libhidet_nccl.a lib/libhidet_nccl_mpi.a lib/pkgconfig/hidet_nccl.pc lib/pkgconfig/hidet_nccl_mpi.pc \
    lib/cmake/HidetNccl/HidetNcclConfig.cmake lib/cmake/HidetNccl/HidetNcclConfigVersion.cmake \
    bin/hidet-nccl-run bin/hidet-nccl-bench bin/hidet-nccl-trace lib/libhidet_nccl.so.0.1.0 lib/libhidet_nccl_mpi.so.0.1.0 \
    lib/pkgconfig/hidet_nccl_shared.pc lib/pkgconfig/hidet_nccl_mpi_shared.pc lib/python/hidet_nccl/__init__.py \
    lib/python/hidet_nccl/_calls.abi3.so \
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
check "hidet-nccl-plot is installed and says how to use it" bash -c "'$prefix/bin/hidet-nccl-plot' 2>&1 | grep -q 'INPUT OUTPUT.svg'"
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

# Plain pkg-config (no --static) is complete: Libs holds what the archives need, MPI included
# (plain cc, not mpicc, for the MPI program).
cc -o "$tmp/file_plain" "$examples/file_all_reduce.c" $(pkg-config --cflags --libs hidet_nccl) 2>"$tmp/cc_plain.log"
check "cc + plain pkg-config --cflags --libs hidet_nccl builds file_all_reduce" [ -x "$tmp/file_plain" ] || cat "$tmp/cc_plain.log"
check "it is linked with libhidet_nccl.a, not the .so beside it" static_only "$tmp/file_plain"
env -u LD_LIBRARY_PATH "$prefix/bin/hidet-nccl-run" -n 2 "$tmp/file_plain" >"$tmp/file_plain.out" 2>&1
check "file_all_reduce of plain pkg-config says there is no GPU" no_gpu_said "$tmp/file_plain.out"
cc -o "$tmp/mpi_plain" "$examples/mpi_all_reduce.c" $(pkg-config --cflags --libs hidet_nccl_mpi) 2>"$tmp/cc_plain_mpi.log"
check "cc + plain pkg-config --cflags --libs hidet_nccl_mpi builds mpi_all_reduce" [ -x "$tmp/mpi_plain" ] || cat "$tmp/cc_plain_mpi.log"
check "it is linked with libhidet_nccl_mpi.a and libhidet_nccl.a, not the .so" static_only "$tmp/mpi_plain"
env -u LD_LIBRARY_PATH mpirun --oversubscribe -np 1 "$tmp/mpi_plain" >"$tmp/mpi_plain.out" 2>&1
check "mpi_all_reduce of plain pkg-config says there is no GPU" no_gpu_said "$tmp/mpi_plain.out"
check "pkg-config --define-variable=cudaroot=DIR links DIR's CUDA runtime" \
    grep -q -- "-L/elsewhere/cuda/lib64 -lcudart_static" <(pkg-config --define-variable=cudaroot=/elsewhere/cuda --libs hidet_nccl)

# The README's program, as written: complete, and clean under -Wall -Wextra -Werror with only
# the installed headers; then the README's and the user guide's link lines, as written.
mkdir -p "$tmp/readme/plain" "$tmp/readme/mpi" "$tmp/guide/plain" "$tmp/guide/mpi"
block "$readme" "<!-- app.c:" >"$tmp/readme/plain/app.c"
check "the README has its program under '<!-- app.c:'" grep -q "int main" "$tmp/readme/plain/app.c"
(cd "$tmp/readme/plain" && cc -std=c11 -Wall -Wextra -Werror -c app.c -o app.o $(pkg-config --cflags hidet_nccl)) \
    >"$tmp/readme/werror.log" 2>&1
check "the README's program compiles with -Wall -Wextra -Werror" [ -s "$tmp/readme/plain/app.o" ] || cat "$tmp/readme/werror.log"
cp "$tmp/readme/plain/app.c" "$tmp/guide/plain/app.c"
cp "$examples/mpi_all_reduce.c" "$tmp/guide/mpi/app.c"
cp "$examples/mpi_all_reduce.c" "$tmp/readme/mpi/app.c"
link_lines "$readme" "<!-- link lines:" readme
link_lines "$guide" "<!-- link lines:" guide

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
print("hidet_nccl", hidet_nccl.__version__, "from", hidet_nccl._lib.load()._name, "calls through",
      hidet_nccl.call_path())
try:
    hidet_nccl.init()
except hidet_nccl.HidetNcclError as e:
    print("HidetNcclError:", e)
PY
PYTHONPATH=$prefix/lib/python "$prefix/bin/hidet-nccl-run" -n 1 python3 "$tmp/client.py" >"$tmp/py.out" 2>&1
check "the installed Python package loads the prefix's libhidet_nccl.so" grep -q "from $prefix/lib/libhidet_nccl.so.0" "$tmp/py.out" || cat "$tmp/py.out"
check "the installed Python package calls through its extension module" grep -q "calls through extension" "$tmp/py.out" || cat "$tmp/py.out"
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

# CMake, a Fortran-only project: find_package(HidetNccl COMPONENTS fortran mpi); HidetNccl::fortran
# compiles the installed module with the project's compiler; hidet_nccl_mpi brings MPI::MPI_Fortran.
cmake -S "$project/fortran" -B "$tmp/cmake_fortran" -DCMAKE_PREFIX_PATH="$prefix" -DFORTRAN_EXAMPLES="$fortran" \
    >"$tmp/cmake_fortran.log" 2>&1 && cmake --build "$tmp/cmake_fortran" >>"$tmp/cmake_fortran.log" 2>&1
check "a Fortran-only CMake project builds the Fortran examples with HidetNccl::fortran and ::hidet_nccl_mpi" \
    test -x "$tmp/cmake_fortran/all_reduce" -a -x "$tmp/cmake_fortran/mpi_all_reduce" || tail -30 "$tmp/cmake_fortran.log"
check "HidetNccl::fortran made hidet_nccl.mod in the project's build" [ -n "$(find "$tmp/cmake_fortran" -name hidet_nccl.mod)" ]
"$prefix/bin/hidet-nccl-run" -n 2 "$tmp/cmake_fortran/all_reduce" >"$tmp/fortran_cmake.out" 2>&1
check "CMake-built Fortran all_reduce says there is no GPU" no_gpu_said "$tmp/fortran_cmake.out"
mpirun --oversubscribe -np 2 "$tmp/cmake_fortran/mpi_all_reduce" >"$tmp/fortran_mpi_cmake.out" 2>&1
check "CMake-built Fortran mpi_all_reduce says there is no GPU" no_gpu_said "$tmp/fortran_mpi_cmake.out"

# CMake components in a C project: mpi gives a complete HidetNccl::hidet_nccl_mpi (the project
# finds no MPI itself); what cannot be had stops the configure, saying why.
components=(-S "$project/components" -DCMAKE_PREFIX_PATH="$prefix" -DEXAMPLES="$examples")
cmake "${components[@]}" -B "$tmp/cmake_mpi" -DHIDET_NCCL_COMPONENTS=mpi >"$tmp/cmake_mpi.log" 2>&1 &&
    cmake --build "$tmp/cmake_mpi" >>"$tmp/cmake_mpi.log" 2>&1
check "COMPONENTS mpi: a C project builds mpi_all_reduce with HidetNccl::hidet_nccl_mpi" \
    [ -x "$tmp/cmake_mpi/mpi_all_reduce" ] || tail -30 "$tmp/cmake_mpi.log"
mpirun --oversubscribe -np 1 "$tmp/cmake_mpi/mpi_all_reduce" >"$tmp/mpi_component.out" 2>&1
check "the COMPONENTS mpi build of mpi_all_reduce says there is no GPU" no_gpu_said "$tmp/mpi_component.out"
check "COMPONENTS nosuch fails, naming the component" configure_fails "$tmp/cmake_nosuch.log" \
    "There is no component 'nosuch' (HidetNccl's components are mpi and fortran)" \
    "${components[@]}" -B "$tmp/cmake_nosuch" -DHIDET_NCCL_COMPONENTS="mpi;nosuch"
check "COMPONENTS fortran in a C-only project fails, saying to enable Fortran" configure_fails "$tmp/cmake_nofortran.log" \
    "Component fortran is not available: it compiles the hidet_nccl module with the project's Fortran compiler: enable Fortran first" \
    "${components[@]}" -B "$tmp/cmake_nofortran" -DHIDET_NCCL_COMPONENTS=fortran
check "COMPONENTS mpi without MPI fails, saying so" configure_fails "$tmp/cmake_nompi.log" \
    "Component mpi is not available: find_package(MPI COMPONENTS C) found no MPI" \
    "${components[@]}" -B "$tmp/cmake_nompi" -DHIDET_NCCL_COMPONENTS=mpi -DCMAKE_DISABLE_FIND_PACKAGE_MPI=TRUE

# CMake finds CUDA where it is told: CUDAToolkit_ROOT, else $CUDA_HOME, else (no nvcc on PATH, no
# CUDA_PATH) the CUDA of the install. Each is a link to the real CUDA under another name, and the
# name is what the build must use.
ln -sfn "$cuda_root" "$tmp/cuda_by_root"
ln -sfn "$cuda_root" "$tmp/cuda_by_home"
ln -sfn "$cuda_root" "$tmp/cuda_at_install"
cuda_used() { # BUILD NAME: file_all_reduce compiled with NAME's headers and linked with its libcudart_static.a
    grep -q "$2/.*libcudart_static.a" "$1/CMakeFiles/file_all_reduce.dir/link.txt" &&
        grep -q -- "$2/include" "$1/CMakeFiles/file_all_reduce.dir/flags.make" && [ -x "$1/file_all_reduce" ] ||
        { echo "--- $1:"; cat "$1/CMakeFiles/file_all_reduce.dir/link.txt"; return 1; }
}
env -u CUDA_HOME cmake -S "$project" -B "$tmp/cmake_cuda_root" -DCMAKE_PREFIX_PATH="$prefix" -DEXAMPLES="$examples" \
    -DCUDAToolkit_ROOT="$tmp/cuda_by_root" >"$tmp/cmake_cuda_root.log" 2>&1 &&
    cmake --build "$tmp/cmake_cuda_root" --target file_all_reduce >>"$tmp/cmake_cuda_root.log" 2>&1
check "CMake takes CUDA from CUDAToolkit_ROOT" cuda_used "$tmp/cmake_cuda_root" "$tmp/cuda_by_root"
CUDA_HOME=$tmp/cuda_by_home cmake -S "$project" -B "$tmp/cmake_cuda_home" -DCMAKE_PREFIX_PATH="$prefix" -DEXAMPLES="$examples" \
    >"$tmp/cmake_cuda_home.log" 2>&1 && cmake --build "$tmp/cmake_cuda_home" --target file_all_reduce >>"$tmp/cmake_cuda_home.log" 2>&1
check "CMake takes CUDA from \$CUDA_HOME (module load cuda)" cuda_used "$tmp/cmake_cuda_home" "$tmp/cuda_by_home"
echo "$tmp/cuda_at_install" >"$tmp/cuda_root.txt"
other=("${files[@]}")
other[7]=$tmp/cuda_root.txt
bash packaging/install.sh "${other[@]}" --prefix "$tmp/prefix_other_cuda" >"$tmp/install_other.log" 2>&1
check "install with another CUDA root succeeds" [ $? -eq 0 ] || cat "$tmp/install_other.log"
path=$(dirname "$(command -v cmake)"):$(dirname "$(command -v cc)"):/usr/bin:/bin
if PATH=$path command -v nvcc >/dev/null; then
    echo "SKIPPED: CMake taking the install's CUDA (nvcc is on $path)"
else
    env -u CUDA_HOME -u CUDA_PATH -u CUDAToolkit_ROOT PATH="$path" cmake -S "$project" -B "$tmp/cmake_cuda_install" \
        -DCMAKE_PREFIX_PATH="$tmp/prefix_other_cuda" -DEXAMPLES="$examples" >"$tmp/cmake_cuda_install.log" 2>&1 &&
        env PATH="$path" cmake --build "$tmp/cmake_cuda_install" --target file_all_reduce >>"$tmp/cmake_cuda_install.log" 2>&1
    check "CMake takes the install's CUDA when nothing else names one" cuda_used "$tmp/cmake_cuda_install" "$tmp/cuda_at_install"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
