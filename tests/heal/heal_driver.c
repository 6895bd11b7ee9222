/* One rank of a job whose ranks die and are started again (hidet-nccl-run --max-restarts, or by
 * hand), for the heal tests of any bootstrap that can heal (the public API only: the bootstrap
 * comes from the environment, as the launcher sets it; no GPU, no NCCL communicator).
 *   heal_driver ROUNDS [options]
 * Start: hidet_nccl_bootstrap_from_env; when hidet_nccl_bootstrap_joining says 1 (a restarted
 * rank), hidet_nccl_bootstrap_heal at once, as the joiner. Then rounds K = 0 .. ROUNDS-1 of a
 * bootstrap allgather of (job rank, K, pid), checked. A member whose allgather fails, or whose
 * hidet_nccl_bootstrap_news says 1, calls hidet_nccl_bootstrap_heal and checks the answer (this
 * rank a member at its place in job order, a joiner among the joined, the joined among the
 * members, every job rank a member unless --partial-ok); then every rank allgathers what it was
 * told (epoch, members, joined, and its next round: -1 on a joiner) and checks that all agree
 * (the members' next rounds within one of each other: all take the earlier), and a joiner takes
 * the members' round. Not whole yet: heal again, until the heal deadline.
 * Each heal prints one line:
 *   heal round E members 0 1 2 joined 2 rank R took X ms end T
 * (E: the round's number, the members' count of heal rounds, which a joiner learns from the views;
 * "?" when the views' allgather failed on a joiner; job ranks, "none" for none; T: unix
 * microseconds at the end). Other lines:
 *   start rank R of N pid P restart C joining J
 *   kill rank R round K at T          (as it kills itself; T: unix microseconds)
 *   done rank R rounds ROUNDS epoch E members M
 * Failures: "heal_driver rank R: ..." on stderr; exit 1 (a check or a member's call), 2 (init, or
 * the joiner's heal: refused, timed out), 3 (--restarted-fails).
 * Options:
 *   --timeout S          every call's deadline (default: $HIDET_NCCL_TIMEOUT, else 20)
 *   --heal-timeout S     each heal call's (default: --timeout); the decider waits half of it
 *   --kill-every K       on rounds K, 2K, ... (never the last) one rank kills itself (SIGKILL)
 *   --kills N            ... N times at most (rounds K .. N*K; default: no bound)
 *   --victim R           ... rank R (default: drawn from --seed and the round, the same on every rank)
 *   --seed S             (default 1)
 *   --moment US          ... at a random moment within US microseconds of the round's start (a
 *                        thread), inside a call or between them (default 0: at the round's start);
 *                        a victim still alive K/2 rounds later waits there for its death (so a
 *                        death never falls after the job's end)
 *   --exit0              ... by _exit(0) instead: no bye, no restart by the launcher
 *   --joiner-dies C      a joiner whose $HIDET_NCCL_RESTART_COUNT is at most C (a process started
 *                        by hand counts as 0 when the variable is absent) kills itself after its
 *                        init, before its heal
 *   --member-dies-in-heal R  rank R, in its first life, kills itself at a random moment within
 *                        --moment (or at once) of entering its first heal as a member
 *   --restarted-fails    a process with $HIDET_NCCL_RESTART_COUNT > 0 exits 3 at once
 *   --partial-ok         a heal that leaves ranks out is accepted: go on with the members
 *   --heal-every K       with --partial-ok: while not whole, the members heal again every K rounds
 *   --env-out DIR        write DIR/env.<job rank>.<pid> (this process's environment, NAME=VALUE
 *                        each ended by a NUL) at start, for a test that starts a joiner by hand
 *   --wait-at K --wait-file F  every member waits at the start of round K until file F exists
 *   --hold-heal F        a member waits before each heal until file F exists
 * (while it waits a rank asks hidet_nccl_bootstrap_news every 10 ms, as a rank waiting on a
 * communicator does; it prints "waiting at round K" or "holding before heal" first; news ends a
 * wait at round K: "news at round K: ...", and the rank heals)
 *   --two                a second bootstrap from the environment right after the first, one
 *                        allgather over it (checked), destroyed at the end: two alive at once (at
 *                        rank 0's hub, on one port: the second takes the port over)
 *   --heal-at K --healer R --healer-file F  rank R begins a heal round at the start of round K,
 *                        nobody having died, once file F exists */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hidet_nccl/bootstrap.h"

