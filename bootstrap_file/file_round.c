/* What both sides of a shared-file bootstrap's round share (file_round_int.h): a reader's hello as
 * read and checked, and whether an awaited peer is still there. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap_file/file_io_int.h"
#include "bootstrap_file/file_mac_int.h"
#include "bootstrap_file/file_names_int.h"
#include "bootstrap_file/file_peers_int.h"
#include "bootstrap_file/file_round_int.h"

int hidet_nccl__bf_writer_gone(const hn_bf_hello_t *h) { return hidet_nccl__bf_process_gone(h->pid, h->host); }

int hidet_nccl__bf_read_hello_at(const hn_bf_state_t *s, const hn_bf_round_t *rd, const char *path, int r,
                                 const uint8_t *root_nonce, hn_bf_hello_t *h, void *part, char *why, size_t wn) {
    uint8_t *data = NULL;
    size_t len = 0, size = HN_BF_HEADER + HN_BF_HELLO_FIXED + rd->part_bytes + HN_BF_MAC + 4;
    int got = hidet_nccl__bf_read(path, HN_BF_HEADER + 4, size, &data, &len, why, wn);
    if (got <= 0) return got;
    hidet_nccl__bf_msg_t m;
    char inner[384];
    int ok = hidet_nccl__bf_parse(data, len, &m, inner, sizeof inner) == 0 &&
             hidet_nccl__bf_expect(&m, HN_BF_KIND_HELLO, s->key, rd->seq, (uint32_t)s->nranks, (uint32_t)r, inner,
                                   sizeof inner) == 0;
    if (ok && hidet_nccl__bf_mac_ok(s, data, &m, "its reader", inner, sizeof inner) != 0) {
        snprintf(why, wn, "%s: %s", path, inner);
        free(data);
        return 3;
    }
    if (ok && m.data_bytes != rd->part_bytes) {
        snprintf(inner, sizeof inner, "a part of %u bytes, expected %zu", m.data_bytes, rd->part_bytes);
        ok = 0;
    }
    int answers = ok && memcmp(m.root_nonce, root_nonce, HN_BF_NONCE) == 0;
    if (ok) {
        memcpy(h->nonce, m.nonce, HN_BF_NONCE);
        h->pid = m.pid;
        snprintf(h->host, sizeof h->host, "%s", m.host);
        if (answers && part != NULL && rd->part_bytes) memcpy(part, m.data, rd->part_bytes);
        if (!answers) snprintf(why, wn, "%s answers another root's claim (stale, or another job's)", path);
    } else {
        snprintf(why, wn, "%s: %s; refused", path, inner);
    }
    free(data);
    return !ok ? -1 : answers ? 1 : 2;
}

int hidet_nccl__bf_read_hello(const hn_bf_state_t *s, const hn_bf_round_t *rd, int r, const uint8_t *root_nonce,
                              hn_bf_hello_t *h, void *part, char *why, size_t wn) {
    char path[4352];
    hidet_nccl__bf_round_path(s, rd->seq, r, path, sizeof path);
    return hidet_nccl__bf_read_hello_at(s, rd, path, r, root_nonce, h, part, why, wn);
}

hidet_nccl_status_t hidet_nccl__bf_still_there(const hn_bf_state_t *s, const hn_bf_round_t *rd, int r,
                                               const char *role, char *msg, size_t msg_bytes) {
    char why[1024];
    if (hidet_nccl__bf_peer_left(s, r, role, why, sizeof why) == HIDET_NCCL_SUCCESS) return HIDET_NCCL_SUCCESS;
    return hidet_nccl__say(msg, msg_bytes, HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d (%s) of round %llu in %s: %s",
                           s->rank, s->rank == rd->root ? "root" : "reader", (unsigned long long)rd->seq, s->dir, why);
}
