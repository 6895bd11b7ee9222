/* The job secret's MAC on the shared-file bootstrap's files. */
#include <stdio.h>

#include "bootstrap_file/file_mac_int.h"

int hidet_nccl__bf_seal(const hn_bf_state_t *s, uint8_t *file, size_t len, char *why, size_t why_bytes) {
    if (s->secret_len == 0) return 0;
    size_t covers;
    uint8_t *mac = hidet_nccl__bf_mac_at(file, len, &covers);
    if (hidet_nccl__mac(s->secret, s->secret_len, file, covers, mac, why, why_bytes) != 0) return -1;
    hidet_nccl__bf_reseal(file, len);
    return 0;
}

int hidet_nccl__bf_mac_ok(const hn_bf_state_t *s, const uint8_t *data, const hidet_nccl__bf_msg_t *m,
                          const char *writer, char *why, size_t why_bytes) {
    if (s->secret_len == 0 && m->mac == NULL) return 0;
    if (s->secret_len == 0) {
        snprintf(why, why_bytes, "%s holds a job secret and this rank does not (give every rank the same "
                 "HIDET_NCCL_JOB_SECRET_FILE)", writer);
        return -1;
    }
    if (m->mac == NULL) {
        snprintf(why, why_bytes, "it carries no MAC: %s holds no job secret (another job's, or this job's ranks were "
                 "given different secrets)", writer);
        return -1;
    }
    uint8_t want[HN_MAC_BYTES];
    if (hidet_nccl__mac(s->secret, s->secret_len, data, m->mac_covers, want, why, why_bytes) != 0) return -1;
    if (!hidet_nccl__mac_equal(want, m->mac)) {
        snprintf(why, why_bytes, "its MAC does not match this job's secret: %s is another job's (the same key, "
                 "another secret)", writer);
        return -1;
    }
    return 0;
}
