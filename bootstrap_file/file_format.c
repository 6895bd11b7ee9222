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

/* The checksum of a file of total bytes; with_mac: its MAC's room zeroed first (the writer fills
 * it and seals again), so that no byte of it is left unwritten. */
static size_t sealed(uint8_t *out, size_t total, int with_mac) {
    if (with_mac) memset(out + total - 4 - HN_BF_MAC, 0, HN_BF_MAC);
    return hidet_nccl__frame_seal(out, total);
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
    return sealed(out, total, with_mac);
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
    return sealed(out, total, with_mac);
}

size_t hidet_nccl__bf_encode_join(uint8_t *out, size_t cap, const char *key, uint64_t seq, uint32_t world,
                                  uint32_t rank, const uint8_t nonce[HN_BF_NONCE], uint64_t epoch, uint32_t pid,
                                  const char *host, int with_mac) {
    size_t total = encode(out, cap, HN_BF_KIND_JOIN, key, seq, world, rank, HN_BF_JOIN_BODY + (with_mac ? HN_BF_MAC : 0));
    if (total == 0) return 0;
    uint8_t *b = out + HN_BF_HEADER;
    memcpy(b, nonce, HN_BF_NONCE);
    hidet_nccl__put64(b + HN_BF_NONCE, epoch);
    hidet_nccl__put32(b + HN_BF_NONCE + 8, pid);
    put_host(b + HN_BF_NONCE + 12, host);
    return sealed(out, total, with_mac);
}

size_t hidet_nccl__bf_encode_decision(uint8_t *out, size_t cap, const char *key, uint64_t seq, uint32_t world,
                                      uint32_t decider, uint64_t epoch, const hidet_nccl__bf_member_t *members,
                                      int with_mac) {
    if (world == 0 || world > HN_BF_MAX_WORLD || decider >= world || !members[decider].kept) return 0;
    size_t body = HN_BF_DECISION_FIXED + (size_t)HN_BF_MEMBER * world + (with_mac ? HN_BF_MAC : 0);
    size_t total = encode(out, cap, HN_BF_KIND_DECISION, key, seq, world, decider, body);
    if (total == 0) return 0;
    uint8_t *b = out + HN_BF_HEADER;
    uint32_t kept = 0;
    hidet_nccl__put64(b, epoch);
    for (uint32_t r = 0; r < world; r++) {
        uint8_t *m = b + HN_BF_DECISION_FIXED + (size_t)HN_BF_MEMBER * r;
        memset(m, 0, HN_BF_MEMBER);
        hidet_nccl__put32(m + 1 + HN_BF_NONCE, members[r].pid);
        put_host(m + 1 + HN_BF_NONCE + 4, members[r].host);
        if (!members[r].kept) continue; /* its process as the decider knew it (zeros: never seen); no nonce */
        kept++;
        m[0] = 1;
        memcpy(m + 1, members[r].nonce, HN_BF_NONCE);
    }
    hidet_nccl__put32(b + 8, kept);
    return sealed(out, total, with_mac);
}

size_t hidet_nccl__bf_encode_request(uint8_t *out, size_t cap, const char *key, uint64_t seq, uint32_t world,
                                     uint32_t rank, const uint8_t nonce[HN_BF_NONCE], uint64_t asked_ms, uint32_t pid,
                                     const char *host, int with_mac) {
    size_t total = encode(out, cap, HN_BF_KIND_REQUEST, key, seq, world, rank,
                          HN_BF_REQUEST_BODY + (with_mac ? HN_BF_MAC : 0));
    if (total == 0) return 0;
    uint8_t *b = out + HN_BF_HEADER;
    memcpy(b, nonce, HN_BF_NONCE);
    hidet_nccl__put64(b + HN_BF_NONCE, asked_ms);
    hidet_nccl__put32(b + HN_BF_NONCE + 8, pid);
    put_host(b + HN_BF_NONCE + 12, host);
    return sealed(out, total, with_mac);
}

/* 1 if f is a heal member's flags: out (0), out after being a member (4), a member before and
 * after (5), taken in (3), taken in for a member before (7). */
static int heal_flags_ok(unsigned f) { return f == 0 || f == 3 || f == 4 || f == 5 || f == 7; }

