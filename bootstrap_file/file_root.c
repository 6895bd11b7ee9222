/* The root's side of a shared-file bootstrap's round (file_round_int.h, steps 1, 3 and 5): it
 * claims the round, waits for every reader's hello that answers the claim (watching for a
 * restarted reader, a second process as one rank, a reader that left), publishes the announce,
 * waits until every hello is gone (taken), and removes what the round left. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bootstrap_file/file_claim_int.h"
#include "bootstrap_file/file_format_int.h"
#include "bootstrap_file/file_io_int.h"
#include "bootstrap_file/file_mac_int.h"
#include "bootstrap_file/file_names_int.h"
#include "bootstrap_file/file_peers_int.h"
#include "bootstrap_file/file_root_int.h"
#include "bootstrap_file/file_round_int.h"

/* Whether rank r's reader (nonce) ended this round without the bytes: 1 failed, 2 gave up, 0
 * neither. Only a mark that answers this claim with that reader's nonce counts: one left by an
 * earlier round of the same key, or by another process, is stale. */
static int withdrawn(const hn_bf_state_t *s, const hn_bf_round_t *rd, int r, const uint8_t *claim_nonce,
                     const uint8_t *nonce) {
    static const char *const marks[] = {HN_BF_MARK_FAILED, HN_BF_MARK_GAVEUP};
    for (int i = 0; i < 2; i++) {
        char path[4352 + 8], why[768];
        hn_bf_hello_t h;
        hidet_nccl__bf_round_path(s, rd->seq, r, path, sizeof path - 8);
        strcat(path, marks[i]);
        if (hidet_nccl__bf_read_hello_at(s, rd, path, r, claim_nonce, &h, NULL, why, sizeof why) == 1 &&
            memcmp(h.nonce, nonce, HN_BF_NONCE) == 0)
            return i + 1;
    }
    return 0;
}

/* "3, 7, 9 (3 of 8 ranks)" for the ranks with flag[r] == 0. */
static void list_missing(const unsigned char *flag, int n, int skip, char *out, size_t cap) {
    size_t used = 0;
    int count = 0, shown = 0;
    out[0] = '\0';
    for (int r = 0; r < n; r++) {
        if (r == skip || flag[r]) continue;
        count++;
        if (shown < 16 && used + 16 < cap) {
            used += (size_t)snprintf(out + used, cap - used, "%s%d", shown ? ", " : "", r);
            shown++;
        }
    }
    snprintf(out + used, cap - used, "%s (%d of %d ranks)", count > shown ? ", ..." : "", count, n);
}

/* What the root keeps through a round: its claim, every reader's nonce and process, which
 * readers are in, and the announce's bytes (for an allgather, assembled from the parts). */
typedef struct {
    hn_bf_claim_t claim;
    uint8_t *nonces;
    uint32_t *pids;       /* each reader's process, as its hello says */
    char (*hosts)[HN_BF_HOST_BYTES + 1];
    unsigned char *local; /* 1: that process is of this host (so its death can be seen) */
    unsigned char *have;  /* waiting: its answer is in; once published: it has not taken the bytes yet */
    uint8_t *file;
    size_t cap, len;
    uint8_t *part; /* a part read again (a restarted reader's), to compare */
    struct stat *seen; /* each hello as last read: unchanged ones are not read again */
    int published;
} root_work_t;

/* 0: rank r's hello is gone; 1: it is the one last read; 2: it changed (read it again). */
static int hello_state(const hn_bf_state_t *s, const hn_bf_round_t *rd, int r, const struct stat *seen) {
    char path[4352];
    hidet_nccl__bf_round_path(s, rd->seq, r, path, sizeof path);
    struct stat st;
    if (lstat(path, &st) != 0) return errno == ENOENT ? 0 : 2;
    return hidet_nccl__bf_same_file(&st, seen) ? 1 : 2;
}

/* Notes the identity of rank r's hello; taken before it is read, so that a replacement that
 * comes between the two shows as a change at the next look. */
static void note_hello(const hn_bf_state_t *s, const hn_bf_round_t *rd, int r, struct stat *seen) {
    char path[4352];
    hidet_nccl__bf_round_path(s, rd->seq, r, path, sizeof path);
    if (lstat(path, seen) != 0) memset(seen, 0, sizeof *seen);
}

