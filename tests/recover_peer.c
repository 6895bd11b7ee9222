/* One rank of a job whose ranks die in stages while the others recover, for the recovery tests of
 * any bootstrap that can recover (the public API only: the bootstrap comes from the environment,
 * as hidet-nccl-run or another launcher sets it).
 *   recover_peer PLAN SEED [TIMEOUT_S]
 * PLAN: kill stages separated by '/', each a comma list of original ranks or rK (K distinct ranks
 * drawn from SEED, the same on every process): "1/0" kills rank 1, then rank 0; "r2" two ranks.
 * Every rank loops allgathers of (original rank, epoch, counter) and checks what it gets. Once
 * the ranks of the stage under way are all in the job and this rank reached TRIGGER allgathers
 * of the epoch, a victim of the stage kills itself (SIGKILL) after a delay drawn from SEED and its
 * rank (0 .. 50 ms: inside a call, or while the others recover). On any bootstrap error a rank
 * calls hidet_nccl_bootstrap_recover and prints
 *   EPOCH <e> KEPT <original ranks that go on>
 * then the new rank 0 makes an id (hidet_nccl_get_unique_id) and broadcasts it:
 *   ID <e> <crc32 of the id, hex>
 * A stage is over when none of its victims is kept. After the last one, a last allgather checks
 * every rank, and each prints
 *   DONE <original ranks>
 * and exits 0. A rank left out prints LEFT OUT and exits 3; any other failure: a line on stderr,
 * exit 1. Made, its bootstrap prints "BOOT <rank> <unix us>". For the measurements: a victim
 * prints "KILL <rank> <unix us>" as it kills itself, a
 * survivor "SAW <epoch> <unix us>" when a call fails and "ROUND <epoch> <us in recover>". Every
 * call has the deadline TIMEOUT_S (default 20 s): nothing waits for ever.
 * With HN_RECOVER_REAPED_LATE_MS=MS a victim's leading thread ends first and the process MS
 * later: for that long it is a zombie its parent cannot reap yet, as a dead rank is for as long
 * as a busy launcher takes to reap it. In its finalize a rank then sees such a zombie reaped by
 * its parent (hidet-nccl-run) right after kill(pid, 0) found it, before the library's next look
 * at it (kill below), and prints "REAPED <pid>" for each: a process seen gone must stay gone, or
 * a round's files that wait for it stay for nobody. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "hidet_nccl/bootstrap.h"
#include "tests/proc_state.h"

#define MAX_RANKS 4096
#define MAX_STAGES 16
#define TRIGGER 2            /* allgathers of an epoch before a victim arms */
#define MAX_ALLGATHERS 200000 /* no death seen after this many: a broken plan, or a hang in slow motion */

typedef struct {
    int n_stages;
    unsigned char victim[MAX_STAGES][MAX_RANKS];
} plan_t;

static uint64_t g_rng;
static uint64_t next_rand(void) { /* splitmix64 */
    uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static long long unix_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static uint32_t crc32_of(const unsigned char *p, size_t n) {
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
    }
    return ~c;
}

/* One line to stdout, written at once (a victim's last words must not sit in a buffer). */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
    char line[8192];
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (len < 0) return;
    if (len > (int)sizeof line - 2) len = (int)sizeof line - 2;
    line[len++] = '\n';
    for (int put = 0; put < len;) {
        ssize_t w = write(1, line + put, (size_t)(len - put));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        put += (int)w;
    }
}

/* PLAN into stages. 0, or -1 (message on stderr). */
static int parse_plan(const char *text, int n, uint64_t seed, plan_t *p) {
    memset(p, 0, sizeof *p);
    g_rng = seed;
    const char *at = text;
    while (*at) {
        if (p->n_stages == MAX_STAGES) return fprintf(stderr, "recover_peer: more than %d stages\n", MAX_STAGES), -1;
        unsigned char *v = p->victim[p->n_stages++];
        for (;;) {
            char *end;
            if (*at == 'r') {
                long k = strtol(at + 1, &end, 10);
                if (end == at + 1 || k < 1 || k >= n)
                    return fprintf(stderr, "recover_peer: '%s': rK needs 1 <= K < %d\n", text, n), -1;
                int order[MAX_RANKS];
                for (int i = 0; i < n; i++) order[i] = i;
                for (int i = n - 1; i > 0; i--) { /* Fisher-Yates from SEED: the same on every rank */
                    int j = (int)(next_rand() % (uint64_t)(i + 1)), t = order[i];
                    order[i] = order[j];
                    order[j] = t;
                }
                for (long i = 0; i < k; i++) v[order[i]] = 1;
            } else {
                long r = strtol(at, &end, 10);
                if (end == at || r < 0 || r >= n)
                    return fprintf(stderr, "recover_peer: '%s': a rank must be in 0 .. %d\n", text, n - 1), -1;
                v[r] = 1;
            }
            at = end;
            if (*at != ',') break;
            at++;
        }
        if (*at == '/') at++;
        else if (*at) return fprintf(stderr, "recover_peer: '%s': unexpected '%c'\n", text, *at), -1;
    }
    return 0;
}

