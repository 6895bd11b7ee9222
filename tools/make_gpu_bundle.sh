#!/usr/bin/env bash
# Builds every GPU test and example here (a machine without a GPU is fine) and copies them,
# with run.sh, into one self-contained folder for a GPU machine that has NCCL, CUDA's driver
# and Open MPI but no Bazel:   tools/make_gpu_bundle.sh [DIR]   (default: gpu_bundle)
# There:                       DIR/run.sh      -> ends with "N passed, N failed"
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-gpu_bundle}
targets=$(bazel query 'attr(tags, "\bgpu\b", tests(//...)) + kind(cc_binary, //examples/... + //tools/...)' 2>/dev/null)
bazel build $targets
rm -rf "$dest"
mkdir -p "$dest/bin"
for t in $targets; do
    path=${t#//}
    cp "bazel-bin/${path/://}" "$dest/bin/"
done
cp tools/gpu_bundle_run.sh "$dest/run.sh"
chmod +x "$dest/run.sh"
echo "bundle in $dest: $(ls "$dest/bin" | tr '\n' ' ')"
