/* Encoding and checking the shared-file bootstrap's files; the parser takes untrusted bytes. */
#include <stdio.h>
#include <string.h>

#include "core/base/kit.h"

#include "bootstrap_file/file_format_int.h"

static const uint8_t k_magic[8] = {'H', 'N', 'C', 'C', 'L', 'B', 'F', 0};
_Static_assert(HN_BF_KEY_BYTES == HN_FRAME_KEY_BYTES, "the key field is the framed record's");

/* The common head of both kinds (core/base/kit.h's framed record); 0 if it does not fit. */
static size_t encode(uint8_t *out, size_t cap, int kind, const char *key, uint64_t seq, uint32_t world,
                     uint32_t rank, size_t body) {
    hn_frame_t f = {(uint32_t)kind, world, rank, (uint32_t)body, seq, ""};
    if (strlen(key) > HN_BF_KEY_BYTES || body > UINT32_MAX) return 0;
    snprintf(f.key, sizeof f.key, "%s", key);
    return hidet_nccl__frame_begin(out, cap, HN_BF_HEADER, k_magic, HN_BF_VERSION, &f);
}

/* A host name field: the name, NUL-padded to HN_BF_HOST_BYTES. */
static void put_host(uint8_t *at, const char *host) {
    memset(at, 0, HN_BF_HOST_BYTES);
    memcpy(at, host, strnlen(host, HN_BF_HOST_BYTES));
}

size_t hidet_nccl__bf_encode_hello(uint8_t *out, size_t cap, const char *key, uint64_t seq, uint32_t world,
                                   uint32_t rank, const uint8_t nonce[HN_BF_NONCE],
                                   const uint8_t root_nonce[HN_BF_NONCE], uint32_t pid, const char *host,
                                   const void *part, uint32_t part_bytes, int with_mac) {
    if (part_bytes > HN_BF_MAX_DATA) return 0;
    size_t total = encode(out, cap, HN_BF_KIND_HELLO, key, seq, world, rank,
                          HN_BF_HELLO_FIXED + (size_t)part_bytes + (with_mac ? HN_BF_MAC : 0));
    if (total == 0) return 0;
    uint8_t *b = out + HN_BF_HEADER;
    memcpy(b, nonce, HN_BF_NONCE);
    memcpy(b + HN_BF_NONCE, root_nonce, HN_BF_NONCE);
    hidet_nccl__put32(b + 2 * HN_BF_NONCE, pid);
    put_host(b + 2 * HN_BF_NONCE + 4, host);
    hidet_nccl__put32(b + HN_BF_HELLO_FIXED - 4, part_bytes);
    if (part_bytes) memcpy(b + HN_BF_HELLO_FIXED, part, part_bytes);
    return hidet_nccl__frame_seal(out, total);
}

size_t hidet_nccl__bf_encode_claim(uint8_t *out, size_t cap, const char *key, uint64_t seq, uint32_t world,
                                   uint32_t root, const uint8_t nonce[HN_BF_NONCE], uint64_t expiry_ms, uint32_t pid,
                                   uint32_t flags, const char *host) {
    size_t total = encode(out, cap, HN_BF_KIND_CLAIM, key, seq, world, root, HN_BF_CLAIM_BODY);
    if (total == 0) return 0;
    uint8_t *b = out + HN_BF_HEADER;
    memcpy(b, nonce, HN_BF_NONCE);
    hidet_nccl__put64(b + HN_BF_NONCE, expiry_ms);
    hidet_nccl__put32(b + HN_BF_NONCE + 8, pid);
    hidet_nccl__put32(b + HN_BF_NONCE + 12, flags);
    put_host(b + HN_BF_NONCE + 16, host);
    return hidet_nccl__frame_seal(out, total);
}

size_t hidet_nccl__bf_encode_announce(uint8_t *out, size_t cap, const char *key, uint64_t seq, uint32_t world,
                                      uint32_t root, const void *data, uint32_t data_bytes, const uint8_t *nonces,
                                      int with_mac) {
    if (world > HN_BF_MAX_WORLD || data_bytes > HN_BF_MAX_DATA) return 0;
    size_t body = 4 + (size_t)data_bytes + (size_t)HN_BF_NONCE * world + (with_mac ? HN_BF_MAC : 0);
    size_t total = encode(out, cap, HN_BF_KIND_ANNOUNCE, key, seq, world, root, body);
    if (total == 0) return 0;
    hidet_nccl__put32(out + HN_BF_HEADER, data_bytes);
    if (data_bytes) memcpy(out + HN_BF_HEADER + 4, data, data_bytes);
    memcpy(out + HN_BF_HEADER + 4 + data_bytes, nonces, (size_t)HN_BF_NONCE * world);
    return hidet_nccl__frame_seal(out, total);
}

