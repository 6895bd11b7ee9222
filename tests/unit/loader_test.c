/* The NCCL loader's search order, each case in a fresh child process (the loader loads once
 * per process). Uses the real libnccl.so.2 of this machine (HN_TEST_REAL_NCCL, or the
 * CUDA_HOME / /usr/local/cuda copy). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/nccl/nccl_loader_int.h"
#include "hidet_nccl/hidet_nccl.h"
#include "tests/cunit_runner.h"

static char g_real[PATH_MAX]; /* a real libnccl.so.2 */
static char g_tmp[PATH_MAX];  /* this test's scratch folder */

typedef struct {
    int status;
    int version;
    char path[1024];
    char message[16384];
} outcome_t;

/* Runs setup() then hidet_nccl_load() in a child; the outcome comes back through a file. */
static outcome_t run_child(void (*setup)(void)) {
    outcome_t out;
    memset(&out, 0, sizeof out);
    out.status = -1;
    char file[PATH_MAX];
    snprintf(file, sizeof file, "%s/outcome", g_tmp);
    unlink(file);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        /* A clean slate: nothing set that the search reads. */
        unsetenv("HIDET_NCCL_LIBRARY");
        unsetenv("NCCL_HOME");
        unsetenv("VIRTUAL_ENV");
        unsetenv("CONDA_PREFIX");
        unsetenv("PYTHONUSERBASE");
        setenv("HOME", "/nonexistent-home", 1);
        setenv("PATH", "/nonexistent-bin", 1);
        setenv("CUDA_HOME", "/nonexistent-cuda", 1);
        setup();
        hidet_nccl_settings_reload(); /* the environment as setup left it */
        outcome_t o;
        memset(&o, 0, sizeof o);
        o.status = hidet_nccl_load();
        snprintf(o.message, sizeof o.message, "%s", hidet_nccl_last_error());
        const char *p;
        if (hidet_nccl_library_path(&p) == HIDET_NCCL_SUCCESS) snprintf(o.path, sizeof o.path, "%s", p);
        hidet_nccl_nccl_version(&o.version);
        FILE *f = fopen(file, "wb");
        if (f == NULL || fwrite(&o, sizeof o, 1, f) != 1) _exit(3);
        fclose(f);
        _exit(0);
    }
    int ws = 0;
    waitpid(pid, &ws, 0);
    CU_ASSERT_FATAL(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    FILE *f = fopen(file, "rb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fread(&out, sizeof out, 1, f), 1);
    fclose(f);
    return out;
}

/* Puts the real library at dir/libnccl.so.2 (a hard link where possible, else a copy). */
static void place_nccl(const char *dir) {
    char cmd[3 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && (ln -f '%s' '%s/libnccl.so.2' 2>/dev/null || cp '%s' '%s/libnccl.so.2')",
             dir, g_real, dir, g_real, dir);
    CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
}

static const char *const k_no_system[] = {"libnccl-not-here.so.2", NULL};

/* ---- cases */

static void setup_nothing(void) { hidet_nccl__system_sonames = k_no_system; }

static void test_nothing_found_lists_every_place(void) {
    outcome_t o = run_child(setup_nothing);
    CU_ASSERT_EQUAL(o.status, HIDET_NCCL_ERROR_NCCL_NOT_FOUND);
    static const char *const places[] = {"(already in the process)", "$NCCL_HOME: not set",
                                         "/nonexistent-home/.local/lib/python3*/site-packages/nvidia/nccl/lib",
                                         "/nonexistent-cuda/lib64/libnccl.so.2", "/nonexistent-cuda/lib/libnccl.so.2",
                                         "libnccl-not-here.so.2 (system loader)", "HIDET_NCCL_LIBRARY"};
    for (size_t i = 0; i < sizeof places / sizeof places[0]; i++) {
        if (strstr(o.message, places[i]) == NULL) fprintf(stderr, "missing '%s' in:\n%s\n", places[i], o.message);
        CU_ASSERT_PTR_NOT_NULL(strstr(o.message, places[i]));
    }
    CU_ASSERT_STRING_EQUAL(o.path, "");
}

static void setup_explicit_missing(void) { setenv("HIDET_NCCL_LIBRARY", "/no/such/libnccl.so.2", 1); }

static void test_explicit_missing_has_no_fallback(void) {
    /* The system loader would find NCCL here; an explicit file that fails must not fall back. */
    outcome_t o = run_child(setup_explicit_missing);
    CU_ASSERT_EQUAL(o.status, HIDET_NCCL_ERROR_NCCL_NOT_FOUND);
    CU_ASSERT_PTR_NOT_NULL(strstr(o.message, "HIDET_NCCL_LIBRARY=/no/such/libnccl.so.2"));
    CU_ASSERT_PTR_NOT_NULL(strstr(o.message, "no other place is tried"));
    CU_ASSERT_PTR_NOT_NULL(strstr(o.message, "no such file"));
    CU_ASSERT_STRING_EQUAL(o.path, "");
}

static char g_not_nccl[PATH_MAX];
static void setup_explicit_not_nccl(void) { setenv("HIDET_NCCL_LIBRARY", g_not_nccl, 1); }

static void test_explicit_not_nccl(void) {
    outcome_t o = run_child(setup_explicit_not_nccl);
    CU_ASSERT_EQUAL(o.status, HIDET_NCCL_ERROR_NCCL_NOT_FOUND);
    CU_ASSERT_PTR_NOT_NULL(strstr(o.message, "has no ncclGetVersion"));
}

static void setup_explicit_real(void) { setenv("HIDET_NCCL_LIBRARY", g_real, 1); }

static void test_explicit_real(void) {
    outcome_t o = run_child(setup_explicit_real);
    CU_ASSERT_EQUAL(o.status, HIDET_NCCL_SUCCESS);
    CU_ASSERT_STRING_EQUAL(o.path, g_real);
    CU_ASSERT(o.version >= 20700 && o.version < 30000);
}

static char g_venv[PATH_MAX], g_venv_lib[PATH_MAX];
static void setup_venv(void) {
    setenv("VIRTUAL_ENV", g_venv, 1);
    hidet_nccl__system_sonames = k_no_system;
}

static void test_pip_wheel_in_venv(void) {
    place_nccl(g_venv_lib);
    outcome_t o = run_child(setup_venv);
    CU_ASSERT_EQUAL(o.status, HIDET_NCCL_SUCCESS);
    char want[PATH_MAX];
    snprintf(want, sizeof want, "%s/libnccl.so.2", g_venv_lib);
    CU_ASSERT_STRING_EQUAL(o.path, want);
}

static char g_pybin[PATH_MAX];
static void setup_python_on_path(void) {
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "/nonexistent-bin:%s:/usr/bin", g_pybin);
    setenv("PATH", path, 1);
    hidet_nccl__system_sonames = k_no_system;
}

