#!/usr/bin/env bash
# The Fortran binding of heal in a program (examples/fortran/heal_loop.f90, a loop that heals
# after a rank's death): gfortran compiles the module and the program, the program calls
# hidet_nccl_comm_heal and hidet_nccl_comm_joined, and every hidet_nccl_* function it calls is
# one that libhidet_nccl.a defines. Nothing runs (no GPU here); tools/gpu/make_gpu_bundle.sh links
# it for the GPU machine.
#   fortran_heal_test.sh MODULE.f90 CUDA_RUNTIME.f90 HEAL_LOOP.f90 libhidet_nccl.a
set -u
module=$(realpath "$1") cuda=$(realpath "$2") program=$(realpath "$3") archive=$(realpath "$4")
tmp=${TEST_TMPDIR:-$(mktemp -d)}/fortran_heal
rm -rf "$tmp"
mkdir -p "$tmp"
passed=0
failed=0
check() { local what=$1; shift; if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $what"; fi; }

(cd "$tmp" && gfortran -c "$module" "$cuda" && gfortran -c "$program") >"$tmp/gfortran.log" 2>&1
check "gfortran compiles the module and heal_loop.f90" [ -f "$tmp/heal_loop.o" ] || cat "$tmp/gfortran.log"
called=$(nm -u "$tmp/heal_loop.o" 2>/dev/null | awk '{print $NF}' | grep '^hidet_nccl_' | sort -u)
defined=$(nm -g --defined-only "$archive" | awk '$2 == "T" {print $3}' | sort -u)
for f in hidet_nccl_comm_heal hidet_nccl_comm_joined hidet_nccl_init; do
    check "heal_loop.f90 calls $f" grep -qx "$f" <<<"$called"
done
missing=$(comm -23 <(echo "$called") <(echo "$defined"))
[ -z "$missing" ] || echo "called by heal_loop.f90, not defined in $(basename "$archive"): $missing"
check "every hidet_nccl_* function heal_loop.f90 calls is in the archive ($(wc -w <<<"$called") of them)" \
    [ -n "$called" -a -z "$missing" ]
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
