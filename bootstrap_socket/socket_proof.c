/* Proofs of the job secret, and the welcome that carries the hub's (docs/bootstrap_socket.md). */
#include <stdio.h>
#include <string.h>

#include "bootstrap_socket/socket_proof_int.h"

int hidet_nccl__sk_proof(const hn_sk_state_t *job, const char *role, const uint8_t a[HN_SK_NONCE],
                         const uint8_t b[HN_SK_NONCE], const uint8_t *extra, size_t extra_len, uint32_t rank,
                         uint8_t out[HN_MAC_BYTES], char *why, size_t why_bytes) {
    uint8_t data[64 + 2 * HN_SK_NONCE + HN_SK_NONCE + 8 + HN_SK_KEY_BYTES];
    size_t len = strlen(role) + 1;
    if (len > 64 || extra_len > HN_SK_NONCE) {
        snprintf(why, why_bytes, "a proof of role '%.64s' with %zu extra bytes does not fit", role, extra_len);
        return -1;
    }
    memcpy(data, role, len);
    memcpy(data + len, a, HN_SK_NONCE);
    memcpy(data + len + HN_SK_NONCE, b, HN_SK_NONCE);
    len += 2 * HN_SK_NONCE;
    if (extra_len) memcpy(data + len, extra, extra_len);
    len += extra_len;
    hidet_nccl__put32(data + len, rank);
    hidet_nccl__put32(data + len + 4, (uint32_t)job->nranks);
    len += 8;
    memset(data + len, 0, HN_SK_KEY_BYTES);
    memcpy(data + len, job->key, strlen(job->key));
    len += HN_SK_KEY_BYTES;
    return hidet_nccl__mac(job->secret, job->secret_len, data, len, out, why, why_bytes);
}

size_t hidet_nccl__sk_welcome_encode(const hn_sk_state_t *job, int joiner, uint32_t rank, const uint8_t theirs[HN_SK_NONCE],
                                     const uint8_t ours[HN_SK_NONCE], const uint8_t session[HN_SK_NONCE],
                                     uint8_t *out, size_t cap, char *why, size_t why_bytes) {
    uint8_t body[HN_SK_NONCE + HN_MAC_BYTES];
    size_t body_len = HN_SK_NONCE;
    memcpy(body, theirs, HN_SK_NONCE);
    if (job->secret_len) {
        if (hidet_nccl__sk_proof(job, joiner ? HN_SK_JOINER_ROLE : HN_SK_SERVER_ROLE, theirs, ours, session, HN_SK_NONCE,
                                 rank, body + HN_SK_NONCE, why, why_bytes) != 0)
            return 0;
        body_len += HN_MAC_BYTES;
    }
    size_t len = hidet_nccl__sk_encode(out, cap, HN_SK_KIND_WELCOME, job->key, (uint32_t)job->nranks, 0,
                                       joiner ? HN_SK_WELCOME_JOINER : 0, session, body, (uint32_t)body_len);
    if (len == 0) snprintf(why, why_bytes, "a welcome of %zu bytes does not fit in %zu", body_len + HN_SK_HEADER + 4, cap);
    return len;
}

const char *hidet_nccl__sk_printable(const char *key, char out[HN_SK_KEY_BYTES + 1]) {
    size_t i = 0;
    for (; key[i] != '\0' && i < HN_SK_KEY_BYTES; i++) out[i] = key[i] >= ' ' && key[i] <= '~' ? key[i] : '?';
    out[i] = '\0';
    return out;
}
