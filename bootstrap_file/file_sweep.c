/* Removing what a shared-file bootstrap's recovery rounds, dead ranks and ended jobs left
 * (file_sweep_int.h). */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bootstrap_file/file_io_int.h"
#include "bootstrap_file/file_mac_int.h"
#include "bootstrap_file/file_names_int.h"
#include "bootstrap_file/file_peers_int.h"
#include "bootstrap_file/file_request_int.h"
#include "bootstrap_file/file_sweep_int.h"

#define PATH_BYTES 4400

/* The kind of directory entry e (HN_BF_NAME_*, with its round's seq, rank and whether a temporary
 * file), or HN_BF_NAME_OTHER when it is no file of this key in generation gen. */
static int name_of(const hn_bf_state_t *s, uint64_t gen, const struct dirent *e, uint64_t *seq, int *r, int *tmp) {
    int kind = hidet_nccl__bf_name_kind(s->key, e->d_name, seq, r, tmp);
    return kind != HN_BF_NAME_OTHER && hidet_nccl__bf_seq_generation(*seq) == gen ? kind : HN_BF_NAME_OTHER;
}

/* rec's members from the decision m; a rank's process not known here, as its decider knew it. */
static void take_decision(hn_bf_round_rec_t *rec, const hidet_nccl__bf_msg_t *m) {
    for (int q = 0; q < rec->old_size; q++) {
        hidet_nccl__bf_member(m, (uint32_t)q, &rec->members[q]);
        if (rec->old[q].pid != 0 || rec->members[q].pid == 0) continue;
        rec->old[q].pid = rec->members[q].pid;
        snprintf(rec->old[q].host, sizeof rec->old[q].host, "%s", rec->members[q].host);
    }
    rec->decided = 1;
}

/* rec's members from the heal decision m: each member before the round (its place: its rank among
 * them) kept as itself or not, every job rank's member, the requests it named. */
static void take_heal(hn_bf_round_rec_t *rec, const hidet_nccl__bf_msg_t *m) {
    int n_asked = 0;
    for (int j = 0, q = 0; j < rec->job_size; j++) {
        hidet_nccl__bf_member(m, (uint32_t)j, &rec->job[j]);
        n_asked += (rec->job[j].flags & HN_BF_HEAL_JOINED) != 0;
        if (!(rec->job[j].flags & HN_BF_HEAL_BEFORE) || q >= rec->old_size) continue;
        rec->members[q] = rec->job[j];
        rec->members[q].kept = rec->job[j].flags == (HN_BF_HEAL_KEPT | HN_BF_HEAL_BEFORE); /* kept as itself */
        if (!rec->members[q].kept) memset(rec->members[q].nonce, 0, HN_BF_NONCE);
        if (rec->old[q].pid == 0 && rec->members[q].pid != 0 && !(rec->job[j].flags & HN_BF_HEAL_JOINED)) {
            rec->old[q].pid = rec->members[q].pid;
            snprintf(rec->old[q].host, sizeof rec->old[q].host, "%s", rec->members[q].host);
        }
        q++;
    }
    free(rec->asked);
    rec->asked = calloc((size_t)(n_asked + m->refusals) + 1, sizeof *rec->asked);
    rec->n_asked = 0;
    for (int j = 0; rec->asked != NULL && j < rec->job_size; j++) {
        if (!(rec->job[j].flags & HN_BF_HEAL_JOINED)) continue;
        rec->asked[rec->n_asked].rank = j;
        memcpy(rec->asked[rec->n_asked++].id, rec->job[j].nonce, HN_BF_REQUEST_ID);
    }
    for (uint32_t i = 0; rec->asked != NULL && i < m->refusals; i++) {
        hidet_nccl__bf_refusal_t f;
        hidet_nccl__bf_refusal(m, i, &f);
        if (f.reason == HN_BF_REFUSED_CHECKS) continue; /* not waited for: its writer may not read this job's files */
        rec->asked[rec->n_asked].rank = (int)f.rank;
        memcpy(rec->asked[rec->n_asked++].id, f.id, HN_BF_REQUEST_ID);
    }
    rec->decided = 1;
}

