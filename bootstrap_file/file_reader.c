/* A reader's side of a shared-file bootstrap's round (file_round_int.h, steps 2 and 4): it
 * waits for the root's claim, answers it with its hello (replacing a stale one, failing on a
 * live one), takes the announce that carries both nonces, and, ending without the bytes,
 * leaves its mark. */
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
#include "bootstrap_file/file_presence_int.h"
#include "bootstrap_file/file_reader_int.h"
#include "bootstrap_file/file_round_int.h"

/* Puts this reader's hello answering the claim c, only where no hello is (link(2)), *mine the
 * file as put. What may be there instead: an answer to another claim (stale, or this reader's
 * own answer to an earlier claim): replaced; an answer to this claim of a dead process of this
 * host (this rank's process before a restart): taken over (its nonce becomes this reader's) and
 * replaced in one rename, so that the root never sees the rank without an answer; one of a live process: two processes as this rank, two jobs
 * sharing the key: the claim is marked collided and this rank fails. A file this user cannot
 * or may not replace (a directory, another user's file) fails it at once, saying what is there. */
/* This reader's hello answering claim c with nonce, sealed (the root takes only answers and
 * parts of a reader that holds its secret): its length, or 0 (why). */
static size_t make_hello(const hn_bf_state_t *s, const hn_bf_round_t *rd, const hn_bf_claim_t *c,
                         const uint8_t nonce[HN_BF_NONCE], uint8_t *hello, size_t cap, char *why, size_t why_bytes) {
    size_t len = hidet_nccl__bf_encode_hello(hello, cap, s->key, rd->seq, (uint32_t)s->nranks, (uint32_t)s->rank,
                                             nonce, c->nonce, (uint32_t)getpid(), s->host, rd->part,
                                             (uint32_t)rd->part_bytes, s->secret_len > 0);
    if (len == 0) snprintf(why, why_bytes, "its hello does not fit");
    return len > 0 && hidet_nccl__bf_seal(s, hello, len, why, why_bytes) == 0 ? len : 0;
}

static hidet_nccl_status_t put_hello(hn_bf_state_t *s, const hn_bf_round_t *rd, const hn_bf_claim_t *c,
                                     uint8_t nonce[HN_BF_NONCE], const char *hello_path, struct stat *mine,
                                     char *msg, size_t msg_bytes) {
    char why[768] = "";
    size_t cap = HN_BF_HEADER + HN_BF_HELLO_FIXED + rd->part_bytes + HN_BF_MAC + 4;
    uint8_t *hello = malloc(cap);
    if (hello == NULL) return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_SYSTEM, "out of memory");
    size_t len = make_hello(s, rd, c, nonce, hello, cap, why, sizeof why);
    if (len == 0) {
        free(hello);
        return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d: %s", s->rank, why);
    }
    hidet_nccl_status_t st = HIDET_NCCL_ERROR_BOOTSTRAP;
    const char *fail = NULL;
    hn_bf_hello_t other = {{0}, 0, ""};
    int collided = 0;
    for (int attempt = 0; fail == NULL && attempt < 4; attempt++) {
        int put = hidet_nccl__bf_publish_new(hello_path, hello, len, mine, why, sizeof why);
        struct stat there;
        if (put == 0) {
            st = HIDET_NCCL_SUCCESS;
            break;
        }
        if (put < 0) fail = why;
        if (put < 0 || lstat(hello_path, &there) != 0) continue; /* failed, or gone again: once more */
        int got = hidet_nccl__bf_read_hello(s, rd, s->rank, c->nonce, &other, NULL, why, sizeof why);
        if (got == 1 && memcmp(other.nonce, nonce, HN_BF_NONCE) == 0) { /* this reader's own answer */
            *mine = there;
            st = HIDET_NCCL_SUCCESS;
            break;
        }
        if (got == 1 && hidet_nccl__bf_writer_gone(&other)) {
            /* This rank's process before a restart: its answer is taken over, nonce and all, so
             * that the root sees the same answer from a new process (a second process as this
             * rank, whose first took the bytes and ended, answers with a nonce of its own). */
            memcpy(nonce, other.nonce, HN_BF_NONCE);
            if ((len = make_hello(s, rd, c, nonce, hello, cap, why, sizeof why)) == 0) {
                fail = why;
                break;
            }
            int over = hidet_nccl__bf_publish_over(hello_path, &there, hello, len, mine, why, sizeof why);
            if (over == 0) {
                st = HIDET_NCCL_SUCCESS;
                break;
            }
            if (over < 0) fail = why;
            continue; /* it changed meanwhile: look again */
        }
        if (got == 1 || got == 3) { /* another live process's answer, or another job's */
            collided = 1;
            break;
        }
        if (got < 0 && !(S_ISREG(there.st_mode) && there.st_uid == geteuid())) {
            hidet_nccl__bf_in_the_way(hello_path, &there, why, sizeof why);
            fail = why;
            break;
        }
        /* Another claim's answer, or this user's torn or older file: stale, replaced; unless
         * it changed since it was read (then it is looked at again). */
        struct stat now;
        if (lstat(hello_path, &now) == 0 && hidet_nccl__bf_same_file(&now, &there) && unlink(hello_path) != 0 &&
            errno != ENOENT) {
            snprintf(why, sizeof why, "cannot remove the stale %s: %s", hello_path, strerror(errno));
            fail = why;
        }
    }
    free(hello);
    if (collided) {
        char who[160] = "another job's reader (its answer does not carry this job's secret)";
        if (other.pid != 0) snprintf(who, sizeof who, "another live process (pid %u on host '%s')", other.pid, other.host);
        hidet_nccl__bf_claim_mark(c);
        return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_BOOTSTRAP,
                               "rank %d: %s already answers this round's claim for %s: two jobs use job key '%s' in %s "
                               "at once; both fail. Give each job its own key", s->rank, hello_path, who, s->key, s->dir);
    }
    if (st != HIDET_NCCL_SUCCESS)
        return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_BOOTSTRAP,
                               "rank %d could not answer the root's claim: %s", s->rank,
                               fail ? fail : "its hello file was replaced four times while it tried");
    return HIDET_NCCL_SUCCESS;
}