#define MAX_RANKS 256

extern char **environ;

typedef struct {
    int rounds, kill_every, kills, victim, exit0, joiner_dies, member_dies_in_heal, restarted_fails, partial_ok, heal_every;
    long moment_us;
    unsigned long long seed;
    double timeout, heal_timeout;
    const char *env_out, *wait_file, *hold_heal, *healer_file;
    int wait_at, heal_at, healer, two;
} opts_t;

typedef struct {
    int32_t job_rank, round, pid, pad;
} part_t;

typedef struct { /* what a rank was told by a heal, compared across the members */
    int32_t epoch, job_rank, next_round, pad; /* epoch, next_round: -1 on a joiner */
    unsigned char members[MAX_RANKS], joined[MAX_RANKS];
} view_t;

static opts_t o = {.victim = -1, .joiner_dies = -1, .member_dies_in_heal = -1, .seed = 1, .wait_at = -1, .heal_at = -1,
                   .healer = -1};
static int g_job_rank = -1, g_job_size = 0, g_restart = 0;
static int g_epoch = -1;                     /* heal rounds done (-1: unknown yet, on a joiner) */
static unsigned char g_members[MAX_RANKS];   /* the current members, in job numbering */
static int g_kill_pending = -1;              /* the round whose death a thread will bring */

static long long unix_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static double mono_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t mix(uint64_t z) { /* splitmix64's finalizer */
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void die(int code, const char *fmt, ...) {
    char text[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    fflush(stdout);
    fprintf(stderr, "heal_driver rank %d: %s\n", g_job_rank, text);
    exit(code);
}

static void kill_now(int round, const char *where) {
    printf("kill rank %d round %d at %lld (%s)\n", g_job_rank, round, unix_us(), where);
    fflush(stdout);
    if (o.exit0) _exit(0);
    kill(getpid(), SIGKILL);
    for (;;) pause();
}

typedef struct {
    long us;
    int round;
    const char *where;
} killer_t;

static void *killer(void *arg) {
    killer_t *k = arg;
    struct timespec t = {k->us / 1000000, (k->us % 1000000) * 1000};
    nanosleep(&t, NULL);
    kill_now(k->round, k->where);
    return NULL;
}

/* Dies at once, or at a random moment within --moment of now (a thread), drawn from salt. */
static void die_soon(int round, uint64_t salt, const char *where) {
    static killer_t k;
    if (o.moment_us <= 0) kill_now(round, where);
    g_kill_pending = round;
    k = (killer_t){(long)(mix(o.seed ^ salt) % (uint64_t)o.moment_us), round, where};
    pthread_t t;
    if (pthread_create(&t, NULL, killer, &k) != 0) kill_now(round, where);
    pthread_detach(t);
}

static void list(const unsigned char *set, int n, char *out, size_t cap) {
    size_t used = 0;
    out[0] = '\0';
    for (int r = 0; r < n && used + 12 < cap; r++)
        if (set[r]) used += (size_t)snprintf(out + used, cap - used, "%s%d", used ? " " : "", r);
    if (used == 0) snprintf(out, cap, "none");
}

static double arg_seconds(const char *name, const char *v) {
    char *end;
    double d = strtod(v, &end);
    if (*end || !(d > 0 && d < 1e6)) die(2, "%s '%s' is not a number of seconds", name, v);
    return d;
}

static long arg_int(const char *name, const char *v, long lo, long hi) {
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || *end || end == v || x < lo || x > hi) die(2, "%s '%s' is not in %ld .. %ld", name, v, lo, hi);
    return x;
}

static void parse(int argc, char **argv) {
    if (argc < 2) die(2, "usage: heal_driver ROUNDS [options] (see the source's head)");
    o.rounds = (int)arg_int("ROUNDS", argv[1], 1, 100000000);
    const char *t = getenv("HIDET_NCCL_TIMEOUT");
    o.timeout = t && *t ? arg_seconds("HIDET_NCCL_TIMEOUT", t) : 20;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int flag = 1;
        if (strcmp(a, "--exit0") == 0) o.exit0 = 1;
        else if (strcmp(a, "--two") == 0) o.two = 1;
        else if (strcmp(a, "--restarted-fails") == 0) o.restarted_fails = 1;
        else if (strcmp(a, "--partial-ok") == 0) o.partial_ok = 1;
        else flag = 0;
        if (flag) continue;
        if (v == NULL) die(2, "%s needs a value", a);
        i++;
        if (strcmp(a, "--timeout") == 0) o.timeout = arg_seconds(a, v);
        else if (strcmp(a, "--heal-timeout") == 0) o.heal_timeout = arg_seconds(a, v);
        else if (strcmp(a, "--kill-every") == 0) o.kill_every = (int)arg_int(a, v, 0, 100000000);
        else if (strcmp(a, "--kills") == 0) o.kills = (int)arg_int(a, v, 0, 100000000);
        else if (strcmp(a, "--victim") == 0) o.victim = (int)arg_int(a, v, 0, MAX_RANKS - 1);
        else if (strcmp(a, "--seed") == 0) o.seed = (unsigned long long)arg_int(a, v, 0, 1L << 40);
        else if (strcmp(a, "--moment") == 0) o.moment_us = arg_int(a, v, 0, 100000000);
        else if (strcmp(a, "--joiner-dies") == 0) o.joiner_dies = (int)arg_int(a, v, 0, 100000);
        else if (strcmp(a, "--member-dies-in-heal") == 0) o.member_dies_in_heal = (int)arg_int(a, v, 0, MAX_RANKS - 1);
        else if (strcmp(a, "--heal-every") == 0) o.heal_every = (int)arg_int(a, v, 1, 100000000);
        else if (strcmp(a, "--env-out") == 0) o.env_out = v;
        else if (strcmp(a, "--wait-at") == 0) o.wait_at = (int)arg_int(a, v, 0, 100000000);
        else if (strcmp(a, "--wait-file") == 0) o.wait_file = v;
        else if (strcmp(a, "--hold-heal") == 0) o.hold_heal = v;
        else if (strcmp(a, "--heal-at") == 0) o.heal_at = (int)arg_int(a, v, 0, 100000000);
        else if (strcmp(a, "--healer-file") == 0) o.healer_file = v;
        else if (strcmp(a, "--healer") == 0) o.healer = (int)arg_int(a, v, 0, MAX_RANKS - 1);
        else die(2, "unknown option %s", a);
    }
    if (o.heal_timeout == 0) o.heal_timeout = o.timeout;
    if ((o.wait_at >= 0) != (o.wait_file != NULL)) die(2, "--wait-at and --wait-file go together");
}

