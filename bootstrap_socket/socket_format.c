/* Encoding and checking the socket rendezvous's messages; the parser takes untrusted bytes. */
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "core/kit.h"

#include "bootstrap_socket/socket_format_int.h"

static const uint8_t k_magic[8] = {'H', 'N', 'C', 'C', 'L', 'S', 'K', 0};

static uint32_t checksum(const uint8_t *p, size_t n) { return (uint32_t)crc32(crc32(0L, Z_NULL, 0), p, (uInt)n); }

#define WHY(...) (snprintf(why, why_bytes, __VA_ARGS__), -1)

int hidet_nccl__sk_total(const uint8_t header[HN_SK_HEADER], size_t *total, char *why, size_t why_bytes) {
    if (memcmp(header, k_magic, sizeof k_magic) != 0) return WHY("not a hidet-nccl rendezvous message (wrong magic)");
    uint32_t version = hidet_nccl__get16(header + 8), kind = hidet_nccl__get16(header + 10), body = hidet_nccl__get32(header + 20);
    if (version != HN_SK_VERSION) return WHY("protocol version %u; this library speaks version %d", version, HN_SK_VERSION);
    if (kind < HN_SK_KIND_HELLO || kind > HN_SK_KIND_DATA) return WHY("unknown kind %u", kind);
    if (body > HN_SK_MAX_BODY) return WHY("a body of %u bytes, more than %d", body, HN_SK_MAX_BODY);
    *total = HN_SK_HEADER + (size_t)body + 4;
    return 0;
}

size_t hidet_nccl__sk_encode(uint8_t *out, size_t cap, int kind, const char *key, uint32_t world, uint32_t rank,
                             uint64_t tag, const uint8_t nonce[HN_SK_NONCE], const void *body, uint32_t body_bytes) {
    size_t key_len = strlen(key), total = HN_SK_HEADER + (size_t)body_bytes + 4;
    if (key_len == 0 || key_len > HN_SK_KEY_BYTES || body_bytes > HN_SK_MAX_BODY || total > cap) return 0;
    memset(out, 0, HN_SK_HEADER);
    memcpy(out, k_magic, sizeof k_magic);
    hidet_nccl__put16(out + 8, HN_SK_VERSION);
    hidet_nccl__put16(out + 10, (uint32_t)kind);
    hidet_nccl__put32(out + 12, world);
    hidet_nccl__put32(out + 16, rank);
    hidet_nccl__put32(out + 20, body_bytes);
    hidet_nccl__put64(out + 24, tag);
    memcpy(out + 32, key, key_len);
    memcpy(out + 96, nonce, HN_SK_NONCE);
    if (body_bytes) memcpy(out + HN_SK_HEADER, body, body_bytes);
    hidet_nccl__put32(out + total - 4, checksum(out, total - 4));
    return total;
}

int hidet_nccl__sk_parse(const uint8_t *buf, size_t len, hidet_nccl__sk_msg_t *msg, char *why, size_t why_bytes) {
    if (len < HN_SK_HEADER + 4) return WHY("%zu bytes, shorter than a header (%d)", len, HN_SK_HEADER + 4);
    size_t total;
    if (hidet_nccl__sk_total(buf, &total, why, why_bytes) != 0) return -1;
    if (total != len) return WHY("%zu bytes but the header announces %zu (torn or truncated)", len, total);
    uint32_t want = hidet_nccl__get32(buf + len - 4), got = checksum(buf, len - 4);
    if (want != got) return WHY("checksum mismatch (message says %08x, contents give %08x)", want, got);
    memset(msg, 0, sizeof *msg);
    msg->kind = (int)hidet_nccl__get16(buf + 10);
    msg->world_size = hidet_nccl__get32(buf + 12);
    msg->rank = hidet_nccl__get32(buf + 16);
    msg->body_bytes = hidet_nccl__get32(buf + 20);
    msg->tag = hidet_nccl__get64(buf + 24);
    memcpy(msg->key, buf + 32, HN_SK_KEY_BYTES);
    msg->key[HN_SK_KEY_BYTES] = '\0';
    size_t key_len = strlen(msg->key);
    if (key_len == 0) return WHY("an empty job key");
    for (size_t i = key_len; i < HN_SK_KEY_BYTES; i++)
        if (buf[32 + i] != 0) return WHY("a job key field that is not NUL-padded");
    if (msg->world_size == 0 || msg->world_size > HN_SK_MAX_WORLD)
        return WHY("world size %u is not in 1 .. %d", msg->world_size, HN_SK_MAX_WORLD);
    if (msg->rank >= msg->world_size) return WHY("rank %u is not below world size %u", msg->rank, msg->world_size);
    if (msg->kind == HN_SK_KIND_HELLO && msg->body_bytes != 0) return WHY("a hello with a body of %u bytes", msg->body_bytes);
    if (msg->kind == HN_SK_KIND_WELCOME && msg->body_bytes != HN_SK_NONCE)
        return WHY("a welcome with a body of %u bytes (expected %d)", msg->body_bytes, HN_SK_NONCE);
    msg->nonce = buf + 96;
    msg->body = buf + HN_SK_HEADER;
    return 0;
}