/* The part of rank r lands in the announce's data (an allgather), or nowhere. */
static void *part_slot(const hn_bf_round_t *rd, int r) {
    return rd->part_bytes ? (uint8_t *)rd->out + (size_t)r * rd->part_bytes : NULL;
}

/* Rank r's answer h is in: its nonce goes into the announce; its process is remembered, so
 * that a later answer for r can be told from a restart (that process gone) or a collision. */
static void accept_hello(const hn_bf_state_t *s, root_work_t *w, int r, const hn_bf_hello_t *h) {
    memcpy(w->nonces + (size_t)r * HN_BF_NONCE, h->nonce, HN_BF_NONCE);
    w->pids[r] = h->pid;
    snprintf(w->hosts[r], sizeof w->hosts[r], "%s", h->host);
    w->local[r] = strcmp(h->host, s->host) == 0;
    w->have[r] = 1;
}

/* The root's claim still holds; else the collision, as an error. */
static hidet_nccl_status_t claim_still_held(root_work_t *w, char *msg, size_t msg_bytes) {
    char why[1024];
    if (hidet_nccl__bf_claim_held(&w->claim, why, sizeof why) == 0) return HIDET_NCCL_SUCCESS;
    hidet_nccl__bf_claim_mark(&w->claim);
    return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_BOOTSTRAP, "%s", why);
}

/* Two processes answered this claim as rank r (the one taken, and h): two processes run as one
 * rank, or two jobs share the key. */
static hidet_nccl_status_t two_answers(const hn_bf_state_t *s, root_work_t *w, int r, const hn_bf_hello_t *h,
                                       char *msg, size_t msg_bytes) {
    hidet_nccl__bf_claim_mark(&w->claim);
    return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_BOOTSTRAP,
                           "rank %d (root): two processes answered this round's claim as rank %d in %s (pid %u on host "
                           "'%s', then pid %u on host '%s'): two processes run as rank %d, or two jobs use job key '%s' "
                           "in this directory at once; both fail. Give each job its own key, each rank one process",
                           s->rank, r, s->dir, w->pids[r], w->hosts[r], h->pid, h->host, r, s->key);
}

/* (Re)writes the announce: every rank's nonce as it now stands. */
static hidet_nccl_status_t put_announce(const hn_bf_state_t *s, const hn_bf_round_t *rd, root_work_t *w,
                                        const char *id_path, char *msg, size_t msg_bytes) {
    char why[768] = "";
    size_t len = hidet_nccl__bf_encode_announce(w->file, w->cap, s->key, rd->seq, (uint32_t)s->nranks,
                                                (uint32_t)s->rank, rd->out, (uint32_t)rd->out_bytes, w->nonces,
                                                s->secret_len > 0);
    /* the job's readers take only an announce of a root that holds its secret */
    if (len > 0 && hidet_nccl__bf_seal(s, w->file, len, why, sizeof why) != 0)
        return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d (root): %s", s->rank, why);
    if (len == 0 || hidet_nccl__bf_publish(id_path, w->file, len, why, sizeof why) != 0)
        return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d (root) could not publish %s: %s",
                               s->rank, id_path, len ? why : "too large");
    w->published = 1;
    return HIDET_NCCL_SUCCESS;
}

/* Rank r's hello, accepted before, is gone (state 0) or changed (2). Gone: taken, once the
 * announce is out, unless its reader left a mark (it failed, or gave up); before that, it is
 * waited for again. Changed: the same answer (its nonce) from a new process is this rank started
 * again (its first process gone: the new one took its dead answer over, nonce and all, so the
 * announce stands); an answer with another nonce is another process's, whether the first lives
 * or has gone (it may have taken the bytes and ended: a process started as this rank after it
 * is a second one, never taken in its place): two processes as rank r. */
