/* The names of the shared-file bootstrap's files, and their sequence numbers. */
#include <stdio.h>
#include <string.h>

#include "bootstrap_file/file_names_int.h"

uint64_t hidet_nccl__bf_seq(const hn_bf_state_t *s, uint64_t tag) {
    return ((tag >> 32) & HN_BF_MAX_EPOCH) << 48 | (s->generation & 0xffffu) << 32 | (tag & 0xffffffffu);
}

uint64_t hidet_nccl__bf_seq_generation(uint64_t seq) { return (seq >> 32) & 0xffffu; }

uint64_t hidet_nccl__bf_seq_epoch(uint64_t seq) { return seq >> 48; }

uint64_t hidet_nccl__bf_recovery_seq(const hn_bf_state_t *s, uint64_t epoch) {
    return hidet_nccl__bf_seq(s, epoch << 32);
}

void hidet_nccl__bf_round_path(const hn_bf_state_t *s, uint64_t seq, int hello_rank, char *out, size_t n) {
    if (hello_rank == -2)
        snprintf(out, n, "%s/hidet-nccl.%s.%llu.root", s->dir, s->key, (unsigned long long)seq);
    else if (hello_rank < 0)
        snprintf(out, n, "%s/hidet-nccl.%s.%llu.id", s->dir, s->key, (unsigned long long)seq);
    else
        snprintf(out, n, "%s/hidet-nccl.%s.%llu.hello.%d", s->dir, s->key, (unsigned long long)seq, hello_rank);
}

void hidet_nccl__bf_recovery_path(const hn_bf_state_t *s, uint64_t epoch, int rank, const char *mark, char *out,
                                  size_t n) {
    unsigned long long seq = (unsigned long long)hidet_nccl__bf_recovery_seq(s, epoch);
    if (rank < 0)
        snprintf(out, n, "%s/hidet-nccl.%s.%llu.decision%s", s->dir, s->key, seq, mark);
    else
        snprintf(out, n, "%s/hidet-nccl.%s.%llu.join.%d%s", s->dir, s->key, seq, rank, mark);
}

void hidet_nccl__bf_request_path(const hn_bf_state_t *s, int rank, const uint8_t *id, char *out, size_t n) {
    unsigned long long seq = (unsigned long long)hidet_nccl__bf_recovery_seq(s, 0);
    char hex[2 * HN_BF_REQUEST_ID + 1];
    for (int i = 0; i < HN_BF_REQUEST_ID; i++) snprintf(hex + 2 * i, 3, "%02x", id[i]);
    snprintf(out, n, "%s/hidet-nccl.%s.%llu.request.%d.%s", s->dir, s->key, seq, rank, hex);
}

/* 16 lowercase hex digits at p into id: 0, or -1. */
static int hex_id(const char *p, uint8_t id[HN_BF_REQUEST_ID]) {
    for (int i = 0; i < 2 * HN_BF_REQUEST_ID; i++) {
        int v = p[i] >= '0' && p[i] <= '9' ? p[i] - '0' : p[i] >= 'a' && p[i] <= 'f' ? p[i] - 'a' + 10 : -1;
        if (v < 0) return -1;
        if (id != NULL) id[i / 2] = (uint8_t)(i % 2 ? (id[i / 2] | v) : v << 4);
    }
    return 0;
}

int hidet_nccl__bf_request_name_id(const char *key, const char *name, uint8_t id[HN_BF_REQUEST_ID]) {
    uint64_t seq;
    int r, tmp;
    if (hidet_nccl__bf_name_kind(key, name, &seq, &r, &tmp) != HN_BF_NAME_REQUEST) return -1;
    const char *at = name + 12 + strlen(key); /* "hidet-nccl.<key>." */
    while (*at >= '0' && *at <= '9') at++;
    at += 1 + 8; /* ".request." less its first dot */
    while (*at >= '0' && *at <= '9') at++;
    return hex_id(at + 1, id);
}

/* "<word>.<digits>" at *at: the number (at most 9 digits), *at past it; -1 if not there. */
static int ranked(const char **at, const char *word) {
    size_t len = strlen(word);
    const char *p = *at;
    if (strncmp(p, word, len) != 0 || p[len] != '.' || p[len + 1] < '0' || p[len + 1] > '9') return -1;
    p += len + 1;
    int r = 0, digits = 0;
    for (; *p >= '0' && *p <= '9' && digits < 10; p++, digits++) r = r * 10 + (*p - '0');
    if (digits > 9) return -1;
    *at = p;
    return r;
}

int hidet_nccl__bf_name_kind(const char *key, const char *name, uint64_t *seq, int *rank, int *tmp) {
    size_t klen = strlen(key);
    *rank = -1;
    *tmp = 0;
    if (strncmp(name, "hidet-nccl.", 11) != 0 || strncmp(name + 11, key, klen) != 0 || name[11 + klen] != '.')
        return HN_BF_NAME_OTHER;
    const char *at = name + 12 + klen;
    unsigned long long v = 0;
    int digits = 0;
    for (; *at >= '0' && *at <= '9' && digits < 21; at++, digits++) {
        if (v > (~0ull - 9) / 10) return HN_BF_NAME_OTHER;
        v = v * 10 + (unsigned)(*at - '0');
    }
    if (digits == 0 || *at != '.') return HN_BF_NAME_OTHER;
    at++;
    *seq = v;
    int kind = HN_BF_NAME_OTHER, r;
    if (strncmp(at, "root", 4) == 0) {
        at += 4, kind = HN_BF_NAME_ROUND;
    } else if (strncmp(at, "id", 2) == 0) {
        at += 2, kind = HN_BF_NAME_ROUND;
    } else if (strncmp(at, "decision", 8) == 0) {
        at += 8, kind = HN_BF_NAME_DECISION;
    } else if ((r = ranked(&at, "hello")) >= 0) {
        *rank = r, kind = HN_BF_NAME_ROUND;
        if (strncmp(at, ".gaveup", 7) == 0) at += 7;
        else if (strncmp(at, ".failed", 7) == 0) at += 7;
    } else if ((r = ranked(&at, "request")) >= 0) {
        if (*at != '.' || hex_id(at + 1, NULL) != 0) return HN_BF_NAME_OTHER;
        at += 1 + 2 * HN_BF_REQUEST_ID;
        *rank = r, kind = HN_BF_NAME_REQUEST;
    } else if ((r = ranked(&at, "join")) >= 0) {
        *rank = r, kind = HN_BF_NAME_JOIN;
        if (strncmp(at, HN_BF_MARK_LEFTOUT, strlen(HN_BF_MARK_LEFTOUT)) == 0) {
            at += strlen(HN_BF_MARK_LEFTOUT);
            kind = HN_BF_NAME_LEFTOUT;
        }
    }
    if (kind == HN_BF_NAME_OTHER) return kind;
    if (*at == '\0') return kind;
    if (strncmp(at, ".tmp.", 5) != 0) return HN_BF_NAME_OTHER;
    *tmp = 1;
    return kind;
}
