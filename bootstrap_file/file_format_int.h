/* Internal: the bytes of the shared-file bootstrap's files (docs/bootstrap_file.md).
 * Five kinds share one layout: the root's CLAIM on a round (its random nonce, who it is and
 * until when it holds the round), a reader's HELLO (its random nonce, the nonce of the claim it
 * answers, who wrote it and, for an allgather, its part), the root's ANNOUNCE (the bytes
 * every rank gets, and every nonce), a survivor's JOIN of a recovery round and the round's one
 * DECISION (who goes on; with epoch 0, rank 0's roster of the job's processes). Everything is
 * little-endian:
 *
 *   0  magic "HNCCLBF\0"       8  u16 format version (5)   10 u16 kind (1 hello, 2 announce, 3 claim,
 *                                                            4 join, 5 decision)
 *   12 u32 world size          16 u32 rank (hello: sender; announce, claim: root)
 *   20 u32 body bytes          24 u64 sequence number      32 char key[64], NUL-padded
 *   96 body                    96+body: u32 crc32 (zlib) of bytes 0 .. 96+body
 *
 *   claim body:    nonce[16], u64 expiry (Unix ms), u32 pid, u32 flags (1: collided), host[64]
 *   hello body:    nonce[16], root nonce[16], u32 pid, host[64] (its writer, so that the hello of
 *                  a dead process of this host is known stale), u32 part bytes, part (0 bytes
 *                  for a broadcast), then, from a reader that holds the job's secret, a 32-byte
 *                  HMAC-SHA-256 under it of every byte before it
 *   announce body: u32 data bytes, data, then world size nonces of 16 bytes (the root's slot
 *                  holds the claim's nonce), then, from a root that holds the job's secret, a
 *                  32-byte HMAC-SHA-256 under it of every byte before it
 *   join body:     nonce[16], u64 epoch, u32 pid, host[64] (rank: the joiner's, in the numbering
 *                  before the round), then the MAC as a hello's
 *   decision body: u64 epoch, u32 kept count, then world size members of 85 bytes (u8 kept (0 or
 *                  1), the join's nonce[16] (zeros for a rank not kept), u32 pid, host[64]: a
 *                  kept rank's join's process, a rank not kept's as the decider knew it (zeros:
 *                  never seen)), then the MAC as an announce's (rank: the decider, kept; at
 *                  least one kept)
 *   request body:  nonce[16], u64 when it was put (Unix ms), u32 pid, host[64] (a restarted
 *                  rank asking to be taken back in; rank: its job rank, world: the job's size),
 *                  then the MAC as a hello's
 *   heal body:     u64 epoch, u32 kept count, then world size (the job's) members of 85 bytes as
 *                  a decision's, whose first byte holds flags: 1 kept (a member after the round),
 *                  2 taken in (a joiner: the nonce is its request's), 4 a member before the round
 *                  (its join's place: its rank among those); only 0, 3, 4, 5, 7; then u32 refusal
 *                  count (at most HN_BF_MAX_REFUSALS) and that many refusals of 13 bytes (u32 job
 *                  rank, u8 reason, the request's id: the first 8 bytes of its nonce), then the
 *                  MAC (rank: the decider, a member before and after)
 */
#ifndef HIDET_NCCL_BOOTSTRAP_FILE_FILE_FORMAT_INT_H_
#define HIDET_NCCL_BOOTSTRAP_FILE_FILE_FORMAT_INT_H_

#include <stddef.h>
#include <stdint.h>

