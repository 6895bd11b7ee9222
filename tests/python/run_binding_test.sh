#!/usr/bin/env bash
# Runs tests/python/binding_test.py with the package from bindings/python (Bazel runfiles), the
# collectives called through the extension module (hidet_nccl/_calls.abi3.so, beside the
# package's files), then again with the ctypes path forced.
#   run_binding_test.sh BINDING_TEST_PY LIBHIDET_NCCL_SO LIBFAKE_NCCL_SO PACKAGE_INIT_PY
set -eu
# The runfiles' folder, not the source tree's (realpath would leave the built module behind).
export PYTHONPATH=$(cd "$(dirname "$4")/.." && pwd)
status=0
for path in extension ctypes; do
    echo "=== binding_test.py, the collectives through $path"
    python3 "$1" "$2" "$3" "$path" || status=1
done
exit $status
