/* The ranks' output: each stream read from its pipe and passed on line by line to our stdout or
 * stderr, tagged [rank] with --tag-output, a line longer than the buffer in pieces under one
 * tag while its destination is held; or, with --output-dir, each rank's log file (one for all
 * the starts of a rank: a restart writes on after the last). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/run/run.h"

/* A line longer than a stream's buffer goes out in pieces as it comes, the tag before the first
 * only. While such a line is half out, its destination is held: the other streams that write
 * there are not read, so no other line lands inside it. A hold ends with the line, or when its
 * pieces stop coming for k_piece_gap_s or it has lasted k_line_hold_s (a progress bar that never
 * ends its line, or a rank that waits for the held ones): the line is ended there and its rest
 * starts a tagged line of its own, so a hold never makes the ranks wait for each other. */
static const double k_piece_gap_s = 0.5, k_line_hold_s = 5;

/* The slot that says which stream holds s's destination (its rank's log, or our stdout or
 * stderr, one slot for both when they are one file). */
static stream_t **holder_of(rank_t *r, const stream_t *s) {
    if (r->log_fd >= 0) return &r->log_holder;
    return &g.holder[s->dest == STDOUT_FILENO && !g.out_is_err ? 0 : 1];
}

/* 1 when another stream's long line is half written where s writes: s waits. */
int run_held_from(rank_t *r, const stream_t *s) {
    const stream_t *h = *holder_of(r, s);
    return h != NULL && h != s;
}

/* The buffered bytes, byte for byte (a NUL in them included), with the tag (rank i's rank in
 * the job) when they start a line; line_ends: the line is complete (a newline added if it has
 * none), else more of it follows and s holds its destination until then. A write to a closed pipe fails with EPIPE,
 * and its SIGPIPE reaches the main loop through the signalfd. */