void hidet_nccl__bf_round_note_heal(hn_bf_state_t *s, uint64_t epoch, int old_size, int me,
                                    const hidet_nccl__bf_msg_t *decision, const hn_bf_peer_t *old) {
    hn_bf_round_rec_t *more = realloc(s->rounds, sizeof *more * (size_t)(s->n_rounds + 1));
    if (more == NULL) return; /* its files stay (the next job's start or the launcher removes them) */
    s->rounds = more;
    hn_bf_round_rec_t rec = {epoch, old_size, me, 0, calloc((size_t)old_size + 1, sizeof *rec.members),
                             malloc(sizeof *rec.old * ((size_t)old_size + 1)), 1, s->first_size,
                             calloc((size_t)s->first_size, sizeof *rec.job), 0, NULL};
    if (rec.members == NULL || rec.old == NULL || rec.job == NULL) {
        free(rec.members);
        free(rec.old);
        free(rec.job);
        return;
    }
    if (old_size > 0) memcpy(rec.old, old, sizeof *rec.old * (size_t)old_size);
    if (decision != NULL) take_heal(&rec, decision);
    s->rounds[s->n_rounds++] = rec;
}

void hidet_nccl__bf_round_note(hn_bf_state_t *s, uint64_t epoch, int old_size, int me,
                               const hidet_nccl__bf_msg_t *decision, const hn_bf_peer_t *old) {
    hn_bf_round_rec_t *more = realloc(s->rounds, sizeof *more * (size_t)(s->n_rounds + 1));
    if (more == NULL) return; /* its files stay (the next job's start or the launcher removes them) */
    s->rounds = more;
    hn_bf_round_rec_t rec = {epoch, old_size, me, decision != NULL, calloc((size_t)old_size, sizeof *rec.members),
                             malloc(sizeof *rec.old * (size_t)old_size), 0, 0, NULL, 0, NULL};
    if (rec.members == NULL || rec.old == NULL) {
        free(rec.members);
        free(rec.old);
        return;
    }
    memcpy(rec.old, old, sizeof *rec.old * (size_t)old_size);
    if (decision != NULL) take_decision(&rec, decision);
    s->rounds[s->n_rounds++] = rec;
}

/* Removes the entry of d named name if it is this user's (a second user's file in a sticky
 * directory is hers to remove; root could, and must not). 1 removed. */
static int remove_ours(DIR *d, const char *name) {
    struct stat st;
    return fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_uid == geteuid() &&
           unlinkat(dirfd(d), name, 0) == 0;
}

/* Removes the record at path (entry name of d) if it is this user's, parses as a record of
 * `kind` of any round of this key, and its writer is a process of this host that is gone. Only
 * the file judged goes: a restarted rank may put its own presence there between the read and
 * the removal (over the dead one's), and that one stays (remove_if_same). 1 removed. */
static int remove_if_writer_gone(const hn_bf_state_t *s, DIR *d, const char *name, const char *path, int kind) {
    uint8_t *data;
    size_t len;
    hidet_nccl__bf_msg_t m;
    struct stat st;
    if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) != 0 || st.st_uid != geteuid()) return 0;
    if (!hidet_nccl__bf_record_read_any(s, path, kind, &data, &len, &m)) return 0;
    int removed = hidet_nccl__bf_process_gone(m.pid, m.host) && hidet_nccl__bf_remove_if_same(path, data, len);
    free(data);
    return removed;
}

/* 1 if the decision of rec's round in the directory is the one rec noted (this job's, valid,
 * keeping the same joins). */
/* The decision of rec's round (a heal decision for a heal round), as decision_read. */
static int rec_decision_read(const hn_bf_state_t *s, const hn_bf_round_rec_t *rec, uint8_t **data,
                             hidet_nccl__bf_msg_t *m) {
    char why[768];
    return rec->heal ? hidet_nccl__bf_heal_read(s, rec->epoch, (uint32_t)rec->job_size, data, m, why, sizeof why)
                     : hidet_nccl__bf_decision_read(s, rec->epoch, (uint32_t)rec->old_size, data, m, why, sizeof why);
}

static int decision_noted(const hn_bf_state_t *s, const hn_bf_round_rec_t *rec) {
    uint8_t *data;
    hidet_nccl__bf_msg_t m;
    int got = rec_decision_read(s, rec, &data, &m);
    int same = got == 1;
    for (int q = 0; same && q < (rec->heal ? rec->job_size : rec->old_size); q++) {
        hidet_nccl__bf_member_t p;
        const hidet_nccl__bf_member_t *noted = rec->heal ? &rec->job[q] : &rec->members[q];
        hidet_nccl__bf_member(&m, (uint32_t)q, &p);
        same = p.flags == noted->flags && memcmp(p.nonce, noted->nonce, HN_BF_NONCE) == 0;
    }
    if (got == 1 || got == 3) free(data);
    return same;
}

/* What rec's round left of this user's: its decision (the one noted: never another's at its
 * name), the joins and marks, temporary files of writers that are gone. */
