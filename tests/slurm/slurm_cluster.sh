#!/usr/bin/env bash
# A one-host Slurm cluster for tests, started and stopped by this script, the same way in CI
# and on a developer's machine (root, or a user who may run the daemons):
#   slurm_cluster.sh start DIR     munge and slurmctld/slurmd in DIR; prints the SLURM_CONF line
#   slurm_cluster.sh stop DIR      stops what start started
# The munge key is made at start, slurm.conf is written for this machine (its host name, its
# CPUs, free ports), the daemons run in the foreground as background jobs, and start returns
# once sinfo shows the node idle (or fails, printing the daemons' logs).
set -u
if [ -n "${TEST_SRCDIR:-}" ]; then . "$TEST_SRCDIR/$TEST_WORKSPACE/tests/wait_for.sh"; else . "$(dirname "$(realpath "$0")")/../wait_for.sh"; fi
cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
dir=$(realpath -m "$dir")
export SLURM_CONF=$dir/slurm.conf

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null ||
        echo $((20000 + RANDOM % 20000))
}

daemons_gone() {
    local p
    for p in slurmd slurmctld munged; do
        [ -f "$dir/$p.pid" ] && kill -0 "$(cat "$dir/$p.pid")" 2>/dev/null && return 1
    done
    return 0
}

stop() {
    for p in slurmd slurmctld munged; do
        [ -f "$dir/$p.pid" ] && kill "$(cat "$dir/$p.pid")" 2>/dev/null
    done
    wait_for 10 "the daemons' end after SIGTERM (then SIGKILL)" daemons_gone >/dev/null
    for p in slurmd slurmctld munged; do
        [ -f "$dir/$p.pid" ] && kill -9 "$(cat "$dir/$p.pid")" 2>/dev/null
        rm -f "$dir/$p.pid"
    done
    [ -f "$dir/socket_dir" ] && rm -rf "$(cat "$dir/socket_dir")" && rm -f "$dir/socket_dir"
    return 0
}

start() {
    for t in munged slurmctld slurmd sinfo srun; do
        command -v "$t" >/dev/null || { echo "slurm_cluster: $t not found (apt-get install slurm-wlm munge)"; exit 1; }
    done
    # Sockets (munge's, slurmstepd's in the spool) need paths of at most 108 bytes, which a
    # test's temporary directory may exceed: they go to a short directory of their own.
    local sock_dir
    sock_dir=$(mktemp -d /tmp/hn-slurm.XXXXXX)
    chmod 755 "$sock_dir"
    echo "$sock_dir" >"$dir/socket_dir"
    mkdir -p "$dir/state" "$sock_dir/spool" "$dir/munge"
    chmod 700 "$dir/munge"
    dd if=/dev/urandom of="$dir/munge/munge.key" bs=1 count=1024 status=none
    chmod 400 "$dir/munge/munge.key"
    munged --force --key-file="$dir/munge/munge.key" --socket="$sock_dir/munge.sock" \
        --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge/seed" ||
        { echo "slurm_cluster: munged did not start:"; cat "$dir/munged.log"; exit 1; }
    local host cpus user
    host=$(hostname -s)
    cpus=16 # more than the machine's, so that tests may place several tasks per CPU
    user=$(id -un)
    cat >"$SLURM_CONF" <<CONF
ClusterName=hntest
SlurmctldHost=$host
SlurmUser=$user
SlurmdUser=$user
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock_dir/munge.sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$sock_dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
CONF
    slurmctld -D -f "$SLURM_CONF" >"$dir/slurmctld.out" 2>&1 &
    slurmd -D -f "$SLURM_CONF" >"$dir/slurmd.out" 2>&1 &
    node_idle() { [ "$(sinfo -h -o %t 2>/dev/null | head -1)" = idle ]; }
    if wait_for 60 "the node idle in sinfo" node_idle; then
        echo "export SLURM_CONF=$SLURM_CONF"
        return 0
    fi
    echo "slurm_cluster: the node did not become idle (sinfo: '$(sinfo -h -o %t 2>/dev/null | head -1)'); logs:"
    tail -n 20 "$dir"/slurmctld.log "$dir"/slurmd.log "$dir"/*.out 2>/dev/null
    stop
    exit 1
}

case $cmd in
    start) start ;;
    stop) stop ;;
    *) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
