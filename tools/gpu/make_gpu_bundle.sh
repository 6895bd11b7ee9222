#!/usr/bin/env bash
# Builds every GPU test, example and the benchmark here (a machine without a GPU is fine:
# HPC sites build on login nodes) and copies them, with run.sh, into one self-contained
# folder for a GPU node that has the NVIDIA driver, NCCL and Open MPI but no Bazel:
#   tools/gpu/make_gpu_bundle.sh [DIR]      (default: gpu_bundle)
#   DIR/run.sh                          on the GPU node; ends with "N passed, N failed"
#   DIR/two_nodes.sh                    two fake nodes on one 2-GPU host (NET/Socket), every bootstrap
#   DIR/fake_nodes.sh                   on a 1-GPU host: the checks that need two ranks, as two fake nodes
#   DIR/buffer_targets.sh               library memory against raw NCCL's three modes, checked (issue 17)
#   DIR/recover.sh DIR/bin file|socket  survivors of dead ranks go on (hidet_nccl_comm_recover), fake nodes
#   DIR/heal.sh DIR/bin file|socket     a killed rank restarted and taken back in (hidet_nccl_comm_heal), fake nodes
#   DIR/heal_example.sh                 examples/cg_heal.c and cg_heal.py: a rank killed, healed, the answer bit for bit
#   DIR/overhead_compare.sh B A [N]     library/raw time ratios of two builds' bin folders, alternating (issue 37)
set -euo pipefail
cd "$(dirname "$0")/../.."
dest=${1:-gpu_bundle}
targets=(
    //tests:all_reduce_gpu_test
    //tests:mpi_gpu_test
    //tests:launcher_gpu_test
    //tests:collectives_gpu_test
    //tests:mem_gpu_test
    //tests:suite_gpu_test_mpi
    //tests:suite_gpu_test_file
    //tests:peer_death_gpu_test_mpi
    //tests:peer_death_gpu_test_file
    //tests:recover_gpu_test
    //tests:heal_gpu_test
    //tests:own_gpu_test
    //examples:hello_all_reduce
    //examples:mpi_all_reduce
    //examples:file_all_reduce
    //examples:cg_solve
    //examples:cg_heal
    //tools/run:hidet-nccl-run
    //tools/trace:hidet-nccl-trace
    //tools/bench:hidet-nccl-bench
    //tools/dev:collective_overhead_bench
    //tools/dev:host_cost_probe
    //tools/dev:coll_cost_probe
    //tools/support:libfake_nccl.so
    //tools/dev:bootstrap_cost_bench
    //:libhidet_nccl.so
    //:libhidet_nccl_mpi.so
    //:hidet_nccl
    //:hidet_nccl_mpi
    //bindings/python:hidet_nccl/_calls.abi3.so
)
bazel build "${targets[@]}"
rm -rf "$dest"
mkdir -p "$dest/bin"
for t in "${targets[@]}"; do
    path=${t#//}
    [[ $path == :* || $path == bindings/* ]] && continue # libraries and the Python package's module: below
    cp "bazel-bin/${path/://}" "$dest/bin/"
done
mkdir -p "$dest/python"
cp -r bindings/python/hidet_nccl "$dest/python/"
mkdir -p "$dest/python/hidet_nccl/lib"
cp bazel-bin/libhidet_nccl.so "$dest/python/hidet_nccl/lib/libhidet_nccl.so.0"
cp bazel-bin/libhidet_nccl_mpi.so "$dest/python/hidet_nccl/lib/libhidet_nccl_mpi.so.0"
# The collectives' calls without ctypes (stable ABI: the GPU machine's Python 3.12 loads it).
cp bazel-bin/bindings/python/hidet_nccl/_calls.abi3.so "$dest/python/hidet_nccl/"
cp tests/python/torch_gpu_test.py tools/dev/torch_compare_bench.py tools/dev/python_call_cost.py \
    examples/python/cg_heal.py "$dest/python/"
# The Fortran examples (gfortran / mpifort; the module is compiled with them).
fdir=$(mktemp -d)
(cd "$fdir" && gfortran -c "$OLDPWD/bindings/fortran/hidet_nccl.f90" "$OLDPWD/examples/fortran/cuda_runtime.f90" \
    "$OLDPWD/examples/fortran/all_reduce_check.f90" &&
    gfortran -o fortran_all_reduce "$OLDPWD/examples/fortran/all_reduce.f90" ./*.o "$OLDPWD/bazel-bin/libhidet_nccl.a" \
        -L"$(cat bazel-bin/external/local_cuda/root.txt 2>/dev/null || echo /usr/local/cuda)/lib64" -lcudart_static \
        -ldl -lpthread -lrt -lz -lm &&
    mpifort -o fortran_mpi_all_reduce "$OLDPWD/examples/fortran/mpi_all_reduce.f90" ./*.o \
        "$OLDPWD/bazel-bin/libhidet_nccl_mpi.a" "$OLDPWD/bazel-bin/libhidet_nccl.a" \
        -L/usr/local/cuda/lib64 -lcudart_static -ldl -lpthread -lrt -lz -lm &&
    gfortran -o fortran_cg_solve "$OLDPWD/examples/fortran/cg_solve.f90" hidet_nccl.o cuda_runtime.o \
        "$OLDPWD/bazel-bin/libhidet_nccl.a" -L/usr/local/cuda/lib64 -lcudart_static -ldl -lpthread -lrt -lz -lm &&
    gfortran -o fortran_heal_loop "$OLDPWD/examples/fortran/heal_loop.f90" hidet_nccl.o cuda_runtime.o \
        "$OLDPWD/bazel-bin/libhidet_nccl.a" -L/usr/local/cuda/lib64 -lcudart_static -ldl -lpthread -lrt -lz -lm)
cp "$fdir/fortran_all_reduce" "$fdir/fortran_mpi_all_reduce" "$fdir/fortran_cg_solve" "$fdir/fortran_heal_loop" "$dest/bin/"
rm -rf "$fdir"
cp tools/gpu/bundle_run.sh "$dest/run.sh"
cp tests/gpu/peer_death.sh "$dest/peer_death.sh"
cp tests/gpu/recover.sh "$dest/recover.sh"
cp tests/gpu/heal.sh "$dest/heal.sh"
cp tests/gpu/own_fake_nodes.sh "$dest/own_fake_nodes.sh"
cp tests/gpu/mem_table.sh "$dest/mem_table.sh"
cp tools/gpu/two_nodes.sh "$dest/two_nodes.sh"
cp tools/gpu/fake_nodes.sh "$dest/fake_nodes.sh"
cp tools/gpu/heal_example.sh "$dest/heal_example.sh"
cp tools/gpu/buffer_targets.sh "$dest/buffer_targets.sh"
cp tools/gpu/check_buffer_targets.py "$dest/"
cp tools/gpu/overhead_compare.sh tools/gpu/bench_ratios.py tools/gpu/bench_pairs.py "$dest/"
chmod +x "$dest/run.sh" "$dest/peer_death.sh" "$dest/two_nodes.sh" "$dest/fake_nodes.sh" "$dest/buffer_targets.sh" \
    "$dest/heal_example.sh"
echo "bundle in $dest: $(ls "$dest/bin" | tr '\n' ' ')"
