#!/usr/bin/env bash
# nccl-tests through the library (issue 37), built here for a GPU machine that has no compiler:
# NVIDIA's nccl-tests, from its public source (github.com/NVIDIA/nccl-tests, 2.19.6 here; not part
# of this project), compiled once and linked twice, and the preload library beside them:
#   tools/gpu/nccl_tests_build.sh SRC_DIR OUT_DIR
#   OUT_DIR/stock/X_perf     as nccl-tests' Makefile links them (MPI=0), libnccl.so.2 dynamic
#   OUT_DIR/static/X_perf    the same objects relinked with tools/dev/nccl_tests_shim.c as an ordinary
#                            object and libhidet_nccl.a (the library in the executable, its nccl*
#                            taking the test's calls); libnccl.so.2 dynamic as in stock
#   OUT_DIR/lib/             libverifiable.so.0 and libcudart.so.13, which both kinds load
#   OUT_DIR/libhidet_nccl_tests_shim.so   the LD_PRELOAD form (//tools/dev:libhidet_nccl_tests_shim.so)
#   OUT_DIR/nccl_tests_compare.sh, nccl_tests_ratios.py, BUILD_INFO.txt
# On the GPU machine: OUT_DIR/nccl_tests_compare.sh OUT_DIR [ROUNDS].
# Small (8 MB for the nine tests, stripped): sm_90 only, the fatbins compressed (--compress-mode=size:
# the data-check kernels shrink from 3.8 MB to 0.24 MB), those kernels in one libverifiable.so.0
# (the Makefile's DSO=1) and the CUDA runtime shared (CUDARTLIB=cudart, the Makefile's default):
# what the tests time is NCCL's calls and the library's, which make no CUDA runtime call on NCCL's
# path (on one rank the library's own copy, all_reduce/reduce/reduce_scatter out of place, calls
# cudaMemcpyAsync: the preload's static runtime in lib, libcudart.so.13 in static).
# CUDARTLIB=cudart_static puts the runtime in each binary (DSO=0 then: libverifiable.so cannot
# reach a static runtime's hidden symbols): 1.2 MB a stock binary, 1.7 MB a static one, 27 MB in all.
# Environment: CUDA_HOME (/usr/local/cuda); NCCL_HOME, a folder with include/nccl.h and
# lib/ or lib64/ libnccl.so.2 or libnccl.so (default: CUDA_HOME; a pip wheel's .../nvidia/nccl
# does); NVCC_GENCODE (sm_90 only); CUDARTLIB (cudart); TESTS (all_reduce ... scatter); JOBS
# (make -j); OBJ_DIR (where the objects go; default a temporary folder, removed after).
# libhidet_nccl.a and the preload are built with Bazel from the checkout this script is in.
set -euo pipefail
src=${1:?SRC_DIR (nccl-tests source tree)} out=${2:?OUT_DIR}
repo=$(cd "$(dirname "$0")/../.." && pwd)
cuda=${CUDA_HOME:-/usr/local/cuda}
nccl_home=${NCCL_HOME:-$cuda}
gencode=${NVCC_GENCODE:--gencode=arch=compute_90,code=sm_90}
cudartlib=${CUDARTLIB:-cudart}
read -ra tests <<<"${TESTS:-all_reduce all_gather broadcast reduce reduce_scatter sendrecv alltoall gather scatter}"
die() {
    echo "nccl_tests_build: $*" >&2
    exit 1
}

nvcc=$cuda/bin/nvcc
[ -x "$nvcc" ] || die "no nvcc at $nvcc (set CUDA_HOME)"
for f in Makefile common.mk common.h; do
    [ -f "$src/src/$f" ] || die "$src is not nccl-tests' source tree (no src/$f)"
done
[ -f "$nccl_home/include/nccl.h" ] || die "no $nccl_home/include/nccl.h (set NCCL_HOME to a folder with include/nccl.h and lib/libnccl.so.2)"
libnccl=
for f in "$nccl_home"/lib/libnccl.so.2 "$nccl_home"/lib64/libnccl.so.2 "$nccl_home"/lib/libnccl.so "$nccl_home"/lib64/libnccl.so; do
    [ -e "$f" ] && libnccl=$(readlink -f "$f") && break