size_t hidet_nccl__bf_encode_heal(uint8_t *out, size_t cap, const char *key, uint64_t seq, uint32_t world,
                                  uint32_t decider, uint64_t epoch, const hidet_nccl__bf_member_t *members,
                                  const hidet_nccl__bf_refusal_t *refused, uint32_t n_refused, int with_mac) {
    if (world == 0 || world > HN_BF_MAX_WORLD || decider >= world || n_refused > HN_BF_MAX_REFUSALS ||
        members[decider].flags != (HN_BF_HEAL_KEPT | HN_BF_HEAL_BEFORE))
        return 0;
    for (uint32_t r = 0; r < world; r++)
        if (!heal_flags_ok(members[r].flags)) return 0;
    for (uint32_t i = 0; i < n_refused; i++)
        if (refused[i].rank >= world || refused[i].reason < HN_BF_REFUSED_LIVE || refused[i].reason > HN_BF_REFUSED_CHECKS)
            return 0;
    size_t body = HN_BF_DECISION_FIXED + (size_t)HN_BF_MEMBER * world + 4 + (size_t)HN_BF_REFUSAL * n_refused +
                  (with_mac ? HN_BF_MAC : 0);
    size_t total = encode(out, cap, HN_BF_KIND_HEAL, key, seq, world, decider, body);
    if (total == 0) return 0;
    uint8_t *b = out + HN_BF_HEADER;
    uint32_t kept = 0;
    hidet_nccl__put64(b, epoch);
    for (uint32_t r = 0; r < world; r++) {
        uint8_t *m = b + HN_BF_DECISION_FIXED + (size_t)HN_BF_MEMBER * r;
        memset(m, 0, HN_BF_MEMBER);
        m[0] = (uint8_t)members[r].flags;
        hidet_nccl__put32(m + 1 + HN_BF_NONCE, members[r].pid);
        put_host(m + 1 + HN_BF_NONCE + 4, members[r].host);
        if (!(members[r].flags & HN_BF_HEAL_KEPT)) continue; /* out: its process as known, no nonce */
        kept++;
        memcpy(m + 1, members[r].nonce, HN_BF_NONCE);
    }
    hidet_nccl__put32(b + 8, kept);
    uint8_t *at = b + HN_BF_DECISION_FIXED + (size_t)HN_BF_MEMBER * world;
    hidet_nccl__put32(at, n_refused);
    for (uint32_t i = 0; i < n_refused; i++) {
        uint8_t *f = at + 4 + (size_t)HN_BF_REFUSAL * i;
        hidet_nccl__put32(f, refused[i].rank);
        f[4] = (uint8_t)refused[i].reason;
        memcpy(f + 5, refused[i].id, HN_BF_REQUEST_ID);
    }
    return sealed(out, total, with_mac);
}

void hidet_nccl__bf_refusal(const hidet_nccl__bf_msg_t *msg, uint32_t i, hidet_nccl__bf_refusal_t *out) {
    const uint8_t *f = msg->refused + (size_t)HN_BF_REFUSAL * i;
    out->rank = hidet_nccl__get32(f);
    out->reason = f[4];
    memcpy(out->id, f + 5, HN_BF_REQUEST_ID);
}