static void remove_round(const hn_bf_state_t *s, const hn_bf_round_rec_t *rec) {
    char path[PATH_BYTES];
    hidet_nccl__bf_recovery_path(s, rec->epoch, -1, "", path, sizeof path);
    if (rec->decided && decision_noted(s, rec)) unlink(path);
    DIR *d = opendir(s->dir);
    if (d == NULL) return;
    uint64_t seq = hidet_nccl__bf_recovery_seq(s, rec->epoch);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        uint64_t at;
        int r, tmp, kind = hidet_nccl__bf_name_kind(s->key, e->d_name, &at, &r, &tmp);
        if (at != seq || !(kind == HN_BF_NAME_DECISION || kind == HN_BF_NAME_JOIN || kind == HN_BF_NAME_LEFTOUT))
            continue;
        if (tmp ? hidet_nccl__bf_tmp_orphaned(e->d_name) : kind != HN_BF_NAME_DECISION) remove_ours(d, e->d_name);
    }
    closedir(d);
}

/* 1 while rank q may still need the round's decision (rec: the round, as noted). */
static int rank_pending(const hn_bf_state_t *s, const hn_bf_round_rec_t *rec, int q) {
    char path[PATH_BYTES], why[768];
    hn_bf_join_t j;
    const hidet_nccl__bf_member_t *p = &rec->members[q];
    const hn_bf_peer_t *known = &rec->old[q];
    if (rec->heal && rec->decided && (p->flags & HN_BF_HEAL_JOINED)) /* its rank taken by another process */
        return 0;
    if (!rec->decided) /* a round that failed here: only a rank in it now (that may still decide) */
        return hidet_nccl__bf_join_read(s, rec->epoch, (uint32_t)rec->old_size, q, NULL, &j, why, sizeof why) == 1 &&
               !hidet_nccl__bf_process_gone(j.pid, j.host);
    if (p->kept) /* it took the decision once its join is gone */
        return hidet_nccl__bf_join_read(s, rec->epoch, (uint32_t)rec->old_size, q, NULL, &j, why, sizeof why) == 1 &&
               memcmp(j.nonce, p->nonce, HN_BF_NONCE) == 0 && !hidet_nccl__bf_process_gone(j.pid, j.host);
    /* out of it: it knows (its mark: this job's, by its own process, never a file merely there) */
    hidet_nccl__bf_recovery_path(s, rec->epoch, q, HN_BF_MARK_LEFTOUT, path, sizeof path);
    if (hidet_nccl__bf_join_read(s, rec->epoch, (uint32_t)rec->old_size, q, path, &j, why, sizeof why) == 1 &&
        (known->pid == 0 || (known->pid == j.pid && strcmp(known->host, j.host) == 0)))
        return 0;
    if (known->pid != 0 && hidet_nccl__bf_process_gone(known->pid, known->host)) return 0;
    if (hidet_nccl__bf_join_read(s, rec->epoch, (uint32_t)rec->old_size, q, NULL, &j, why, sizeof why) == 1)
        return !hidet_nccl__bf_process_gone(j.pid, j.host); /* in the round now */
    return 1; /* may still come: alive, of another host, or never seen */
}

/* The round rec's files go if nobody needs them (rec->me is done with it); 1 if they went. */
static int round_done(const hn_bf_state_t *s, hn_bf_round_rec_t *rec, int at_end) {
    if (!rec->decided) { /* decided since by another rank? (this job's: it names known processes) */
        uint8_t *data;
        hidet_nccl__bf_msg_t m;
        int got = rec_decision_read(s, rec, &data, &m);
        if (got == 1 && rec->heal)
            take_heal(rec, &m);
        else if (got == 1 && !hidet_nccl__bf_decision_stale(rec->old, rec->old_size, rec->me, &m, HN_BF_STALE_THIS_ROUND))
            take_decision(rec, &m);
        if (got == 1 || got == 3) free(data);
    }
    unsigned char *pending = calloc((size_t)rec->old_size + 1, 1);
    if (pending == NULL) return 0;
    int waiting = 0;
    for (int q = 0; q < rec->old_size; q++) waiting += pending[q] = q != rec->me && rank_pending(s, rec, q);
    int asking = 0; /* joiners the heal round named (taken in, or refused) that have not read it */
    for (int i = 0; rec->heal && rec->decided && i < rec->n_asked; i++) {
        char path[PATH_BYTES], why[768];
        hn_bf_request_t q;
        hidet_nccl__bf_request_path(s, rec->asked[i].rank, rec->asked[i].id, path, sizeof path);
        int got = hidet_nccl__bf_request_read(s, path, rec->asked[i].rank, rec->asked[i].id, &q, why, sizeof why);
        asking += (got == 1 || got == 3) && !hidet_nccl__bf_process_gone(q.pid, q.host);
    }
    if (asking && at_end)
        HN_INFO("heal round %llu's files stay: %d restarted rank%s it answered (taken in or refused) ha%s not read it "
                "yet; the last of them to end removes them", (unsigned long long)rec->epoch, asking,
                asking == 1 ? "" : "s", asking == 1 ? "s" : "ve");
    waiting += asking;
    if (waiting && at_end) {
        char list[160], path[PATH_BYTES];
        hidet_nccl__bf_list_ranks(pending, rec->old_size, 1, list, sizeof list);
        hidet_nccl__bf_recovery_path(s, rec->epoch, -1, "", path, sizeof path);
        HN_INFO("recovery round %llu's files (its decision %s) stay: ranks %s (numbered as before the round) may still "
                "need them (not yet taken, or alive, of another host or never seen, and not known to have read it); "
                "the last of them to end removes them", (unsigned long long)rec->epoch, path, list);
    }
    free(pending);
    if (waiting) return 0;
    remove_round(s, rec);
    return 1;
}