done
[ -n "$libnccl" ] || die "no libnccl.so.2 in $nccl_home/lib or lib64 (set NCCL_HOME)"
objdump -p "$libnccl" | grep 'SONAME *libnccl.so.2$' >/dev/null || die "$libnccl's soname is not libnccl.so.2"
command -v bazel >/dev/null || die "no bazel (libhidet_nccl.a and the preload are built with it)"
case $cudartlib in
cudart) dso=1 ;;
cudart_static) dso=0 ;;
*) die "CUDARTLIB=$cudartlib: cudart or cudart_static" ;;
esac
# The fatbins compressed for size where nvcc can (12.8 on): decompressed once, at module load.
# (No grep -q after a pipe here: its early exit fails the writer under pipefail.)
flags=$gencode
"$nvcc" --help | grep -- '--compress-mode' >/dev/null && flags="$gencode --compress-mode=size"
read -ra flag_args <<<"$flags"
version=$(sed -n 's/^#define NCCL_TESTS_VERSION "\(.*\)"/\1/p' "$src/src/common.h")
nccl_version=$(awk '/^#define NCCL_(MAJOR|MINOR|PATCH) /{v = v (v ? "." : "") $3} END {print v}' "$nccl_home/include/nccl.h")
nvcc_version=$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
echo "nccl_tests_build: nccl-tests ${version:-?} from $src; nvcc $nvcc_version $flags; $cudartlib"
echo "nccl_tests_build: NCCL $nccl_version headers $nccl_home/include, linked against $libnccl (as libnccl.so.2)"

mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ -n "${OBJ_DIR:-}" ]; then
    mkdir -p "$OBJ_DIR"
    obj=$(cd "$OBJ_DIR" && pwd)
else
    obj=$(mktemp -d)
    trap 'rm -rf "$obj"' EXIT
fi
# NCCL as nccl-tests' Makefile wants it (NCCL_HOME/include, NCCL_HOME/lib/libnccl.so): a pip wheel
# has no libnccl.so and CUDA's folder says lib64. The soname keeps the binaries needing libnccl.so.2.
stage=$obj/nccl_home
rm -rf "$stage"
mkdir -p "$stage/lib"
ln -s "$(cd "$nccl_home/include" && pwd)" "$stage/include"
ln -s "$libnccl" "$stage/lib/libnccl.so"

# 1. stock: nccl-tests' own Makefile and link.
bins=()
for t in "${tests[@]}"; do
    [ -f "$src/src/$t.cu" ] || die "no $src/src/$t.cu (TESTS names a test nccl-tests lacks)"
    bins+=("$obj/${t}_perf")
done
make_args=(MPI=0 "DSO=$dso" "BUILDDIR=$obj" "NCCL_HOME=$stage" "CUDA_HOME=$cuda" "CUDARTLIB=$cudartlib" "NVCC_GENCODE=$flags")
echo "nccl_tests_build: make -C $src/src -j${JOBS:-$(nproc)} ${make_args[*]} <the tests' binaries>"
make -C "$src/src" -j"${JOBS:-$(nproc)}" "${make_args[@]}" "${bins[@]}"
rm -rf "${out:?}/stock" "${out:?}/static" "${out:?}/lib"
mkdir -p "$out/stock" "$out/static" "$out/lib"
for t in "${tests[@]}"; do
    cp "$obj/${t}_perf" "$out/stock/"
    strip "$out/stock/${t}_perf"
