/* libFuzzer target: every environment variable the library reads, set from arbitrary bytes,
 * then everything that parses them: the bootstrap choice, the shared-file bootstrap's rank,
 * size, local rank, job key, directory and poll cap (Slurm's variables included), the
 * timeout, and the integer parser under them.
 *   bazel build --config=fuzz //tests/fuzz:env_fuzzer
 *   bazel-bin/tests/fuzz/env_fuzzer -max_total_time=1800 .fuzz/env_corpus tests/fuzz/env_corpus
 * The input is the variables' values, separated by NUL bytes, in the order of k_vars; the
 * settings are read again (hidet_nccl_settings_reload) for every input. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/base/kit.h"
#include "hidet_nccl/bootstrap.h"

static const char *const k_vars[] = {
    "HIDET_NCCL_RANK", "RANK", "SLURM_PROCID", "HIDET_NCCL_WORLD_SIZE", "WORLD_SIZE", "SLURM_NTASKS",
    "HIDET_NCCL_LOCAL_RANK", "LOCAL_RANK", "SLURM_LOCALID", "HIDET_NCCL_LOCAL_WORLD_SIZE", "LOCAL_WORLD_SIZE",
    "SLURM_NTASKS_PER_NODE", "HIDET_NCCL_JOB_KEY", "SLURM_JOB_ID", "SLURM_STEP_ID", "HIDET_NCCL_POLL_MAX_MS",
    "HIDET_NCCL_TIMEOUT", "HIDET_NCCL_BOOTSTRAP", "HIDET_NCCL_NONBLOCKING", "HIDET_NCCL_RENDEZVOUS_DIR",
    /* Added with the settings module: the other launchers' variables and the debug level. */
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_RANK", "PMI_SIZE",
    "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK",
};
#define N_VARS (sizeof k_vars / sizeof k_vars[0])

/* "NAME=value" strings handed to putenv, one per variable, rewritten in place: setenv would
 * keep a copy of every value ever set (glibc never frees them), and the fuzzer would run out
 * of memory. */
#define VALUE_MAX 256
static char g_entries[N_VARS][64 + VALUE_MAX];

static void set_var(size_t i, const char *value) {
    snprintf(g_entries[i], sizeof g_entries[i], "%s=%.*s", k_vars[i], VALUE_MAX - 1, value);
    putenv(g_entries[i]);
}

static char g_dir[] = "/tmp/hidet-nccl-env-fuzz-XXXXXX";

static void remove_dir(void) { rmdir(g_dir); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int made;
    if (!made && (made = mkdtemp(g_dir) != NULL)) atexit(remove_dir);
    const char *dir = g_dir;
    char *copy = malloc(size + 1);
    if (copy == NULL) return 0;
    memcpy(copy, data, size);
    copy[size] = '\0';
    const char *p = copy, *end = copy + size;
    for (size_t i = 0; i < N_VARS; i++) {
        if (p > end || *p == '\x01') { /* \x01: leave the variable unset */
            unsetenv(k_vars[i]);
        } else if (strcmp(k_vars[i], "HIDET_NCCL_RENDEZVOUS_DIR") == 0 && *p != '/') {
            set_var(i, dir); /* a real directory, unless the input gives an absolute path */
        } else if (strcmp(k_vars[i], "HIDET_NCCL_BOOTSTRAP") == 0 && strchr(p, '/') != NULL) {
            set_var(i, "file"); /* a path would dlopen whatever it names */
        } else {
            set_var(i, p);
        }
        if (p <= end) p += strlen(p) + 1;
    }
    hidet_nccl_settings_reload();
    hidet_nccl_bootstrap_h bs = NULL;
    if (hidet_nccl_bootstrap_from_env(&bs) == HIDET_NCCL_SUCCESS) {
        int a, b;
        const char *name;
        hidet_nccl_bootstrap_rank(bs, &a, &b);
        hidet_nccl_bootstrap_local_rank(bs, &a, &b);
        hidet_nccl_bootstrap_name(bs, &name);
        hidet_nccl_bootstrap_destroy(bs);
    }
    (void)strlen(hidet_nccl_last_error());
    double t;
    hidet_nccl__timeout_seconds(&t);
    const char *value;
    hidet_nccl_setting("HIDET_NCCL_POLL_MAX_MS", &value, NULL);
    hidet_nccl_setting(k_vars[size % N_VARS], &value, NULL);
    int v;
    hidet_nccl__parse_nonneg_int(copy, &v);
    free(copy);
    return 0;
}