static hidet_nccl_status_t recheck(const hn_bf_state_t *s, const hn_bf_round_t *rd, root_work_t *w, int r, int state,
                                   char *msg, size_t msg_bytes) {
    const uint8_t *nonce = w->nonces + (size_t)r * HN_BF_NONCE;
    char why[768];
    if (state == 0) {
        int mark = withdrawn(s, rd, r, w->claim.nonce, nonce);
        char id_path[4352];
        hidet_nccl__bf_round_path(s, rd->seq, -1, id_path, sizeof id_path);
        if (mark)
            return hidet_nccl__say(msg, msg_bytes, mark == 1 ? HIDET_NCCL_ERROR_BOOTSTRAP : HIDET_NCCL_ERROR_TIMEOUT,
                                   "rank %d (root) %s %s, but rank %d %s before taking it (%s)", s->rank,
                                   w->published ? "published" : "was about to publish", id_path, r,
                                   mark == 1 ? "failed" : "gave up",
                                   mark == 1 ? "it saw the round collide, or an error" : "its deadline passed");
        w->have[r] = 0; /* taken; or, before the announce, to be waited for again */
        return HIDET_NCCL_SUCCESS;
    }
    hn_bf_hello_t h;
    note_hello(s, rd, r, &w->seen[r]);
    int got = hidet_nccl__bf_read_hello(s, rd, r, w->claim.nonce, &h, w->part, why, sizeof why);
    if (got != 1) { /* no longer an answer to this claim: waited for again (a reader re-answering) */
        if (!w->published) w->have[r] = 0;
        return HIDET_NCCL_SUCCESS;
    }
    if (memcmp(h.nonce, nonce, HN_BF_NONCE) != 0) return two_answers(s, w, r, &h, msg, msg_bytes);
    if (h.pid == w->pids[r] && strcmp(h.host, w->hosts[r]) == 0) return HIDET_NCCL_SUCCESS; /* rewritten as it was */
    if (!(w->local[r] && hidet_nccl__bf_process_gone(w->pids[r], s->host)))
        return two_answers(s, w, r, &h, msg, msg_bytes);
    if (w->published && rd->part_bytes && memcmp(w->part, part_slot(rd, r), rd->part_bytes) != 0)
        return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_BOOTSTRAP,
                               "rank %d (root): rank %d came back (its first process, pid %u on this host, is gone) "
                               "with another part after the announce went out: the ranks that took it would disagree; "
                               "start the job again", s->rank, r, w->pids[r]);
    if (rd->part_bytes) memcpy(part_slot(rd, r), w->part, rd->part_bytes);
    accept_hello(s, w, r, &h);
    return HIDET_NCCL_SUCCESS;
}

/* At the root's deadline, for its message: whether a rank not in left a mark answering this
 * claim (it gave up before the root came). One listing of the directory and at most two
 * reads, so that a slow file system does not stretch the call past its deadline by much. */
static int some_gave_up(const hn_bf_state_t *s, const hn_bf_round_t *rd, const root_work_t *w) {
    char prefix[HN_BF_KEY_BYTES + 64];
    size_t plen = (size_t)snprintf(prefix, sizeof prefix, "hidet-nccl.%s.%llu.hello.", s->key,
                                   (unsigned long long)rd->seq);
    DIR *d = opendir(s->dir);
    int found = 0, reads = 0;
    for (struct dirent *e; d != NULL && !found && reads < 2 && (e = readdir(d)) != NULL;) {
        int r = -1, used = 0;
        if (strncmp(e->d_name, prefix, plen) != 0 || sscanf(e->d_name + plen, "%d%n", &r, &used) != 1 ||
            strcmp(e->d_name + plen + used, HN_BF_MARK_GAVEUP) != 0 || r < 0 || r >= s->nranks || w->have[r])
            continue;
        char path[4352 + 300], why[768];
        hn_bf_hello_t h;
        snprintf(path, sizeof path, "%s/%s", s->dir, e->d_name);
        reads++;
        found = hidet_nccl__bf_read_hello_at(s, rd, path, r, w->claim.nonce, &h, NULL, why, sizeof why) == 1;
    }
    if (d != NULL) closedir(d);
    return found;
}


/* Step 1: every reader's hello answering the claim (a hello of a dead process of this host is
 * stale: not counted), watching the ones in for a restart or a second process. */
