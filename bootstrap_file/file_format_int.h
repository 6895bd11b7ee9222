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
    uint64_t epoch;        /* join, decision: the recovery round (a decision of epoch 0: the roster) */
    uint32_t kept_count;   /* decision: how many ranks it keeps (>= 1, the decider among them) */
    const uint8_t *members; /* decision: world_size members (hidet_nccl__bf_member reads one) */
} hidet_nccl__bf_msg_t;

/* One rank's member of a decision. */
typedef struct {
    int kept;
    uint8_t nonce[HN_BF_NONCE];
    uint32_t pid;
    char host[HN_BF_HOST_BYTES + 1];
} hidet_nccl__bf_member_t;

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
/* Member r (< world_size) of a parsed decision. */
void hidet_nccl__bf_member(const hidet_nccl__bf_msg_t *msg, uint32_t r, hidet_nccl__bf_member_t *out);
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
