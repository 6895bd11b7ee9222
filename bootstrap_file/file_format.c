/* Encoding and checking the shared-file bootstrap's files; the parser takes untrusted bytes. */
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "core/kit.h"

#include "bootstrap_file/file_format_int.h"

static const uint8_t k_magic[8] = {'H', 'N', 'C', 'C', 'L', 'B', 'F', 0};

static uint32_t checksum(const uint8_t *p, size_t n) { return (uint32_t)crc32(crc32(0L, Z_NULL, 0), p, (uInt)n); }

static size_t encode(uint8_t *out, size_t cap, int kind, const char *key, uint64_t seq, uint32_t world,
                     uint32_t rank, size_t body) {
    size_t total = HN_BF_HEADER + body + 4;
    size_t key_len = strlen(key);
    if (total > cap || key_len > HN_BF_KEY_BYTES) return 0;
    memset(out, 0, HN_BF_HEADER);
    memcpy(out, k_magic, sizeof k_magic);
    hidet_nccl__put16(out + 8, HN_BF_VERSION);
    hidet_nccl__put16(out + 10, (uint32_t)kind);
    hidet_nccl__put32(out + 12, world);
    hidet_nccl__put32(out + 16, rank);
    hidet_nccl__put32(out + 20, (uint32_t)body);
    hidet_nccl__put64(out + 24, seq);
    memcpy(out + 32, key, key_len);
    return total;
}

static size_t seal(uint8_t *out, size_t total) {
    hidet_nccl__put32(out + total - 4, checksum(out, total - 4));
    return total;
}

size_t hidet_nccl__bf_encode_hello(uint8_t *out, size_t cap, const char *key, uint64_t seq, uint32_t world,
                                   uint32_t rank, const uint8_t nonce[HN_BF_NONCE], const void *part,
                                   uint32_t part_bytes) {
    if (part_bytes > HN_BF_MAX_DATA) return 0;
    size_t total = encode(out, cap, HN_BF_KIND_HELLO, key, seq, world, rank, HN_BF_NONCE + 4 + (size_t)part_bytes);
    if (total == 0) return 0;
    memcpy(out + HN_BF_HEADER, nonce, HN_BF_NONCE);
    hidet_nccl__put32(out + HN_BF_HEADER + HN_BF_NONCE, part_bytes);
    if (part_bytes) memcpy(out + HN_BF_HEADER + HN_BF_NONCE + 4, part, part_bytes);
    return seal(out, total);
}

size_t hidet_nccl__bf_encode_announce(uint8_t *out, size_t cap, const char *key, uint64_t seq, uint32_t world,
                             uint32_t root, const void *data, uint32_t data_bytes, const uint8_t *nonces) {
    if (world > HN_BF_MAX_WORLD || data_bytes > HN_BF_MAX_DATA) return 0;
    size_t body = 4 + (size_t)data_bytes + (size_t)HN_BF_NONCE * world;
    size_t total = encode(out, cap, HN_BF_KIND_ANNOUNCE, key, seq, world, root, body);
    if (total == 0) return 0;
    hidet_nccl__put32(out + HN_BF_HEADER, data_bytes);
    if (data_bytes) memcpy(out + HN_BF_HEADER + 4, data, data_bytes);
    memcpy(out + HN_BF_HEADER + 4 + data_bytes, nonces, (size_t)HN_BF_NONCE * world);
    return seal(out, total);
}

#define WHY(...) (snprintf(why, why_bytes, __VA_ARGS__), -1)