#define HN_BF_VERSION 5
#define HN_BF_KIND_HELLO 1
#define HN_BF_KIND_ANNOUNCE 2
#define HN_BF_KIND_CLAIM 3
#define HN_BF_KIND_JOIN 4
#define HN_BF_KIND_DECISION 5
#define HN_BF_KIND_REQUEST 6
#define HN_BF_KIND_HEAL 7
#define HN_BF_CLAIM_COLLIDED 1u
#define HN_BF_HOST_BYTES 64
#define HN_BF_CLAIM_BODY (HN_BF_NONCE + 8 + 4 + 4 + HN_BF_HOST_BYTES)
/* A hello's body before its part. */
#define HN_BF_HELLO_FIXED (2 * HN_BF_NONCE + 4 + HN_BF_HOST_BYTES + 4)
#define HN_BF_HEADER 96
#define HN_BF_KEY_BYTES 64
#define HN_BF_NONCE 16
#define HN_BF_MAX_WORLD 65536
/* The most bytes an announce carries: an allgather of 8 MiB in all (a broadcast carries 64 KiB). */
#define HN_BF_MAX_DATA (8 << 20)
#define HN_BF_MAC 32
#define HN_BF_JOIN_BODY (HN_BF_NONCE + 8 + 4 + HN_BF_HOST_BYTES)
/* A decision's fixed fields, and each rank's member. */
#define HN_BF_DECISION_FIXED (8 + 4)
#define HN_BF_MEMBER (1 + HN_BF_NONCE + 4 + HN_BF_HOST_BYTES)
/* A request's body before its MAC: a join's layout (its u64 is when it was put). */
#define HN_BF_REQUEST_BODY HN_BF_JOIN_BODY
/* A heal decision's member flags. */
#define HN_BF_HEAL_KEPT 1u   /* a member after the round */
#define HN_BF_HEAL_JOINED 2u /* taken in: a restarted rank (its request's nonce) */
#define HN_BF_HEAL_BEFORE 4u /* a member before the round */
/* A refusal of a request in a heal decision, and why. */
#define HN_BF_REQUEST_ID 8
#define HN_BF_REFUSAL (4 + 1 + HN_BF_REQUEST_ID)
#define HN_BF_MAX_REFUSALS 256
#define HN_BF_REFUSED_LIVE 1   /* its job rank is a live member */
#define HN_BF_REFUSED_SECOND 2 /* another process asks for (or was taken in as) that rank first */
#define HN_BF_REFUSED_CHECKS 3 /* it failed its checks (not this job's MAC, corrupt, not this user's) */
/* The largest file any kind can be (a decision of the largest world is smaller). */
#define HN_BF_MAX_FILE (HN_BF_HEADER + 4 + HN_BF_MAX_DATA + HN_BF_NONCE * HN_BF_MAX_WORLD + HN_BF_MAC + 4)
_Static_assert(HN_BF_DECISION_FIXED + (size_t)HN_BF_MEMBER * HN_BF_MAX_WORLD + HN_BF_MAC <=
                   4 + HN_BF_MAX_DATA + (size_t)HN_BF_NONCE * HN_BF_MAX_WORLD + HN_BF_MAC,
               "a decision of the largest world fits the largest file");

typedef struct {
    int kind;
    uint32_t world_size;
    uint32_t rank;
    uint64_t seq;
    char key[HN_BF_KEY_BYTES + 1];
    const uint8_t *nonce;  /* hello: the sender's; claim: the root's; join: the joiner's; else NULL */
    const uint8_t *root_nonce; /* hello: the nonce of the claim it answers */
    const uint8_t *data;   /* hello: the sender's part; announce: what every rank gets */
    uint32_t data_bytes;
    const uint8_t *nonces; /* announce only: world_size x 16 bytes */
    const uint8_t *mac;    /* hello, announce: its MAC under the job's secret, or NULL (a writer without one) */
    size_t mac_covers;     /* with a MAC: the bytes it covers, from the file's first */
    uint64_t expiry_ms;    /* claim: Unix time in ms after which the claim is stale */
    uint32_t pid, flags;   /* claim, hello, join, decision: the writer's process id; claim: HN_BF_CLAIM_COLLIDED */
    char host[HN_BF_HOST_BYTES + 1]; /* claim, hello, join: the writer's host name; decision: the decider's */
    uint64_t epoch;        /* join, decision, heal: the recovery or heal round (a decision of epoch 0: the roster) */
    uint64_t asked_ms;     /* request: when it was put (Unix ms) */
    uint32_t kept_count;   /* decision, heal: how many ranks it keeps (>= 1, the decider among them) */
    const uint8_t *members; /* decision, heal: world_size members (hidet_nccl__bf_member reads one) */
    uint32_t refusals;     /* heal: how many requests it refused (hidet_nccl__bf_refusal reads one) */
    const uint8_t *refused;
} hidet_nccl__bf_msg_t;

/* One rank's member of a decision (or heal decision). */
typedef struct {
    int kept;       /* flags & 1 */
    unsigned flags; /* a decision: kept; a heal decision: HN_BF_HEAL_* */
    uint8_t nonce[HN_BF_NONCE];
    uint32_t pid;
    char host[HN_BF_HOST_BYTES + 1];
} hidet_nccl__bf_member_t;

/* A request refused by a heal decision. */
typedef struct {
    uint32_t rank;
    int reason; /* HN_BF_REFUSED_* */
    uint8_t id[HN_BF_REQUEST_ID];
} hidet_nccl__bf_refusal_t;