static void test_pip_wheel_of_python_on_path(void) {
    /* g_venv/bin/python3 (an empty executable) is the first python3 on PATH. */
    char exe[PATH_MAX + 16];
    snprintf(exe, sizeof exe, "%s/python3", g_pybin);
    int fd = open(exe, O_CREAT | O_WRONLY | O_TRUNC, 0755);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd);
    place_nccl(g_venv_lib);
    outcome_t o = run_child(setup_python_on_path);
    CU_ASSERT_EQUAL(o.status, HIDET_NCCL_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL(strstr(o.path, "/site-packages/nvidia/nccl/lib/libnccl.so.2"));
    CU_ASSERT_PTR_NOT_NULL(strstr(o.path, g_venv));
}

static char g_home[PATH_MAX];
static void setup_nccl_home(void) {
    setenv("NCCL_HOME", g_home, 1);
    setenv("VIRTUAL_ENV", g_venv, 1); /* NCCL_HOME comes first */
}

static void test_nccl_home_before_pip(void) {
    char lib[PATH_MAX + 8];
    snprintf(lib, sizeof lib, "%s/lib", g_home);
    place_nccl(lib);
    place_nccl(g_venv_lib);
    outcome_t o = run_child(setup_nccl_home);
    CU_ASSERT_EQUAL(o.status, HIDET_NCCL_SUCCESS);
    char want[PATH_MAX + 32];
    snprintf(want, sizeof want, "%s/lib/libnccl.so.2", g_home);
    CU_ASSERT_STRING_EQUAL(o.path, want);
}

static void setup_already_global(void) {
    if (dlopen(g_real, RTLD_NOW | RTLD_GLOBAL) == NULL) _exit(4);
    setenv("NCCL_HOME", g_home, 1); /* would be found next; the loaded copy must win */
}