static hidet_nccl_status_t await_hellos(hn_bf_state_t *s, const hn_bf_round_t *rd, root_work_t *w, hn_poll_t *poll,
                                        char *msg, size_t msg_bytes) {
    int n = s->nranks;
    char why[768] = "", missing[160];
    for (;;) {
        int waiting = 0, expired = 0;
        for (int r = 0; r < n; r++) {
            if (r == s->rank) continue;
            if ((expired = hidet_nccl__poll_expired(poll)) != 0) break;
            if (w->have[r]) {
                int state = hello_state(s, rd, r, &w->seen[r]);
                hidet_nccl_status_t st = state == 1 ? HIDET_NCCL_SUCCESS
                                                    : recheck(s, rd, w, r, state, msg, msg_bytes);
                if (st != HIDET_NCCL_SUCCESS) return st;
                waiting += !w->have[r];
                continue;
            }
            hn_bf_hello_t h;
            note_hello(s, rd, r, &w->seen[r]);
            int got = hidet_nccl__bf_read_hello(s, rd, r, w->claim.nonce, &h, part_slot(rd, r), why, sizeof why);
            if (got == 1 && hidet_nccl__bf_writer_gone(&h))
                snprintf(why, sizeof why, "rank %d's hello answers this claim for pid %u on this host, which is gone "
                         "(stale: that rank started again replaces it)", r, h.pid);
            else if (got == 1)
                accept_hello(s, w, r, &h);
            if (!w->have[r] && !hidet_nccl__poll_expired(poll)) {
                hidet_nccl_status_t st = hidet_nccl__bf_still_there(s, rd, r, "reader", msg, msg_bytes);
                if (st != HIDET_NCCL_SUCCESS) return st;
            }
            waiting += !w->have[r];
        }
        if (!expired && waiting == 0) return HIDET_NCCL_SUCCESS;
        if (!expired) {
            hidet_nccl_status_t held = claim_still_held(w, msg, msg_bytes);
            if (held != HIDET_NCCL_SUCCESS) return held;
            expired = hidet_nccl__poll_expired(poll);
        }
        if (expired) {
            int quit = some_gave_up(s, rd, w) ? 1 : -1;
            list_missing(w->have, n, s->rank, missing, sizeof missing);
            int none = 1;
            for (int r = 0; r < n; r++) none &= r == s->rank || !w->have[r];
            return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_TIMEOUT,
                                   "rank %d (root) waited %.1f s in %s for ranks %s, which never arrived (no valid "
                                   "hello file hidet-nccl.%s.%llu.hello.<rank>)%s%s%s",
                                   s->rank, hidet_nccl__poll_waited(poll), s->dir, missing, s->key,
                                   (unsigned long long)rd->seq,
                                   quit >= 0 ? "; some gave up before the root came (their deadline passed)"
                                   : none ? "; no rank arrived at all: do they use this directory and job key, and can "
                                            "they write to it (a rank that cannot fails at once)?"
                                          : "",
                                   why[0] ? "; last problem: " : "", why);
        }
        hidet_nccl__poll_pause(poll);
    }
}

/* Steps 2 to 4: publish, then watch until every hello is gone (taken). A hello that went with
 * its reader's mark fails the round; a second answer to the claim for one rank (before or
 * after the first was taken) is a collision; a restarted reader's answer (its dead process's,
 * taken over) is taken in its place. The round ends well only if the claim is still as it was put. */