static void put_piece(rank_t *r, int i, stream_t *s, int line_ends) {
    char out[sizeof s->partial + 32];
    size_t m = g.tag_output && !s->mid_line ? (size_t)snprintf(out, 32, "[%d] ", run_global_rank(i)) : 0;
    memcpy(out + m, s->partial, s->len);
    m += s->len;
    if (line_ends && (s->len == 0 || s->partial[s->len - 1] != '\n')) out[m++] = '\n';
    s->len = 0;
    int fd = r->log_fd >= 0 ? r->log_fd : s->dest;
    for (size_t done = 0; done < m;) {
        ssize_t w = write(fd, out + done, m - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break; /* nowhere to report it */
        done += (size_t)w;
    }
    stream_t **h = holder_of(r, s);
    double t = run_now();
    if (line_ends) {
        s->mid_line = 0;
        if (*h == s) *h = NULL;
    } else {
        if (!s->mid_line) s->line_until = t + k_line_hold_s;
        s->mid_line = 1;
        s->piece_until = t + k_piece_gap_s;
        *h = s;
    }
}

/* Passes data on line by line (prefixed with [rank] when tagging), a line longer than the
 * buffer in pieces under one tag; eof ends the last line. */
static void emit(rank_t *r, int i, stream_t *s, const char *data, size_t n, int eof) {
    for (size_t k = 0; k < n; k++) {
        s->partial[s->len++] = data[k];
        if (data[k] == '\n') put_piece(r, i, s, 1);
        else if (s->len == sizeof s->partial) put_piece(r, i, s, 0);
    }
    if (eof && (s->len > 0 || s->mid_line)) put_piece(r, i, s, 1);
}

/* A held destination whose line has stopped coming (or has been held too long) is let go: the
 * line ends there; what follows of it is tagged anew. */
static void end_stalled_line(rank_t *r, int i, stream_t *s, double t) {
    if (s->mid_line && *holder_of(r, s) == s && (t >= s->piece_until || t >= s->line_until)) put_piece(r, i, s, 1);
}

/* Reads what is there and passes it on; at the end of the stream flushes the last line and
 * closes it. */
void run_pump(rank_t *r, int i, stream_t *s) {
    char buf[4096];
    ssize_t n = read(s->fd, buf, sizeof buf);
    if (n > 0 || (n < 0 && errno == EINTR)) {
        if (n > 0) emit(r, i, s, buf, (size_t)n, 0);
        return;
    }
    emit(r, i, s, buf, 0, 1);
    close(s->fd);
    s->fd = -1;
}

/* Before rank i starts again: what its earlier process left in its pipes is passed on (as much
 * as is there now, never waiting: a process that escaped its group may hold them still), its
 * last lines ended, the pipes closed; the restarted process gets new ones. A long line of
 * another stream half out where these write is ended first, so that none lands inside it. */
void run_end_streams(int i) {
    rank_t *r = &g.ranks[i];
    for (int w = 0; w < 2; w++) {
        stream_t *s = &r->out[w];
        if (s->fd < 0) continue;
        stream_t *h = *holder_of(r, s);
        for (int j = 0; h != NULL && h != s && j < g.n; j++)
            for (int v = 0; v < 2; v++)
                if (&g.ranks[j].out[v] == h) put_piece(&g.ranks[j], j, h, 1);
        int fl = fcntl(s->fd, F_GETFL);
        if (fl >= 0) fcntl(s->fd, F_SETFL, fl | O_NONBLOCK); /* nothing left: EAGAIN, the end */
        for (int k = 0; k < 256 && s->fd >= 0; k++) run_pump(r, i, s);
        if (s->fd >= 0) { /* still coming after 1 MiB: the rest is a leftover's, not the rank's */
            emit(r, i, s, NULL, 0, 1);
            close(s->fd);
            s->fd = -1;
        }
    }
}

/* Every held destination whose hold is over is let go. */
void run_end_stalled_lines(void) {
    double t = run_now();
    for (int i = 0; i < g.n; i++)
        for (int w = 0; w < 2; w++) end_stalled_line(&g.ranks[i], i, &g.ranks[i].out[w], t);
}

/* When the hold of a destination ends at the latest (0: none held). */
double run_hold_ends(const stream_t *h) {
    if (h == NULL) return 0;
    return h->piece_until < h->line_until ? h->piece_until : h->line_until;
}

/* 1 while a rank's pipe is open. */
int run_pipes_open(void) {
    for (int i = 0; i < g.n; i++)
        if (g.ranks[i].out[0].fd >= 0 || g.ranks[i].out[1].fd >= 0) return 1;
    return 0;
}

/* At the end: each stream's last line ended (the lines half out first, so that no other line
 * lands inside them); a pipe still held by a process we could not kill is let go. */
void run_flush_all(void) {
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < g.n; i++)
            for (int w = 0; w < 2; w++) {
                rank_t *r = &g.ranks[i];
                stream_t *s = &r->out[w];
                if (s->fd >= 0 && (pass == 1 || s->mid_line)) {
                    emit(r, i, s, NULL, 0, 1);
                    close(s->fd);
                    s->fd = -1;
                }
            }
    for (int i = 0; i < g.n; i++)
        if (g.ranks[i].log_fd >= 0) close(g.ranks[i].log_fd);
}

/* 1 when our stdout and stderr are one file (2>&1, one terminal): their lines share its holds. */
int run_out_is_err(void) {
    struct stat o, e;
    return fstat(STDOUT_FILENO, &o) == 0 && fstat(STDERR_FILENO, &e) == 0 && o.st_dev == e.st_dev &&
           o.st_ino == e.st_ino;
}

/* Rank i's log, rank.<its rank in the job>.log (nodes that share the directory write their own
 * files), created new through the output directory's descriptor and never through a
 * symbolic link: a log this user left before is replaced; a link, or a file of another user,
 * (planted in a directory others may write) is refused. fd, or -1 and why. */
int run_open_log(int i, char *why, size_t why_bytes) {
    char name[32];
    snprintf(name, sizeof name, "rank.%d.log", run_global_rank(i));
    for (int attempt = 0; attempt < 2; attempt++) {
        int fd = openat(g.output_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0) return fd;
        if (errno != EEXIST) break;
        struct stat st;
        if (fstatat(g.output_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (!S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
            snprintf(why, why_bytes, "%s is %s; refused (remove it, or use a directory only you can write)", name,
                     S_ISLNK(st.st_mode) ? "a symbolic link" : !S_ISREG(st.st_mode) ? "not a regular file"
                                                                                     : "owned by another user");
            return -1;
        }
        unlinkat(g.output_fd, name, 0); /* this user's log of an earlier run */
    }
    snprintf(why, why_bytes, "cannot create %s: %s", name, strerror(errno));
    return -1;
}