static void test_copy_already_in_process_global(void) {
    outcome_t o = run_child(setup_already_global);
    CU_ASSERT_EQUAL(o.status, HIDET_NCCL_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL(strstr(o.path, "(already in the process)"));
}

static void setup_already_local(void) {
    if (dlopen(g_real, RTLD_NOW | RTLD_LOCAL) == NULL) _exit(4);
    setenv("NCCL_HOME", g_home, 1);
}

static void test_copy_already_loaded_privately(void) {
    outcome_t o = run_child(setup_already_local);
    CU_ASSERT_EQUAL(o.status, HIDET_NCCL_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL(strstr(o.path, "(already loaded)"));
}

static void setup_system(void) {}

static void test_system_loader_last(void) {
    outcome_t o = run_child(setup_system);
    CU_ASSERT_EQUAL(o.status, HIDET_NCCL_SUCCESS);
    CU_ASSERT_PTR_NOT_NULL(strstr(o.path, "libnccl.so"));
}

static void test_unique_id_without_gpu(void) {
    /* ncclGetUniqueId needs no GPU: two calls give two different ids. */
    ncclUniqueId a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    HN_ASSERT_STATUS(hidet_nccl_get_unique_id(&a), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_get_unique_id(&b), HIDET_NCCL_SUCCESS, NULL);
    static const ncclUniqueId zero;
    CU_ASSERT(memcmp(&a, &zero, sizeof a) != 0);
    CU_ASSERT(memcmp(&a, &b, sizeof a) != 0);
    HN_ASSERT_STATUS(hidet_nccl_get_unique_id(NULL), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "id");
}

static void test_query_arguments(void) {
    HN_ASSERT_STATUS(hidet_nccl_library_path(NULL), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "path");
    HN_ASSERT_STATUS(hidet_nccl_nccl_version(NULL), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "version_code");
}

static int find_real_nccl(void) {
    const char *candidates[] = {getenv("HN_TEST_REAL_NCCL"), getenv("CUDA_HOME"), "/usr/local/cuda/lib64/libnccl.so.2",
                                "/usr/lib/x86_64-linux-gnu/libnccl.so.2"};
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
        if (candidates[i] == NULL) continue;
        char buf[PATH_MAX];
        snprintf(buf, sizeof buf, "%s", candidates[i]);
        if (i == 1) snprintf(buf, sizeof buf, "%s/lib64/libnccl.so.2", candidates[i]);
        if (realpath(buf, g_real) != NULL) return 1;
    }
    return 0;
}

int main(void) {
    if (!find_real_nccl()) {
        fprintf(stderr, "loader_test needs a real libnccl.so.2 (set HN_TEST_REAL_NCCL)\n");
        return 1;
    }
    const char *t = getenv("TEST_TMPDIR");
    snprintf(g_tmp, sizeof g_tmp, "%s/loader", t ? t : "/tmp");
    mkdir(g_tmp, 0700);
    snprintf(g_venv, sizeof g_venv, "%s/venv", g_tmp);
    snprintf(g_venv_lib, sizeof g_venv_lib, "%s/lib/python3.12/site-packages/nvidia/nccl/lib", g_venv);
    snprintf(g_pybin, sizeof g_pybin, "%s/bin", g_venv);
    mkdir(g_venv, 0700);
    mkdir(g_pybin, 0700);
    snprintf(g_home, sizeof g_home, "%s/nccl_home", g_tmp);
    /* Some shared object that is not NCCL: the C library (found through a symbol that
     * sanitizers do not intercept). */
    Dl_info info;
    void *libc_symbol = dlsym(RTLD_DEFAULT, "gnu_get_libc_version");
    if (libc_symbol == NULL || dladdr(libc_symbol, &info) == 0 || info.dli_fname == NULL) return 1;
    snprintf(g_not_nccl, sizeof g_not_nccl, "%s", info.dli_fname);
    static const hn_test_t tests[] = {
        {"nothing found lists every place", test_nothing_found_lists_every_place},
        {"explicit missing file has no fallback", test_explicit_missing_has_no_fallback},
        {"explicit file that is not NCCL", test_explicit_not_nccl},
        {"explicit real file", test_explicit_real},
        {"pip wheel in the active venv", test_pip_wheel_in_venv},
        {"pip wheel of the python3 on PATH", test_pip_wheel_of_python_on_path},
        {"NCCL_HOME before pip wheels", test_nccl_home_before_pip},
        {"copy already in the process (global)", test_copy_already_in_process_global},
        {"copy already loaded privately", test_copy_already_loaded_privately},
        {"system loader last", test_system_loader_last},
        {"unique id without a GPU", test_unique_id_without_gpu},
        {"query arguments", test_query_arguments},
        {NULL, NULL},
    };
    return hn_run_tests("loader", tests);
}
