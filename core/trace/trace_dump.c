/* The flight recorder's dump: every ring of the process as JSON lines, one file per rank,
 * written atomically into the trace directory (docs/flight_recorder.md has the format). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <nccl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/nccl/dtype_int.h"
#include "core/base/status_int.h"
#include "core/base/log_int.h"
#include "core/nccl/nccl_loader_int.h"
#include "core/base/settings_int.h"
#include "core/trace/trace_ring_int.h"

#define TRACE_FORMAT 1

/* s as a JSON string (quotes, backslashes and control bytes escaped; bytes >= 0x80 are
 * passed as they are). */
static void put_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f) fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

/* CLOCK_MONOTONIC nanoseconds as seconds since the epoch. */
static double wall_seconds(uint64_t mono_ns) {
    struct timespec m, r;
    clock_gettime(CLOCK_MONOTONIC, &m);
    clock_gettime(CLOCK_REALTIME, &r);
    double now_mono = (double)m.tv_sec + m.tv_nsec * 1e-9, now_real = (double)r.tv_sec + r.tv_nsec * 1e-9;
    return now_real - (now_mono - (double)mono_ns * 1e-9);
}

static const char *completion_state(const hn_trace_t *t, uint32_t slot, const hn_trace_entry_t *e) {
    if (e->result != ncclSuccess && e->result != ncclInProgress) return "enqueue_failed";
    switch (e->completion) {
        case HN_TRACE_EVENT: {
            cudaError_t q = cudaEventQuery(t->events[slot]);
            if (q == cudaSuccess) return "completed";
            if (q == cudaErrorNotReady) return "pending";
            return "unknown";
        }
        case HN_TRACE_IN_GROUP: return "in_group";
        case HN_TRACE_CAPTURED: return "captured";
        default: return "not_tracked";
    }
}

void hidet_nccl__trace_write(FILE *f, int id, const hn_trace_t *t, const char *state, const char *why) {
    uint64_t next = atomic_load_explicit(&t->next, memory_order_acquire);
    uint64_t first = next > t->entries ? next - t->entries : 0;
    fprintf(f, "{\"type\":\"comm\",\"comm\":%d,\"key\":\"%08x\",\"rank\":%d,\"nranks\":%d,\"state\":", id,
            (unsigned)t->key, t->rank, t->nranks);
    put_string(f, state);
    fprintf(f, ",\"why\":");
    put_string(f, why);
    if (t->how != NULL) fprintf(f, ",\"from\":\"%08x\",\"how\":\"%s\"", (unsigned)t->from_key, t->how);
    fprintf(f, ",\"next_seq\":%llu,\"entries\":%u,\"completion\":%s}\n", (unsigned long long)next,
            (unsigned)t->entries, t->events != NULL ? "true" : "false");
    for (uint64_t seq = first; seq < next; seq++) {
        uint32_t slot = (uint32_t)(seq % t->entries);
        const hn_trace_entry_t *src = &t->e[slot];
        uint64_t before = atomic_load_explicit(&src->stamp, memory_order_acquire);
        hn_trace_entry_t e;
        memcpy((char *)&e + sizeof e.stamp, (const char *)src + sizeof e.stamp, sizeof e - sizeof e.stamp);
        atomic_thread_fence(memory_order_acquire);
        if (before != seq + 1 || atomic_load_explicit(&src->stamp, memory_order_relaxed) != before)
            continue; /* being written, or overwritten since */
        e.tag[sizeof e.tag - 1] = '\0';
        fprintf(f, "{\"type\":\"op\",\"comm\":%d,\"key\":\"%08x\",\"seq\":%llu,\"coll\":", id, (unsigned)t->key,
                (unsigned long long)seq);
        put_string(f, e.coll);
        fprintf(f, ",\"dtype\":");
        put_string(f, hidet_nccl__dtype_str((hidet_nccl_dtype_t)e.dtype));
        fprintf(f, ",\"count\":%zu,\"op\":", e.count);
        const char *op = "-";
        if (e.op >= 0 && hidet_nccl_op_name((hidet_nccl_op_t)e.op, &op) != HIDET_NCCL_SUCCESS) op = "premul_sum";
        put_string(f, op);
        fprintf(f, ",\"peer\":%d,\"stream\":\"%p\",\"t\":%.6f,\"nccl_result\":%d,\"state\":", e.peer,
                (void *)e.stream, wall_seconds(e.t_ns), e.result);
        put_string(f, completion_state(t, slot, &e));
        fprintf(f, ",\"tag\":");
        put_string(f, e.tag);
        fputs("}\n", f);
    }
}

static _Atomic(hn_trace_each_fn) g_each; /* the registry's walk over its rings */

void hidet_nccl__trace_set_source(hn_trace_each_fn each) { atomic_store(&g_each, each); }

static void visit(void *arg, int id, const hn_trace_t *trace, const char *state, const char *why) {
    hidet_nccl__trace_write(arg, id, trace, state, why);
}

