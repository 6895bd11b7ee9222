/* What the ranks find in their environment: the variables hidet-nccl-run sets for them itself
 * (their rank and sizes, the job's key, where to meet, the deadline, the secret, the restart
 * count), which -x may not name; the -x VAR[=VALUE] given; the job's key and secret, fresh on
 * one node. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "tools/run/run.h"

/* The variables hidet-nccl-run sets for its ranks itself, and what they come from. A -x of one
 * is refused, naming it: the launcher's value would silently win (or, for the secret and the
 * deadline, fight it), and the rank, sizes and place to meet are the job's, not a rank's. */
static const struct {
    const char *name, *from;
} k_ours[] = {
    {"HIDET_NCCL_RANK", "-n, --nnodes and --node-rank"},
    {"HIDET_NCCL_LOCAL_RANK", "the rank's index on this node"},
    {"HIDET_NCCL_WORLD_SIZE", "-n and --nnodes"},
    {"HIDET_NCCL_LOCAL_WORLD_SIZE", "-n"},
    {"RANK", "-n, --nnodes and --node-rank"},
    {"LOCAL_RANK", "the rank's index on this node"},
    {"WORLD_SIZE", "-n and --nnodes"},
    {"LOCAL_WORLD_SIZE", "-n"},
    {"HIDET_NCCL_JOB_KEY", "--job-key, else a fresh one on one node"},
    {"HIDET_NCCL_RENDEZVOUS_DIR", "--rendezvous-dir"},
    {"MASTER_ADDR", "--master-addr"},
    {"MASTER_PORT", "--master-port"},
    {"HIDET_NCCL_RENDEZVOUS_SERVED", "--master-addr or --rendezvous socket"},
    {"HIDET_NCCL_RESTART_COUNT", "--max-restarts: 0 at a rank's first start, k at its k-th restart"},
    {"HIDET_NCCL_TIMEOUT", "--timeout, else this environment's"},
    {"HIDET_NCCL_TRACE_DIR", "--trace-dir, else this environment's"},
    {"HIDET_NCCL_JOB_SECRET_FILE", "--job-secret-file, else this environment's"},
    {"HIDET_NCCL_JOB_SECRET", "this environment's as it is, else a fresh one on one node; export it: a secret "
                              "on a command line shows in ps"},
};

/* -x VAR=VALUE (VALUE for the ranks) or -x VAR (this environment's value, which must be there),
 * mpirun's habit: VAR a letter or '_', then letters, digits and '_'; not one of k_ours. Kept as
 * given; a rank puts the VAR=VALUE words into its environment before the launcher's own. The
 * messages name VAR, never VALUE (it may be a secret). */
void run_add_env_x(char *arg) {
    const char *eq = strchr(arg, '=');
    size_t len = eq != NULL ? (size_t)(eq - arg) : strlen(arg);
    static const char k_name_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_";
    if (len == 0 || (!isalpha((unsigned char)arg[0]) && arg[0] != '_') || strspn(arg, k_name_chars) != len)
        run_die(2, "-x: '%.*s' is not an environment variable's name (a letter or _, then letters, digits and _); "
            "give -x VAR=VALUE or -x VAR", (int)len, arg);
    for (size_t k = 0; k < sizeof k_ours / sizeof k_ours[0]; k++)
        if (strlen(k_ours[k].name) == len && strncmp(k_ours[k].name, arg, len) == 0)
            run_die(2, "-x %s: hidet-nccl-run sets %s for its ranks itself (from %s); it cannot be given with -x",
                k_ours[k].name, k_ours[k].name, k_ours[k].from);
    if (eq == NULL && getenv(arg) == NULL)
        run_die(2, "-x %s: %s is not set in hidet-nccl-run's environment (export it, or give -x %s=VALUE)", arg, arg,
            arg);
    g.env_x[g.n_env_x++] = arg;
}

/* What the ranks will see of a variable the launcher reads for them: the last -x VAR=VALUE of
 * it, else this environment's. */