static hidet_nccl_status_t publish_until_taken(hn_bf_state_t *s, const hn_bf_round_t *rd, root_work_t *w,
                                               hn_poll_t *poll, char *msg, size_t msg_bytes) {
    int n = s->nranks;
    char id_path[4352], why[768], missing[160];
    hidet_nccl__bf_round_path(s, rd->seq, -1, id_path, sizeof id_path);
    hidet_nccl_status_t st = put_announce(s, rd, w, id_path, msg, msg_bytes);
    while (st == HIDET_NCCL_SUCCESS) {
        int left = 0, expired = 0;
        for (int r = 0; r < n && st == HIDET_NCCL_SUCCESS; r++) {
            if (r == s->rank) continue;
            if ((expired = hidet_nccl__poll_expired(poll)) != 0) break;
            int state = hello_state(s, rd, r, &w->seen[r]);
            if (!w->have[r]) { /* taken: a new answer for this rank now is a second process */
                hn_bf_hello_t h;
                if (state != 2) continue;
                note_hello(s, rd, r, &w->seen[r]);
                if (hidet_nccl__bf_read_hello(s, rd, r, w->claim.nonce, &h, NULL, why, sizeof why) != 1) continue;
                /* Even if the process that took them is gone since: it had the bytes, and the
                 * rank that comes now is not the one the job's other ranks will meet. */
                if (memcmp(h.nonce, w->nonces + (size_t)r * HN_BF_NONCE, HN_BF_NONCE) != 0) {
                    st = two_answers(s, w, r, &h, msg, msg_bytes);
                    continue;
                }
                w->have[r] = 1; /* the same reader, answering again (its hello was removed): not taken */
                left++;
                continue;
            }
            if (state != 1) st = recheck(s, rd, w, r, state, msg, msg_bytes);
            if (st == HIDET_NCCL_SUCCESS && w->have[r] && !hidet_nccl__poll_expired(poll)) {
                st = hidet_nccl__bf_still_there(s, rd, r, "reader", msg, msg_bytes);
                /* gone since its hello was looked at: it may have taken the bytes and ended (its
                 * hello gone with it): looked at once more before it is called dead */
                if (st != HIDET_NCCL_SUCCESS && (state = hello_state(s, rd, r, &w->seen[r])) != 1)
                    st = recheck(s, rd, w, r, state, msg, msg_bytes);
            }
            left += w->have[r];
        }
        if (st != HIDET_NCCL_SUCCESS) break;
        if (!expired && st == HIDET_NCCL_SUCCESS) st = claim_still_held(w, msg, msg_bytes); /* also the last look */
        if (st != HIDET_NCCL_SUCCESS || (!expired && left == 0)) break;
        if (expired || hidet_nccl__poll_expired(poll)) {
            int dead = -1; /* a rank whose process is known gone: it will not take them */
            for (int r = 0; r < n && dead < 0; r++)
                if (r != s->rank && w->have[r] && w->local[r] && hidet_nccl__bf_process_gone(w->pids[r], s->host))
                    dead = r;
            snprintf(why, sizeof why, "; rank %d's process (pid %u on this host) is gone", dead,
                     dead >= 0 ? w->pids[dead] : 0);
            for (int r = 0; r < n; r++) w->have[r] = !w->have[r] || r == s->rank;
            list_missing(w->have, n, s->rank, missing, sizeof missing);
            st = hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_TIMEOUT,
                                 "rank %d (root) published %s but ranks %s did not take it (waited %.1f s)%s", s->rank,
                                 id_path, missing, hidet_nccl__poll_waited(poll), dead >= 0 ? why : "");
            break;
        }
        hidet_nccl__poll_pause(poll);
    }
    if (st == HIDET_NCCL_SUCCESS) { /* every reader's process, for the rounds to come, and the roster: put before
                                     * the announce goes, so that a rank started again sees one or the other */
        for (int r = 0; r < n; r++)
            if (r != s->rank) hidet_nccl__bf_peer_note(s, r, w->pids[r], w->hosts[r]);
        hidet_nccl__bf_roster_put(s, w->nonces);
    }
    if (w->published) unlink(id_path);
    return st;
}

/* The root's claim was marked collided. The mark tells every rank of both jobs that looks at
 * the claim to stop at once, saying why; so the root keeps it for four of the readers' longest
 * pauses (at least 0.2 s; the deadline cuts it short), long enough for every reader that still
 * polls to see it, then removes it, so that no collided claim outlives the collision. It does
 * not wait for every answer to go: a reader that answered and then died (on another host,
 * where its death cannot be seen) would hold the root's failure until its deadline. */
static void linger_collided(root_work_t *w, hn_poll_t *poll) {
    if (!hidet_nccl__bf_claim_collided_ours(&w->claim)) return; /* replaced or removed: not ours to mind */
    double least = 4e-9 * (double)poll->max_ns, until = hidet_nccl__poll_waited(poll) + (least > 0.2 ? least : 0.2);
    while (!hidet_nccl__poll_expired(poll) && hidet_nccl__poll_waited(poll) < until) hidet_nccl__poll_pause(poll);
    hidet_nccl__bf_claim_remove_collided(&w->claim);
}

/* What follows "hidet-nccl.<key>.<seq>." in a name of this round: 1 a reader's mark
 * ("hello.<r>.gaveup", ".failed"), 2 a temporary file ("root", "id" or "hello.<r>", then
 * ".tmp."), 0 anything else. Keys may hold dots, so the prefix alone also matches files of
 * other keys ("a.1" begins like round 1 of key "a"): their rest is never of these forms. */
