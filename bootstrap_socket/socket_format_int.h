/* Internal: the messages of the socket rendezvous (docs/bootstrap_socket.md). Bytes from the
 * network are untrusted: every message is versioned, length-checked, checksummed and carries
 * the job key. Little-endian:
 *
 *   0  magic "HNCCLSK\0"   8  u16 version (4)   10 u16 kind (below)
 *   12 u32 world size      16 u32 sender rank   20 u32 body bytes    24 u64 tag
 *   32 char key[64], NUL-padded                 96 u8 nonce[16]
 *   112 body               112+body: u32 crc32 (zlib) of bytes 0 .. 112+body
 *
 *   1 hello     (a rank to rank 0): nonce = the rank's fresh random nonce; body = u32 flags
 *               (HN_SK_HELLO_SECRET: the rank holds a job secret; HN_SK_HELLO_FRESH: the first
 *               socket bootstrap of its process, as a restarted rank's is)
 *   4 challenge (rank 0 to a rank, with a secret): nonce = rank 0's fresh nonce for it; no body
 *   5 proof     (the rank to rank 0): body = its MAC of both nonces under the secret
 *   2 welcome   (rank 0 to a rank): nonce = the job's session nonce; body = the rank's nonce back,
 *               then (with a secret) rank 0's MAC of the nonces and the session; tag = 0 (a rank of
 *               a bootstrap being made) or HN_SK_WELCOME_JOINER (1, a served rendezvous only: the
 *               bootstrap formed and goes on without this job rank, which waits for a heal round;
 *               world = the job's size; the MAC is made in the joiner's role)
 *   6 refuse    (rank 0 to a rank it will not take): body = why, text
 *   3 data      (either way): nonce = the session nonce; tag = the round; body = the bytes
 *   10 part     (a rank to a served rendezvous): nonce = the session; tag = the round; body = the
 *               rank's part of an allgather (a served rendezvous tells parts from a root's bytes)
 *   7 fail      (the hub to a rank): the session's rounds cannot go on until a recovery round (a
 *               rank died or left, or the ranks called different steps); nonce = the session;
 *               body = why, text (as a refuse's)
 *   8 join      (a rank to the decider): recovery round `tag` (the epoch, >= 1); nonce = the
 *               session; rank = the rank's number before the round; body = u32 the decider's
 *               longest wait in ms
 *   9 decide    (the decider to every rank still connected): recovery round `tag`; nonce = the
 *               session; world = the number of ranks before the round; body = one bit per rank of
 *               that numbering (bit r%8 of byte r/8), set for each rank that goes on: at least one,
 *               none past world
 *   11 heal     (a member to a served rendezvous): heal round `tag` (the epoch, >= 1), as a join:
 *               nonce = the session; rank = its number before the round; body = u32 the longest
 *               wait in ms
 *   12 healed   (a served rendezvous to every member still connected and every joiner it takes
 *               in): heal round `tag` (>= 1); nonce = the session; world = the JOB's size; body =
 *               two sets of one bit per job rank, each (world + 7) / 8 bytes: the members that go
 *               on, then the joiners taken in (a subset of the members); at least one member, none
 *               past world
 *   13 bye      (a rank to a served rendezvous, at its bootstrap's end): it leaves well (its rank
 *               is not one a restarted process may take back); nonce = the session; no body
 * In a served rendezvous (hidet-nccl-run's, bootstrap_socket/socket_server.c) the hub is the
 * launcher and every rank is a client; else it is rank 0 (socket_handshake.c).
 */
#ifndef HIDET_NCCL_BOOTSTRAP_SOCKET_SOCKET_FORMAT_INT_H_
#define HIDET_NCCL_BOOTSTRAP_SOCKET_SOCKET_FORMAT_INT_H_

#include <stddef.h>
#include <stdint.h>

#define HN_SK_VERSION 4
#define HN_SK_KIND_HELLO 1
#define HN_SK_KIND_WELCOME 2
#define HN_SK_KIND_DATA 3
#define HN_SK_KIND_CHALLENGE 4
#define HN_SK_KIND_PROOF 5
#define HN_SK_KIND_REFUSE 6
#define HN_SK_KIND_FAIL 7
#define HN_SK_KIND_JOIN 8
#define HN_SK_KIND_DECIDE 9
#define HN_SK_KIND_PART 10
#define HN_SK_KIND_HEAL 11
#define HN_SK_KIND_HEALED 12
#define HN_SK_KIND_BYE 13
#define HN_SK_KIND_LAST HN_SK_KIND_BYE
#define HN_SK_HELLO_SECRET 1u
#define HN_SK_HELLO_FRESH 2u
#define HN_SK_WELCOME_JOINER 1
#define HN_SK_MAC 32
#define HN_SK_MAX_REFUSE 256 /* a refuse's or a fail's text */
#define HN_SK_HEADER 112
#define HN_SK_KEY_BYTES 64
#define HN_SK_NONCE 16
#define HN_SK_MAX_WORLD 65536
#define HN_SK_MAX_BODY (8 << 20)

typedef struct {
    int kind;
    uint32_t world_size;
    uint32_t rank;
    uint32_t body_bytes;
    uint64_t tag;
    char key[HN_SK_KEY_BYTES + 1];
    const uint8_t *nonce; /* into the message */
    const uint8_t *body;  /* into the message */
    uint32_t flags;       /* a hello's */
    uint32_t wait_ms;     /* a join's, a heal's */
} hidet_nccl__sk_msg_t;

/* The header's claim of the whole message's length (header, body, checksum): 0 and *total
 * when the first HN_SK_HEADER bytes are plausible (magic, version, kind, body not over the
 * limit), so a reader knows how much more to read; else -1 and why. */
int hidet_nccl__sk_total(const uint8_t header[HN_SK_HEADER], size_t *total, char *why, size_t why_bytes);

/* Encodes into out (capacity cap); returns the length, or 0 if it does not fit. */
size_t hidet_nccl__sk_encode(uint8_t *out, size_t cap, int kind, const char *key, uint32_t world, uint32_t rank,
                             uint64_t tag, const uint8_t nonce[HN_SK_NONCE], const void *body, uint32_t body_bytes);

/* Parses a whole message of untrusted bytes. 0 and *msg (pointing into buf); else -1 and why. */
int hidet_nccl__sk_parse(const uint8_t *buf, size_t len, hidet_nccl__sk_msg_t *msg, char *why, size_t why_bytes);

/* How many of the ranks 0 .. world-1 a decision's bits keep. */
int hidet_nccl__sk_count_kept(const uint8_t *bits, uint32_t world);
/* Bit r of a set of bits (bit r%8 of byte r/8). */
static inline int hidet_nccl__sk_bit(const uint8_t *bits, int r) { return bits[r / 8] >> (r % 8) & 1; }

#endif