/* Waits until path exists (what: the line said first), asking news every 10 ms meanwhile; with
 * news_ends, news ends the wait too. 1 when news ended it, else 0. */
static int wait_file(hidet_nccl_bootstrap_h bs, const char *path, const char *what, int news_ends) {
    printf("%s\n", what);
    fflush(stdout);
    double until = mono_s() + 6 * o.timeout + 60;
    while (access(path, F_OK) != 0) {
        int news = 0;
        (void)hidet_nccl_bootstrap_news(bs, &news);
        if (news && news_ends) return 1;
        if (mono_s() > until) die(1, "%s: %s never came", what, path);
        struct timespec t = {0, 10000000L};
        nanosleep(&t, NULL);
    }
    return 0;
}

static void write_env(void) {
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/env.%d.%d", o.env_out, g_job_rank, (int)getpid());
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (f == NULL) die(1, "cannot write %s: %s", tmp, strerror(errno));
    for (char **e = environ; *e; e++) fprintf(f, "%s%c", *e, 0); /* NUL-ended: a value may hold a newline */
    if (fclose(f) != 0 || rename(tmp, path) != 0) die(1, "cannot write %s: %s", path, strerror(errno));
}

/* A heal as a member (joiner 0) or the joiner (1): the call, its checks, its line; then the
 * members' views compared and *round set to the members' next. 0, or -1 when the agreement's
 * allgather failed (a rank died again: heal again). */