done
if [ "$dso" = 1 ]; then
    cp "$obj/verifiable/libverifiable.so.0" "$out/lib/"
    cudart=$(readlink -f "$cuda/lib64/libcudart.so")
    soname=$(objdump -p "$cudart" | awk '$1 == "SONAME" {print $2}')
    cp "$cudart" "$out/lib/$soname"
    strip --strip-unneeded "$out"/lib/*
fi

# 2. the library: libhidet_nccl.a and the preload, with Bazel (CUDA_HOME/NCCL_HOME as the caller's
# environment has them: Bazel's own repositories read them, so they are not changed here).
(cd "$repo" && bazel build //:hidet_nccl //tools/dev:libhidet_nccl_tests_shim.so)
bin=$(cd "$repo" && bazel info bazel-bin 2>/dev/null)
archive=$bin/libhidet_nccl.a
[ -f "$archive" ] || die "no $archive after bazel build //:hidet_nccl"
cp -f "$bin/tools/dev/libhidet_nccl_tests_shim.so" "$out/"
chmod u+w "$out/libhidet_nccl_tests_shim.so"
strip --strip-unneeded "$out/libhidet_nccl_tests_shim.so"

# 3. static: the shim as an ordinary object (the repo's flags: C11, -O2, _GNU_SOURCE) and the
# archive in the test's own link line (the Makefile's, objects and libraries in its order), before
# -lnccl, then libhidet_nccl.a's system libraries.
cc=${CC:-cc}
shim_o=$obj/nccl_tests_shim.o
shim_cmd=("$cc" -std=c11 -O2 -DNDEBUG -D_GNU_SOURCE -fPIC -Wall -Wextra -I"$repo/include" -I"$stage/include"
    -I"$cuda/include" -c "$repo/tools/dev/nccl_tests_shim.c" -o "$shim_o")
echo "nccl_tests_build: ${shim_cmd[*]}"
"${shim_cmd[@]}"
if [ "$dso" = 1 ]; then
    verifiable=(-L"$obj/verifiable" -lverifiable)
    # shellcheck disable=SC2016 # $ORIGIN is the loader's, as in the Makefile's DSO=1 link
    rpath=(-Xlinker --enable-new-dtags -Xlinker '-rpath,$ORIGIN:$ORIGIN/verifiable')
else
    verifiable=("$obj/verifiable/verifiable.o")
    rpath=()
fi
for t in "${tests[@]}"; do
    link=("$nvcc" -o "$out/static/${t}_perf" -ccbin "${CXX:-g++}" "${flag_args[@]}" "$obj/$t.o" "$obj/common.o"
        "$obj/util.o" "$obj/timer.o" "$shim_o" "$archive" "${verifiable[@]}" -L"$cuda/lib64" -l"$cudartlib" -lrt
        -L"$stage/lib" -lnccl -L"$obj/os" -lnccl_test_os -ldl -lpthread -lz -lm ${rpath[@]+"${rpath[@]}"})
    [ "$t" = "${tests[0]}" ] && echo "nccl_tests_build: ${link[*]}"
    "${link[@]}"
    strip "$out/static/${t}_perf"
    # The executable's nccl* must be exported (libnccl defines them: NCCL's own calls through its
    # PLT reach them, as a preload's), and it must still need libnccl.so.2 (RTLD_NEXT finds it).
    nm -D --defined-only "$out/static/${t}_perf" | grep ' T ncclGroupEnd$' >/dev/null ||
        die "static/${t}_perf does not export ncclGroupEnd"
    objdump -p "$out/static/${t}_perf" | grep 'NEEDED *libnccl.so.2$' >/dev/null || die "static/${t}_perf does not need libnccl.so.2"
done

cp -f "$repo/tools/gpu/nccl_tests_compare.sh" "$repo/tools/gpu/nccl_tests_ratios.py" "$out/"
chmod +x "$out/nccl_tests_compare.sh"
{
    echo "nccl-tests ${version:-?} ($src), tests: ${tests[*]}"
    echo "hidet-nccl $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$repo" diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
    echo "nvcc $nvcc_version $flags; NCCL headers $nccl_version; $cudartlib; libnccl.so.2 dynamic"
    echo "stock:  make ${make_args[*]}"
    echo "static: ${shim_cmd[*]}"
    echo "        ${link[*]}"
} >"$out/BUILD_INFO.txt"
echo "nccl_tests_build: in $out (bytes):"
(cd "$out" && for f in stock/* static/* lib/* libhidet_nccl_tests_shim.so; do
    [ -e "$f" ] && printf '  %10d  %s\n' "$(stat -c %s "$f")" "$f"
done)
echo "nccl_tests_build: $(du -sb "$out" | cut -f1) bytes in all"
