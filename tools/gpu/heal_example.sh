#!/usr/bin/env bash
# The heal example end to end, from a bundle made by tools/gpu/make_gpu_bundle.sh, on a machine
# with one GPU or more:
#   heal_example.sh [N [RENDEZVOUS...]]    (N: the grid, default 64; RENDEZVOUS: file socket, the default)
#                                          logs: $LOG_DIR (./gpu_logs)/heal_example
# (each job is killed after $HEAL_EXAMPLE_RUN_S seconds, 480 by default)
# examples/cg_heal.c (bin/cg_heal) and examples/python/cg_heal.py (python/cg_heal.py, when python3
# has torch) on 3 ranks under hidet-nccl-run, each rank a fake node when the GPUs are fewer (its own
# NCCL_HOSTID; NCCL over NET/Socket on lo, P2P and SHM off), through both rendezvous (the default
# file one, and --rendezvous socket). For each: an undisturbed run, then runs under --max-restarts 2
# in which one rank kills itself mid-solve and is started again:
#   C:      rank 1 at iteration 25 (a checkpoint every 10); rank 0 at iteration 43 (every 7)
#   Python: rank 2 at iteration 31 (every 10: its buddy is rank 0)
# A killed run passes when the launcher exits 0, the kill and the restart happened, the survivors
# healed, every rank rolled back (the new one from its buddy's copy) and each of the 3 ranks printed
# the undisturbed run's answer, bit for bit: "heal example ...: identical: ANSWER", else both answers
# or what is missing, and the log's end. Ends with "N passed, N failed".
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=$here/bin
grid=${1:-64}
shift $(($# > 0 ? 1 : 0))
rendezvous=${*:-file socket}
out=${LOG_DIR:-$PWD/gpu_logs}/heal_example
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
ranks=3
ngpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
wrap=()
if [ "$ngpus" -lt "$ranks" ]; then
    export NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo
    wrap=(bash -c 'export NCCL_HOSTID=fakenode$HIDET_NCCL_RANK; exec "$0" "$@"')
fi
export PYTHONPATH=$here/python${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
passed=0 failed=0 skipped=0

# The distinct answers in a log ("N=64: 171 iterations, checksum 0x... (...)"), one a line.
answers() { grep -a "answer: " "$1" | sed 's/.*answer: //' | sort -u; }

# launch NAME RENDEZVOUS RESTARTS PROGRAM...: the job, its output in $out/NAME.log; the launcher's exit.
launch() {
    local name=$1 rdv=$2 restarts=$3 mode=() t0 rc
    shift 3
    [ "$rdv" = socket ] && mode=(--rendezvous socket)
    t0=$(date +%s.%N)
    timeout -k 10 "${HEAL_EXAMPLE_RUN_S:-480}" "$bin/hidet-nccl-run" -n "$ranks" "${mode[@]}" --max-restarts "$restarts" --tag-output \
        "${wrap[@]}" "$@" >"$out/$name.log" 2>&1
    rc=$?
    echo "heal_example: $name: launcher exit $rc after $(awk -v a="$t0" -v b="$(date +%s.%N)" \
        'BEGIN { printf "%.1f", b - a }') s" | tee -a "$out/$name.log" >&2 # not on stdout: undisturbed's answer
    return "$rc"
}

# undisturbed NAME RENDEZVOUS PROGRAM...: prints the answer when the 3 ranks agree, else nothing.
undisturbed() {
    local name=$1 rdv=$2 n
    shift 2
    launch "$name" "$rdv" 0 "$@" || { tail -20 "$out/$name.log" >&2; return 0; }
    n=$(grep -ac "answer: " "$out/$name.log")
    if [ "$n" -eq "$ranks" ] && [ "$(answers "$out/$name.log" | wc -l)" -eq 1 ]; then
        answers "$out/$name.log"
    else
        echo "heal_example: $name: $n answer lines, $(answers "$out/$name.log" | wc -l) distinct" >&2
    fi
}

# killed NAME RENDEZVOUS WANT KILL_RANK KILL_AT EVERY WHAT PROGRAM...: a run with a kill, against WANT.
killed() {
    local name=$1 rdv=$2 want=$3 victim=$4 at=$5 every=$6 log=$out/$1.log bad=() got lines
    local label="heal example ($rdv rendezvous, $7, rank $victim killed at iteration $at, a checkpoint every $every)"
    shift 7
    launch "$name" "$rdv" 2 "$@" "$grid" --every "$every" --kill-rank "$victim" --kill-at "$at" ||
        bad+=("the launcher did not exit 0")
    grep -aq "rank $victim: SIGKILL to itself at iteration $at" "$log" || bad+=("rank $victim never killed itself")
    grep -aq "rank $victim: restart 1 of 2 started" "$log" || bad+=("hidet-nccl-run never restarted rank $victim")
    lines=$(grep -ac "healed at iteration" "$log")
    [ "$lines" -ge $((ranks - 1)) ] || bad+=("$lines survivors said they healed, not $((ranks - 1))")
    grep -aq "rank $victim: back at iteration .* (its buddy's copy)" "$log" ||
        bad+=("rank $victim never came back from its buddy's copy")
    lines=$(grep -ac "back at iteration .* (its own copy)" "$log")
    [ "$lines" -ge $((ranks - 1)) ] || bad+=("$lines survivors rolled back, not $((ranks - 1))")
    lines=$(grep -ac "answer: " "$log")
    got=$(answers "$log")
    [ "$lines" -eq "$ranks" ] || bad+=("$lines answer lines, not $ranks")
    if [ -z "$want" ]; then
        bad+=("no undisturbed answer to compare with")
    elif [ "$got" != "$want" ]; then
        bad+=("the answers differ: undisturbed: $want; healed: $(echo "$got" | paste -sd '|')")
    fi
    if [ ${#bad[@]} -eq 0 ]; then
        passed=$((passed + 1))
        echo "$label: identical: $got"
    else
        failed=$((failed + 1))
        echo "$label: FAILED"
        printf '  %s\n' "${bad[@]}"
        grep -a "cg_heal" "$log" | grep -av "answer: " | tail -12 | sed 's/^/  | /'
        tail -8 "$log" | sed 's/^/  > /'
    fi
}

have_torch=1
python3 -c 'import torch; assert torch.cuda.is_available()' >/dev/null 2>&1 || have_torch=0
for rdv in $rendezvous; do
    want=$(undisturbed "c_${rdv}_undisturbed" "$rdv" "$bin/cg_heal" "$grid")
    echo "heal example ($rdv rendezvous, cg_heal): undisturbed: ${want:-none (see $out/c_${rdv}_undisturbed.log)}"
    killed "c_${rdv}_kill1" "$rdv" "$want" 1 25 10 cg_heal "$bin/cg_heal"
    killed "c_${rdv}_kill0" "$rdv" "$want" 0 43 7 cg_heal "$bin/cg_heal"
    if [ "$have_torch" -eq 0 ]; then
        echo "heal example ($rdv rendezvous, cg_heal.py): skipped: python3 has no torch with a GPU"
        skipped=$((skipped + 1))
        continue
    fi
    # the Python runs compare with the Python undisturbed run (other arithmetic, torch's on the GPU)
    want=$(undisturbed "py_${rdv}_undisturbed" "$rdv" python3 "$here/python/cg_heal.py" "$grid" --every 10)
    echo "heal example ($rdv rendezvous, cg_heal.py): undisturbed: ${want:-none (see $out/py_${rdv}_undisturbed.log)}"
    killed "py_${rdv}_kill2" "$rdv" "$want" 2 31 10 cg_heal.py python3 "$here/python/cg_heal.py"
done
echo "$passed passed, $failed failed$([ "$skipped" -gt 0 ] && echo ", $skipped skipped")"
[ "$failed" -eq 0 ]
