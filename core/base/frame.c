/* Framed records of the backends' formats (the shared-file bootstrap's files, the socket
 * rendezvous's messages): one common head, a body, a CRC-32 (zlib) at the end (core/base/kit.h). */
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "core/base/kit.h"

#define WHY(...) (snprintf(why, why_bytes, __VA_ARGS__), -1)

static uint32_t checksum(const uint8_t *p, size_t n) { return (uint32_t)crc32(crc32(0L, Z_NULL, 0), p, (uInt)n); }

size_t hidet_nccl__frame_begin(uint8_t *out, size_t cap, size_t header_bytes, const uint8_t magic[8], uint32_t version,
                               const hn_frame_t *f) {
    size_t key_len = strlen(f->key), total = header_bytes + (size_t)f->body + 4;
    if (key_len == 0 || key_len > HN_FRAME_KEY_BYTES || total > cap) return 0;
    memset(out, 0, header_bytes);
    memcpy(out, magic, 8);
    hidet_nccl__put16(out + 8, version);
    hidet_nccl__put16(out + 10, f->kind);
    hidet_nccl__put32(out + 12, f->world);
    hidet_nccl__put32(out + 16, f->rank);
    hidet_nccl__put32(out + 20, f->body);
    hidet_nccl__put64(out + 24, f->seq);
    memcpy(out + HN_FRAME_KEY_AT, f->key, key_len);
    return total;
}

size_t hidet_nccl__frame_seal(uint8_t *out, size_t total) {
    hidet_nccl__put32(out + total - 4, checksum(out, total - 4));
    return total;
}

int hidet_nccl__frame_total(const uint8_t *head, size_t header_bytes, const uint8_t magic[8], uint32_t version,
                            uint32_t max_body, const char *what, size_t *total, char *why, size_t why_bytes) {
    if (memcmp(head, magic, 8) != 0) return WHY("not a hidet-nccl %s (wrong magic)", what);
    uint32_t v = hidet_nccl__get16(head + 8), body = hidet_nccl__get32(head + 20);
    if (v != version) return WHY("format version %u; this library reads version %u", v, version);
    if (body > max_body) return WHY("a body of %u bytes, more than %u", body, max_body);
    *total = header_bytes + (size_t)body + 4;
    return 0;
}

int hidet_nccl__frame_check(const uint8_t *buf, size_t len, size_t header_bytes, const uint8_t magic[8],
                            uint32_t version, uint32_t max_body, uint32_t max_world, const char *what, hn_frame_t *f,
                            char *why, size_t why_bytes) {
    if (len < header_bytes + 4) return WHY("%zu bytes, shorter than a header (%zu)", len, header_bytes + 4);
    size_t total;
    if (hidet_nccl__frame_total(buf, header_bytes, magic, version, max_body, what, &total, why, why_bytes) != 0)
        return -1;
    if (total != len)
        return WHY("%zu bytes but the header announces %u + %zu (torn or truncated)", len, hidet_nccl__get32(buf + 20),
                   header_bytes + 4);
    uint32_t want = hidet_nccl__get32(buf + len - 4), got = checksum(buf, len - 4);
    if (want != got) return WHY("checksum mismatch (the %s says %08x, its contents give %08x)", what, want, got);
    memset(f, 0, sizeof *f);
    f->kind = hidet_nccl__get16(buf + 10);
    f->world = hidet_nccl__get32(buf + 12);
    f->rank = hidet_nccl__get32(buf + 16);
    f->body = hidet_nccl__get32(buf + 20);
    f->seq = hidet_nccl__get64(buf + 24);
    memcpy(f->key, buf + HN_FRAME_KEY_AT, HN_FRAME_KEY_BYTES);
    f->key[HN_FRAME_KEY_BYTES] = '\0';
    size_t key_len = strlen(f->key);
    if (key_len == 0) return WHY("an empty job key");
    for (size_t i = key_len; i < HN_FRAME_KEY_BYTES; i++)
        if (buf[HN_FRAME_KEY_AT + i] != 0) return WHY("a job key field that is not NUL-padded");
    if (f->world == 0 || f->world > max_world) return WHY("world size %u is not in 1 .. %u", f->world, max_world);
    if (f->rank >= f->world) return WHY("rank %u is not below world size %u", f->rank, f->world);
    return 0;
}