static int g_orig; /* this process's original rank */
static long g_late_ms; /* HN_RECOVER_REAPED_LATE_MS */
static pthread_t g_main;
static volatile int g_finalizing; /* in hidet_nccl_bootstrap_destroy */

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* The leading thread's end alone (no unwinding, no exit handlers): a zombie while the process lives on. */
static void end_thread(int sig) {
    (void)sig;
    syscall(SYS_exit, 0);
}

static void *kill_after(void *arg) {
    sleep_ms((long)(intptr_t)arg);
    say("KILL %d %lld", g_orig, unix_us());
    if (g_late_ms > 0) { /* where it stands, inside a call or not */
        pthread_kill(g_main, SIGUSR1);
        sleep_ms(g_late_ms);
    }
    kill(getpid(), SIGKILL);
    return NULL;
}

/* kill(2) for every caller in this program, the library's included (it is linked in). With
 * HN_RECOVER_REAPED_LATE_MS, in the finalize: a zombie that kill(pid, 0) finds is reaped by its
 * parent before the call returns (awaited, up to 20 s): what a busy launcher's reaping does when
 * it lands between the library's look with kill(2) and its look at /proc. */
int kill(pid_t pid, int sig) {
    int rc = (int)syscall(SYS_kill, pid, sig), err = errno;
    if (rc != 0 || sig != 0 || !g_finalizing || pid <= 0 || pid == getpid() || hn_test_proc_state(pid) != 'Z')
        return errno = err, rc;
    for (int i = 0; i < 4000 && syscall(SYS_kill, pid, 0) == 0; i++) sleep_ms(5);
    say("REAPED %d", (int)pid);
    return 0;
}

typedef struct {
    int32_t orig, epoch, counter;
} part_t;

typedef struct {
    hidet_nccl_bootstrap_h bs;
    double timeout;
    int orig, n_orig;
    int epoch;
    int size;             /* ranks now */
    int map[MAX_RANKS];   /* rank now -> original rank */
    int stage;
    int armed;
    const plan_t *plan;
    uint64_t seed;
} job_t;

static void print_set(const char *head, const job_t *j) {
    char line[8192];
    size_t used = (size_t)snprintf(line, sizeof line, "%s", head);
    for (int i = 0; i < j->size && used + 16 < sizeof line; i++)
        used += (size_t)snprintf(line + used, sizeof line - used, " %d", j->map[i]);
    say("%s", line);
}

/* 1 while a victim of the stage under way is still in the job. */
static int stage_alive(const job_t *j) {
    for (int i = 0; i < j->size; i++)
        if (j->plan->victim[j->stage][j->map[i]]) return 1;
    return 0;
}

/* The recovery round and its id. 0 done, 3 left out, 1 failed. */
static int recover(job_t *j) {
    int kept[MAX_RANKS], n_kept = 0;
    long long t0 = unix_us();
    hidet_nccl_status_t st = hidet_nccl_bootstrap_recover(j->bs, j->timeout, kept, &n_kept);
    if (st != HIDET_NCCL_SUCCESS) {
        const char *err = hidet_nccl_last_error();
        if (st == HIDET_NCCL_ERROR_BOOTSTRAP && strstr(err, "left out") != NULL) {
            say("LEFT OUT");
            fprintf(stderr, "recover_peer %d: %s\n", j->orig, err);
            return 3;
        }
        fprintf(stderr, "recover_peer %d: recover: %s\n", j->orig, err);
        return 1;
    }
    int map[MAX_RANKS], size = 0;
    for (int i = 0; i < j->size; i++)
        if (kept[i]) map[size++] = j->map[i];
    memcpy(j->map, map, sizeof map[0] * (size_t)size);
    j->size = size;
    j->epoch++;
    int rank, nranks;
    if (hidet_nccl_bootstrap_rank(j->bs, &rank, &nranks) != HIDET_NCCL_SUCCESS || nranks != size || n_kept != size ||
        j->map[rank] != j->orig) {
        fprintf(stderr, "recover_peer %d: after epoch %d: rank %d of %d, kept %d, map says %d\n", j->orig, j->epoch,
                rank, nranks, n_kept, size);
        return 1;
    }
    say("ROUND %d %lld", j->epoch, unix_us() - t0);
    char head[32];
    snprintf(head, sizeof head, "EPOCH %d KEPT", j->epoch);
    print_set(head, j);
    while (j->stage < j->plan->n_stages && !stage_alive(j)) {
        j->stage++;
        j->armed = 0;
    }
    return 0;
}