static int round_leftover(const char *rest) {
    const char *at = rest;
    if (strncmp(at, "root", 4) == 0) {
        at += 4;
    } else if (strncmp(at, "id", 2) == 0) {
        at += 2;
    } else if (strncmp(at, "hello.", 6) == 0 && at[6] >= '0' && at[6] <= '9') {
        at += 6;
        while (*at >= '0' && *at <= '9') at++;
        if (strcmp(at, HN_BF_MARK_GAVEUP) == 0 || strcmp(at, HN_BF_MARK_FAILED) == 0) return 1;
    } else {
        return 0;
    }
    return strncmp(at, ".tmp.", 5) == 0 ? 2 : 0;
}

/* What writers of this round left: temporary files of writers of this host killed mid-write
 * (a writer elsewhere may be writing still), and the marks of readers that ended without the
 * bytes. Every reader of the round is done with them when its root ends it. */
static void remove_leftovers(const hn_bf_state_t *s, const hn_bf_round_t *rd) {
    char prefix[HN_BF_KEY_BYTES + 64];
    size_t plen = (size_t)snprintf(prefix, sizeof prefix, "hidet-nccl.%s.%llu.", s->key, (unsigned long long)rd->seq);
    DIR *d = opendir(s->dir);
    if (d == NULL) return;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        const char *name = e->d_name;
        if (strncmp(name, prefix, plen) != 0) continue;
        int kind = round_leftover(name + plen);
        if (kind == 1 || (kind == 2 && hidet_nccl__bf_tmp_orphaned(name + plen))) unlinkat(dirfd(d), name, 0);
    }
    closedir(d);
}

hidet_nccl_status_t hidet_nccl__bf_root_round(hn_bf_state_t *s, const hn_bf_round_t *rd, hn_poll_t *poll, char *msg,
                                              size_t msg_bytes) {
    int n = s->nranks;
    root_work_t w = {{s->key, rd->seq, (uint32_t)n, (uint32_t)s->rank, "", {0}, 0, {0}, 0, ""},
                     calloc((size_t)n, HN_BF_NONCE), calloc((size_t)n, sizeof(uint32_t)),
                     calloc((size_t)n, HN_BF_HOST_BYTES + 1), calloc((size_t)n, 1), calloc((size_t)n, 1), NULL, HN_BF_HEADER + 8 + rd->out_bytes + (size_t)HN_BF_NONCE * n + HN_BF_MAC, 0,
                     malloc(rd->part_bytes + 1), calloc((size_t)n, sizeof(struct stat)), 0};
    w.file = malloc(w.cap);
    hidet_nccl__bf_round_path(s, rd->seq, -2, w.claim.path, sizeof w.claim.path);
    hidet_nccl_status_t st;
    char why[1024];
    if (!w.nonces || !w.pids || !w.hosts || !w.local || !w.have || !w.file || !w.part || !w.seen) {
        st = hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_SYSTEM, "out of memory for %d ranks", n);
    } else {
        int took = hidet_nccl__bf_claim_take(&w.claim, poll->timeout_s, why, sizeof why);
        if (took != 0) {
            st = hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d (root)%s: %s", s->rank,
                                 took == HN_BF_COLLIDED ? "" : " could not claim the round", why);
        } else {
            memcpy(w.nonces + (size_t)s->rank * HN_BF_NONCE, w.claim.nonce, HN_BF_NONCE);
            w.have[s->rank] = 1;
            if (rd->part_bytes) memmove(part_slot(rd, s->rank), rd->part, rd->part_bytes);
            st = await_hellos(s, rd, &w, poll, msg, msg_bytes);
            if (st == HIDET_NCCL_SUCCESS) st = publish_until_taken(s, rd, &w, poll, msg, msg_bytes);
            if (st != HIDET_NCCL_SUCCESS && hidet_nccl__bf_claim_collided_ours(&w.claim))
                linger_collided(&w, poll); /* then removed */
            else
                hidet_nccl__bf_claim_drop(&w.claim); /* only if still ours, as put */
            remove_leftovers(s, rd);
        }
    }
    free(w.nonces);
    free(w.pids);
    free(w.hosts);
    free(w.local);
    free(w.have);
    free(w.file);
    free(w.part);
    free(w.seen);
    return st;
}