/* Keeps the rounds noted that still have files, in order; the others' notes go. */
static void tidy_rounds(hn_bf_state_t *s, uint64_t before, int at_end) {
    int kept = 0;
    for (int i = 0; i < s->n_rounds; i++) {
        hn_bf_round_rec_t *rec = &s->rounds[i];
        if (rec->epoch < before && round_done(s, rec, at_end)) {
            free(rec->members);
            free(rec->old);
            free(rec->job);
            free(rec->asked);
        } else {
            s->rounds[kept++] = *rec;
        }
    }
    s->n_rounds = kept;
}

/* 1 if this process noted recovery or heal round epoch. */
static int noted(const hn_bf_state_t *s, uint64_t epoch) {
    for (int i = 0; i < s->n_rounds; i++)
        if (s->rounds[i].epoch == epoch) return 1;
    return 0;
}

/* The decision (recovery or heal) of earlier round `at` at path, which this process did not note:
 * noted now from the decision itself (each rank's process as its decider knew it, every joiner it
 * answered), so that its files go once nobody needs them, never before. The processes that noted
 * it may all have died since (heal rounds replace them); a rank it left out that is stopped or
 * slow may still come to read it, and must find it: it is told it was left out, never decides
 * that round again on its own. Only this job's (its name's round, its MAC). */
static void adopt(hn_bf_state_t *s, const char *path, uint64_t seq, uint64_t at) {
    uint8_t *data;
    size_t len;
    hidet_nccl__bf_msg_t m;
    char why[768];
    int heal = hidet_nccl__bf_record_read_any(s, path, HN_BF_KIND_HEAL, &data, &len, &m);
    if (!heal && !hidet_nccl__bf_record_read_any(s, path, HN_BF_KIND_DECISION, &data, &len, &m)) return;
    if (m.seq == seq && m.epoch == at && (!heal || m.world_size == (uint32_t)s->first_size) &&
        hidet_nccl__bf_mac_ok(s, data, &m, "its decider", why, sizeof why) == 0) {
        int before = 0; /* a heal round's members before it (a recovery round's: its world) */
        for (uint32_t j = 0; heal && j < m.world_size; j++) {
            hidet_nccl__bf_member_t p;
            hidet_nccl__bf_member(&m, j, &p);
            before += (p.flags & HN_BF_HEAL_BEFORE) != 0;
        }
        hn_bf_peer_t *old = calloc((size_t)m.world_size + 1, sizeof *old); /* as the decision knew them */
        if (old != NULL && heal)
            hidet_nccl__bf_round_note_heal(s, at, before, -1, &m, old);
        else if (old != NULL)
            hidet_nccl__bf_round_note(s, at, (int)m.world_size, -1, &m, old);
        free(old);
    }
    free(data);
}

