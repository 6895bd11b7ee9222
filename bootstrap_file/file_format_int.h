/* Internal: the bytes of the shared-file bootstrap's files (docs/bootstrap_file.md).
 * Three kinds share one layout: the root's CLAIM on a round (its random nonce, who it is and
 * until when it holds the round), a reader's HELLO (its random nonce, the nonce of the claim it
 * answers, who wrote it and, for an allgather, its part) and the root's ANNOUNCE (the bytes
 * every rank gets, and every nonce). Everything is little-endian:
 *
 *   0  magic "HNCCLBF\0"       8  u16 format version (5)   10 u16 kind (1 hello, 2 announce, 3 claim)
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
 */
#ifndef HIDET_NCCL_BOOTSTRAP_FILE_FILE_FORMAT_INT_H_
#define HIDET_NCCL_BOOTSTRAP_FILE_FILE_FORMAT_INT_H_

#include <stddef.h>
#include <stdint.h>

#define HN_BF_VERSION 5
#define HN_BF_KIND_HELLO 1
#define HN_BF_KIND_ANNOUNCE 2
#define HN_BF_KIND_CLAIM 3
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
/* The largest file either kind can be. */
#define HN_BF_MAX_FILE (HN_BF_HEADER + 4 + HN_BF_MAX_DATA + HN_BF_NONCE * HN_BF_MAX_WORLD + HN_BF_MAC + 4)

typedef struct {
    int kind;
    uint32_t world_size;
    uint32_t rank;
    uint64_t seq;
    char key[HN_BF_KEY_BYTES + 1];
    const uint8_t *nonce;  /* hello: the sender's; claim: the root's; announce: NULL */
    const uint8_t *root_nonce; /* hello: the nonce of the claim it answers */
    const uint8_t *data;   /* hello: the sender's part; announce: what every rank gets */
    uint32_t data_bytes;
    const uint8_t *nonces; /* announce only: world_size x 16 bytes */
    const uint8_t *mac;    /* hello, announce: its MAC under the job's secret, or NULL (a writer without one) */
    size_t mac_covers;     /* with a MAC: the bytes it covers, from the file's first */
    uint64_t expiry_ms;    /* claim: Unix time in ms after which the claim is stale */
    uint32_t pid, flags;   /* claim, hello: the writer's process id; claim: HN_BF_CLAIM_COLLIDED */
    char host[HN_BF_HOST_BYTES + 1]; /* claim, hello: the writer's host name */
} hidet_nccl__bf_msg_t;

/* Encodes into out (capacity cap); returns the length, or 0 if it does not fit. */
size_t hidet_nccl__bf_encode_hello(uint8_t *out, size_t cap, const char *key, uint64_t seq, uint32_t world,
                                   uint32_t rank, const uint8_t nonce[HN_BF_NONCE],
                                   const uint8_t root_nonce[HN_BF_NONCE], uint32_t pid, const char *host,
                                   const void *part, uint32_t part_bytes, int with_mac);
size_t hidet_nccl__bf_encode_claim(uint8_t *out, size_t cap, const char *key, uint64_t seq, uint32_t world,
                                   uint32_t root, const uint8_t nonce[HN_BF_NONCE], uint64_t expiry_ms, uint32_t pid,
                                   uint32_t flags, const char *host);
/* with_mac (hello, announce): room for the MAC at the body's end, zeroed, for the writer to fill. */
size_t hidet_nccl__bf_encode_announce(uint8_t *out, size_t cap, const char *key, uint64_t seq, uint32_t world,
                                      uint32_t root, const void *data, uint32_t data_bytes, const uint8_t *nonces,
                                      int with_mac);
/* A hello or announce of total bytes encoded with_mac: the MAC's place, and the bytes before it it covers. */
uint8_t *hidet_nccl__bf_mac_at(uint8_t *out, size_t total, size_t *covers);
/* After the MAC is written at its place: the checksum again. Returns total. */
size_t hidet_nccl__bf_reseal(uint8_t *out, size_t total);

/* Parses untrusted bytes. 0 and *msg (pointing into buf) if well formed; else -1 and why. */
int hidet_nccl__bf_parse(const uint8_t *buf, size_t len, hidet_nccl__bf_msg_t *msg, char *why, size_t why_bytes);

/* 0 if msg is the expected kind for this job, round, world and rank; else -1 and why. */
int hidet_nccl__bf_expect(const hidet_nccl__bf_msg_t *msg, int kind, const char *key, uint64_t seq, uint32_t world, uint32_t rank,
                 char *why, size_t why_bytes);

#endif