uint8_t *hidet_nccl__bf_mac_at(uint8_t *out, size_t total, size_t *covers) {
    *covers = total - 4 - HN_BF_MAC;
    return out + *covers;
}

size_t hidet_nccl__bf_reseal(uint8_t *out, size_t total) { return hidet_nccl__frame_seal(out, total); }

#define WHY(...) (snprintf(why, why_bytes, __VA_ARGS__), -1)

/* A host name field into msg->host: -1 unless NUL-padded. */
static int get_host(const uint8_t *at, hidet_nccl__bf_msg_t *msg) {
    size_t len = strnlen((const char *)at, HN_BF_HOST_BYTES);
    for (size_t i = len; i < HN_BF_HOST_BYTES; i++)
        if (at[i] != 0) return -1;
    memcpy(msg->host, at, len);
    msg->host[len] = '\0';
    return 0;
}

int hidet_nccl__bf_parse(const uint8_t *buf, size_t len, hidet_nccl__bf_msg_t *msg, char *why, size_t why_bytes) {
    hn_frame_t f;
    if (hidet_nccl__frame_check(buf, len, HN_BF_HEADER, k_magic, HN_BF_VERSION, HN_BF_MAX_FILE, HN_BF_MAX_WORLD,
                                "bootstrap file", &f, why, why_bytes) != 0)
        return -1;
    memset(msg, 0, sizeof *msg);
    msg->kind = (int)f.kind;
    msg->world_size = f.world;
    msg->rank = f.rank;
    msg->seq = f.seq;
    memcpy(msg->key, f.key, sizeof msg->key);
    uint32_t body = f.body;
    const uint8_t *b = buf + HN_BF_HEADER;
    if (msg->kind == HN_BF_KIND_HELLO) {
        if (body < HN_BF_HELLO_FIXED) return WHY("a hello of %u body bytes (at least %d)", body, HN_BF_HELLO_FIXED);
        msg->data_bytes = hidet_nccl__get32(b + HN_BF_HELLO_FIXED - 4);
        size_t plain = HN_BF_HELLO_FIXED + (size_t)msg->data_bytes;
        if ((size_t)body != plain && (size_t)body != plain + HN_BF_MAC)
            return WHY("a hello of %u body bytes does not hold its fixed fields and %u part bytes (and a MAC)", body,
                       msg->data_bytes);
        if ((size_t)body == plain + HN_BF_MAC) {
            msg->mac = b + plain;
            msg->mac_covers = HN_BF_HEADER + plain;
        }
        if (get_host(b + 2 * HN_BF_NONCE + 4, msg) != 0) return WHY("a hello whose host name is not NUL-padded");
        msg->nonce = b;
        msg->root_nonce = b + HN_BF_NONCE;
        msg->pid = hidet_nccl__get32(b + 2 * HN_BF_NONCE);
        msg->data = b + HN_BF_HELLO_FIXED;
        return 0;
    }
    if (msg->kind == HN_BF_KIND_CLAIM) {
        if (body != HN_BF_CLAIM_BODY) return WHY("a claim of %u body bytes (%d expected)", body, HN_BF_CLAIM_BODY);
        msg->nonce = b;
        msg->expiry_ms = hidet_nccl__get64(b + HN_BF_NONCE);
        msg->pid = hidet_nccl__get32(b + HN_BF_NONCE + 8);
        msg->flags = hidet_nccl__get32(b + HN_BF_NONCE + 12);
        if (get_host(b + HN_BF_NONCE + 16, msg) != 0) return WHY("a claim whose host name is not NUL-padded");
        if (msg->flags & ~HN_BF_CLAIM_COLLIDED) return WHY("a claim with unknown flags 0x%x", msg->flags);
        return 0;
    }
    if (msg->kind != HN_BF_KIND_ANNOUNCE) return WHY("unknown kind %d", msg->kind);
    if (body < 4) return WHY("an announce of %u body bytes", body);
    msg->data_bytes = hidet_nccl__get32(b);
    if (msg->data_bytes > HN_BF_MAX_DATA) return WHY("%u data bytes, more than %d", msg->data_bytes, HN_BF_MAX_DATA);
    size_t plain = 4 + (size_t)msg->data_bytes + (size_t)HN_BF_NONCE * msg->world_size;
    if ((size_t)body != plain && (size_t)body != plain + HN_BF_MAC)
        return WHY("an announce of %u body bytes does not hold %u data bytes and %u nonces (and a MAC)", body,
                   msg->data_bytes, msg->world_size);
    msg->data = b + 4;
    msg->nonces = b + 4 + msg->data_bytes;
    if ((size_t)body == plain + HN_BF_MAC) {
        msg->mac = b + plain;
        msg->mac_covers = HN_BF_HEADER + plain;
    }
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