const char *run_rank_env(const char *name) {
    size_t len = strlen(name);
    for (int k = g.n_env_x - 1; k >= 0; k--)
        if (strncmp(g.env_x[k], name, len) == 0 && g.env_x[k][len] == '=') return g.env_x[k] + len + 1;
    return getenv(name);
}

/* The job's secret for the ranks: the file given, or one in the environment, as they are; on one
 * node without either, a fresh one (32 random bytes, hex), so that only the ranks this launcher
 * starts can join their rendezvous. Across nodes the launchers cannot agree on a fresh one. */
int run_given(const char *name) { /* set and not empty, as the library's settings read it */
    const char *v = getenv(name);
    return v != NULL && *v != '\0';
}

void run_make_secret(void) {
    if (g.secret_file || run_given("HIDET_NCCL_JOB_SECRET_FILE") || run_given("HIDET_NCCL_JOB_SECRET")) return;
    if (g.nnodes > 1) return; /* the library's rank 0 warns that the rendezvous is unauthenticated */
    unsigned char rnd[32];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) run_die(1, "getrandom: %s", strerror(errno));
    for (size_t i = 0; i < sizeof rnd; i++) snprintf(g.secret + 2 * i, 3, "%02x", rnd[i]);
    explicit_bzero(rnd, sizeof rnd);
}

void run_fresh_key(void) {
    unsigned char rnd[8];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) run_die(1, "getrandom: %s", strerror(errno));
    snprintf(g.key, sizeof g.key, "run-%02x%02x%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2], rnd[3], rnd[4],
             rnd[5], rnd[6], rnd[7]);
}

static void set_env_int(const char *name, int v) {
    char buf[16];
    snprintf(buf, sizeof buf, "%d", v);
    setenv(name, buf, 1);
}

/* In the child, before its exec: the -x variables, then the launcher's own for rank i; the same
 * at every start of the rank but HIDET_NCCL_RESTART_COUNT, how often it was started again. */
void run_rank_environment(int rank, int restarts) {
    /* -x first: the launcher's own variables below are never among them (refused) */
    for (int k = 0; k < g.n_env_x; k++)
        if (strchr(g.env_x[k], '=') != NULL) putenv(g.env_x[k]);
    int global = run_global_rank(rank), world = g.nnodes * g.n;
    set_env_int("HIDET_NCCL_RANK", global);
    set_env_int("HIDET_NCCL_LOCAL_RANK", rank);
    set_env_int("HIDET_NCCL_WORLD_SIZE", world);
    set_env_int("HIDET_NCCL_LOCAL_WORLD_SIZE", g.n);
    set_env_int("RANK", global);
    set_env_int("LOCAL_RANK", rank);
    set_env_int("WORLD_SIZE", world);
    set_env_int("LOCAL_WORLD_SIZE", g.n);
    set_env_int("HIDET_NCCL_RESTART_COUNT", restarts);
    if (g.key[0]) setenv("HIDET_NCCL_JOB_KEY", g.key, 1);
    if (g.master_addr) { /* the socket rendezvous: no directory, so that it is the one chosen */
        setenv("MASTER_ADDR", g.master_addr, 1);
        set_env_int("MASTER_PORT", g.master_port);
        setenv("HIDET_NCCL_RENDEZVOUS_SERVED", "1", 1); /* node 0's launcher serves it */
        unsetenv("HIDET_NCCL_RENDEZVOUS_DIR");
    } else {
        setenv("HIDET_NCCL_RENDEZVOUS_DIR", g.rendezvous, 1);
        unsetenv("HIDET_NCCL_RENDEZVOUS_SERVED");
    }
    if (g.timeout) setenv("HIDET_NCCL_TIMEOUT", g.timeout, 1);
    if (g.secret_file) setenv("HIDET_NCCL_JOB_SECRET_FILE", g.secret_file, 1);
    else if (g.secret[0]) setenv("HIDET_NCCL_JOB_SECRET", g.secret, 1);
}
