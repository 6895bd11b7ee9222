#!/usr/bin/env bash
# valgrind memcheck on the CPU-side paths (registry, arguments, settings, NCCL loading, the
# bootstraps' create/broadcast/allgather/destroy, finalize, the hostile sweep): no definite or indirect leak of
# hidet_nccl's own (NCCL's own are suppressed by .ci/valgrind.supp). Needs `bazel build`.
set -u
cd "$(dirname "$0")/.."
bin=bazel-bin/tests
failed=0
check() { # name binary args...
    local name=$1 log
    shift
    log=$(mktemp)
    if valgrind --quiet --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect \
        --suppressions=.ci/valgrind.supp --error-exitcode=99 "$@" >"$log" 2>&1; then
        echo "valgrind $name: no leak, no error"
    else
        echo "valgrind $name: FAILED"
        grep -E "^==[0-9]+==|\.\.\.FAILED|^    [0-9]+\. " "$log" | head -40
        failed=$((failed + 1))
    fi
    rm -f "$log"
}
check registry_test $bin/registry_test
check args_test $bin/args_test
check blocking_call_test $bin/blocking_call_test
check loader_test $bin/loader_test
check hostile_test $bin/hostile_test
check settings_test $bin/settings_test
check bootstrap_plugin_test $bin/bootstrap_plugin_test $bin/plugin/libloopback_v2_plugin.so
check bootstrap_plugin_v1_test $bin/bootstrap_plugin_v1_test $bin/plugin/libloopback_plugin.so $bin/plugin/libno_symbol_plugin.so
check bootstrap_file_test $bin/bootstrap_file_test $bin/file_bootstrap_peer
echo "valgrind: $failed failed"
[ "$failed" -eq 0 ]
