/* file_bootstrap_bench: times the shared-file bootstrap with N processes (fork, one rank
 * each) on this machine: from the root publishing the id file to the last reader holding
 * the bytes, and from the start signal to the last rank done. Real ncclGetUniqueId bytes.
 *   file_bootstrap_bench [N=256] [ROUNDS=5] [DIR=$TMPDIR or /tmp]                     */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hidet_nccl/bootstrap.h"

static double realtime(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One rank: waits for the start signal, bootstraps, broadcasts, records when it had the bytes. */
static int rank_main(int rank, int n, const char *dir, const char *key, int go_fd, double *done_at,
                     const char *root_log) {
    if (rank == 0) { /* the root's TRACE log carries the publish time */
        setenv("HIDET_NCCL_DEBUG", "TRACE", 1);
        int fd = open(root_log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) dup2(fd, STDERR_FILENO);
    }
    char c;
    if (read(go_fd, &c, 1) < 0) return 1; /* returns 0 bytes when the parent closes it */
    hidet_nccl_file_bootstrap_params_t p = HIDET_NCCL_FILE_BOOTSTRAP_PARAMS_INIT;
    p.dir = dir;
    p.job_key = key;
    p.rank = rank;
    p.nranks = n;
    hidet_nccl_bootstrap_h bs;
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    if (hidet_nccl_bootstrap_file(&p, &bs) != HIDET_NCCL_SUCCESS ||
        (rank == 0 && hidet_nccl_get_unique_id(&id) != HIDET_NCCL_SUCCESS) ||
        hidet_nccl_bootstrap_broadcast(bs, &id, sizeof id, 0, 120) != HIDET_NCCL_SUCCESS) {
        fprintf(stderr, "rank %d: %s\n", rank, hidet_nccl_last_error());
        return 1;
    }
    done_at[rank] = realtime();
    hidet_nccl_bootstrap_destroy(bs);
    return 0;
}

static double published_at(const char *log) {
    FILE *f = fopen(log, "r");
    if (f == NULL) return 0;
    char line[8192];
    double t = 0;
    while (fgets(line, sizeof line, f)) {
        char *at = strstr(line, " at ");
        if (strstr(line, "published") && at) t = atof(at + 4);
    }
    fclose(f);
    return t;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 256, rounds = argc > 2 ? atoi(argv[2]) : 5;
    const char *parent = argc > 3 ? argv[3] : (getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (n < 2 || rounds < 1) return 2;
    char dir[4096], log[4200];
    snprintf(dir, sizeof dir, "%s/file-bootstrap-bench-XXXXXX", parent);
    if (mkdtemp(dir) == NULL) return 1;
    snprintf(log, sizeof log, "%s.root.log", dir);
    double *done_at = mmap(NULL, sizeof(double) * (size_t)n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (done_at == MAP_FAILED) return 1;
    printf("# file bootstrap, %d processes on this machine, directory %s\n", n, dir);
    printf("# %5s %22s %22s\n", "round", "publish->last reader", "start->last rank");
    double sum = 0;
    for (int r = 0; r < rounds; r++) {
        char key[32];
        snprintf(key, sizeof key, "bench-%d", r);
        int go[2];
        if (pipe(go) != 0) return 1;
        for (int i = 0; i < n; i++) {
            pid_t pid = fork();
            if (pid == 0) {
                close(go[1]);
                _exit(rank_main(i, n, dir, key, go[0], done_at, log));
            }
        }
        close(go[0]);
        usleep(200 * 1000); /* let every process reach the start line */
        double start = realtime();
        close(go[1]);
        int failed = 0;
        for (int i = 0; i < n; i++) {
            int ws;
            wait(&ws);
            failed += !(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
        }
        double last = 0;
        for (int i = 1; i < n; i++) last = done_at[i] > last ? done_at[i] : last;
        double pub = published_at(log);
        if (failed || pub == 0) {
            printf("round %d: %d ranks failed\n", r, failed);
            return 1;
        }
        printf("  %5d %19.1f ms %19.1f ms\n", r, (last - pub) * 1e3, (last - start) * 1e3);
        sum += last - pub;
    }
    printf("# mean publish->last reader: %.1f ms over %d rounds\n", sum / rounds * 1e3, rounds);
    unlink(log);
    rmdir(dir);
    return 0;
}