/* A reader whose answer is in place: still so (0), or it was replaced by another live
 * process's answer to this claim (a collision: the claim is marked; -1 and why) or is gone
 * (removed by another: 1, to be put again). */
static int answer_kept(hn_bf_state_t *s, const hn_bf_round_t *rd, const hn_bf_claim_t *c, const uint8_t *nonce,
                       const char *hello_path, const struct stat *mine, char *why, size_t wn) {
    struct stat now;
    if (lstat(hello_path, &now) != 0) return 1;
    if (hidet_nccl__bf_same_file(&now, mine)) return 0;
    hn_bf_hello_t h;
    int got = hidet_nccl__bf_read_hello(s, rd, s->rank, c->nonce, &h, NULL, why, wn);
    if (got == 1 && memcmp(h.nonce, nonce, HN_BF_NONCE) != 0) {
        hidet_nccl__bf_claim_mark(c);
        snprintf(why, wn, "rank %d: its answer %s was replaced by another process's answer to this round's claim "
                 "(pid %u on host '%s'): two processes run as rank %d; two jobs use job key '%s' in %s at once? "
                 "Both fail. Give each job its own key", s->rank, hello_path, h.pid, h.host, s->rank, s->key, s->dir);
        return -1;
    }
    if (got == 3) { /* an answer under another secret: a second job's reader, to this job's claim */
        hidet_nccl__bf_claim_mark(c);
        snprintf(why, wn, "rank %d: its answer %s was replaced by an answer to this round's claim that does not carry "
                 "this job's secret: two jobs use job key '%s' in %s at once. Both fail. Give each job its own key",
                 s->rank, hello_path, s->key, s->dir);
        return -1;
    }
    return 1;
}

/* Withdraws this reader's answer, if it is still its own: renamed to its mark, so that the
 * root sees why it went (mark) and never counts the rank as having taken the bytes. */
static void withdraw(const char *hello_path, const struct stat *mine, const char *mark, const char *claim_path) {
    char to[4352 + 8];
    struct stat now;
    snprintf(to, sizeof to, "%s%s", hello_path, mark);
    if (lstat(hello_path, &now) != 0 || !hidet_nccl__bf_same_file(&now, mine) || rename(hello_path, to) != 0) return;
    /* A root that already ended (its claim gone) reads no mark, and its cleanup ran before this one
     * was made: nobody would remove it. A root still there removes it when it ends. */
    if (lstat(claim_path, &now) != 0 && errno == ENOENT) unlink(to);
}

/* The announce's bytes if it is this round's, carries the claim's nonce and this reader's. 1
 * taken, 0 not yet (seen says why). */
