#!/usr/bin/env bash
# Symbol hygiene of the two archives, and the archives linked into a shared object (which
# only position-independent objects allow) that a program then calls through dlopen.
# Arguments: libhidet_nccl.a libhidet_nccl_mpi.a CUDA_ROOT_TXT NCCL_INCLUDE_TXT MPI_PATHS_TXT CLIENT_C HEADER...
set -u
lib=$(realpath "$1") lib_mpi=$(realpath "$2") cuda=$(head -1 "$3") nccl_inc=$(head -1 "$4")
client=$(realpath "$6")
include=$(dirname "$(dirname "$(realpath "$7")")")
tmp=${TEST_TMPDIR:-$(mktemp -d)}/archive
rm -rf "$tmp"
mkdir -p "$tmp"
passed=0
failed=0
check() { local what=$1; shift; if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $what"; fi; }

for a in "$lib" "$lib_mpi"; do
    # Every global symbol an archive defines carries the library's prefix.
    foreign=$(nm -g --defined-only "$a" | awk 'NF == 3 {print $3}' | grep -v '^hidet_nccl_' | sort -u)
    [ -z "$foreign" ] || { echo "$(basename "$a") defines globals without the hidet_nccl_ prefix:"; echo "$foreign"; }
    check "$(basename "$a"): only hidet_nccl_* globals" [ -z "$foreign" ]
    defined=$(nm -g --defined-only "$a" | awk 'NF == 3' | wc -l)
    check "$(basename "$a"): defines globals at all ($defined)" [ "$defined" -gt 0 ]
done

cudart=$cuda/lib64/libcudart_static.a
[ -f "$cudart" ] || cudart=$cuda/lib/libcudart_static.a
flags=(-I"$include" -I"$cuda/include" -I"$nccl_inc")
cc -shared -o "$tmp/libhn.so" -Wl,--whole-archive "$lib" -Wl,--no-whole-archive "$cudart" -ldl -lpthread -lrt -lz \
    2>"$tmp/so.log"
check "libhidet_nccl.a links into a shared object" [ -f "$tmp/libhn.so" ]
cat "$tmp/so.log"
mpicc -shared -o "$tmp/libhn_mpi.so" -Wl,--whole-archive "$lib_mpi" "$lib" -Wl,--no-whole-archive "$cudart" \
    -ldl -lpthread -lrt -lz 2>"$tmp/so_mpi.log"
check "libhidet_nccl_mpi.a links into a shared object" [ -f "$tmp/libhn_mpi.so" ]
cat "$tmp/so_mpi.log"
cc -o "$tmp/client" "${flags[@]}" "$client" -ldl 2>"$tmp/client.log"
check "the client builds" [ -x "$tmp/client" ]
cat "$tmp/client.log"
run_client() { "$tmp/client" "$tmp/libhn.so" >"$tmp/client.out" 2>&1 || { cat "$tmp/client.out"; return 1; }; }
check "the client calls the library through the shared object" run_client
cat "$tmp/client.out"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