void hidet_nccl__bf_sweep(hn_bf_state_t *s, uint64_t epoch) {
    DIR *d = opendir(s->dir);
    if (d == NULL) return;
    uint64_t gen = hidet_nccl__bf_seq_generation(hidet_nccl__bf_seq(s, 0));
    char path[PATH_BYTES + 300];
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        uint64_t seq;
        int r, tmp, kind = name_of(s, gen, e, &seq, &r, &tmp);
        if (kind == HN_BF_NAME_OTHER) continue;
        uint64_t at = hidet_nccl__bf_seq_epoch(seq);
        int gone = 0;
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", s->dir, e->d_name);
        if (tmp) /* a writer of this host killed mid-write (a live one may be writing still) */
            gone = at <= epoch && hidet_nccl__bf_tmp_orphaned(e->d_name);
        else if (kind == HN_BF_NAME_ROUND) /* the rounds the death broke off */
            gone = at < epoch;
        else if (kind == HN_BF_NAME_DECISION && at == 0) /* the roster */
            gone = 1;
        else if (kind == HN_BF_NAME_DECISION && at < epoch && !noted(s, at)) /* goes once nobody needs it */
            adopt(s, path, seq, at);
        else if (kind == HN_BF_NAME_LEFTOUT && at > 0 && at < epoch) {
            /* a mark tells its round's tidying that its rank read the decision: one whose
             * decision went (an earlier round's is never put again) tells nobody anything */
            char decision[PATH_BYTES];
            hidet_nccl__bf_recovery_path(s, at, -1, "", decision, sizeof decision);
            gone = lstat(decision, &st) != 0;
        } else if (kind == HN_BF_NAME_JOIN && at <= epoch) /* presences and joins of dead processes */
            remove_if_writer_gone(s, d, e->d_name, path, HN_BF_KIND_JOIN);
        else if (kind == HN_BF_NAME_REQUEST) /* requests of restarted ranks that died waiting */
            remove_if_writer_gone(s, d, e->d_name, path, HN_BF_KIND_REQUEST);
        if (gone) remove_ours(d, e->d_name);
    }
    closedir(d);
    tidy_rounds(s, epoch, 0);
}

/* 1 if the decision at path keeps only processes of this host that are gone. */
static int decision_ended(const hn_bf_state_t *s, const char *path) {
    uint8_t *data;
    size_t len;
    hidet_nccl__bf_msg_t m;
    if (!hidet_nccl__bf_record_read_any(s, path, HN_BF_KIND_DECISION, &data, &len, &m) &&
        !hidet_nccl__bf_record_read_any(s, path, HN_BF_KIND_HEAL, &data, &len, &m))
        return 0;
    int ended = hidet_nccl__bf_decision_stale(NULL, 0, -1, &m, HN_BF_STALE_FOREIGN);
    free(data);
    return ended;
}

void hidet_nccl__bf_sweep_ended(const hn_bf_state_t *s) {
    DIR *d = opendir(s->dir);
    if (d == NULL) return;
    char path[PATH_BYTES + 300], shown[1024] = "";
    int removed = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        uint64_t seq;
        int r, tmp, kind = hidet_nccl__bf_name_kind(s->key, e->d_name, &seq, &r, &tmp), gone = 0;
        snprintf(path, sizeof path, "%s/%s", s->dir, e->d_name);
        if (kind == HN_BF_NAME_OTHER)
            continue;
        else if (tmp)
            gone = hidet_nccl__bf_tmp_orphaned(e->d_name) && remove_ours(d, e->d_name);
        else if ((kind == HN_BF_NAME_JOIN && hidet_nccl__bf_seq_epoch(seq) > 0) || kind == HN_BF_NAME_LEFTOUT)
            gone = remove_if_writer_gone(s, d, e->d_name, path, HN_BF_KIND_JOIN);
        else if (kind == HN_BF_NAME_REQUEST)
            gone = remove_if_writer_gone(s, d, e->d_name, path, HN_BF_KIND_REQUEST);
        else if (kind == HN_BF_NAME_DECISION)
            gone = decision_ended(s, path) && remove_ours(d, e->d_name);
        if (!gone) continue; /* removed: said below */
        size_t at = strlen(shown);
        if (removed++ < 4) snprintf(shown + at, sizeof shown - at, "%s%s", removed > 1 ? ", " : "", path);
    }
    closedir(d);
    if (removed)
        HN_WARN("rank %d: removed %d stale file%s of job key '%s' that an ended job left (their processes, of this "
                "host, are gone): %s%s", s->rank, removed, removed == 1 ? "" : "s", s->key, shown,
                removed > 4 ? ", ..." : "");
}

void hidet_nccl__bf_list_ranks(const unsigned char *flag, int n, int with_count, char *out, size_t cap) {
    size_t used = 0;
    int count = 0;
    out[0] = '\0';
    for (int r = 0; r < n; r++) {
        if (!flag[r]) continue;
        if (count++ < 16 && used + 16 < cap) used += (size_t)snprintf(out + used, cap - used, "%s%d", used ? ", " : "", r);
    }
    if (with_count)
        snprintf(out + used, cap - used, "%s (%d rank%s)", count > 16 ? ", ..." : "", count, count == 1 ? "" : "s");
    else if (count > 16)
        snprintf(out + used, cap - used, ", ... (%d ranks)", count);
    else if (count == 0)
        snprintf(out, cap, "none");
}

