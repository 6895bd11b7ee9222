/* Removing what earlier rounds and dead ranks of a shared-file bootstrap left. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bootstrap_file/file_io_int.h"
#include "bootstrap_file/file_names_int.h"
#include "bootstrap_file/file_peers_int.h"
#include "bootstrap_file/file_sweep_int.h"

#define PATH_BYTES 4400

/* world 0: every file of round `epoch` goes (its decision no longer needed); else only its joins
 * and temporary files of dead processes. */
static void sweep(const hn_bf_state_t *s, uint64_t epoch, uint32_t world) {
    DIR *d = opendir(s->dir);
    if (d == NULL) return;
    uint64_t gen = hidet_nccl__bf_seq_generation(hidet_nccl__bf_seq(s, 0));
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        uint64_t seq;
        int r, tmp, kind = hidet_nccl__bf_name_kind(s->key, e->d_name, &seq, &r, &tmp);
        if (kind == HN_BF_NAME_OTHER || hidet_nccl__bf_seq_generation(seq) != gen) continue;
        uint64_t at = hidet_nccl__bf_seq_epoch(seq);
        int gone = at < epoch;
        if (at == epoch && kind != HN_BF_NAME_ROUND && seq == hidet_nccl__bf_recovery_seq(s, epoch) && world == 0) {
            gone = 1;
        } else if (at == epoch && kind != HN_BF_NAME_ROUND && seq == hidet_nccl__bf_recovery_seq(s, epoch)) {
            if (tmp) {
                gone = hidet_nccl__bf_tmp_orphaned(e->d_name);
            } else if (kind == HN_BF_NAME_JOIN) {
                char path[PATH_BYTES], why[768];
                hn_bf_join_t j;
                snprintf(path, sizeof path, "%s/%s", s->dir, e->d_name);
                gone = hidet_nccl__bf_join_read(s, epoch, world, r, path, &j, why, sizeof why) == 1 &&
                       hidet_nccl__bf_process_gone(j.pid, j.host);
            }
        }
        if (gone) unlinkat(dirfd(d), e->d_name, 0);
    }
    closedir(d);
}

void hidet_nccl__bf_sweep(const hn_bf_state_t *s, uint64_t epoch, uint32_t world) {
    if (world > 0) sweep(s, epoch, world);
}

void hidet_nccl__bf_sweep_round(const hn_bf_state_t *s, uint64_t epoch) { sweep(s, epoch, 0); }

/* 1 if path names a file. */
static int there(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
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
    if (hidet_nccl__bf_decision_read(s, 0, (uint32_t)s->nranks, &data, &m, why, sizeof why) != 1) return;
    hidet_nccl__bf_member_t me;
    hidet_nccl__bf_member(&m, 0, &me);
    free(data);
    hidet_nccl__bf_recovery_path(s, 0, -1, "", path, sizeof path);
    if (me.pid == (uint32_t)getpid() && strcmp(me.host, s->host) == 0) unlink(path);
}

void hidet_nccl__bf_tidy(hn_bf_state_t *s) {
    const hn_bf_last_round_t *l = &s->last;
    if (l->epoch == 0) {
        if (s->rank == 0 && s->roster) drop_roster(s);
        return;
    }
    int first = l->left_out ? hidet_nccl__bf_process_gone(l->first.pid, l->first.host) : s->rank == 0;
    if (!first) return;
    int n = l->old_size;
    unsigned char *pending = calloc((size_t)n, 1);
    if (pending == NULL) return;
    int waiting = 0;
    char path[PATH_BYTES], why[768];
    for (int r = 0; r < n; r++) {
        hn_bf_join_t j;
        if (l->kept[r]) { /* it took the decision once its join is gone */
            hidet_nccl__bf_recovery_path(s, l->epoch, r, "", path, sizeof path);
            pending[r] = there(path) && !(hidet_nccl__bf_join_read(s, l->epoch, (uint32_t)n, r, path, &j, why, sizeof why) == 1 &&
                                          hidet_nccl__bf_process_gone(j.pid, j.host));
        } else { /* it knows it was left out (its mark), or it is gone */
            hidet_nccl__bf_recovery_path(s, l->epoch, r, HN_BF_MARK_LEFTOUT, path, sizeof path);
            pending[r] = !there(path) && !(l->old[r].pid != 0 && hidet_nccl__bf_process_gone(l->old[r].pid, l->old[r].host));
        }
        waiting += pending[r];
    }
    hidet_nccl__bf_recovery_path(s, l->epoch, -1, "", path, sizeof path);
    if (waiting) {
        char list[160];
        hidet_nccl__bf_list_ranks(pending, n, 1, list, sizeof list);
        HN_INFO("recovery round %llu's decision %s stays: ranks %s (numbered as before the round) may still come to "
                "read it (alive, or of another host, and it cannot be seen whether they are gone)",
                (unsigned long long)l->epoch, path, list);
    } else { /* nobody needs the round any more: its files go, the decision first */
        unlink(path);
        hidet_nccl__bf_sweep_round(s, l->epoch);
    }
    free(pending);
}
