/* hidet-nccl-trace DIR|FILE...: reads the flight recorder dumps of every rank
 * (hidet-nccl-trace.*.jsonl) and says in its first line where the ranks diverged, then the
 * detail. Exit status: 0 nothing wrong found, 1 something wrong found, 2 no dump could be
 * read (usage, a missing directory, every file refused). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hidet_nccl/hidet_nccl.h"
#include "tools/trace_read.h"

#define MAX_FILE_BYTES (1LL << 30)

static void usage(FILE *out) {
    fprintf(out,
            "usage: hidet-nccl-trace DIR | FILE...\n"
            "  Reads the flight recorder dumps (hidet-nccl-trace.<rank>.jsonl) in DIR, or the files given,\n"
            "  and prints where the ranks diverged: first one line (ranks that disagree about an operation,\n"
            "  a rank that stopped behind the others, a rank with no dump, work not completed), then each\n"
            "  communicator's ranks and their last operations.\n"
            "  Exit 0: nothing wrong found; 1: something wrong found; 2: no dump could be read.\n");
}

/* Reads one file (a regular file, not through a symlink, at most 1 GiB); a refusal is printed
 * and the file skipped. */
static void read_one(tr_set_t *set, int dirfd, const char *name, const char *shown, int *refused) {
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    char err[512];
    if (fd < 0 || fstat(fd, &st) != 0) {
        fprintf(stderr, "hidet-nccl-trace: %s: %s (skipped)\n", shown, strerror(errno));
        if (fd >= 0) close(fd);
        ++*refused;
        return;
    }
    if (!S_ISREG(st.st_mode) || st.st_size > MAX_FILE_BYTES) {
        fprintf(stderr, "hidet-nccl-trace: %s: %s (skipped)\n", shown,
                S_ISREG(st.st_mode) ? "larger than 1 GiB" : "not a regular file");
        close(fd);
        ++*refused;
        return;
    }
    FILE *f = fdopen(fd, "r");
    if (f == NULL) {
        close(fd);
        ++*refused;
        return;
    }
    if (tr_read_file(set, f, shown, err, sizeof err) != 0) {
        fprintf(stderr, "hidet-nccl-trace: %s (skipped)\n", err);
        ++*refused;
    }
    fclose(f);
}

static int is_dump_name(const char *n) {
    size_t len = strlen(n), pre = strlen(HIDET_NCCL_TRACE_FILE_PREFIX), suf = strlen(HIDET_NCCL_TRACE_FILE_SUFFIX);
    return len > pre + suf && strncmp(n, HIDET_NCCL_TRACE_FILE_PREFIX, pre) == 0 &&
           strcmp(n + len - suf, HIDET_NCCL_TRACE_FILE_SUFFIX) == 0;
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every dump in dir, in name order. */
static int read_dir(tr_set_t *set, const char *dir, int *refused) {
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (d == NULL) {
        fprintf(stderr, "hidet-nccl-trace: %s: %s\n", dir, strerror(errno));
        if (dfd >= 0) close(dfd);
        return -1;
    }
    char **names = NULL;
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (!is_dump_name(e->d_name)) continue;
        char **grown = realloc(names, (n + 1) * sizeof *names);
        if (grown == NULL || (grown[n] = strdup(e->d_name)) == NULL) {
            names = grown ? grown : names;
            break;
        }
        names = grown;
        n++;
    }
    qsort(names, n, sizeof *names, compare_names);
    for (size_t i = 0; i < n; i++) {
        char shown[4352];
        snprintf(shown, sizeof shown, "%s/%s", dir, names[i]);
        read_one(set, dirfd(d), names[i], shown, refused);
        free(names[i]);
    }
    free(names);
    closedir(d);
    if (n == 0) fprintf(stderr, "hidet-nccl-trace: %s holds no hidet-nccl-trace.*.jsonl file\n", dir);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    tr_set_t set = {0};
    int refused = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) read_dir(&set, argv[i], &refused);
        else read_one(&set, AT_FDCWD, argv[i], argv[i], &refused);
    }
    if (set.ndumps == 0) {
        fprintf(stderr, "hidet-nccl-trace: no dump could be read%s\n", refused ? "" : " (none found)");
        return 2;
    }
    int bad = tr_report(&set, stdout);
    tr_free(&set);
    return bad;
}
