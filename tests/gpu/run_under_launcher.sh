#!/usr/bin/env bash
# run_under_launcher.sh LAUNCHER N PROGRAM: PROGRAM as N ranks of hidet-nccl-run.
exec "$1" -n "$2" --tag-output "$3"