/* The roster, if it is this process's (rank 0 put it; it names this very process). */
static void drop_roster(const hn_bf_state_t *s) {
    char path[PATH_BYTES], why[768];
    uint8_t *data;
    hidet_nccl__bf_msg_t m;
    int got = hidet_nccl__bf_decision_read(s, 0, (uint32_t)s->nranks, &data, &m, why, sizeof why);
    if (got == 3) free(data);
    if (got != 1) return;
    hidet_nccl__bf_member_t me;
    hidet_nccl__bf_member(&m, 0, &me);
    free(data);
    hidet_nccl__bf_recovery_path(s, 0, -1, "", path, sizeof path);
    if (me.pid == (uint32_t)getpid() && strcmp(me.host, s->host) == 0) unlink(path);
}

/* This process's mark in round epoch (world ranks, it rank q of them): a join of its own, put
 * where its join would be read as one that read the round's decision. */
static void put_mark(const hn_bf_state_t *s, uint64_t epoch, int world, int q) {
    uint8_t file[HN_BF_HEADER + HN_BF_JOIN_BODY + HN_BF_MAC + 4], nonce[HN_BF_NONCE];
    char why[768], path[PATH_BYTES];
    size_t len = 0;
    if (hidet_nccl__bf_random(nonce, sizeof nonce, why, sizeof why) == 0)
        len = hidet_nccl__bf_encode_join(file, sizeof file, s->key, hidet_nccl__bf_recovery_seq(s, epoch),
                                         (uint32_t)world, (uint32_t)q, nonce, epoch, (uint32_t)getpid(), s->host,
                                         s->secret_len > 0);
    hidet_nccl__bf_recovery_path(s, epoch, q, HN_BF_MARK_LEFTOUT, path, sizeof path);
    if (len > 0 && hidet_nccl__bf_seal(s, file, len, why, sizeof why) == 0)
        hidet_nccl__bf_publish_new(path, file, len, NULL, why, sizeof why);
}

/* The place of this process in the decision m (a heal decision: among the members before it) as
 * a member it did not keep, and the number of those members; -1 if m keeps it or never names it. */
static int left_out_at(const hn_bf_state_t *s, const hidet_nccl__bf_msg_t *m, int heal, int *world) {
    int q = 0, at = -1;
    for (uint32_t j = 0; j < m->world_size; j++) {
        hidet_nccl__bf_member_t p;
        hidet_nccl__bf_member(m, j, &p);
        if (heal && !(p.flags & HN_BF_HEAL_BEFORE)) continue;
        int kept = heal ? (p.flags & HN_BF_HEAL_KEPT) != 0 : p.kept;
        if (at < 0 && !kept && p.pid == (uint32_t)getpid() && strcmp(p.host, s->host) == 0) at = q;
        q++;
    }
    *world = q;
    return at;
}

/* Rounds after the next one, decided while this process was stopped or slow past a deadline (a
 * round that kept it, which it failed; the rounds the others went on to without it): each names
 * this process as one of its members not kept, and its tidying waits for it to say it read it.
 * It ends now: its mark in each (this job's, by MAC), and each noted for the tidying. */
static void absent_from_later(hn_bf_state_t *s) {
    DIR *d = opendir(s->dir);
    if (d == NULL) return;
    uint64_t gen = hidet_nccl__bf_seq_generation(hidet_nccl__bf_seq(s, 0));
    char path[PATH_BYTES + 300], why[768];
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        uint64_t seq;
        int r, tmp, kind = name_of(s, gen, e, &seq, &r, &tmp);
        if (kind != HN_BF_NAME_DECISION || tmp) continue;
        uint64_t at = hidet_nccl__bf_seq_epoch(seq);
        if (at <= s->epoch + 1 || noted(s, at)) continue;
        uint8_t *data;
        size_t len;
        hidet_nccl__bf_msg_t m;
        snprintf(path, sizeof path, "%s/%s", s->dir, e->d_name);
        int heal = hidet_nccl__bf_record_read_any(s, path, HN_BF_KIND_HEAL, &data, &len, &m);
        if (!heal && !hidet_nccl__bf_record_read_any(s, path, HN_BF_KIND_DECISION, &data, &len, &m)) continue;
        int world = 0, q = -1;
        if (m.seq == seq && m.epoch == at && hidet_nccl__bf_mac_ok(s, data, &m, "its decider", why, sizeof why) == 0)
            q = left_out_at(s, &m, heal, &world);
        if (q >= 0) {
            hn_bf_peer_t *old = calloc((size_t)m.world_size + 1, sizeof *old); /* as the decision knew them */
            put_mark(s, at, world, q);
            if (old != NULL && heal)
                hidet_nccl__bf_round_note_heal(s, at, world, q, &m, old);
            else if (old != NULL)
                hidet_nccl__bf_round_note(s, at, world, q, &m, old);
            free(old);
        }
        free(data);
    }
    closedir(d);
}