int hidet_nccl__bf_parse(const uint8_t *buf, size_t len, hidet_nccl__bf_msg_t *msg, char *why, size_t why_bytes) {
    if (len < HN_BF_HEADER + 4) return WHY("%zu bytes, shorter than a header (%d)", len, HN_BF_HEADER + 4);
    if (memcmp(buf, k_magic, sizeof k_magic) != 0) return WHY("not a hidet-nccl bootstrap file (wrong magic)");
    uint32_t version = hidet_nccl__get16(buf + 8);
    if (version != HN_BF_VERSION)
        return WHY("format version %u; this library reads version %d", version, HN_BF_VERSION);
    uint32_t body = hidet_nccl__get32(buf + 20);
    if ((size_t)body != len - HN_BF_HEADER - 4)
        return WHY("%zu bytes but the header announces %u + %d (torn or truncated)", len, body, HN_BF_HEADER + 4);
    uint32_t want = hidet_nccl__get32(buf + len - 4), got = checksum(buf, len - 4);
    if (want != got) return WHY("checksum mismatch (file says %08x, contents give %08x)", want, got);
    memset(msg, 0, sizeof *msg);
    msg->kind = (int)hidet_nccl__get16(buf + 10);
    msg->world_size = hidet_nccl__get32(buf + 12);
    msg->rank = hidet_nccl__get32(buf + 16);
    msg->seq = hidet_nccl__get64(buf + 24);
    memcpy(msg->key, buf + 32, HN_BF_KEY_BYTES);
    msg->key[HN_BF_KEY_BYTES] = '\0';
    size_t key_len = strlen(msg->key);
    if (key_len == 0) return WHY("an empty job key");
    for (size_t i = key_len; i < HN_BF_KEY_BYTES; i++)
        if (buf[32 + i] != 0) return WHY("a job key field that is not NUL-padded");
    if (msg->world_size == 0 || msg->world_size > HN_BF_MAX_WORLD)
        return WHY("world size %u is not in 1 .. %d", msg->world_size, HN_BF_MAX_WORLD);
    if (msg->rank >= msg->world_size) return WHY("rank %u is not below world size %u", msg->rank, msg->world_size);
    const uint8_t *b = buf + HN_BF_HEADER;
    if (msg->kind == HN_BF_KIND_HELLO) {
        if (body < HN_BF_NONCE + 4) return WHY("a hello of %u body bytes (at least %d)", body, HN_BF_NONCE + 4);
        msg->data_bytes = hidet_nccl__get32(b + HN_BF_NONCE);
        if ((size_t)body != HN_BF_NONCE + 4 + (size_t)msg->data_bytes)
            return WHY("a hello of %u body bytes does not hold a nonce and %u part bytes", body, msg->data_bytes);
        msg->nonce = b;
        msg->data = b + HN_BF_NONCE + 4;
        return 0;
    }
    if (msg->kind != HN_BF_KIND_ANNOUNCE) return WHY("unknown kind %d", msg->kind);
    if (body < 4) return WHY("an announce of %u body bytes", body);
    msg->data_bytes = hidet_nccl__get32(b);
    if (msg->data_bytes > HN_BF_MAX_DATA) return WHY("%u data bytes, more than %d", msg->data_bytes, HN_BF_MAX_DATA);
    if ((size_t)body != 4 + (size_t)msg->data_bytes + (size_t)HN_BF_NONCE * msg->world_size)
        return WHY("an announce of %u body bytes does not hold %u data bytes and %u nonces", body, msg->data_bytes,
                   msg->world_size);
    msg->data = b + 4;
    msg->nonces = b + 4 + msg->data_bytes;
    return 0;
}

int hidet_nccl__bf_expect(const hidet_nccl__bf_msg_t *msg, int kind, const char *key, uint64_t seq, uint32_t world, uint32_t rank,
                 char *why, size_t why_bytes) {
    if (msg->kind != kind) return WHY("a file of kind %d where kind %d was expected", msg->kind, kind);
    if (strcmp(msg->key, key) != 0) return WHY("job key '%s' (this job is '%s'): another job's file", msg->key, key);
    if (msg->seq != seq)
        return WHY("sequence number %llu (expected %llu): another communicator's file", (unsigned long long)msg->seq,
                   (unsigned long long)seq);
    if (msg->world_size != world) return WHY("world size %u (this job has %u ranks)", msg->world_size, world);
    if (msg->rank != rank) return WHY("rank %u (expected %u)", msg->rank, rank);
    return 0;
}