static int heal_once(hidet_nccl_bootstrap_h bs, int joiner, int *round, int *whole) {
    int members[MAX_RANKS], joined[MAX_RANKS], nm = 0, nj = 0, rank, size;
    double t0 = mono_s();
    hidet_nccl_status_t st = hidet_nccl_bootstrap_heal(bs, o.heal_timeout, members, joined, &nm, &nj);
    double ms = (mono_s() - t0) * 1000;
    if (st != HIDET_NCCL_SUCCESS)
        die(joiner ? 2 : 1, "%s heal failed after %.1f ms (%s): %s", joiner ? "the joiner's" : "a member's", ms,
            hidet_nccl_status_string(st), hidet_nccl_last_error());
    view_t v;
    memset(&v, 0, sizeof v);
    int count = 0, fresh = 0, below = 0;
    for (int r = 0; r < g_job_size; r++) {
        v.members[r] = (unsigned char)(members[r] != 0);
        v.joined[r] = (unsigned char)(joined[r] != 0);
        if (v.joined[r] && !v.members[r]) die(1, "heal: job rank %d joined but is not a member", r);
        count += v.members[r];
        fresh += v.joined[r];
        below += r < g_job_rank && v.members[r];
    }
    char ms_s[1024], js[1024];
    list(v.members, g_job_size, ms_s, sizeof ms_s);
    list(v.joined, g_job_size, js, sizeof js);
    if (count != nm || fresh != nj) die(1, "heal: %d members and %d joined listed, %d and %d counted", nm, nj, count, fresh);
    if (!v.members[g_job_rank] || v.joined[g_job_rank] != joiner)
        die(1, "heal: this rank (%s) is %sa member and %sjoined", joiner ? "the joiner" : "a member",
            v.members[g_job_rank] ? "" : "not ", v.joined[g_job_rank] ? "" : "not ");
    if (hidet_nccl_bootstrap_rank(bs, &rank, &size) != HIDET_NCCL_SUCCESS) die(1, "rank: %s", hidet_nccl_last_error());
    if (rank != below || size != count)
        die(1, "heal: rank_size says %d of %d; members %s make it %d of %d", rank, size, ms_s, below, count);
    *whole = count == g_job_size;
    if (*whole && rank != g_job_rank) die(1, "heal: whole again, but this is rank %d, not its job rank", rank);
    memcpy(g_members, v.members, sizeof g_members);
    if (g_epoch >= 0) g_epoch++;
    /* Everyone was told the same: an allgather of the views. */
    v.epoch = g_epoch;
    v.job_rank = g_job_rank;
    v.next_round = g_epoch < 0 ? -1 : *round; /* a joiner does not know the round until the views say it */
    view_t *all = calloc((size_t)size, sizeof *all);
    if (all == NULL) die(1, "out of memory");
    st = hidet_nccl_bootstrap_allgather(bs, &v, all, sizeof v, o.timeout);
    if (st != HIDET_NCCL_SUCCESS) {
        if (g_epoch >= 0) printf("heal round %d", g_epoch);
        else printf("heal round ?");
        printf(" members %s joined %s rank %d took %.3f ms end %lld\n", ms_s, js, g_job_rank, ms, unix_us());
        fflush(stdout);
        fprintf(stderr, "heal_driver rank %d: the views' allgather after the heal failed (%s): heal again\n", g_job_rank,
                hidet_nccl_last_error());
        free(all);
        return -1;
    }
    /* The members' next rounds may differ by one: a member whose allgather ended well (it took the
     * bytes) before a death its root saw goes on to the next round while the others heal at that
     * one (the shared-file rendezvous allows it). They agree on the earlier: the one ahead does it
     * again (its parts are the same). */
    int next = -1, epoch = -1, place = 0;
    for (int r = 0, p = 0; r < g_job_size; r++) {
        if (!v.members[r]) continue;
        const view_t *w = &all[p++];
        if (w->next_round >= 0 && w->epoch >= 0 && (next < 0 || w->next_round < next)) next = w->next_round;
    }
    int earliest = next;
    next = -1;
    for (int r = 0; r < g_job_size; r++) {
        if (!v.members[r]) continue;
        view_t *w = &all[place++];
        if (w->job_rank != r) die(1, "views: place %d holds job rank %d, not %d", place - 1, w->job_rank, r);
        if (memcmp(w->members, v.members, sizeof v.members) != 0 || memcmp(w->joined, v.joined, sizeof v.joined) != 0) {
            char a[1024], b[1024];
            list(w->members, g_job_size, a, sizeof a);
            list(w->joined, g_job_size, b, sizeof b);
            die(1, "views: job rank %d was told members %s joined %s; this rank members %s joined %s", r, a, b, ms_s, js);
        }
        if (w->next_round < 0 || w->epoch < 0) {
            if (w->next_round >= 0 || w->epoch >= 0) die(1, "views: job rank %d knows the round but not the epoch", r);
            continue;
        }
        if (w->next_round > earliest + 1 || (next >= 0 && w->epoch != epoch))
            die(1, "views: the members are at rounds %d and %d, heal rounds %d and %d (job rank %d)", earliest,
                w->next_round, epoch, w->epoch, r);
        next = earliest;
        epoch = w->epoch;
    }
    free(all);
    if (next < 0) die(1, "views: no member knows the round (every rank a joiner?)");
    if (g_epoch >= 0 && g_epoch != epoch) die(1, "views: this rank counts heal round %d, the members %d", g_epoch, epoch);
    g_epoch = epoch;
    *round = next;
    printf("heal round %d members %s joined %s rank %d took %.3f ms end %lld\n", g_epoch, ms_s, js, g_job_rank, ms,
           unix_us());
    fflush(stdout);
    return 0;
}

