/* Settings: every environment variable the library reads, declared once (name, type,
 * default, range, documentation), read and parsed once into a snapshot, in the spirit of
 * NCCL's NCCL_PARAM. hidet_nccl_settings_reload() takes a new snapshot and keeps the one
 * before it (a reader may still hold its strings); the one before that is freed. */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/base/number.h"
#include "core/base/status_int.h"
#include "core/base/settings_int.h"
#include "core/base/thread_int.h"

typedef enum { KIND_STRING, KIND_SECRET, KIND_INT, KIND_SECONDS, KIND_BOOL, KIND_LEVEL } kind_t;

static const struct {
    const char *name;
    kind_t kind;
    const char *def; /* NULL: none */
    double min, max; /* KIND_INT, KIND_SECONDS (min exclusive for seconds) */
    const char *doc;
} k_settings[HN_NUM_SETTINGS] = {
#define HN_SETTING_ROW(id, name, kind, def, min, max, doc) [HN_SETTING_##id] = {name, KIND_##kind, def, min, max, doc},
    HN_SETTINGS(HN_SETTING_ROW)
#undef HN_SETTING_ROW
};

/* The launchers' rank variables, in the order they are trusted: the innermost launcher
 * first (hidet-nccl-run or torchrun started inside a Slurm step), then the MPI launchers,
 * then the resource manager. One list for every backend, device choice and the log prefix. */