void hidet_nccl__bf_member(const hidet_nccl__bf_msg_t *msg, uint32_t r, hidet_nccl__bf_member_t *out) {
    const uint8_t *m = msg->members + (size_t)HN_BF_MEMBER * r;
    out->flags = m[0];
    out->kept = m[0] & 1;
    memcpy(out->nonce, m + 1, HN_BF_NONCE);
    out->pid = hidet_nccl__get32(m + 1 + HN_BF_NONCE);
    memcpy(out->host, m + 1 + HN_BF_NONCE + 4, HN_BF_HOST_BYTES); /* NUL-padded: checked by the parser */
    out->host[HN_BF_HOST_BYTES] = '\0';
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

/* A join's body (after the header). */
static int parse_join(const uint8_t *b, uint32_t body, hidet_nccl__bf_msg_t *msg, char *why, size_t why_bytes) {
    if (body != HN_BF_JOIN_BODY && body != HN_BF_JOIN_BODY + HN_BF_MAC)
        return WHY("a join of %u body bytes (%d, or %d with a MAC, expected)", body, HN_BF_JOIN_BODY,
                   HN_BF_JOIN_BODY + HN_BF_MAC);
    msg->nonce = b;
    msg->epoch = hidet_nccl__get64(b + HN_BF_NONCE);
    msg->pid = hidet_nccl__get32(b + HN_BF_NONCE + 8);
    if (get_host(b + HN_BF_NONCE + 12, msg) != 0) return WHY("a join whose host name is not NUL-padded");
    if (body == HN_BF_JOIN_BODY + HN_BF_MAC) {
        msg->mac = b + HN_BF_JOIN_BODY;
        msg->mac_covers = HN_BF_HEADER + HN_BF_JOIN_BODY;
    }
    return 0;
}

/* A request's body: a join's layout, its u64 when it was put. */
static int parse_request(const uint8_t *b, uint32_t body, hidet_nccl__bf_msg_t *msg, char *why, size_t why_bytes) {
    if (body != HN_BF_REQUEST_BODY && body != HN_BF_REQUEST_BODY + HN_BF_MAC)
        return WHY("a request of %u body bytes (%d, or %d with a MAC, expected)", body, HN_BF_REQUEST_BODY,
                   HN_BF_REQUEST_BODY + HN_BF_MAC);
    msg->nonce = b;
    msg->asked_ms = hidet_nccl__get64(b + HN_BF_NONCE);
    msg->pid = hidet_nccl__get32(b + HN_BF_NONCE + 8);
    if (get_host(b + HN_BF_NONCE + 12, msg) != 0) return WHY("a request whose host name is not NUL-padded");
    if (body == HN_BF_REQUEST_BODY + HN_BF_MAC) {
        msg->mac = b + HN_BF_REQUEST_BODY;
        msg->mac_covers = HN_BF_HEADER + HN_BF_REQUEST_BODY;
    }
    return 0;
}

/* A heal decision's body: every member checked (flags 0, 3, 4, 5 or 7, a member out without a
 * nonce, every host NUL-padded), the count of kept ones as said, the decider a member before and
 * after, every refusal of a rank of the world with a known reason. */
static int parse_heal(const uint8_t *b, uint32_t body, hidet_nccl__bf_msg_t *msg, char *why, size_t why_bytes) {
    size_t fixed = HN_BF_DECISION_FIXED + (size_t)HN_BF_MEMBER * msg->world_size;
    if ((size_t)body < fixed + 4)
        return WHY("a heal decision of %u body bytes does not hold %u members of %d bytes and a refusal count", body,
                   msg->world_size, HN_BF_MEMBER);
    msg->epoch = hidet_nccl__get64(b);
    msg->kept_count = hidet_nccl__get32(b + 8);
    msg->members = b + HN_BF_DECISION_FIXED;
    msg->refusals = hidet_nccl__get32(b + fixed);
    if (msg->refusals > HN_BF_MAX_REFUSALS)
        return WHY("a heal decision with %u refusals (at most %d)", msg->refusals, HN_BF_MAX_REFUSALS);
    size_t plain = fixed + 4 + (size_t)HN_BF_REFUSAL * msg->refusals;
    if ((size_t)body != plain && (size_t)body != plain + HN_BF_MAC)
        return WHY("a heal decision of %u body bytes does not hold %u members and %u refusals (and a MAC)", body,
                   msg->world_size, msg->refusals);
    msg->refused = b + fixed + 4;
    uint32_t kept = 0;
    for (uint32_t r = 0; r < msg->world_size; r++) {
        const uint8_t *m = msg->members + (size_t)HN_BF_MEMBER * r;
        if (!heal_flags_ok(m[0])) return WHY("member %u of a heal decision has flags %u (0, 3, 4, 5 or 7)", r, m[0]);
        hidet_nccl__bf_msg_t host;
        if (get_host(m + 1 + HN_BF_NONCE + 4, &host) != 0)
            return WHY("member %u of a heal decision has a host name that is not NUL-padded", r);
        if (!(m[0] & HN_BF_HEAL_KEPT)) {
            for (size_t i = 1; i < 1 + HN_BF_NONCE; i++)
                if (m[i] != 0) return WHY("member %u of a heal decision is not kept but has a nonce", r);
            continue;
        }
        kept++;
    }
    if (kept != msg->kept_count || kept == 0)
        return WHY("a heal decision that says %u ranks are kept and keeps %u (at least 1)", msg->kept_count, kept);
    if (msg->members[(size_t)HN_BF_MEMBER * msg->rank] != (HN_BF_HEAL_KEPT | HN_BF_HEAL_BEFORE))
        return WHY("a heal decision whose decider, job rank %u, is not a member before and after it", msg->rank);
    for (uint32_t i = 0; i < msg->refusals; i++) {
        hidet_nccl__bf_refusal_t f;
        hidet_nccl__bf_refusal(msg, i, &f);
        if (f.rank >= msg->world_size || f.reason < HN_BF_REFUSED_LIVE || f.reason > HN_BF_REFUSED_CHECKS)
            return WHY("refusal %u of a heal decision: job rank %u of %u, reason %d", i, f.rank, msg->world_size,
                       f.reason);
    }
    hidet_nccl__bf_member_t d;
    hidet_nccl__bf_member(msg, msg->rank, &d);
    msg->pid = d.pid;
    memcpy(msg->host, d.host, sizeof msg->host);
    if ((size_t)body == plain + HN_BF_MAC) {
        msg->mac = b + plain;
        msg->mac_covers = HN_BF_HEADER + plain;
    }
    return 0;
}

/* A decision's body: every member checked (a flag of 0 or 1, a member not kept without a nonce,
 * every host NUL-padded), the count of kept ones as said, the decider among them. */
static int parse_decision(const uint8_t *b, uint32_t body, hidet_nccl__bf_msg_t *msg, char *why, size_t why_bytes) {
    size_t plain = HN_BF_DECISION_FIXED + (size_t)HN_BF_MEMBER * msg->world_size;
    if ((size_t)body != plain && (size_t)body != plain + HN_BF_MAC)
        return WHY("a decision of %u body bytes does not hold %u members of %d bytes (and a MAC)", body,
                   msg->world_size, HN_BF_MEMBER);
    msg->epoch = hidet_nccl__get64(b);
    msg->kept_count = hidet_nccl__get32(b + 8);
    msg->members = b + HN_BF_DECISION_FIXED;
    uint32_t kept = 0;
    for (uint32_t r = 0; r < msg->world_size; r++) {
        const uint8_t *m = msg->members + (size_t)HN_BF_MEMBER * r;
        if (m[0] > 1) return WHY("member %u of a decision has kept flag %u (0 or 1)", r, m[0]);
        hidet_nccl__bf_msg_t host;
        if (get_host(m + 1 + HN_BF_NONCE + 4, &host) != 0)
            return WHY("member %u of a decision has a host name that is not NUL-padded", r);
        if (m[0] == 0) {
            for (size_t i = 1; i < 1 + HN_BF_NONCE; i++)
                if (m[i] != 0) return WHY("member %u of a decision is not kept but has a nonce", r);
            continue;
        }
        kept++;
    }
    if (kept != msg->kept_count || kept == 0)
        return WHY("a decision that says %u ranks are kept and keeps %u (at least 1)", msg->kept_count, kept);
    if (msg->members[(size_t)HN_BF_MEMBER * msg->rank] != 1)
        return WHY("a decision whose decider, rank %u, is not among the ranks it keeps", msg->rank);
    hidet_nccl__bf_member_t d;
    hidet_nccl__bf_member(msg, msg->rank, &d);
    msg->pid = d.pid;
    memcpy(msg->host, d.host, sizeof msg->host);
    if ((size_t)body == plain + HN_BF_MAC) {
        msg->mac = b + plain;
        msg->mac_covers = HN_BF_HEADER + plain;
    }
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
    if (msg->kind == HN_BF_KIND_JOIN) return parse_join(b, body, msg, why, why_bytes);
    if (msg->kind == HN_BF_KIND_DECISION) return parse_decision(b, body, msg, why, why_bytes);
    if (msg->kind == HN_BF_KIND_REQUEST) return parse_request(b, body, msg, why, why_bytes);
    if (msg->kind == HN_BF_KIND_HEAL) return parse_heal(b, body, msg, why, why_bytes);
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