/* Heals until whole (or once, with --partial-ok), within the heal deadline and then some. */
static void heal(hidet_nccl_bootstrap_h bs, int joiner, int *round, int *whole) {
    static int first = 1;
    if (!joiner && first && o.member_dies_in_heal == g_job_rank && g_restart == 0) die_soon(*round, 7, "in its heal");
    first = 0;
    double until = mono_s() + 2 * o.heal_timeout;
    for (;;) {
        if (!joiner && o.hold_heal) wait_file(bs, o.hold_heal, "holding before heal", 0);
        int rc = heal_once(bs, joiner, round, whole);
        joiner = 0; /* a joiner taken in is a member from then on */
        if (rc == 0 && (*whole || o.partial_ok)) return;
        if (mono_s() >= until) die(1, "not whole %.0f s after the heal began", 2 * o.heal_timeout);
    }
}

int main(int argc, char **argv) {
    parse(argc, argv);
    const char *rc_env = getenv("HIDET_NCCL_RESTART_COUNT");
    g_restart = rc_env && *rc_env ? atoi(rc_env) : 0;
    hidet_nccl_bootstrap_h bs = NULL;
    if (hidet_nccl_bootstrap_from_env(&bs) != HIDET_NCCL_SUCCESS) die(2, "init: %s", hidet_nccl_last_error());
    int joining = 0, rank, size;
    if (hidet_nccl_bootstrap_joining(bs, &joining) != HIDET_NCCL_SUCCESS ||
        hidet_nccl_bootstrap_rank(bs, &rank, &size) != HIDET_NCCL_SUCCESS)
        die(2, "joining/rank: %s", hidet_nccl_last_error());
    g_job_rank = rank;
    g_job_size = size;
    if (size > MAX_RANKS) die(2, "%d ranks: at most %d", size, MAX_RANKS);
    if (o.env_out) write_env();
    printf("start rank %d of %d pid %d restart %d joining %d\n", rank, size, (int)getpid(), g_restart, joining);
    fflush(stdout);
    if (o.restarted_fails && g_restart > 0) die(3, "restarted (count %d): failing at once (--restarted-fails)", g_restart);
    hidet_nccl_bootstrap_h second = NULL;
    if (o.two) {
        int r2, n2;
        part_t me2 = {rank, -2, (int32_t)getpid(), 0}, *all2 = calloc((size_t)size, sizeof *all2);
        if (all2 == NULL) die(1, "out of memory");
        if (hidet_nccl_bootstrap_from_env(&second) != HIDET_NCCL_SUCCESS ||
            hidet_nccl_bootstrap_rank(second, &r2, &n2) != HIDET_NCCL_SUCCESS ||
            hidet_nccl_bootstrap_allgather(second, &me2, all2, sizeof me2, o.timeout) != HIDET_NCCL_SUCCESS)
            die(2, "the second bootstrap: %s", hidet_nccl_last_error());
        for (int i = 0; i < n2; i++)
            if (all2[i].job_rank != i || all2[i].round != -2) die(1, "the second bootstrap: place %d holds rank %d", i, all2[i].job_rank);
        printf("second bootstrap rank %d of %d\n", r2, n2);
        free(all2);
    }
    int round = 0, whole = 1, first_round = 0, last_heal = 0;
    g_epoch = joining ? -1 : 0;
    memset(g_members, 1, (size_t)size);
    if (joining) {
        if (o.joiner_dies >= 0 && g_restart <= o.joiner_dies) kill_now(-1, "a joiner, before its heal");
        heal(bs, 1, &round, &whole);
        first_round = round;
        last_heal = round;
    }
    part_t *parts = calloc((size_t)size, sizeof *parts);
    if (parts == NULL) die(1, "out of memory");
    while (round < o.rounds) {
        int news = 0;
        if (hidet_nccl_bootstrap_news(bs, &news) != HIDET_NCCL_SUCCESS) die(1, "news: %s", hidet_nccl_last_error());
        if (news || (!whole && o.heal_every && round - last_heal >= o.heal_every)) {
            heal(bs, 0, &round, &whole);
            last_heal = round;
            continue;
        }
        if (round == o.heal_at && g_job_rank == o.healer) {
            o.heal_at = -1;
            if (o.wait_at == round) o.wait_at = -1; /* the healer begins the round the others wait in */
            if (o.healer_file) wait_file(bs, o.healer_file, "the healer waits", 0);
            heal(bs, 0, &round, &whole);
            last_heal = round;
            continue;
        }
        if (round == o.wait_at) {
            char what[64];
            snprintf(what, sizeof what, "waiting at round %d", round);
            o.wait_at = -1;
            if (wait_file(bs, o.wait_file, what, 1)) {
                printf("news at round %d\n", round);
                fflush(stdout);
                heal(bs, 0, &round, &whole);
                last_heal = round;
                continue;
            }
        }
        if (g_kill_pending >= 0 && round >= g_kill_pending + (o.kill_every > 1 ? o.kill_every / 2 : 1))
            for (;;) pause(); /* its death is on the way (the killer thread): the others wait for this rank */
        if (o.kill_every && round > first_round && round % o.kill_every == 0 && round + o.kill_every < o.rounds &&
            (o.kills == 0 || round / o.kill_every <= o.kills)) {
            int victim = o.victim >= 0 ? o.victim : (int)(mix(o.seed * 1000003ull + (uint64_t)round) % (uint64_t)g_job_size);
            if (victim == g_job_rank) die_soon(round, (uint64_t)round, "in its round");
        }
        part_t me = {g_job_rank, round, (int32_t)getpid(), 0};
        if (hidet_nccl_bootstrap_rank(bs, &rank, &size) != HIDET_NCCL_SUCCESS) die(1, "rank: %s", hidet_nccl_last_error());
        hidet_nccl_status_t st = hidet_nccl_bootstrap_allgather(bs, &me, parts, sizeof me, o.timeout);
        if (st != HIDET_NCCL_SUCCESS) {
            if (st == HIDET_NCCL_ERROR_TIMEOUT) die(1, "round %d: %s", round, hidet_nccl_last_error());
            heal(bs, 0, &round, &whole);
            last_heal = round;
            continue;
        }
        for (int i = 0, j = 0; i < size; i++, j++) {
            while (j < g_job_size && !g_members[j]) j++;
            if (parts[i].round != round || parts[i].job_rank != j || parts[i].pid <= 0)
                die(1, "round %d: place %d holds (job rank %d, round %d, pid %d), not job rank %d's", round, i,
                    parts[i].job_rank, parts[i].round, parts[i].pid, j);
        }
        round++;
    }
    char ms_s[1024];
    list(g_members, g_job_size, ms_s, sizeof ms_s);
    printf("done rank %d rounds %d epoch %d members %s\n", g_job_rank, o.rounds, g_epoch, ms_s);
    fflush(stdout);
    free(parts);
    if (hidet_nccl_bootstrap_destroy(bs) != HIDET_NCCL_SUCCESS) die(1, "destroy: %s", hidet_nccl_last_error());
    if (second != NULL && hidet_nccl_bootstrap_destroy(second) != HIDET_NCCL_SUCCESS)
        die(1, "destroy the second: %s", hidet_nccl_last_error());
    return 0;
}