/* The next recovery round was decided without this rank (it never joined): it ends now, so it
 * will never come to read it; it says so with its mark (a join of its own, put where its join
 * would be read as one that read it) before it looks at the others, and tidies it as they do.
 * A decision there that an ended job left is removed. */
static void absent_from_next(hn_bf_state_t *s) {
    uint64_t epoch = s->epoch + 1;
    if (s->nranks < 2 || epoch > HN_BF_MAX_EPOCH || noted(s, epoch)) return;
    uint8_t *data;
    hidet_nccl__bf_msg_t m;
    char why[768], path[PATH_BYTES];
    int got = hidet_nccl__bf_decision_read(s, epoch, (uint32_t)s->nranks, &data, &m, why, sizeof why), heal = 0;
    if (got != 1 && got != 3 && s->first_size > 1) { /* a heal round decided without this member? */
        int h = hidet_nccl__bf_heal_read(s, epoch, (uint32_t)s->first_size, &data, &m, why, sizeof why);
        if (h == 3) free(data);
        if (h == 1) got = heal = 1;
    }
    if (got != 1 && got != 3) return;
    hidet_nccl__bf_recovery_path(s, epoch, -1, "", path, sizeof path);
    if (!heal && hidet_nccl__bf_decision_stale(s->peers, s->nranks, s->rank, &m,
                                               got == 3 ? HN_BF_STALE_FOREIGN : HN_BF_STALE_THIS_ROUND)) {
        HN_WARN("rank %d: %s is a decision left by an ended job with job key '%s' (every process it keeps is gone "
                "from this host): stale, removed", s->rank, path, s->key);
        unlink(path);
    } else if (got == 1) {
        put_mark(s, epoch, s->nranks, s->rank);
        if (heal)
            hidet_nccl__bf_round_note_heal(s, epoch, s->nranks, s->rank, &m, s->peers);
        else
            hidet_nccl__bf_round_note(s, epoch, s->nranks, s->rank, &m, s->peers);
    }
    free(data);
}

/* 1 if the round file at path (a claim or a hello, or a reader's mark) names a process of this
 * host that is gone. */
static int round_writer_gone(const hn_bf_state_t *s, const char *path) {
    uint8_t *data;
    size_t len;
    hidet_nccl__bf_msg_t m;
    static const int kinds[] = {HN_BF_KIND_HELLO, HN_BF_KIND_CLAIM};
    int gone = 0;
    for (int i = 0; !gone && i < 2; i++)
        if (hidet_nccl__bf_record_read_any(s, path, kinds[i], &data, &len, &m)) {
            gone = hidet_nccl__bf_process_gone(m.pid, m.host);
            free(data);
        }
    return gone;
}

/* At finalize, by the lowest rank alive: what processes of this host that died left of this
 * bootstrap (a rank killed after the last round that would have swept it): their presences and
 * joins, their claims with the announce of that round, their hellos and marks, temporary files.
 * Stale by the protocol's rules already; here they go. One listing of the directory. */
static void sweep_dead(const hn_bf_state_t *s) {
    DIR *d = opendir(s->dir);
    if (d == NULL) return;
    uint64_t gen = hidet_nccl__bf_seq_generation(hidet_nccl__bf_seq(s, 0)), dead_claims[8];
    int n_dead = 0;
    char path[PATH_BYTES + 300];
    for (int pass = 0; pass < 2; pass++) { /* the claims of dead roots first, then their rounds' announces */
        rewinddir(d);
        for (struct dirent *e; (e = readdir(d)) != NULL;) {
            uint64_t seq;
            int r, tmp, kind = name_of(s, gen, e, &seq, &r, &tmp), gone = 0;
            if (kind == HN_BF_NAME_OTHER) continue;
            snprintf(path, sizeof path, "%s/%s", s->dir, e->d_name);
            const char *rest = strchr(e->d_name + 11 + strlen(s->key) + 1, '.');
            int is_id = !tmp && kind == HN_BF_NAME_ROUND && rest != NULL && strcmp(rest, ".id") == 0;
            if (pass == 1) {
                for (int i = 0; is_id && i < n_dead; i++) gone |= dead_claims[i] == seq;
            } else if (tmp) {
                gone = hidet_nccl__bf_tmp_orphaned(e->d_name);
            } else if (kind == HN_BF_NAME_JOIN) {
                remove_if_writer_gone(s, d, e->d_name, path, HN_BF_KIND_JOIN);
            } else if (kind == HN_BF_NAME_REQUEST) {
                remove_if_writer_gone(s, d, e->d_name, path, HN_BF_KIND_REQUEST);
            } else if (kind == HN_BF_NAME_ROUND && !is_id && round_writer_gone(s, path)) {
                gone = 1;
                if (r < 0 && n_dead < 8) dead_claims[n_dead++] = seq; /* a claim: its announce goes too */
            }
            if (gone) remove_ours(d, e->d_name);
        }
    }
    closedir(d);
}