/* dir is an existing, writable directory that is not a symlink; its fd. */
static hidet_nccl_status_t open_dir(const char *dir, int *fd) {
    struct stat st;
    if (lstat(dir, &st) != 0)
        return HN_FAIL(errno == ENOENT ? HIDET_NCCL_ERROR_INVALID_ARGUMENT : HIDET_NCCL_ERROR_SYSTEM,
                       "trace directory '%s': %s (it must exist: the library makes no directories)", dir,
                       strerror(errno));
    if (S_ISLNK(st.st_mode))
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                       "trace directory '%s' is a symbolic link; give the directory it names", dir);
    if (!S_ISDIR(st.st_mode))
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "trace directory '%s' is not a directory", dir);
    *fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (*fd < 0) return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "trace directory '%s': open: %s", dir, strerror(errno));
    if (faccessat(*fd, ".", W_OK | X_OK, AT_EACCESS) != 0) {
        int e = errno;
        close(*fd);
        return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "trace directory '%s' is not writable: %s", dir, strerror(e));
    }
    return HIDET_NCCL_SUCCESS;
}

/* The file's name: the launcher's rank, else the pid. */
static void file_name(char *out, size_t size) {
    int rank = hidet_nccl__launcher_rank();
    if (rank >= 0) snprintf(out, size, HIDET_NCCL_TRACE_FILE_PREFIX "%d" HIDET_NCCL_TRACE_FILE_SUFFIX, rank);
    else snprintf(out, size, HIDET_NCCL_TRACE_FILE_PREFIX "pid%ld" HIDET_NCCL_TRACE_FILE_SUFFIX, (long)getpid());
}

static void write_header(FILE *f, const char *reason) {
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    const hn_nccl_t *n = hidet_nccl__nccl_loaded();
    struct timespec r;
    clock_gettime(CLOCK_REALTIME, &r);
    fprintf(f, "{\"type\":\"header\",\"hidet_nccl_trace\":%d,\"host\":", TRACE_FORMAT);
    put_string(f, host);
    fprintf(f, ",\"pid\":%ld,\"rank\":%d,\"time\":%.6f,\"nccl_version\":%d,\"reason\":", (long)getpid(),
            hidet_nccl__launcher_rank(), (double)r.tv_sec + r.tv_nsec * 1e-9, n != NULL ? n->version : 0);
    put_string(f, reason);
    /* what a reader says of a dump with no ring: why nothing was recorded */
    const char *off = hidet_nccl__trace_off_why();
    char recorder[160] = "on";
    if (off != NULL) snprintf(recorder, sizeof recorder, "off (%s)", off);
    fprintf(f, ",\"recorder\":");
    put_string(f, recorder);
    fputs("}\n", f);
}

hidet_nccl_status_t hidet_nccl__trace_dump(const char *dir, const char *reason, char *path, size_t path_size) {
    if (dir == NULL) dir = hidet_nccl__setting_str(HN_SETTING_TRACE_DIR);
    if (dir == NULL)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_USAGE,
                       "no trace directory: give one, or set HIDET_NCCL_TRACE_DIR (hidet-nccl-run --trace-dir)");
    int dfd = -1;
    HN_CHECK(open_dir(dir, &dfd));
    char name[64], tmp[96];
    file_name(name, sizeof name);
    snprintf(tmp, sizeof tmp, ".%s.tmp.%ld", name, (long)getpid());
    unlinkat(dfd, tmp, 0); /* our own leftover from a dump that died */
    int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (f == NULL) {
        int e = errno;
        if (fd >= 0) close(fd);
        close(dfd);
        return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "trace dump: cannot create %s/%s: %s", dir, tmp, strerror(e));
    }
    write_header(f, reason);
    hn_trace_each_fn each = atomic_load(&g_each);
    if (each != NULL) each(visit, f);
    int failed = ferror(f) || fflush(f) != 0 || fsync(fileno(f)) != 0;
    int e = errno;
    failed |= fclose(f) != 0;
    if (!failed && renameat(dfd, tmp, dfd, name) != 0) failed = 1, e = errno;
    if (failed) {
        unlinkat(dfd, tmp, 0);
        close(dfd);
        return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "trace dump: writing %s/%s failed: %s (a full disk?); nothing was kept",
                       dir, name, strerror(e ? e : EIO));
    }
    close(dfd);
    if (path != NULL && path_size > 0) snprintf(path, path_size, "%s/%s", dir, name);
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl_trace_dump(const char *dir, char *path, size_t path_size) {
    HN_ENTER();
    if (path != NULL && path_size == 0)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "path is given with path_size 0");
    return hidet_nccl__trace_dump(dir, "hidet_nccl_trace_dump", path, path_size);
}

void hidet_nccl__trace_dump_on_failure(const char *reason) {
    if (hidet_nccl__setting_str(HN_SETTING_TRACE_DIR) == NULL) return;
    char kept[1024], path[PATH_MAX + 64];
    snprintf(kept, sizeof kept, "%s", hidet_nccl_last_error());
    if (hidet_nccl__trace_dump(NULL, reason, path, sizeof path) == HIDET_NCCL_SUCCESS)
        HN_INFO("flight recorder dumped to %s (%s)", path, reason);
    else
        HN_WARN("flight recorder: %s", hidet_nccl__error_detail());
    hidet_nccl__restore_error(kept);
}
