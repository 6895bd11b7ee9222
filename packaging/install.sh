#!/usr/bin/env bash
# Installs hidet-nccl into a prefix. Through Bazel:   bazel run //:install -- --prefix DIR
# The leading arguments (given by the //:install target) name the built files:
#   install.sh LIB LIB_MPI SO SO_MPI RUN BENCH TRACE CUDA_ROOT_TXT NCCL_INC_TXT MPI_PATHS_TXT A_TEMPLATE FILE... --prefix DIR
# FILE: the public headers (*.h), the Fortran module's source (*.f90, into include/hidet_nccl/fortran),
# tools/bench/plot_bench.py (bin/hidet-nccl-plot) and the Python package's files (*.py, and its extension
# module *.abi3.so, into lib/python/hidet_nccl).
set -euo pipefail
usage() { echo "usage: bazel run //:install -- --prefix DIR" >&2; exit 2; }
[ $# -ge 12 ] || usage
lib=$1 lib_mpi=$2 so=$3 so_mpi=$4 run=$5 bench=$6 trace=$7 cuda_txt=$8 nccl_txt=$9 templates=$(dirname "${11}")
mpi_txt=${10}
shift 11
headers=()
pyfiles=()
pyext=()
f90files=()
plot=
prefix=
while [ $# -gt 0 ]; do
    case $1 in
        --prefix) [ $# -ge 2 ] || usage; prefix=$2; shift 2 ;;
        --prefix=*) prefix=${1#--prefix=}; shift ;;
        -h|--help) usage ;;
        --*) echo "install: unknown option $1" >&2; usage ;;
        */plot_bench.py) plot=$1; shift ;;
        *.py) pyfiles+=("$1"); shift ;;
        *.abi3.so) pyext+=("$1"); shift ;;
        *.f90) f90files+=("$1"); shift ;;
        *) headers+=("$1"); shift ;;
    esac
done
[ -n "$prefix" ] || usage
case $prefix in /*) ;; *) prefix=${BUILD_WORKING_DIRECTORY:-$PWD}/$prefix ;; esac
version=0.1.0
cuda_root=$(head -1 "$cuda_txt")
nccl_inc=$(head -1 "$nccl_txt")
mpi_inc=$(sed -n 1p "$mpi_txt")
mpi_lib=$(sed -n 2p "$mpi_txt")
# In the .pc files nccl.h's folder follows cudaroot (--define-variable=cudaroot=...) when it is CUDA's.
case $nccl_inc in "$cuda_root/include") nccl_inc_pc='${cudaroot}/include' ;; *) nccl_inc_pc=$nccl_inc ;; esac
install -d "$prefix/include/hidet_nccl" "$prefix/lib/pkgconfig" "$prefix/lib/cmake/HidetNccl" "$prefix/bin"
install -m 0644 "${headers[@]}" "$prefix/include/hidet_nccl/"
install -m 0644 "$lib" "$prefix/lib/libhidet_nccl.a"
install -m 0644 "$lib_mpi" "$prefix/lib/libhidet_nccl_mpi.a"
for pair in "$so:libhidet_nccl" "$so_mpi:libhidet_nccl_mpi"; do # name.so.VERSION, name.so.0 and name.so
    name=${pair##*:}
    install -m 0755 "${pair%:*}" "$prefix/lib/$name.so.$version"
    ln -sf "$name.so.$version" "$prefix/lib/$name.so.0"
    ln -sf "$name.so.0" "$prefix/lib/$name.so"
done
install -m 0755 "$run" "$prefix/bin/hidet-nccl-run"
if [ ${#f90files[@]} -gt 0 ]; then # compiled with the program: a .mod file is tied to one compiler
    install -d "$prefix/include/hidet_nccl/fortran"
    install -m 0644 "${f90files[@]}" "$prefix/include/hidet_nccl/fortran/"
fi
if [ ${#pyfiles[@]} -gt 0 ]; then # PYTHONPATH=$prefix/lib/python: it finds the .so beside it, in lib/
    install -d "$prefix/lib/python/hidet_nccl"
    install -m 0644 "${pyfiles[@]}" "$prefix/lib/python/hidet_nccl/"
    # the collectives' calls without ctypes (CPython 3.10 and later; the package calls through
    # ctypes where it cannot load it)
    [ ${#pyext[@]} -eq 0 ] || install -m 0755 "${pyext[@]}" "$prefix/lib/python/hidet_nccl/"
fi
install -m 0755 "$bench" "$prefix/bin/hidet-nccl-bench"
install -m 0755 "$trace" "$prefix/bin/hidet-nccl-trace"
[ -z "$plot" ] || install -m 0755 "$plot" "$prefix/bin/hidet-nccl-plot" # busbw plots of the bench's tables, SVG
fill() { # template output
    sed -e "s|@PREFIX@|$prefix|g" -e "s|@VERSION@|$version|g" -e "s|@CUDA_ROOT@|$cuda_root|g" \
        -e "s|@NCCL_INCLUDE@|$nccl_inc|g" -e "s|@NCCL_INCLUDE_PC@|$nccl_inc_pc|g" -e "s|@MPI_INCLUDE@|$mpi_inc|g" -e "s|@MPI_LIB@|$mpi_lib|g" "$1" >"$2"
    chmod 0644 "$2"
}
fill "$templates/hidet_nccl.pc.in" "$prefix/lib/pkgconfig/hidet_nccl.pc"
fill "$templates/hidet_nccl_mpi.pc.in" "$prefix/lib/pkgconfig/hidet_nccl_mpi.pc"
fill "$templates/hidet_nccl_shared.pc.in" "$prefix/lib/pkgconfig/hidet_nccl_shared.pc"
fill "$templates/hidet_nccl_mpi_shared.pc.in" "$prefix/lib/pkgconfig/hidet_nccl_mpi_shared.pc"
fill "$templates/HidetNcclConfig.cmake.in" "$prefix/lib/cmake/HidetNccl/HidetNcclConfig.cmake"
fill "$templates/HidetNcclConfigVersion.cmake.in" "$prefix/lib/cmake/HidetNccl/HidetNcclConfigVersion.cmake"
echo "hidet-nccl $version installed in $prefix"
