#!/usr/bin/env bash
# Runs a test binary under mpirun: mpi_run.sh NP BINARY [ARGS...]
np=$1
shift
exec mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$np" \
    --mca btl self,vader --mca btl_vader_single_copy_mechanism none "$@"