/* 1 if the roster is there (this job's), every process it keeps but this one is a process of this
 * host that is gone, and so is every member this bootstrap knows the process of: this process is
 * the job's last (*path: the roster's). */
static int roster_others_gone(const hn_bf_state_t *s, char *path, size_t cap) {
    char why[768];
    uint8_t *data;
    hidet_nccl__bf_msg_t m;
    int got = hidet_nccl__bf_decision_read(s, 0, (uint32_t)s->first_size, &data, &m, why, sizeof why);
    if (got == 3) free(data);
    if (got != 1) return 0;
    int others = 0;
    for (uint32_t r = 0; r < m.world_size; r++) {
        hidet_nccl__bf_member_t p;
        hidet_nccl__bf_member(&m, r, &p);
        int me = p.pid == (uint32_t)getpid() && strcmp(p.host, s->host) == 0;
        others += p.kept && !me && !hidet_nccl__bf_process_gone(p.pid, p.host);
    }
    free(data);
    for (int q = 0; q < s->nranks; q++) /* and no member known alive (a restarted rank taken in by a heal round) */
        others += q != s->rank && s->peers[q].pid != 0 &&
                  !hidet_nccl__bf_process_gone(s->peers[q].pid, s->peers[q].host);
    hidet_nccl__bf_recovery_path(s, 0, -1, "", path, cap);
    return others == 0;
}

/* This process's marks as a reader (hello.<r>.gaveup, .failed), by the lowest rank alive (or the
 * job's last process) at its end: they tell a round's root that it ended without the bytes, and
 * the root removes them as it ends the round; a root that died never does. A root still in such
 * a round sees this process gone instead, the same news. */
static void drop_own_marks(const hn_bf_state_t *s) {
    DIR *d = opendir(s->dir);
    if (d == NULL) return;
    uint64_t gen = hidet_nccl__bf_seq_generation(hidet_nccl__bf_seq(s, 0));
    char path[PATH_BYTES + 300];
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        uint64_t seq;
        int r, tmp, kind = name_of(s, gen, e, &seq, &r, &tmp);
        size_t len = strlen(e->d_name);
        if (kind != HN_BF_NAME_ROUND || tmp || r < 0 || len < 7 ||
            (strcmp(e->d_name + len - 7, ".gaveup") != 0 && strcmp(e->d_name + len - 7, ".failed") != 0))
            continue;
        uint8_t *data;
        size_t bytes;
        hidet_nccl__bf_msg_t m;
        snprintf(path, sizeof path, "%s/%s", s->dir, e->d_name);
        if (!hidet_nccl__bf_record_read_any(s, path, HN_BF_KIND_HELLO, &data, &bytes, &m)) continue;
        int mine = m.pid == (uint32_t)getpid() && strcmp(m.host, s->host) == 0;
        free(data);
        if (mine) remove_ours(d, e->d_name);
    }
    closedir(d);
}

/* 1 if every rank below this one is known to be a process of this host that is gone. */
static int lowest_alive(const hn_bf_state_t *s) {
    for (int q = 0; q < s->rank; q++)
        if (!(s->peers[q].pid != 0 && hidet_nccl__bf_process_gone(s->peers[q].pid, s->peers[q].host))) return 0;
    return 1;
}

void hidet_nccl__bf_tidy(hn_bf_state_t *s) {
    if (!s->joining) { /* a joiner never taken in knows nothing of the job's but the rounds that refused it */
        if (s->roster && s->epoch == 0) drop_roster(s);
        char roster[PATH_BYTES];
        int last = s->first_size > 1 && roster_others_gone(s, roster, sizeof roster);
        if (last || (s->first_size > 1 && lowest_alive(s))) { /* what the dead left (a job shrunk to one rank too) */
            sweep_dead(s);
            drop_own_marks(s);
        }
        /* the roster of a rank 0 that died (nobody else removes it): with the job's last process */
        if (last) unlink(roster);
        absent_from_next(s);
        absent_from_later(s);
    }
    tidy_rounds(s, UINT64_MAX, 1);
    for (int i = 0; i < s->n_rounds; i++) {
        free(s->rounds[i].members);
        free(s->rounds[i].old);
        free(s->rounds[i].job);
        free(s->rounds[i].asked);
    }
    free(s->rounds);
    s->rounds = NULL;
    s->n_rounds = 0;
}