static int take_announce(const hn_bf_state_t *s, const hn_bf_round_t *rd, const hn_bf_claim_t *c,
                         const uint8_t nonce[HN_BF_NONCE], const char *id_path, char *seen, size_t seen_bytes) {
    uint8_t *data = NULL;
    size_t len = 0;
    char why[768];
    int got = hidet_nccl__bf_read(id_path, HN_BF_HEADER + 4, HN_BF_MAX_FILE, &data, &len, why, sizeof why);
    if (got < 0) snprintf(seen, seen_bytes, "%s", why);
    int taken = 0;
    if (got == 1) {
        hidet_nccl__bf_msg_t m;
        char inner[384];
        /* With the job's secret, an announce counts only with a right MAC, checked before any
         * byte of it is used: another job's root (same key, another secret) is never taken. */
        if (hidet_nccl__bf_parse(data, len, &m, inner, sizeof inner) != 0 ||
            hidet_nccl__bf_mac_ok(s, data, &m, "its root", inner, sizeof inner) != 0 ||
            hidet_nccl__bf_expect(&m, HN_BF_KIND_ANNOUNCE, s->key, rd->seq, (uint32_t)s->nranks, (uint32_t)rd->root,
                                  inner, sizeof inner) != 0) {
            snprintf(seen, seen_bytes, "%s: %s; refused", id_path, inner);
        } else if (memcmp(m.nonces + (size_t)rd->root * HN_BF_NONCE, c->nonce, HN_BF_NONCE) != 0 ||
                   memcmp(m.nonces + (size_t)s->rank * HN_BF_NONCE, nonce, HN_BF_NONCE) != 0) {
            snprintf(seen, seen_bytes, "%s does not carry this round's claim and this rank's nonce (stale, or "
                     "another job's); refused", id_path);
        } else if (m.data_bytes != rd->out_bytes) {
            snprintf(seen, seen_bytes, "%s holds %u bytes, expected %zu; refused", id_path, m.data_bytes,
                     rd->out_bytes);
        } else {
            memcpy(rd->out, m.data, rd->out_bytes);
            taken = 1;
        }
    }
    free(data);
    return taken;
}

hidet_nccl_status_t hidet_nccl__bf_reader_round(hn_bf_state_t *s, const hn_bf_round_t *rd, hn_poll_t *poll, char *msg,
                                                size_t msg_bytes) {
    uint8_t nonce[HN_BF_NONCE];
    char hello_path[4352], id_path[4352], why[1024], seen[1024] = "no claim from the root yet";
    hidet_nccl__bf_round_path(s, rd->seq, s->rank, hello_path, sizeof hello_path);
    hidet_nccl__bf_round_path(s, rd->seq, -1, id_path, sizeof id_path);
    hn_bf_claim_t c = {s->key, rd->seq, (uint32_t)s->nranks, (uint32_t)rd->root, "", {0}, 0, {0}, 0, ""};
    hidet_nccl__bf_round_path(s, rd->seq, -2, c.path, sizeof c.path);
    if (hidet_nccl__bf_random(nonce, sizeof nonce, why, sizeof why) != 0)
        return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_SYSTEM, "%s", why);
    struct stat mine;
    int answered = 0;
    hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
    while (st == HIDET_NCCL_SUCCESS && !hidet_nccl__poll_expired(poll)) {
        int look = hidet_nccl__bf_claim_look(&c, why, sizeof why);
        if (look == HN_BF_COLLIDED) {
            st = hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d: %s", s->rank, why);
            break;
        }
        if (look < 0 || (look == 0 && why[0] && !answered)) snprintf(seen, sizeof seen, "%s", why);
        int kept = look == 1 || !answered ? 1 : answer_kept(s, rd, &c, nonce, hello_path, &mine, why, sizeof why);
        if (kept < 0) {
            st = hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_BOOTSTRAP, "%s", why);
            answered = 0; /* another's now: nothing of ours to withdraw */
            break;
        }
        if (kept == 1 && (look == 1 || answered) && !hidet_nccl__poll_expired(poll)) {
            answered = 0;
            st = put_hello(s, rd, &c, nonce, hello_path, &mine, msg, msg_bytes);
            answered = st == HIDET_NCCL_SUCCESS;
            if (!answered) break;
        }
        if (answered && !hidet_nccl__poll_expired(poll) &&
            take_announce(s, rd, &c, nonce, id_path, seen, sizeof seen)) {
            /* Still the one process as this rank (a second one removes the first's presence): else
             * the bytes are not taken, and the root hears of it through the mark */
            if ((st = hidet_nccl__bf_presence_held(s, msg, msg_bytes)) != HIDET_NCCL_SUCCESS) break;
            struct stat now; /* removing it tells the root this rank has its bytes */
            if (lstat(hello_path, &now) == 0 && hidet_nccl__bf_same_file(&now, &mine)) unlink(hello_path);
            hidet_nccl__bf_peer_note(s, rd->root, c.pid, c.host); /* the root's process, for the rounds to come */
            return HIDET_NCCL_SUCCESS;
        }
        if (answered && strcmp(seen, "no claim from the root yet") == 0) snprintf(seen, sizeof seen, "no file yet");
        if (hidet_nccl__poll_expired(poll)) break;
        if ((st = hidet_nccl__bf_still_there(s, rd, rd->root, "root", msg, msg_bytes)) != HIDET_NCCL_SUCCESS) break;
        hidet_nccl__poll_pause(poll);
    }
    if (answered) withdraw(hello_path, &mine, st == HIDET_NCCL_SUCCESS ? HN_BF_MARK_GAVEUP : HN_BF_MARK_FAILED, c.path);
    if (st != HIDET_NCCL_SUCCESS) return st;
    return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_TIMEOUT,
                           "rank %d waited %.1f s for %s from rank %d (root); last seen: %s", s->rank,
                           hidet_nccl__poll_waited(poll), id_path, rd->root, seen);
}
