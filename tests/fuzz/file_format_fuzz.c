/* libFuzzer target: the shared-file bootstrap's parser on arbitrary bytes.
 *   bazel build --config=fuzz //tests/fuzz:file_format_fuzzer
 *   bazel-bin/tests/fuzz/file_format_fuzzer -max_total_time=600 .fuzz/corpus tests/fuzz/corpus
 * //tests/fuzz:file_format_corpus_test replays the committed corpus in every CI run. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "bootstrap_file/file_format_int.h"

/* The encoder's bytes again (n of them) for what parsed: with a MAC, the parsed one put in its place
 * (the encoder leaves it to the caller) and the checksum sealed again; they must be the input. */
static void same_again(const hidet_nccl__bf_msg_t *m, uint8_t *again, size_t n, const uint8_t *data, size_t size) {
    if (m->mac != NULL && n > 0) {
        size_t covers;
        memcpy(hidet_nccl__bf_mac_at(again, n, &covers), m->mac, 32);
        if (covers != m->mac_covers) __builtin_trap();
        hidet_nccl__bf_reseal(again, n);
    }
    if (n != size || memcmp(again, data, size) != 0) __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    hidet_nccl__bf_msg_t m;
    char why[512];
    if (hidet_nccl__bf_parse(data, size, &m, why, sizeof why) != 0) return 0;
    /* Touch every byte the parser says is there, and every check. */
    volatile uint8_t sink = 0;
    if (m.nonce) for (size_t i = 0; i < HN_BF_NONCE; i++) sink ^= m.nonce[i];
    if (m.root_nonce) for (size_t i = 0; i < HN_BF_NONCE; i++) sink ^= m.root_nonce[i];
    if (m.data) for (size_t i = 0; i < m.data_bytes; i++) sink ^= m.data[i];
    if (m.nonces) for (size_t i = 0; i < (size_t)HN_BF_NONCE * m.world_size; i++) sink ^= m.nonces[i];
    hidet_nccl__bf_expect(&m, HN_BF_KIND_ANNOUNCE, "key", 0, m.world_size, m.rank, why, sizeof why);
    hidet_nccl__bf_expect(&m, HN_BF_KIND_HELLO, m.key, m.seq, 2, 1, why, sizeof why);
    (void)strlen(why);
    /* What parses must survive a round trip through the encoder. */
    if (m.kind == HN_BF_KIND_ANNOUNCE) {
        static uint8_t again[HN_BF_MAX_FILE];
        size_t n = hidet_nccl__bf_encode_announce(again, sizeof again, m.key, m.seq, m.world_size, m.rank, m.data,
                                                  m.data_bytes, m.nonces, m.mac != NULL);
        same_again(&m, again, n, data, size);
    }
    if (m.kind == HN_BF_KIND_HELLO) {
        static uint8_t again[HN_BF_MAX_FILE];
        size_t n = hidet_nccl__bf_encode_hello(again, sizeof again, m.key, m.seq, m.world_size, m.rank, m.nonce,
                                               m.root_nonce, m.pid, m.host, m.data, m.data_bytes, m.mac != NULL);
        same_again(&m, again, n, data, size);
    }
    if (m.kind == HN_BF_KIND_JOIN) {
        uint8_t again[HN_BF_HEADER + HN_BF_JOIN_BODY + HN_BF_MAC + 4];
        size_t n = hidet_nccl__bf_encode_join(again, sizeof again, m.key, m.seq, m.world_size, m.rank, m.nonce, m.epoch,
                                              m.pid, m.host, m.mac != NULL);
        same_again(&m, again, n, data, size);
    }
    if (m.kind == HN_BF_KIND_DECISION) {
        static uint8_t again[HN_BF_MAX_FILE];
        static hidet_nccl__bf_member_t members[HN_BF_MAX_WORLD];
        uint32_t kept = 0;
        for (uint32_t r = 0; r < m.world_size; r++) { /* every member the parser passed: a kept flag, zeros if not */
            hidet_nccl__bf_member(&m, r, &members[r]);
            if (members[r].kept != 0 && members[r].kept != 1) __builtin_trap();
            kept += (uint32_t)members[r].kept;
            if (strlen(members[r].host) > HN_BF_HOST_BYTES) __builtin_trap();
        }
        if (kept != m.kept_count || kept == 0 || !members[m.rank].kept) __builtin_trap();
        size_t n = hidet_nccl__bf_encode_decision(again, sizeof again, m.key, m.seq, m.world_size, m.rank, m.epoch,
                                                  members, m.mac != NULL);
        same_again(&m, again, n, data, size);
    }
    if (m.kind == HN_BF_KIND_REQUEST) {
        uint8_t again[HN_BF_HEADER + HN_BF_REQUEST_BODY + HN_BF_MAC + 4];
        size_t n = hidet_nccl__bf_encode_request(again, sizeof again, m.key, m.seq, m.world_size, m.rank, m.nonce,
                                                 m.asked_ms, m.pid, m.host, m.mac != NULL);
        same_again(&m, again, n, data, size);
    }
    if (m.kind == HN_BF_KIND_HEAL) {
        static uint8_t again[HN_BF_MAX_FILE];
        static hidet_nccl__bf_member_t members[HN_BF_MAX_WORLD];
        static hidet_nccl__bf_refusal_t refused[HN_BF_MAX_REFUSALS];
        uint32_t kept = 0;
        for (uint32_t r = 0; r < m.world_size; r++) { /* flags 0, 3, 4, 5 or 7; no nonce out of the round */
            hidet_nccl__bf_member(&m, r, &members[r]);
            unsigned f = members[r].flags;
            if (f != 0 && f != 3 && f != 4 && f != 5 && f != 7) __builtin_trap();
            if (members[r].kept != (int)(f & 1)) __builtin_trap();
            kept += f & 1;
            if (strlen(members[r].host) > HN_BF_HOST_BYTES) __builtin_trap();
        }
        if (kept != m.kept_count || kept == 0 || members[m.rank].flags != 5 || m.refusals > HN_BF_MAX_REFUSALS)
            __builtin_trap();
        for (uint32_t i = 0; i < m.refusals; i++) {
            hidet_nccl__bf_refusal(&m, i, &refused[i]);
            if (refused[i].rank >= m.world_size || refused[i].reason < 1 || refused[i].reason > 3) __builtin_trap();
        }
        size_t n = hidet_nccl__bf_encode_heal(again, sizeof again, m.key, m.seq, m.world_size, m.rank, m.epoch, members,
                                              refused, m.refusals, m.mac != NULL);
        same_again(&m, again, n, data, size);
    }
    if (m.kind == HN_BF_KIND_CLAIM) {
        uint8_t again[HN_BF_HEADER + HN_BF_CLAIM_BODY + 4];
        size_t n = hidet_nccl__bf_encode_claim(again, sizeof again, m.key, m.seq, m.world_size, m.rank, m.nonce,
                                               m.expiry_ms, m.pid, m.flags, m.host);
        same_again(&m, again, n, data, size); /* a claim carries no MAC */
    }
    return 0;
}
