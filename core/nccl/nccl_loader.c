/* Finds and loads NCCL at run time; resolves the functions the library needs into one table.
 * Search order: see hidet_nccl_load() in include/hidet_nccl/hidet_nccl.h. */
#include <dlfcn.h>
#include <glob.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/base/status_int.h"
#include "core/nccl/nccl_loader_int.h"
#include "core/nccl/nccl_version_int.h"

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const k_system_sonames[] = {"libnccl.so.2", "libnccl.so", NULL};
const char *const *hidet_nccl__system_sonames = k_system_sonames;
hn_nccl_t hidet_nccl__nccl_table;
_Atomic int hidet_nccl__nccl_ready; /* set once the table is complete */

/* What was tried, one line per place, for the error when nothing loads. */
typedef struct {
    char text[16384];
    size_t len;
} searched_t;

static void note(searched_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(searched_t *s, const char *fmt, ...) {
    if (s->len + 4 >= sizeof s->text) return;
    s->text[s->len++] = '\n';
    s->text[s->len++] = ' ';
    s->text[s->len++] = ' ';
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(s->text + s->len, sizeof s->text - s->len, fmt, ap);
    va_end(ap);
    if (n > 0) s->len += (size_t)n < sizeof s->text - s->len ? (size_t)n : sizeof s->text - s->len - 1;
}

static const struct {
    const char *symbol;
    size_t offset;
    int required;
} k_symbols[] = {
#define HN_NCCL_ROW(ret, name, since, params) {"nccl" #name, offsetof(hn_nccl_t, name), (since) == 0},
    HN_NCCL_SYMBOLS(HN_NCCL_ROW)
#undef HN_NCCL_ROW
};

/* Fills t from handle; on a missing required symbol returns its name. */
static const char *resolve(void *handle, hn_nccl_t *t) {
    for (size_t i = 0; i < sizeof k_symbols / sizeof k_symbols[0]; i++) {
        void *f = dlsym(handle, k_symbols[i].symbol);
        if (f == NULL && k_symbols[i].required) return k_symbols[i].symbol;
        memcpy((char *)t + k_symbols[i].offset, &f, sizeof f);
    }
    return NULL;
}

/* Takes handle (which may be RTLD_DEFAULT) if it holds a usable NCCL; else notes why. */
static int adopt(void *handle, const char *path, searched_t *s) {
    hn_nccl_t t;
    memset(&t, 0, sizeof t);
    const char *missing = resolve(handle, &t);
    if (missing != NULL) {
        note(s, "%s: loaded, but has no %s (not NCCL 2.7 or newer)", path, missing);
        HN_INFO("NCCL candidate %s lacks %s; skipped", path, missing);
        return 0;
    }
    int code = 0;
    if (t.GetVersion(&code) != ncclSuccess || code <= 0) {
        note(s, "%s: loaded, but ncclGetVersion failed", path);
        return 0;
    }
    t.version = hidet_nccl__version_normalize(code);
    snprintf(t.path, sizeof t.path, "%s", path);
    hidet_nccl__nccl_table = t;
    HN_INFO("NCCL %d.%d.%d loaded from %s", hidet_nccl__version_major(t.version),
            hidet_nccl__version_minor(t.version), hidet_nccl__version_patch(t.version), t.path);
    return 1;
}

/* dlopen a file path; a missing file is noted without asking the loader. */
static int try_file(const char *path, searched_t *s) {
    if (access(path, F_OK) != 0) {
        note(s, "%s: no such file", path);
        HN_INFO("NCCL not at %s", path);
        return 0;
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        const char *e = dlerror();
        note(s, "%s: %s", path, e ? e : "dlopen failed");
        HN_INFO("NCCL at %s did not load: %s", path, e ? e : "?");
        return 0;
    }
    if (adopt(h, path, s)) return 1;
    dlclose(h);
    return 0;
}

static int try_dir(const char *dir, const char *sub, searched_t *s) {
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s/libnccl.so.2", dir, sub) >= (int)sizeof path) return 0;
    return try_file(path, s);
}

/* Every <pattern>/nvidia/nccl/lib/libnccl.so.2 where pattern is a glob of site-packages. */
static int try_site_glob(const char *prefix, const char *pattern, const char *what, searched_t *s) {
    char pat[PATH_MAX];
    if (snprintf(pat, sizeof pat, "%s/%s/nvidia/nccl/lib/libnccl.so.2", prefix, pattern) >= (int)sizeof pat)
        return 0;
    glob_t g;
    int rc = glob(pat, 0, NULL, &g);
    if (rc != 0) {
        note(s, "%s (%s): no such file", pat, what);
        HN_INFO("NCCL not at %s (%s)", pat, what);
        if (rc == GLOB_NOMATCH) globfree(&g);
        return 0;
    }
    int found = 0;
    for (size_t i = 0; i < g.gl_pathc && !found; i++) found = try_file(g.gl_pathv[i], s);
    globfree(&g);
    return found;
}

static int try_python_prefix(const char *prefix, const char *what, searched_t *s) {
    return try_site_glob(prefix, "lib/python3*/site-packages", what, s) ||
           try_site_glob(prefix, "lib/python3*/dist-packages", what, s);
}

/* The first python3 on PATH: its prefix as found (a venv's bin/python3 is a link to the
 * base interpreter, whose site-packages are not the venv's) and as resolved. */
static int try_python_on_path(searched_t *s) {
    const char *path_env = hidet_nccl__setting_str(HN_SETTING_PATH);
    if (path_env == NULL) return 0;
    char *copy = strdup(path_env);
    if (copy == NULL) return 0;
    int found = 0;
    char *save = NULL;
    for (char *dir = strtok_r(copy, ":", &save); dir != NULL; dir = strtok_r(NULL, ":", &save)) {
        char exe[PATH_MAX];
        if (*dir == '\0' || snprintf(exe, sizeof exe, "%s/python3", dir) >= (int)sizeof exe) continue;
        if (access(exe, X_OK) != 0) continue;
        char prefix[PATH_MAX];
        snprintf(prefix, sizeof prefix, "%s/..", dir);
        found = try_python_prefix(prefix, "python3 on PATH", s);
        char real[PATH_MAX];
        if (!found && realpath(exe, real) != NULL) {
            char *slash = strrchr(real, '/');
            if (slash != NULL) {
                *slash = '\0';
                snprintf(prefix, sizeof prefix, "%s/..", real);
                found = try_python_prefix(prefix, "python3 on PATH, resolved", s);
            }
        }
        break; /* only the first python3 on PATH */
    }
    free(copy);
    return found;
}

/* A copy already in the process: the program itself (static or dynamic link), or a
 * libnccl.so.2 another component loaded. */
static int try_in_process(searched_t *s) {
    void *sym = dlsym(RTLD_DEFAULT, "ncclGetVersion");
    if (sym != NULL) {
        Dl_info info;
        const char *where = dladdr(sym, &info) && info.dli_fname && *info.dli_fname ? info.dli_fname
                                                                                   : "(the program)";
        char label[PATH_MAX];
        snprintf(label, sizeof label, "%s (already in the process)", where);
        if (adopt(RTLD_DEFAULT, label, s)) return 1;
    } else {
        note(s, "(already in the process): no ncclGetVersion symbol");
    }
    void *h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
    if (h == NULL) {
        note(s, "libnccl.so.2 loaded privately by another component: none");
        return 0;
    }
    struct link_map *lm = NULL;
    char label[PATH_MAX];
    snprintf(label, sizeof label, "%s (already loaded)",
             dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name ? lm->l_name : "libnccl.so.2");
    if (adopt(h, label, s)) return 1;
    dlclose(h);
    return 0;
}

static hidet_nccl_status_t load_locked(void) {
    searched_t s = {{0}, 0};
    const char *explicit_path = hidet_nccl__setting_str(HN_SETTING_LIBRARY);
    if (explicit_path != NULL) {
        if (try_file(explicit_path, &s)) return HIDET_NCCL_SUCCESS;
        return HN_FAIL(HIDET_NCCL_ERROR_NCCL_NOT_FOUND,
                       "HIDET_NCCL_LIBRARY=%s could not be used; no other place is tried while it is set:%s",
                       explicit_path, s.text);
    }
    if (try_in_process(&s)) return HIDET_NCCL_SUCCESS;
    const char *nccl_home = hidet_nccl__setting_str(HN_SETTING_NCCL_HOME);
    if (nccl_home != NULL) {
        if (try_dir(nccl_home, "lib", &s) || try_dir(nccl_home, "lib64", &s)) return HIDET_NCCL_SUCCESS;
    } else {
        note(&s, "$NCCL_HOME: not set");
    }
    const char *venv = hidet_nccl__setting_str(HN_SETTING_VIRTUAL_ENV);
    if (venv != NULL && try_python_prefix(venv, "VIRTUAL_ENV", &s)) return HIDET_NCCL_SUCCESS;
    const char *conda = hidet_nccl__setting_str(HN_SETTING_CONDA_PREFIX);
    if (conda != NULL && try_python_prefix(conda, "CONDA_PREFIX", &s)) return HIDET_NCCL_SUCCESS;
    const char *user_base = hidet_nccl__setting_str(HN_SETTING_PYTHONUSERBASE);
    const char *home = hidet_nccl__setting_str(HN_SETTING_HOME);
    char user_prefix[PATH_MAX] = "";
    if (user_base != NULL) snprintf(user_prefix, sizeof user_prefix, "%s", user_base);
    else if (home != NULL) snprintf(user_prefix, sizeof user_prefix, "%s/.local", home);
    if (*user_prefix && try_python_prefix(user_prefix, "user site", &s)) return HIDET_NCCL_SUCCESS;
    if (try_python_on_path(&s)) return HIDET_NCCL_SUCCESS;
    const char *cuda_home = hidet_nccl__setting_str(HN_SETTING_CUDA_HOME); /* default /usr/local/cuda */
    if (try_dir(cuda_home, "lib64", &s) || try_dir(cuda_home, "lib", &s)) return HIDET_NCCL_SUCCESS;
    const char *const *sonames = hidet_nccl__system_sonames;
    for (size_t i = 0; sonames[i] != NULL; i++) {
        void *h = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
        if (h == NULL) {
            const char *e = dlerror();
            note(&s, "%s (system loader): %s", sonames[i], e ? e : "not found");
            continue;
        }
        char label[PATH_MAX];
        struct link_map *lm = NULL;
        snprintf(label, sizeof label, "%s",
                 dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && *lm->l_name ? lm->l_name : sonames[i]);
        if (adopt(h, label, &s)) return HIDET_NCCL_SUCCESS;
        dlclose(h);
    }
    return HN_FAIL(HIDET_NCCL_ERROR_NCCL_NOT_FOUND,
                   "no usable NCCL (libnccl.so.2) was found. Searched, in order:%s\n"
                   "Install NCCL (e.g. pip install nvidia-nccl-cu12, or your distribution's libnccl2) or set "
                   "HIDET_NCCL_LIBRARY to the file.",
                   s.text);
}

hidet_nccl_status_t hidet_nccl__nccl_load(const hn_nccl_t **out) {
    pthread_mutex_lock(&g_lock);
    hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
    if (!atomic_load_explicit(&hidet_nccl__nccl_ready, memory_order_relaxed)) {
        st = load_locked();
        if (st == HIDET_NCCL_SUCCESS) atomic_store_explicit(&hidet_nccl__nccl_ready, 1, memory_order_release);
    }
    pthread_mutex_unlock(&g_lock);
    if (st != HIDET_NCCL_SUCCESS) return st;
    *out = &hidet_nccl__nccl_table;
    return HIDET_NCCL_SUCCESS;
}

HN_COLD hidet_nccl_status_t hidet_nccl__nccl_fail(const char *func, const char *call, ncclResult_t r,
                                          ncclComm_t comm) {
    const hn_nccl_t *n = hidet_nccl__nccl_loaded();
    const char *str = n ? n->GetErrorString(r) : "?";
    const char *last = n && n->GetLastError ? n->GetLastError(comm) : NULL;
    const char *hint = "";
    if (r == ncclSystemError || r == ncclInternalError || r == ncclRemoteError || r == ncclUnhandledCudaError)
        hint = ". For details rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,BOOTSTRAP,NET; on hosts with "
               "several network interfaces set NCCL_SOCKET_IFNAME";
    return hidet_nccl__fail(HIDET_NCCL_ERROR_NCCL, func, "%s failed: %s (ncclResult_t %d)%s%s%s", call, str,
                            (int)r, last && *last ? ": " : "", last && *last ? last : "", hint);
}

hidet_nccl_status_t hidet_nccl_load(void) {
    HN_ENTER();
    const hn_nccl_t *n;
    return hidet_nccl__nccl(&n);
}

hidet_nccl_status_t hidet_nccl_library_path(const char **path) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(path);
    const hn_nccl_t *n;
    HN_CHECK(hidet_nccl__nccl(&n));
    *path = n->path;
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl_nccl_version(int *version_code) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(version_code);
    const hn_nccl_t *n;
    HN_CHECK(hidet_nccl__nccl(&n));
    *version_code = n->version;
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl__needs(const hn_nccl_t *n, const void *fn, int min_version, const char *what,
                                      const char *call) {
    if (fn != NULL && n->version >= min_version) return HIDET_NCCL_SUCCESS;
    return HN_FAIL(HIDET_NCCL_ERROR_UNSUPPORTED, "%s needs NCCL %d.%d.%d or newer (%s); the loaded NCCL is %d.%d.%d (%s)",
                   what, hidet_nccl__version_major(min_version), hidet_nccl__version_minor(min_version),
                   hidet_nccl__version_patch(min_version), call, hidet_nccl__version_major(n->version),
                   hidet_nccl__version_minor(n->version), hidet_nccl__version_patch(n->version), n->path);
}
