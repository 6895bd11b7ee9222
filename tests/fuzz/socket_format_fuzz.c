/* libFuzzer target: the socket rendezvous's message checks on arbitrary bytes, as a peer on the
 * network may send them: the header's length claim first, then the whole message.
 *   bazel build --config=fuzz //tests/fuzz:socket_format_fuzzer
 *   bazel-bin/tests/fuzz/socket_format_fuzzer -max_total_time=600 .fuzz/socket_corpus tests/fuzz/socket_corpus
 * //tests/fuzz:socket_format_corpus_test replays the committed corpus in every CI run. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "bootstrap_socket/socket_format_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char why[512];
    size_t total = 0;
    if (size >= HN_SK_HEADER && hidet_nccl__sk_total(data, &total, why, sizeof why) == 0) {
        if (total < HN_SK_HEADER + 4 || total > HN_SK_HEADER + (size_t)HN_SK_MAX_BODY + 4) __builtin_trap();
    }
    hidet_nccl__sk_msg_t m;
    if (hidet_nccl__sk_parse(data, size, &m, why, sizeof why) != 0) {
        (void)strlen(why);
        return 0;
    }
    volatile uint8_t sink = 0;
    for (size_t i = 0; i < HN_SK_NONCE; i++) sink ^= m.nonce[i];
    for (size_t i = 0; i < m.body_bytes; i++) sink ^= m.body[i];
    /* What parses must survive a round trip through the encoder. */
    static uint8_t again[HN_SK_HEADER + HN_SK_MAX_BODY + 4];
    size_t n = hidet_nccl__sk_encode(again, sizeof again, m.kind, m.key, m.world_size, m.rank, m.tag, m.nonce, m.body,
                                     m.body_bytes);
    if (n != size || memcmp(again, data, size) != 0) __builtin_trap();
    return 0;
}
