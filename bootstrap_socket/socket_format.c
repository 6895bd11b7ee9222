/* Encoding and checking the socket rendezvous's messages; the parser takes untrusted bytes. */
#include <stdio.h>
#include <string.h>

#include "core/base/kit.h"

#include "bootstrap_socket/socket_format_int.h"

static const uint8_t k_magic[8] = {'H', 'N', 'C', 'C', 'L', 'S', 'K', 0};
_Static_assert(HN_SK_KEY_BYTES == HN_FRAME_KEY_BYTES, "the key field is the framed record's");

#define WHY(...) (snprintf(why, why_bytes, __VA_ARGS__), -1)

int hidet_nccl__sk_total(const uint8_t header[HN_SK_HEADER], size_t *total, char *why, size_t why_bytes) {
    if (hidet_nccl__frame_total(header, HN_SK_HEADER, k_magic, HN_SK_VERSION, HN_SK_MAX_BODY, "rendezvous message",
                                total, why, why_bytes) != 0)
        return -1;
    uint32_t kind = hidet_nccl__get16(header + 10);
    if (kind < HN_SK_KIND_HELLO || kind > HN_SK_KIND_LAST) return WHY("unknown kind %u", kind);
    return 0;
}

size_t hidet_nccl__sk_encode(uint8_t *out, size_t cap, int kind, const char *key, uint32_t world, uint32_t rank,
                             uint64_t tag, const uint8_t nonce[HN_SK_NONCE], const void *body, uint32_t body_bytes) {
    hn_frame_t f = {(uint32_t)kind, world, rank, body_bytes, tag, ""};
    if (strlen(key) > HN_SK_KEY_BYTES || body_bytes > HN_SK_MAX_BODY) return 0;
    snprintf(f.key, sizeof f.key, "%s", key);
    size_t total = hidet_nccl__frame_begin(out, cap, HN_SK_HEADER, k_magic, HN_SK_VERSION, &f);
    if (total == 0) return 0;
    memcpy(out + 96, nonce, HN_SK_NONCE);
    if (body_bytes) memcpy(out + HN_SK_HEADER, body, body_bytes);
    return hidet_nccl__frame_seal(out, total);
}

int hidet_nccl__sk_parse(const uint8_t *buf, size_t len, hidet_nccl__sk_msg_t *msg, char *why, size_t why_bytes) {
    hn_frame_t f;
    if (hidet_nccl__frame_check(buf, len, HN_SK_HEADER, k_magic, HN_SK_VERSION, HN_SK_MAX_BODY, HN_SK_MAX_WORLD,
                                "rendezvous message", &f, why, why_bytes) != 0)
        return -1;
    if (f.kind < HN_SK_KIND_HELLO || f.kind > HN_SK_KIND_LAST) return WHY("unknown kind %u", f.kind);
    memset(msg, 0, sizeof *msg);
    msg->kind = (int)f.kind;
    msg->world_size = f.world;
    msg->rank = f.rank;
    msg->body_bytes = f.body;
    msg->tag = f.seq;
    memcpy(msg->key, f.key, sizeof msg->key);
    const uint8_t *body = buf + HN_SK_HEADER;
    uint32_t b = msg->body_bytes;
    switch (msg->kind) {
        case HN_SK_KIND_HELLO:
            if (b != 4) return WHY("a hello with a body of %u bytes (expected 4)", b);
            msg->flags = hidet_nccl__get32(body);
            if (msg->flags & ~(HN_SK_HELLO_SECRET | HN_SK_HELLO_FRESH)) return WHY("a hello with unknown flags %#x", msg->flags);
            break;
        case HN_SK_KIND_WELCOME:
            if (b != HN_SK_NONCE && b != HN_SK_NONCE + HN_SK_MAC)
                return WHY("a welcome with a body of %u bytes (expected %d or %d)", b, HN_SK_NONCE, HN_SK_NONCE + HN_SK_MAC);
            if (msg->tag > HN_SK_WELCOME_JOINER) return WHY("a welcome of kind %llu (0 a rank, 1 a joiner)", (unsigned long long)msg->tag);
            break;
        case HN_SK_KIND_CHALLENGE:
            if (b != 0) return WHY("a challenge with a body of %u bytes", b);
            break;
        case HN_SK_KIND_PROOF:
            if (b != HN_SK_MAC) return WHY("a proof with a body of %u bytes (expected %d)", b, HN_SK_MAC);
            break;
        case HN_SK_KIND_REFUSE:
        case HN_SK_KIND_FAIL: {
            const char *what = msg->kind == HN_SK_KIND_FAIL ? "fail" : "refusal";
            if (b == 0 || b > HN_SK_MAX_REFUSE) return WHY("a %s with a body of %u bytes (1 .. %d)", what, b, HN_SK_MAX_REFUSE);
            for (uint32_t i = 0; i < b; i++)
                if (body[i] < 0x20 || body[i] > 0x7e) return WHY("a %s with a byte %#x that is not printable", what, body[i]);
            break;
        }
        case HN_SK_KIND_JOIN:
        case HN_SK_KIND_HEAL: {
            const char *what = msg->kind == HN_SK_KIND_JOIN ? "a join of recovery" : "a heal of heal";
            if (b != 4) return WHY("%s round with a body of %u bytes (expected 4)", what, b);
            if (msg->tag == 0) return WHY("%s round 0 (rounds count from 1)", what);
            msg->wait_ms = hidet_nccl__get32(body);
            break;
        }
        case HN_SK_KIND_HEALED: {
            uint32_t set = (msg->world_size + 7) / 8;
            if (msg->tag == 0) return WHY("a heal decision of round 0 (rounds count from 1)");
            if (b != 2 * set)
                return WHY("a heal decision with a body of %u bytes for %u job ranks (expected %u)", b, msg->world_size,
                           2 * set);
            if (msg->world_size % 8 && ((body[set - 1] | body[b - 1]) >> (msg->world_size % 8)) != 0)
                return WHY("a heal decision with ranks past its %u", msg->world_size);
            if (hidet_nccl__sk_count_kept(body, msg->world_size) == 0) return WHY("a heal decision that keeps no rank");
            for (uint32_t i = 0; i < set; i++)
                if (body[set + i] & ~body[i]) return WHY("a heal decision that takes in a rank it does not keep");
            break;
        }
        case HN_SK_KIND_BYE:
            if (b != 0) return WHY("a bye with a body of %u bytes", b);
            break;
        case HN_SK_KIND_DECIDE:
            if (msg->tag == 0) return WHY("a decision of recovery round 0 (rounds count from 1)");
            if (b != (msg->world_size + 7) / 8)
                return WHY("a decision with a body of %u bytes for %u ranks (expected %u)", b, msg->world_size,
                           (msg->world_size + 7) / 8);
            if (msg->world_size % 8 && (body[b - 1] >> (msg->world_size % 8)) != 0)
                return WHY("a decision that keeps ranks past its %u", msg->world_size);
            if (hidet_nccl__sk_count_kept(body, msg->world_size) == 0) return WHY("a decision that keeps no rank");
            break;
    }
    msg->nonce = buf + 96;
    msg->body = body;
    return 0;
}

int hidet_nccl__sk_count_kept(const uint8_t *bits, uint32_t world) {
    int n = 0;
    for (uint32_t r = 0; r < world; r++) n += (bits[r / 8] >> (r % 8)) & 1;
    return n;
}
