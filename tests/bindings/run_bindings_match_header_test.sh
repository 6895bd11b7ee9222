#!/usr/bin/env bash
# Runs bindings_match_header_test.py on the runfiles' headers and bindings.
#   run_bindings_match_header_test.sh TEST_PY HEADER.h... PACKAGE/__init__.py MODULE.f90 CALLS.c
set -eu
export PYTHONDONTWRITEBYTECODE=1
exec python3 "$@"
