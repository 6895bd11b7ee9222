# Sourced by the heal tests (tests/heal/file/, tests/heal/socket/): why a job's processes died,
# when the launcher restarted more than the driver killed.
#   extra_deaths OUT ERR   prints the launcher's causes of death counted, the deaths that were
#                          not a SIGKILL, and what the ranks said of a failure (at most 5 lines each)
extra_deaths() {
    local out=$1 err=$2
    grep -o "failed ([^)]*)" "$err" | sort | uniq -c | sed 's/^/    launcher: /'
    grep "failed (" "$err" | grep -v "killed by signal 9" | head -n 5 | sed 's/^/    /'
    grep -h "heal_driver\|hidet_nccl WARN\|ERROR: AddressSanitizer\|runtime error" "$out" "$err" | head -n 5 |
        sed 's/^/    /'
}
