/* bootstrap_cost_bench: what it costs to get an ncclUniqueId to every rank, for 2 .. 1024
 * processes on this host, through each bootstrap (no GPU needed). Every rank starts its clock
 * at one wall-clock instant T0 (all processes are up and waiting by then), makes its bootstrap
 * (the socket handshake, PMIx_Init, MPI_Comm_idup ... are part of the cost), rank 0 makes a
 * real id (NCCL loaded and warmed before T0), the id is broadcast, and the rank notes when it
 * has it. The time of a run is the last rank's, minus T0.
 *   bootstrap_cost_bench [-b file,socket,pmix,mpi] [-n 2,8,32,128,512,1024] [-r 3] [-d DIR]
 * file and socket ranks are forked here; pmix and mpi ranks are started by `mpirun`. */
#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hidet_nccl/bootstrap_mpi.h"

static double realtime(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void sleep_until(double t) {
    for (double left; (left = t - realtime()) > 0;) {
        struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
        nanosleep(&ts, NULL);
    }
}

/* One rank: wait for T0, bootstrap, broadcast a real id, note the time. 0 if all went well. */
static int rank_main(const char *backend, int rank, int n, double t0, const char *out, const char *dir, int port,
                     const char *key) {
    int mpi = strcmp(backend, "mpi") == 0;
    if (mpi) MPI_Init(NULL, NULL);
    if (rank < 0) { /* started by mpirun: the rank it gave */
        const char *v = NULL;
        hidet_nccl_setting("OMPI_COMM_WORLD_RANK", &v, NULL);
        rank = v ? atoi(v) : 0;
    }
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    if (rank == 0 && hidet_nccl_get_unique_id(&id) != HIDET_NCCL_SUCCESS) return 1; /* loads and warms NCCL */
    if (mpi) { /* MPI_Init of many ranks may outlast the lead: rank 0 moves T0 past it for all */
        int me = 0;
        MPI_Comm_rank(MPI_COMM_WORLD, &me);
        if (me == 0 && realtime() + 0.5 > t0) t0 = realtime() + 0.5;
        MPI_Bcast(&t0, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    }
    int late = realtime() > t0;
    sleep_until(t0);
    hidet_nccl_bootstrap_h bs = NULL;
    hidet_nccl_status_t st;
    if (strcmp(backend, "file") == 0) {
        hidet_nccl_file_bootstrap_params_t p = HIDET_NCCL_FILE_BOOTSTRAP_PARAMS_INIT;
        p.dir = dir;
        p.job_key = key;
        p.rank = rank;
        p.nranks = n;
        st = hidet_nccl_bootstrap_file(&p, &bs);
    } else if (strcmp(backend, "socket") == 0) {
        hidet_nccl_socket_bootstrap_params_t p = HIDET_NCCL_SOCKET_BOOTSTRAP_PARAMS_INIT;
        p.master_addr = "127.0.0.1";
        p.master_port = port;
        p.job_key = key;
        p.rank = rank;
        p.nranks = n;
        st = hidet_nccl_bootstrap_socket(&p, &bs);
    } else if (strcmp(backend, "pmix") == 0) {
        st = hidet_nccl_bootstrap_pmix(&bs);
    } else {
        st = hidet_nccl_bootstrap_mpi(MPI_COMM_WORLD, &bs);
    }
    if (st == HIDET_NCCL_SUCCESS && rank == 0) st = hidet_nccl_get_unique_id(&id);
    if (st == HIDET_NCCL_SUCCESS) st = hidet_nccl_bootstrap_broadcast(bs, &id, sizeof id, 0, 120);
    double done = realtime();
    if (st != HIDET_NCCL_SUCCESS) fprintf(stderr, "rank %d: %s\n", rank, hidet_nccl_last_error());
    char line[96];
    int len = snprintf(line, sizeof line, "%d %.9f %d %d %.9f\n", rank, done, st == HIDET_NCCL_SUCCESS, late, t0);
    int fd = open(out, O_WRONLY | O_APPEND | O_CREAT, 0600);
    if (fd >= 0 && write(fd, line, (size_t)len) != len) st = HIDET_NCCL_ERROR_SYSTEM; /* one write: lines stay whole */
    if (fd >= 0) close(fd);
    hidet_nccl_bootstrap_destroy(bs);
    if (mpi) MPI_Finalize();
    return st == HIDET_NCCL_SUCCESS ? 0 : 1;
}

/* The run's time from OUT: the last rank's minus the T0 the ranks started at (the driver's, or
 * a later one MPI's rank 0 chose); -1 if a rank failed, was late, or is missing. */
static double collect(const char *out, int n, double t0, int *late) {
    FILE *f = fopen(out, "r");
    if (f == NULL) return -1;
    int rank, ok, was_late, count = 0, good = 1;
    double done, last = 0, start;
    *late = 0;
    while (fscanf(f, "%d %lf %d %d %lf", &rank, &done, &ok, &was_late, &start) == 5) {
        count++;
        good &= ok;
        *late += was_late;
        if (done > last) last = done;
        t0 = start;
    }
    fclose(f);
    return count == n && good && *late == 0 ? last - t0 : -1;
}

static int parse_list(const char *s, int *out, int max) {
    int k = 0;
    for (char *end; *s && k < max; s = *end ? end + 1 : end) out[k++] = (int)strtol(s, &end, 10);
    return k;
}

/* One run of backend with n ranks; the seconds, or -1. */
static double run(const char *self, const char *backend, int n, int rep, const char *dir) {
    char out[4096], key[64], t0s[32], ns[16], ports[16];
    snprintf(out, sizeof out, "%s/cost-%s-%d-%d.out", dir, backend, n, rep);
    snprintf(key, sizeof key, "cost-%s-%d-%d", backend, n, rep);
    unlink(out);
    int port = 20000 + (int)((unsigned)getpid() * 7919u + (unsigned)(n * 31 + rep)) % 40000;
    int mpirun = strcmp(backend, "pmix") == 0 || strcmp(backend, "mpi") == 0;
    double lead = mpirun ? 3.0 + n * 0.04 : 0.5 + n * 0.002; /* every process up and waiting by T0 */
    double t0 = realtime() + lead;
    snprintf(t0s, sizeof t0s, "%.6f", t0);
    snprintf(ns, sizeof ns, "%d", n);
    snprintf(ports, sizeof ports, "%d", port);
    fflush(NULL);
    if (mpirun) {
        pid_t pid = fork();
        if (pid == 0) {
            execlp("mpirun", "mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np", ns,
                   "--mca", "btl", "self,vader", self, "--rank", backend, "-1", ns, t0s, out, dir, ports, key,
                   (char *)NULL);
            _exit(127);
        }
        int ws;
        waitpid(pid, &ws, 0);
    } else {
        for (int r = 0; r < n; r++) {
            if (fork() == 0) _exit(rank_main(backend, r, n, t0, out, dir, port, key));
        }
        for (int r = 0; r < n; r++) wait(NULL);
    }
    int late = 0;
    double t = collect(out, n, t0, &late);
    if (late) fprintf(stderr, "%s, %d ranks: %d ranks were not ready at T0; not counted\n", backend, n, late);
    unlink(out);
    return t;
}

int main(int argc, char **argv) {
    if (argc >= 10 && strcmp(argv[1], "--rank") == 0) /* --rank BACKEND RANK N T0 OUT DIR PORT KEY */
        return rank_main(argv[2], atoi(argv[3]), atoi(argv[4]), atof(argv[5]), argv[6], argv[7], atoi(argv[8]), argv[9]);
    const char *backends = "file,socket,pmix,mpi", *dir = "/tmp";
    int sizes[16] = {2, 8, 32, 128, 512, 1024}, nsizes = 6, reps = 3;
    for (int c; (c = getopt(argc, argv, "b:n:r:d:h")) != -1;) {
        switch (c) {
            case 'b': backends = optarg; break;
            case 'n': nsizes = parse_list(optarg, sizes, 16); break;
            case 'r': reps = atoi(optarg); break;
            case 'd': dir = optarg; break;
            default:
                fprintf(stderr, "usage: %s [-b file,socket,pmix,mpi] [-n 2,8,...] [-r reps] [-d dir]\n", argv[0]);
                return c == 'h' ? 0 : 2;
        }
    }
    char self[4096], work[4200];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) return 1;
    self[len] = '\0';
    snprintf(work, sizeof work, "%s/bootstrap-cost-XXXXXX", dir);
    if (mkdtemp(work) == NULL) return 1;
    printf("# id distribution on this host (%ld CPUs): seconds from T0 to the last rank holding the id, "
           "median of %d runs (min .. max)\n", sysconf(_SC_NPROCESSORS_ONLN), reps);
    printf("# %-8s %6s %10s %22s\n", "backend", "ranks", "median s", "min .. max");
    char list[256];
    snprintf(list, sizeof list, "%s", backends);
    for (char *save = NULL, *b = strtok_r(list, ",", &save); b; b = strtok_r(NULL, ",", &save)) {
        for (int i = 0; i < nsizes; i++) {
            double t[16];
            int k = 0;
            for (int r = 0; r < reps && r < 16; r++) {
                double x = run(self, b, sizes[i], r, work);
                if (x >= 0) t[k++] = x;
            }
            for (int a = 0; a < k; a++)
                for (int c = a + 1; c < k; c++)
                    if (t[c] < t[a]) {
                        double x = t[a];
                        t[a] = t[c];
                        t[c] = x;
                    }
            if (k == 0) printf("  %-8s %6d %10s %22s\n", b, sizes[i], "failed", "");
            else printf("  %-8s %6d %10.4f %10.4f .. %9.4f\n", b, sizes[i], t[k / 2], t[0], t[k - 1]);
            fflush(stdout);
        }
    }
    rmdir(work);
    return 0;
}
