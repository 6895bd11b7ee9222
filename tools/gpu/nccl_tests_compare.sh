#!/usr/bin/env bash
# Issue 37 with nccl-tests on a GPU machine (no compiler needed): the binaries
# tools/gpu/nccl_tests_build.sh made, each test run three ways on one NCCL:
#   stock    nccl-tests as NVIDIA's Makefile links it
#   lib      the same binary with LD_PRELOAD=BUILD_DIR/libhidet_nccl_tests_shim.so (the library in a
#            shared object; HIDET_NCCL_LIBRARY the libnccl.so.2 in use)
#   static   the test relinked with the shim and libhidet_nccl.a (the library in the executable)
#     BUILD_DIR/nccl_tests_compare.sh BUILD_DIR [ROUNDS]     (or tools/gpu/nccl_tests_compare.sh)
# First one check run per test through the library (-c 1: its "Out of bounds values" and the
# shim's adopted-communicators line), then ROUNDS (5) rounds of -b 8 -e 2M -f 8 -g 1 -n 200 -w 20
# -c 0, the three variants of a test one after another, their order reversed every other round;
# then nccl_tests_ratios.py (beside this script, else in BUILD_DIR) prints per test and size the
# medians over the rounds (us) and the ratios lib/stock and static/stock. On the H200 a run took
# about 1.2 s (most of it NCCL's and CUDA's start): 144 runs, about 170 s (ROUNDS 4: about 140 s).
# Environment: NCCL_DIR, the folder of the libnccl.so.2 every run loads (LD_LIBRARY_PATH, then
# BUILD_DIR/lib; default torch's); TESTS (every test in BUILD_DIR/stock); CHECK (lib; "lib static"
# checks both, "" none); CPU (none: every run pinned to that CPU by taskset, all three variants
# alike; on the H200 pinned runs of one binary spread less: 8 B all_reduce over 10 runs 4.8-6.2 us
# pinned, 4.7-7.6 not); RUN_TIMEOUT (60 s a run); KEEP (a folder to keep the runs' output in).
# NCCL_NVLS_ENABLE=0.
set -uo pipefail
dir=$(cd "${1:?BUILD_DIR (made by tools/gpu/nccl_tests_build.sh)}" && pwd) || exit 1
rounds=${2:-5}
here=$(cd "$(dirname "$0")" && pwd)
nccl_dir=${NCCL_DIR:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib}
nccl=$nccl_dir/libnccl.so.2
shim=$dir/libhidet_nccl_tests_shim.so
ratios=$here/nccl_tests_ratios.py
[ -f "$ratios" ] || ratios=$dir/nccl_tests_ratios.py
[ -e "$nccl" ] || {
    echo "nccl_tests_compare: no $nccl (set NCCL_DIR to the folder of libnccl.so.2)" >&2
    exit 1
}
for f in "$shim" "$ratios"; do
    [ -e "$f" ] || {
        echo "nccl_tests_compare: no $f (BUILD_DIR: the folder tools/gpu/nccl_tests_build.sh made)" >&2
        exit 1
    }
done
if [ -n "${TESTS:-}" ]; then
    read -ra tests <<<"$TESTS"
else
    tests=()
    for t in all_reduce all_gather broadcast reduce reduce_scatter sendrecv alltoall gather scatter; do
        [ -x "$dir/stock/${t}_perf" ] && tests+=("$t")
    done
fi
[ ${#tests[@]} -gt 0 ] || {
    echo "nccl_tests_compare: no tests in $dir/stock" >&2
    exit 1
}
# NCCL's folder first; then BUILD_DIR/lib (libverifiable.so.0, libcudart.so.13), the same for all three.
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$nccl_dir:$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
args=(-b 8 -e 2M -f 8 -g 1 -n 200 -w 20 -c 0)
check=(-b 8 -e 2M -f 8 -g 1 -n 200 -w 20 -c 1)
out=${KEEP:-$(mktemp -d)}
mkdir -p "$out"
rm -f "$out"/*.stock "$out"/*.lib "$out"/*.static "$out"/*.check "$out/stdout" "$out/stderr"
start=$SECONDS

run() { # variant test args...: one run, its stdout then its stderr appended to $out/test.variant
    local v=$1 t=$2 rc cmd
    shift 2
    local file=$out/$t.$v
    case $v in
    stock) cmd=("$dir/stock/${t}_perf") ;;
    lib | lib.check) cmd=(env HIDET_NCCL_LIBRARY="$nccl" LD_PRELOAD="$shim" "$dir/stock/${t}_perf") ;;
    static | static.check) cmd=("$dir/static/${t}_perf") ;;
    esac
    echo "## run $((++runs))" >>"$file"
    # stdout (a file: block-buffered) and stderr apart, then one after the other: a line on stderr
    # never lands inside a row.
    timeout "${RUN_TIMEOUT:-60}" ${pin[@]+"${pin[@]}"} "${cmd[@]}" "$@" >"$out/stdout" 2>"$out/stderr"
    rc=$?
    cat "$out/stdout" "$out/stderr" >>"$file"
    if [ $rc -ne 0 ]; then
        echo "## exit $rc" >>"$file"
        echo "nccl_tests_compare: $v ${t}_perf $* exited $rc (tail of its output:)"
        tail -5 "$file" | sed 's/^/    /'
    fi
    return $rc
}
runs=0
pin=()
[ -n "${CPU:-}" ] && pin=(taskset -c "$CPU")

echo "nccl-tests: stock; lib = through hidet-nccl by LD_PRELOAD (the library in a shared object); static = the"
echo "relinked binary (shim + libhidet_nccl.a in the executable). Median time over runs (us)"
echo "# gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"
echo "# nccl: $nccl ($(readlink -f "$nccl"))"
echo "# build: $(head -2 "$dir/BUILD_INFO.txt" 2>/dev/null | paste -sd ';' -)"
echo "# args: ${args[*]}; $rounds rounds; tests: ${tests[*]}${CPU:+; pinned to CPU $CPU}"
echo "## check runs (-c 1) through the library"
for t in "${tests[@]}"; do
    for v in ${CHECK-lib}; do
        run "$v.check" "$t" "${check[@]}"
        rc=$?
        said=$(grep -E "Out of bounds values|hidet_nccl_tests_shim:" "$out/$t.$v.check" | sed 's/^# *//' | paste -sd '|' -)
        echo "$t ($v, exit $rc): ${said:-no Out of bounds line, no line from the shim}"
    done
done
for r in $(seq 1 "$rounds"); do
    if ((r % 2)); then order=(stock lib static); else order=(static lib stock); fi
    for t in "${tests[@]}"; do
        for v in "${order[@]}"; do
            [ "$v" = static ] && [ ! -x "$dir/static/${t}_perf" ] && continue
            run "$v" "$t" "${args[@]}"
        done
    done
    echo "# round $r of $rounds done ($((SECONDS - start)) s)"
done
rm -f "$out/stdout" "$out/stderr"
python3 "$ratios" "$out" "${tests[@]}"
echo "# $runs runs in $((SECONDS - start)) s${KEEP:+; their output in $out}"
[ -n "${KEEP:-}" ] || rm -rf "$out"
