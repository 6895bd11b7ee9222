/* A restarted rank's request to be taken back in (file_request_int.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap_file/file_io_int.h"
#include "bootstrap_file/file_mac_int.h"
#include "bootstrap_file/file_names_int.h"
#include "bootstrap_file/file_request_int.h"

hidet_nccl_status_t hidet_nccl__bf_request_put(const hn_bf_state_t *s, const uint8_t nonce[HN_BF_NONCE], char *path,
                                               size_t path_bytes, struct stat *mine, char *msg, size_t n) {
    uint8_t file[HN_BF_HEADER + HN_BF_REQUEST_BODY + HN_BF_MAC + 4];
    char why[768] = "";
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    uint64_t asked_ms = (uint64_t)now.tv_sec * 1000u + (uint64_t)now.tv_nsec / 1000000u;
    hidet_nccl__bf_request_path(s, s->first_rank, nonce, path, path_bytes);
    size_t len = hidet_nccl__bf_encode_request(file, sizeof file, s->key, hidet_nccl__bf_recovery_seq(s, 0),
                                               (uint32_t)s->first_size, (uint32_t)s->first_rank, nonce, asked_ms,
                                               (uint32_t)getpid(), s->host, s->secret_len > 0);
    if (len == 0 || hidet_nccl__bf_seal(s, file, len, why, sizeof why) != 0)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "job rank %d could not make its request to be taken "
                               "back in: %s", s->first_rank, len ? why : "it does not fit");
    int put = hidet_nccl__bf_publish_new(path, file, len, mine, why, sizeof why);
    if (put == 1) { /* its random name taken already: in the way */
        struct stat st;
        if (lstat(path, &st) == 0) hidet_nccl__bf_in_the_way(path, &st, why, sizeof why);
        else snprintf(why, sizeof why, "%s was there, then went", path);
    }
    if (put != 0)
        return hidet_nccl__say(msg, n, HIDET_NCCL_ERROR_BOOTSTRAP, "job rank %d could not put its request to be taken "
                               "back in (job key '%s'): %s", s->first_rank, s->key, why);
    return HIDET_NCCL_SUCCESS;
}

int hidet_nccl__bf_request_read(const hn_bf_state_t *s, const char *path, int rank, const uint8_t id[HN_BF_REQUEST_ID],
                                hn_bf_request_t *q, char *why, size_t why_bytes) {
    uint8_t *data = NULL;
    size_t len = 0;
    int got = hidet_nccl__bf_read(path, HN_BF_HEADER + 4, HN_BF_HEADER + HN_BF_REQUEST_BODY + HN_BF_MAC + 4, &data,
                                  &len, why, why_bytes);
    if (got <= 0) return got;
    hidet_nccl__bf_msg_t m;
    char inner[384];
    int rc = 1;
    if (hidet_nccl__bf_parse(data, len, &m, inner, sizeof inner) != 0 ||
        hidet_nccl__bf_expect(&m, HN_BF_KIND_REQUEST, s->key, hidet_nccl__bf_recovery_seq(s, 0),
                              (uint32_t)s->first_size, (uint32_t)rank, inner, sizeof inner) != 0) {
        rc = -1;
    } else if (memcmp(m.nonce, id, HN_BF_REQUEST_ID) != 0) {
        snprintf(inner, sizeof inner, "its nonce is not the one its name says (a request copied or renamed)");
        rc = -1;
    } else if (hidet_nccl__bf_mac_ok(s, data, &m, "its writer", inner, sizeof inner) != 0) {
        rc = 3;
    }
    if (rc == 1 || rc == 3) {
        memcpy(q->nonce, m.nonce, HN_BF_NONCE);
        q->asked_ms = m.asked_ms;
        q->pid = m.pid;
        snprintf(q->host, sizeof q->host, "%s", m.host);
    }
    if (rc != 1) snprintf(why, why_bytes, "%s: %s; refused", path, inner);
    free(data);
    return rc;
}

void hidet_nccl__bf_request_withdraw(const char *path, const struct stat *mine) {
    struct stat now;
    if (mine->st_ino != 0 && lstat(path, &now) == 0 && hidet_nccl__bf_same_file(&now, mine)) unlink(path);
}

const char *hidet_nccl__bf_refusal_reason(int reason) {
    switch (reason) {
    case HN_BF_REFUSED_LIVE: return "its job rank is a live member";
    case HN_BF_REFUSED_SECOND: return "another process asked for that rank first, or was taken in as it";
    case HN_BF_REFUSED_CHECKS: return "the request failed the decider's checks";
    default: return "unknown reason";
    }
}