/* One allgather (counter < 0: the last one); 0, or a bootstrap error (1), or a wrong part (2). */
static int allgather(job_t *j, int counter) {
    part_t mine = {j->orig, j->epoch, counter}, all[MAX_RANKS];
    if (hidet_nccl_bootstrap_allgather(j->bs, &mine, all, sizeof mine, j->timeout) != HIDET_NCCL_SUCCESS) return 1;
    for (int i = 0; i < j->size; i++)
        if (all[i].orig != j->map[i] || all[i].epoch != j->epoch || all[i].counter != counter) {
            fprintf(stderr, "recover_peer %d: epoch %d allgather %d: rank %d sent (%d, %d, %d), expected (%d, %d, %d)\n",
                    j->orig, j->epoch, counter, i, all[i].orig, all[i].epoch, all[i].counter, j->map[i], j->epoch,
                    counter);
            return 2;
        }
    return 0;
}

/* The new rank 0's fresh id, to every rank. 0, or a bootstrap error (1). */
static int share_id(job_t *j) {
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    int rank, nranks;
    hidet_nccl_bootstrap_rank(j->bs, &rank, &nranks);
    if (rank == 0 && hidet_nccl_get_unique_id(&id) != HIDET_NCCL_SUCCESS) {
        fprintf(stderr, "recover_peer %d: ncclGetUniqueId: %s\n", j->orig, hidet_nccl_last_error());
        return -1;
    }
    if (hidet_nccl_bootstrap_broadcast(j->bs, &id, sizeof id, 0, j->timeout) != HIDET_NCCL_SUCCESS) return 1;
    say("ID %d %08x", j->epoch, crc32_of((const unsigned char *)&id, sizeof id));
    return 0;
}

static int run(job_t *j) {
    int counter = 0;
    for (int calls = 0; calls < MAX_ALLGATHERS; calls++) {
        int done = j->stage == j->plan->n_stages;
        if (!done && !j->armed && counter >= TRIGGER && j->plan->victim[j->stage][j->orig]) {
            g_rng = j->seed * 1000003u + (uint64_t)j->orig * 7919u + (uint64_t)j->stage;
            long ms = (long)(next_rand() % 51);
            pthread_t t;
            if (pthread_create(&t, NULL, kill_after, (void *)(intptr_t)ms) != 0) return 1;
            pthread_detach(t);
            j->armed = 1;
        }
        int rc = allgather(j, done ? -1 : counter);
        if (rc == 2) return 1;
        if (rc == 0 && done) {
            print_set("DONE", j);
            return 0;
        }
        if (rc == 0) {
            counter++;
            continue;
        }
        for (;;) { /* a rank died (or left the round for recovery): recover until the id goes round */
            say("SAW %d %lld", j->epoch, unix_us());
            fprintf(stderr, "recover_peer %d: epoch %d: %s\n", j->orig, j->epoch, hidet_nccl_last_error());
            int r = recover(j);
            if (r != 0) return r;
            int s = share_id(j);
            if (s < 0) return 1;
            if (s == 0) break;
        }
        counter = 0;
    }
    fprintf(stderr, "recover_peer %d: %d allgathers and no end (stage %d of %d)\n", j->orig, MAX_ALLGATHERS, j->stage,
            j->plan->n_stages);
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: %s PLAN SEED [TIMEOUT_S]\n", argv[0]);
        return 2;
    }
    static job_t j;
    static plan_t plan;
    j.seed = strtoull(argv[2], NULL, 10);
    j.timeout = argc > 3 ? atof(argv[3]) : 20.0;
    if (hidet_nccl_bootstrap_from_env(&j.bs) != HIDET_NCCL_SUCCESS) {
        fprintf(stderr, "recover_peer: %s\n", hidet_nccl_last_error());
        return 1;
    }
    if (hidet_nccl_bootstrap_rank(j.bs, &j.orig, &j.n_orig) != HIDET_NCCL_SUCCESS || j.n_orig > MAX_RANKS) {
        fprintf(stderr, "recover_peer: %s (at most %d ranks)\n", hidet_nccl_last_error(), MAX_RANKS);
        return 1;
    }
    g_orig = j.orig;
    const char *late = getenv("HN_RECOVER_REAPED_LATE_MS");
    g_late_ms = late != NULL ? atol(late) : 0;
    g_main = pthread_self();
    if (g_late_ms > 0) signal(SIGUSR1, end_thread);
    say("BOOT %d %lld", j.orig, unix_us()); /* its bootstrap is made (a test times signals from it) */
    if (parse_plan(argv[1], j.n_orig, j.seed, &plan) != 0) return 2;
    j.plan = &plan;
    j.size = j.n_orig;
    for (int i = 0; i < j.size; i++) j.map[i] = i;
    while (j.stage < plan.n_stages && !stage_alive(&j)) j.stage++;
    int rc = run(&j);
    if (rc != 0 && rc != 3) fprintf(stderr, "recover_peer %d: failed\n", j.orig);
    g_finalizing = g_late_ms > 0;
    hidet_nccl_bootstrap_destroy(j.bs);
    return rc;
}