/* Encodes into out (capacity cap); returns the length, or 0 if it does not fit. */
size_t hidet_nccl__bf_encode_hello(uint8_t *out, size_t cap, const char *key, uint64_t seq, uint32_t world,
                                   uint32_t rank, const uint8_t nonce[HN_BF_NONCE],
                                   const uint8_t root_nonce[HN_BF_NONCE], uint32_t pid, const char *host,
                                   const void *part, uint32_t part_bytes, int with_mac);
size_t hidet_nccl__bf_encode_claim(uint8_t *out, size_t cap, const char *key, uint64_t seq, uint32_t world,
                                   uint32_t root, const uint8_t nonce[HN_BF_NONCE], uint64_t expiry_ms, uint32_t pid,
                                   uint32_t flags, const char *host);
/* A join of rank `rank` of `world` to recovery round `epoch` (seq: the round's). */
size_t hidet_nccl__bf_encode_join(uint8_t *out, size_t cap, const char *key, uint64_t seq, uint32_t world,
                                  uint32_t rank, const uint8_t nonce[HN_BF_NONCE], uint64_t epoch, uint32_t pid,
                                  const char *host, int with_mac);
/* A decision of `decider` (kept) over world members (members[r], a kept flag and, for a kept
 * rank, its join's nonce; every rank's process, zeros where not known; a rank not kept is
 * written without a nonce). 0 if the members do not make a decision (nobody kept, the decider
 * not kept) or it does not fit. */
size_t hidet_nccl__bf_encode_decision(uint8_t *out, size_t cap, const char *key, uint64_t seq, uint32_t world,
                                      uint32_t decider, uint64_t epoch, const hidet_nccl__bf_member_t *members,
                                      int with_mac);
/* Member r (< world_size) of a parsed decision or heal decision. */
void hidet_nccl__bf_member(const hidet_nccl__bf_msg_t *msg, uint32_t r, hidet_nccl__bf_member_t *out);
/* A request of job rank `rank` of a job of `world` ranks (seq: the bootstrap's first round's). */
size_t hidet_nccl__bf_encode_request(uint8_t *out, size_t cap, const char *key, uint64_t seq, uint32_t world,
                                     uint32_t rank, const uint8_t nonce[HN_BF_NONCE], uint64_t asked_ms, uint32_t pid,
                                     const char *host, int with_mac);
/* A heal decision of `decider` over the job's world ranks (members[r].flags: HN_BF_HEAL_*; the
 * nonce of a kept one: its join's, or a joiner's request's), and n_refused refusals. 0 if it is
 * no heal decision (a flag not 0, 3, 4, 5 or 7; a member out with a nonce is written without
 * it; the decider not a member before and after; nobody kept; too many refusals, one of a rank
 * past the world or with an unknown reason) or does not fit. */
size_t hidet_nccl__bf_encode_heal(uint8_t *out, size_t cap, const char *key, uint64_t seq, uint32_t world,
                                  uint32_t decider, uint64_t epoch, const hidet_nccl__bf_member_t *members,
                                  const hidet_nccl__bf_refusal_t *refused, uint32_t n_refused, int with_mac);
/* Refusal i (< refusals) of a parsed heal decision. */
void hidet_nccl__bf_refusal(const hidet_nccl__bf_msg_t *msg, uint32_t i, hidet_nccl__bf_refusal_t *out);
/* with_mac (hello, announce, join, decision): room for the MAC at the body's end, zeroed, for the writer to fill. */
size_t hidet_nccl__bf_encode_announce(uint8_t *out, size_t cap, const char *key, uint64_t seq, uint32_t world,
                                      uint32_t root, const void *data, uint32_t data_bytes, const uint8_t *nonces,
                                      int with_mac);
/* A file of total bytes encoded with_mac: the MAC's place, and the bytes before it it covers. */
uint8_t *hidet_nccl__bf_mac_at(uint8_t *out, size_t total, size_t *covers);
/* After the MAC is written at its place: the checksum again. Returns total. */
size_t hidet_nccl__bf_reseal(uint8_t *out, size_t total);

/* Parses untrusted bytes. 0 and *msg (pointing into buf) if well formed; else -1 and why. */
int hidet_nccl__bf_parse(const uint8_t *buf, size_t len, hidet_nccl__bf_msg_t *msg, char *why, size_t why_bytes);

/* 0 if msg is the expected kind for this job, round, world and rank; else -1 and why. */
int hidet_nccl__bf_expect(const hidet_nccl__bf_msg_t *msg, int kind, const char *key, uint64_t seq, uint32_t world, uint32_t rank,
                 char *why, size_t why_bytes);

#endif
