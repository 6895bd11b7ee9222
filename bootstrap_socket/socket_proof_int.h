/* Internal: the proofs of the job secret that the socket rendezvous' peers exchange (MACs under
 * the secret over fresh nonces: core/base/mac.c, never hand-written), the welcome that carries
 * the hub's proof, and keys from the network made printable (bootstrap_socket/socket_proof.c). */
#ifndef HIDET_NCCL_BOOTSTRAP_SOCKET_SOCKET_PROOF_INT_H_
#define HIDET_NCCL_BOOTSTRAP_SOCKET_SOCKET_PROOF_INT_H_

#include <stddef.h>
#include <stdint.h>

#include "bootstrap_socket/socket_state_int.h"

#define HN_SK_CLIENT_ROLE "hidet-nccl socket rendezvous 2: a rank's proof"
#define HN_SK_SERVER_ROLE "hidet-nccl socket rendezvous 2: rank 0's proof" /* or a served rendezvous' */
#define HN_SK_JOINER_ROLE "hidet-nccl socket rendezvous 4: the proof to a joiner" /* a served one's welcome of a joiner */

/* MAC under job's secret of: role, a, b, extra, rank, the job's world size and key. 0, or -1 and why. */
int hidet_nccl__sk_proof(const hn_sk_state_t *job, const char *role, const uint8_t a[HN_SK_NONCE],
                         const uint8_t b[HN_SK_NONCE], const uint8_t *extra, size_t extra_len, uint32_t rank,
                         uint8_t out[HN_MAC_BYTES], char *why, size_t why_bytes);

/* The welcome of rank `rank` into out (cap): the session nonce, the rank's nonce back (theirs) and,
 * with a secret, the hub's proof over theirs, its challenge (ours) and the session (in the
 * joiner's role for a joiner: tag HN_SK_WELCOME_JOINER). Its length, or 0 and why. */
size_t hidet_nccl__sk_welcome_encode(const hn_sk_state_t *job, int joiner, uint32_t rank, const uint8_t theirs[HN_SK_NONCE],
                                     const uint8_t ours[HN_SK_NONCE], const uint8_t session[HN_SK_NONCE],
                                     uint8_t *out, size_t cap, char *why, size_t why_bytes);
#define HN_SK_WELCOME_BYTES (HN_SK_HEADER + HN_SK_NONCE + HN_MAC_BYTES + 4)

/* A key from the network as it may be printed: every byte outside ' ' .. '~' as '?'. */
const char *hidet_nccl__sk_printable(const char *key, char out[HN_SK_KEY_BYTES + 1]);

#endif
