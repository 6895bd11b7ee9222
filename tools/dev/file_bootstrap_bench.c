/* file_bootstrap_bench: times the shared-file bootstrap with N processes (fork, one rank
 * each) on this machine: from the root publishing the id file to the last reader holding
 * the bytes, and from the start signal to the last rank done. Real ncclGetUniqueId bytes.
 * The publish is seen from outside the library: inotify on the directory reports the id
 * file renamed into place.
 *   file_bootstrap_bench [N=256] [ROUNDS=5] [PARENT_DIR=/tmp]                         */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
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
static int rank_main(int rank, int n, const char *dir, const char *key, int go_fd, double *done_at) {
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

/* Waits for the n ranks of a round, noting when an id file (".id") is renamed into dir: the
 * root's publish. Returns the number of ranks that failed; *published 0 if none was seen. */
static int watch_round(int inotify_fd, int n, double *published) {
    *published = 0;
    int left = n, failed = 0;
    while (left > 0) {
        struct pollfd p = {inotify_fd, POLLIN, 0};
        if (poll(&p, 1, 1) > 0) {
            char buf[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));
            ssize_t len = read(inotify_fd, buf, sizeof buf);
            double t = realtime();
            for (char *q = buf; len > 0 && q < buf + len;) {
                const struct inotify_event *e = (const struct inotify_event *)q;
                size_t name_len = e->len ? strlen(e->name) : 0;
                if (*published == 0 && name_len > 3 && strcmp(e->name + name_len - 3, ".id") == 0) *published = t;
                q += sizeof *e + e->len;
            }
        }
        int ws;
        pid_t pid;
        while (left > 0 && (pid = waitpid(-1, &ws, WNOHANG)) > 0) {
            left--;
            failed += !(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
        }
        if (pid < 0 && errno == ECHILD) break;
    }
    return failed;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 256, rounds = argc > 2 ? atoi(argv[2]) : 5;
    const char *parent = argc > 3 ? argv[3] : "/tmp";
    if (n < 2 || rounds < 1) return 2;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/file-bootstrap-bench-XXXXXX", parent);
    if (mkdtemp(dir) == NULL) return 1;
    int watch = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (watch < 0 || inotify_add_watch(watch, dir, IN_MOVED_TO) < 0) {
        perror("inotify");
        return 1;
    }
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
                _exit(rank_main(i, n, dir, key, go[0], done_at));
            }
        }
        close(go[0]);
        usleep(200 * 1000); /* let every process reach the start line */
        double start = realtime();
        close(go[1]);
        double pub;
        int failed = watch_round(watch, n, &pub);
        double last = 0;
        for (int i = 1; i < n; i++) last = done_at[i] > last ? done_at[i] : last;
        if (failed || pub == 0) {
            printf("round %d: %d ranks failed\n", r, failed);
            return 1;
        }
        printf("  %5d %19.1f ms %19.1f ms\n", r, (last - pub) * 1e3, (last - start) * 1e3);
        sum += last - pub;
    }
    printf("# mean publish->last reader: %.1f ms over %d rounds\n", sum / rounds * 1e3, rounds);
    close(watch);
    rmdir(dir);
    return 0;
}
