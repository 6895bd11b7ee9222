#!/usr/bin/env bash
# Runs tests/python/binding_test.py with the package from bindings/python (Bazel runfiles).
#   run_binding_test.sh BINDING_TEST_PY LIBHIDET_NCCL_SO LIBFAKE_NCCL_SO PACKAGE_INIT_PY
set -eu
export PYTHONPATH=$(dirname "$(dirname "$(realpath "$4")")")
exec python3 "$1" "$2" "$3"
