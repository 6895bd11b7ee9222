/* Finds and loads libpmix at run time; resolves the few client calls the PMIx bootstrap needs. */
#ifndef HIDET_NCCL_NO_PMIX_HEADERS /* else the PMIx bootstrap is a stub that loads nothing */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap_pmix/pmix_loader_int.h"
#include "core/base/kit.h"

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static hn_pmix_t g_pmix;
static int g_loaded;

static const struct {
    const char *symbol;
    size_t offset;
    int required;
} k_symbols[] = {
    {"PMIx_Init", offsetof(hn_pmix_t, Init), 1},
    {"PMIx_Finalize", offsetof(hn_pmix_t, Finalize), 1},
    {"PMIx_Get", offsetof(hn_pmix_t, Get), 1},
    {"PMIx_Put", offsetof(hn_pmix_t, Put), 1},
    {"PMIx_Commit", offsetof(hn_pmix_t, Commit), 1},
    {"PMIx_Fence_nb", offsetof(hn_pmix_t, Fence_nb), 1},
    {"PMIx_Error_string", offsetof(hn_pmix_t, Error_string), 1},
    {"PMIx_Value_destruct", offsetof(hn_pmix_t, Value_destruct), 0},
};

/* Appends "\n  <place>: <what happened>" to the list of places looked in. */
static void note(char *why, size_t n, const char *place, const char *what) {
    size_t used = strlen(why);
    if (used + 8 < n) snprintf(why + used, n - used, "\n  %s: %s", place, what);
}

/* Takes handle if it has every required call; else notes which it lacks. */
static int adopt(void *handle, const char *path, char *why, size_t n) {
    hn_pmix_t t;
    memset(&t, 0, sizeof t);
    for (size_t i = 0; i < sizeof k_symbols / sizeof k_symbols[0]; i++) {
        void *f = dlsym(handle, k_symbols[i].symbol);
        if (f == NULL && k_symbols[i].required) {
            char what[128];
            snprintf(what, sizeof what, "loaded, but has no %s", k_symbols[i].symbol);
            note(why, n, path, what);
            return 0;
        }
        memcpy((char *)&t + k_symbols[i].offset, &f, sizeof f);
    }
    snprintf(t.path, sizeof t.path, "%s", path);
    g_pmix = t;
    HN_INFO("PMIx loaded from %s", path);
    return 1;
}

static int try_open(const char *path, int flags, const char *label, char *why, size_t n) {
    void *h = dlopen(path, flags);
    if (h == NULL) {
        const char *e = dlerror();
        note(why, n, label, e ? e : "not loaded");
        return 0;
    }
    if (adopt(h, label, why, n)) return 1;
    dlclose(h);
    return 0;
}

static int try_file(const char *path, char *why, size_t n) {
    if (access(path, F_OK) != 0) {
        note(why, n, path, "no such file");
        return 0;
    }
    return try_open(path, RTLD_NOW | RTLD_LOCAL, path, why, n);
}

static int load_locked(char *why, size_t n) {
    const char *explicit_path = hidet_nccl__setting_str(HN_SETTING_PMIX_LIBRARY);
    if (explicit_path != NULL) return try_file(explicit_path, why, n);
    if (try_open("libpmix.so.2", RTLD_NOW | RTLD_NOLOAD, "libpmix.so.2 already in the process", why, n)) return 1;
    const char *prefix = hidet_nccl__setting_str(HN_SETTING_PMIX_INSTALL_PREFIX);
    char path[4200];
    if (prefix != NULL) {
        snprintf(path, sizeof path, "%s/lib/libpmix.so.2", prefix);
        if (try_file(path, why, n)) return 1;
    } else {
        note(why, n, "$PMIX_INSTALL_PREFIX", "not set");
    }
    if (try_file("/usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so.2", why, n)) return 1;
    static const char *const sonames[] = {"libpmix.so.2", "libpmix.so"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s (system loader)", sonames[i]);
        if (try_open(sonames[i], RTLD_NOW | RTLD_LOCAL, path, why, n)) return 1;
    }
    return 0;
}

int hidet_nccl__pmix(const hn_pmix_t **out, char *why, size_t why_bytes) {
    pthread_mutex_lock(&g_lock);
    int ok = g_loaded;
    if (!ok) {
        char places[3072] = "";
        ok = g_loaded = load_locked(places, sizeof places);
        if (!ok)
            snprintf(why, why_bytes,
                     "no usable PMIx library (libpmix.so.2) was found%s. Searched, in order:%s\nInstall PMIx (it comes "
                     "with Open MPI and Slurm's PMIx plug-in) or set HIDET_NCCL_PMIX_LIBRARY to the file",
                     hidet_nccl__setting_is_set(HN_SETTING_PMIX_LIBRARY)
                         ? " ($HIDET_NCCL_PMIX_LIBRARY is set, so nothing else was tried)"
                         : "",
                     places);
    }
    pthread_mutex_unlock(&g_lock);
    if (ok) *out = &g_pmix;
    return ok ? 0 : -1;
}

void hidet_nccl__pmix_value_free(const hn_pmix_t *p, pmix_value_t *val) {
    if (val == NULL) return;
    if (p->Value_destruct != NULL) p->Value_destruct(val);
    else if (val->type == PMIX_BYTE_OBJECT || val->type == PMIX_STRING) free(val->data.bo.bytes); /* PMIx 3 */
    free(val);
}

#endif
