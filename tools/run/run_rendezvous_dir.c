/* The job's rendezvous directory for the shared-file bootstrap: on one node a private one (0700,
 * made with a fresh job key, held by descriptor, removed at every exit: here, or by the
 * watchdog when the launcher is killed); with --rendezvous-dir and --job-key the user's
 * directory, as it is. A socket rendezvous needs none: only its key is settled here. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/run/run.h"

/* Removes this job's files from the private rendezvous directory, then the directory, never by
 * path: through the descriptors taken when it was made, so that a directory swapped for a
 * symbolic link to someone else's (in a parent others may write) loses nothing but what this
 * job made. 0 when done; -1 when the directory is not empty (a rank still dying may have just
 * written into it: the watchdog tries again). */
int run_remove_rendezvous_once(void) {
    if (g.rendezvous[0] == '\0' || g.shared_dir || g.dir_fd < 0) return 0; /* a shared directory is the user's */
    char ours[96];
    snprintf(ours, sizeof ours, "hidet-nccl.%s.", g.key); /* the bootstrap's files, and their temporaries */
    int fd = dup(g.dir_fd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (d != NULL) {
        for (struct dirent *e; (e = readdir(d)) != NULL;)
            if (strncmp(e->d_name, ours, strlen(ours)) == 0) unlinkat(g.dir_fd, e->d_name, 0);
        closedir(d);
    } else if (fd >= 0) {
        close(fd);
    }
    const char *base = strrchr(g.rendezvous, '/');
    /* not a link, nor a non-empty directory */
    if (unlinkat(g.parent_fd, base ? base + 1 : g.rendezvous, AT_REMOVEDIR) != 0 &&
        (errno == ENOTEMPTY || errno == EEXIST))
        return -1;
    return 0;
}

/* The exit's removal (atexit): once, then the descriptors go. */
void run_remove_rendezvous(void) {
    if (g.rendezvous[0] == '\0' || g.shared_dir || g.dir_fd < 0) return;
    run_remove_rendezvous_once();
    close(g.dir_fd);
    close(g.parent_fd);
    g.dir_fd = g.parent_fd = -1;
    g.rendezvous[0] = '\0';
}

/* A fresh job key, and the job's private rendezvous directory (removed at every exit); or,
 * across nodes, the key given and the socket address or the shared directory as they are. */
void run_make_rendezvous(void) {
    if (g.job_key) snprintf(g.key, sizeof g.key, "%s", g.job_key);
    if (g.master_addr && (g.job_key || g.nnodes > 1))
        return; /* across nodes without --job-key, the socket backend's socket-<port>, the same on every node */
    if (g.master_addr) { /* one node: a fresh key, so that two jobs on one port never mix */
        run_fresh_key();
        return;
    }
    if (g.shared_dir) {
        snprintf(g.rendezvous, sizeof g.rendezvous, "%s", g.rendezvous_parent);
        return; /* the user's directory: the bootstrap removes its files, the directory stays */
    }
    if (g.job_key)
        run_die(2, "--job-key goes with --nnodes, --master-addr or --rendezvous-dir (one node makes its own key)");
    run_fresh_key();
    const char *parent = g.rendezvous_parent ? g.rendezvous_parent : getenv("TMPDIR");
    if (parent == NULL || *parent == '\0') parent = "/tmp";
    snprintf(g.rendezvous, sizeof g.rendezvous, "%s/hidet-nccl-%s-XXXXXX", parent, g.key);
    if (mkdtemp(g.rendezvous) == NULL) {
        g.rendezvous[0] = '\0';
        run_die(1, "cannot make a rendezvous directory in %s: %s", parent, strerror(errno));
    }
    /* Hold the parent and the directory by descriptor at once: the exit removes through them. */
    g.parent_fd = open(parent, O_DIRECTORY | O_CLOEXEC);
    g.dir_fd = g.parent_fd < 0 ? -1
                               : openat(g.parent_fd, strrchr(g.rendezvous, '/') + 1, O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (g.dir_fd < 0 || fstat(g.dir_fd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
        int e = errno;
        g.rendezvous[0] = '\0';
        run_die(1, "the rendezvous directory made in %s is not this user's private one (%s)", parent,
            g.dir_fd < 0 ? strerror(e) : "owner or mode changed");
    }
    atexit(run_remove_rendezvous);
}