enum { VAR_RANK, VAR_SIZE, VAR_LOCAL_RANK, VAR_LOCAL_SIZE, NUM_VARS };
static const struct {
    const char *launcher;
    const char *var[NUM_VARS];
} k_launchers[] = {
    {"hidet-nccl-run", {"HIDET_NCCL_RANK", "HIDET_NCCL_WORLD_SIZE", "HIDET_NCCL_LOCAL_RANK", "HIDET_NCCL_LOCAL_WORLD_SIZE"}},
    {"torchrun", {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"}},
    {"Open MPI", {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"}},
    {"MVAPICH2", {"MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_SIZE"}},
    {"Intel MPI", {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"}},
    {"Slurm", {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"}},
    {"PMI", {"PMI_RANK", "PMI_SIZE", "PMI_LOCAL_RANK", "PMI_LOCAL_SIZE"}},
};
#define NUM_LAUNCHERS (sizeof k_launchers / sizeof k_launchers[0])

typedef struct snapshot {
    char *env[HN_NUM_SETTINGS];       /* the variable's text, NULL if unset or empty */
    const char *value[HN_NUM_SETTINGS]; /* env if valid, else the default */
    char *error[HN_NUM_SETTINGS];     /* why env is not valid, NULL if it is */
    double number[HN_NUM_SETTINGS];   /* numeric kinds: the value */
    char *launch[NUM_LAUNCHERS][NUM_VARS];
    unsigned serial;                  /* 1 for the first snapshot, one more per reload */
    struct snapshot *older;           /* the previous snapshot, kept for one more reload */
} snapshot_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(snapshot_t *) g_current;

static char *dup_env(const char *name) {
    const char *v = getenv(name);
    return v != NULL && *v != '\0' ? strdup(v) : NULL;
}

static char *format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *format(const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return strdup(buf);
}

static const char *const k_levels[] = {"NONE", "WARN", "INFO", "TRACE"};

/* Parses setting i's text into s->number[i]; on a bad value sets s->error[i]. */
static void parse_one(snapshot_t *s, int i) {
    const char *name = k_settings[i].name, *v = s->env[i];
    if (k_settings[i].def != NULL && k_settings[i].kind != KIND_STRING && k_settings[i].kind != KIND_SECRET) {
        const char *d = k_settings[i].def;
        s->number[i] = k_settings[i].kind == KIND_LEVEL ? HN_LOG_WARN : strtod(d, NULL);
    }
    if (v == NULL) return;
    double x = 0;
    int ok;
    switch (k_settings[i].kind) {
        case KIND_STRING:
        case KIND_SECRET: return;
        case KIND_LEVEL:
            for (int l = 0; l < 4; l++)
                if (strcasecmp(v, k_levels[l]) == 0) {
                    s->number[i] = l;
                    return;
                }
            s->error[i] = format("%s='%.64s' is not NONE, WARN, INFO or TRACE; using WARN", name, v);
            return;
        case KIND_BOOL:
            if (strcmp(v, "0") == 0 || strcmp(v, "1") == 0) {
                s->number[i] = v[0] - '0';
                return;
            }
            s->error[i] = format("%s='%.64s' is not 0 or 1 (%s)", name, v, k_settings[i].doc);
            return;
        case KIND_INT:
        case KIND_SECONDS: /* core/base/number.h: digits only, then the range */
            if (k_settings[i].kind == KIND_INT) {
                uint64_t u;
                ok = hn_parse_uint(v, (uint64_t)k_settings[i].min, (uint64_t)k_settings[i].max, &u) == HN_NUMBER_OK;
                x = (double)u;
            } else {
                ok = hn_parse_decimal(v, k_settings[i].min, 1, k_settings[i].max, &x) == HN_NUMBER_OK;
            }
            if (ok) {
                s->number[i] = x;
                return;
            }
            /* The bounds in the digits the grammar asks for (%g would write 1 << 20 as 1.04858e+06). */
            char def[64] = "no default";
            if (k_settings[i].def != NULL) snprintf(def, sizeof def, "default %s", k_settings[i].def);
            if (k_settings[i].kind == KIND_INT)
                s->error[i] = format("%s='%.64s' is not a whole number in %.0f .. %.0f (%s; %s)", name, v,
                                     k_settings[i].min, k_settings[i].max, k_settings[i].doc, def);
            else
                s->error[i] = format("%s='%.64s' is not a positive number of seconds up to %.0f, in digits (%s; %s)",
                                     name, v, k_settings[i].max, k_settings[i].doc, def);
            return;
    }
}

static void free_snapshot(snapshot_t *s) {
    if (s == NULL) return;
    for (int i = 0; i < HN_NUM_SETTINGS; i++) {
        free(s->env[i]);
        free(s->error[i]);
    }
    for (size_t l = 0; l < NUM_LAUNCHERS; l++)
        for (int v = 0; v < NUM_VARS; v++) free(s->launch[l][v]);
    free(s);
}

static snapshot_t *take_snapshot(snapshot_t *older) {
    snapshot_t *s = calloc(1, sizeof *s);
    if (s == NULL) return NULL;
    for (int i = 0; i < HN_NUM_SETTINGS; i++) {
        s->env[i] = dup_env(k_settings[i].name);
        parse_one(s, i);
        s->value[i] = s->env[i] != NULL && s->error[i] == NULL ? s->env[i] : k_settings[i].def;
    }
    for (size_t l = 0; l < NUM_LAUNCHERS; l++)
        for (int v = 0; v < NUM_VARS; v++) s->launch[l][v] = dup_env(k_launchers[l].var[v]);
    s->older = older;
    s->serial = older != NULL ? older->serial + 1 : 1;
    return s;
}

/* The current snapshot, taken on first use. */
static const snapshot_t *current(void) {
    snapshot_t *s = atomic_load_explicit(&g_current, memory_order_acquire);
    if (s != NULL) return s;
    pthread_mutex_lock(&g_lock);
    s = atomic_load_explicit(&g_current, memory_order_relaxed);
    if (s == NULL) {
        s = take_snapshot(NULL);
        if (s == NULL) {
            pthread_mutex_unlock(&g_lock);
            static const snapshot_t empty; /* out of memory at the first call: defaults */
            return &empty;
        }
        atomic_store_explicit(&g_current, s, memory_order_release);
    }
    pthread_mutex_unlock(&g_lock);
    return s;
}

const char *hidet_nccl__setting_str(hn_setting_t id) { return current()->value[id]; }

int hidet_nccl__setting_is_set(hn_setting_t id) { return current()->env[id] != NULL; }

const char *hidet_nccl__setting_error(hn_setting_t id) { return id == HN_SETTING_DEBUG ? NULL : current()->error[id]; }

/* The value; on a bad one the default, and the error. */
static hidet_nccl_status_t number(hn_setting_t id, double *out) {
    const snapshot_t *s = current();
    *out = s->number[id];
    if (s->error[id] != NULL && id != HN_SETTING_DEBUG)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "%s", s->error[id]);
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl__setting_int(hn_setting_t id, int *out) {
    double x = 0;
    hidet_nccl_status_t st = number(id, &x);
    *out = (int)x;
    return st;
}

hidet_nccl_status_t hidet_nccl__setting_double(hn_setting_t id, double *out) { return number(id, out); }

hidet_nccl_status_t hidet_nccl__timeout_seconds(double *seconds) {
    return hidet_nccl__setting_double(HN_SETTING_TIMEOUT, seconds);
}

hidet_nccl_status_t hidet_nccl__deadline_seconds(double given, const char *what, double *seconds) {
    if (given == 0) return hidet_nccl__timeout_seconds(seconds);
    if (!isfinite(given) || given < 0 || given > HN_TIMEOUT_MAX_S)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                       "%s %g is not a number of seconds in (0, %g] (0: $HIDET_NCCL_TIMEOUT's)", what, given,
                       HN_TIMEOUT_MAX_S);
    *seconds = given;
    return HIDET_NCCL_SUCCESS;
}

unsigned hidet_nccl__settings_serial(void) { return current()->serial; }

void hidet_nccl__setting_info(hn_setting_t id, hn_setting_info_t *out) {
    const snapshot_t *s = current();
    *out = (hn_setting_info_t){k_settings[id].name, k_settings[id].doc, s->env[id], s->value[id], s->error[id],
                               s->number[id], k_settings[id].kind == KIND_SECRET};
}

/* Launcher l's variable v: 1 and its value, 0 unset, -1 malformed (message set). */
static int launcher_var(const snapshot_t *s, size_t l, int v, int *out) {
    const char *text = s->launch[l][v];
    if (text == NULL) return 0;
    if (hidet_nccl__parse_nonneg_int(text, out)) return 1;
    HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "%s='%.64s' (%s's %s) is not a non-negative integer",
            k_launchers[l].var[v], text, k_launchers[l].launcher,
            v == VAR_RANK ? "rank" : v == VAR_SIZE ? "world size" : v == VAR_LOCAL_RANK ? "local rank" : "local size");
    return -1;
}

hidet_nccl_status_t hidet_nccl__launcher_hints(hn_hints_t *out) {
    const snapshot_t *s = current();
    *out = (hn_hints_t){-1, -1, -1, -1, "", ""};
    size_t l;
    for (l = 0; l < NUM_LAUNCHERS && s->launch[l][VAR_RANK] == NULL; l++) {}
    if (l < NUM_LAUNCHERS) {
        if (launcher_var(s, l, VAR_RANK, &out->rank) < 0 || launcher_var(s, l, VAR_SIZE, &out->nranks) < 0)
            return HIDET_NCCL_ERROR_INVALID_ARGUMENT;
        snprintf(out->source, sizeof out->source, "%s ($%s%s%s)", k_launchers[l].launcher, k_launchers[l].var[VAR_RANK],
                 out->nranks >= 0 ? ", $" : "; $", out->nranks >= 0 ? k_launchers[l].var[VAR_SIZE] : "");
        if (out->nranks < 0)
            snprintf(out->source, sizeof out->source, "%s ($%s; its world size $%s is not set)", k_launchers[l].launcher,
                     k_launchers[l].var[VAR_RANK], k_launchers[l].var[VAR_SIZE]);
    } else {
        size_t used = (size_t)snprintf(out->source, sizeof out->source, "no launcher's rank variable is set ($");
        for (l = 0; l < NUM_LAUNCHERS && used < sizeof out->source; l++)
            if (l == 0 || strcmp(k_launchers[l].var[VAR_RANK], k_launchers[l - 1].var[VAR_RANK]) != 0)
                used += (size_t)snprintf(out->source + used, sizeof out->source - used, "%s%s", l ? ", $" : "",
                                         k_launchers[l].var[VAR_RANK]);
        if (used < sizeof out->source) snprintf(out->source + used, sizeof out->source - used, ")");
    }
    for (l = 0; l < NUM_LAUNCHERS && s->launch[l][VAR_LOCAL_RANK] == NULL; l++) {}
    if (l < NUM_LAUNCHERS) {
        if (launcher_var(s, l, VAR_LOCAL_RANK, &out->local_rank) < 0 ||
            launcher_var(s, l, VAR_LOCAL_SIZE, &out->local_size) < 0)
            return HIDET_NCCL_ERROR_INVALID_ARGUMENT;
        snprintf(out->local_source, sizeof out->local_source, "$%s", k_launchers[l].var[VAR_LOCAL_RANK]);
    }
    if (out->nranks >= 0 && (out->nranks < 1 || out->rank >= out->nranks))
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "rank %d of %d ranks, from %s, is out of range", out->rank,
                       out->nranks, out->source);
    if (out->local_size >= 0 && (out->local_size < 1 || out->local_rank >= out->local_size))
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "local rank %d of local size %d, from %s, is out of range",
                       out->local_rank, out->local_size, out->local_source);
    return HIDET_NCCL_SUCCESS;
}

const char *hidet_nccl__launcher_var(int launcher, int which, const char **name) {
    if (launcher < 0 || (size_t)launcher >= NUM_LAUNCHERS || which < 0 || which >= NUM_VARS) return NULL;
    if (name != NULL) *name = k_launchers[launcher].launcher;
    return k_launchers[launcher].var[which];
}

int hidet_nccl__launcher_rank(void) {
    const snapshot_t *s = current();
    for (size_t l = 0; l < NUM_LAUNCHERS; l++) {
        if (s->launch[l][VAR_RANK] == NULL) continue;
        int r;
        return hidet_nccl__parse_nonneg_int(s->launch[l][VAR_RANK], &r) ? r : -1;
    }
    return -1;
}

/* ---------------------------------------------------------------- public */

hidet_nccl_status_t hidet_nccl_setting(const char *name, const char **value, const char **source) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(name);
    HN_CHECK_NOT_NULL(value);
    const snapshot_t *s = current();
    for (int i = 0; i < HN_NUM_SETTINGS; i++) {
        if (strcmp(name, k_settings[i].name) != 0) continue;
        *value = s->value[i];
        if (source != NULL)
            *source = s->error[i] ? "default (the environment's value is invalid)"
                      : s->env[i] ? "environment"
                      : s->value[i] ? "default"
                                    : "unset";
        if (s->error[i] != NULL) /* HIDET_NCCL_DEBUG too: logging goes on at WARN, but the value is bad */
            return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "%s", s->error[i]);
        return HIDET_NCCL_SUCCESS;
    }
    for (size_t l = 0; l < NUM_LAUNCHERS; l++)
        for (int v = 0; v < NUM_VARS; v++) {
            if (strcmp(name, k_launchers[l].var[v]) != 0) continue;
            *value = s->launch[l][v];
            if (source != NULL) *source = s->launch[l][v] ? "environment" : "unset";
            return HIDET_NCCL_SUCCESS;
        }
    return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                   "'%.64s' is not a variable the library reads (docs/user_guide.md lists them)", name);
}

hidet_nccl_status_t hidet_nccl_settings_reload(void) {
    HN_ENTER();
    (void)current(); /* the first snapshot exists */
    pthread_mutex_lock(&g_lock);
    snapshot_t *old = atomic_load_explicit(&g_current, memory_order_relaxed);
    snapshot_t *s = take_snapshot(old);
    if (s != NULL) {
        atomic_store_explicit(&g_current, s, memory_order_release);
        hidet_nccl__stale_copies(); /* the threads' copies of what the collectives read (thread_int.h) */
        free_snapshot(old->older); /* two reloads ago */
        old->older = NULL;
    }
    pthread_mutex_unlock(&g_lock);
    if (s == NULL) return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "out of memory reading the settings");
    return HIDET_NCCL_SUCCESS; /* the log prints the new snapshot before its next line */
}
