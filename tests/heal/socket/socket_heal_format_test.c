/* The socket rendezvous' protocol 4 messages for healing, as the parser takes them from the
 * network (bootstrap_socket/socket_format.c): a fresh hello, a joiner's welcome, heal, healed and
 * bye are encoded and parse back; their bad forms are refused, saying why. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bootstrap_socket/socket_format_int.h"
#include "core/base/kit.h"
#include "tests/cunit_runner.h"

static uint8_t g_buf[HN_SK_HEADER + 64 + 4];
static const uint8_t k_nonce[HN_SK_NONCE] = {1, 2, 3};

static size_t enc(int kind, uint32_t world, uint32_t rank, uint64_t tag, const void *body, uint32_t bytes) {
    size_t n = hidet_nccl__sk_encode(g_buf, sizeof g_buf, kind, "job-key", world, rank, tag, k_nonce, body, bytes);
    CU_ASSERT_FATAL(n > 0);
    return n;
}

/* Parses what enc made: 0 and m, or -1 and why containing needle. */
static void parses(size_t n, hidet_nccl__sk_msg_t *m) {
    char why[512] = "";
    int rc = hidet_nccl__sk_parse(g_buf, n, m, why, sizeof why);
    if (rc != 0) fprintf(stderr, "refused: %s\n", why);
    CU_ASSERT_EQUAL(rc, 0);
}

static void refused(size_t n, const char *needle) {
    hidet_nccl__sk_msg_t m;
    char why[512] = "";
    CU_ASSERT_EQUAL(hidet_nccl__sk_parse(g_buf, n, &m, why, sizeof why), -1);
    if (strstr(why, needle) == NULL) fprintf(stderr, "why '%s' lacks '%s'\n", why, needle);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, needle));
}

static void test_hello_fresh(void) {
    uint8_t f[4];
    hidet_nccl__sk_msg_t m;
    hidet_nccl__put32(f, HN_SK_HELLO_SECRET | HN_SK_HELLO_FRESH);
    parses(enc(HN_SK_KIND_HELLO, 3, 2, 0, f, 4), &m);
    CU_ASSERT_EQUAL(m.flags, HN_SK_HELLO_SECRET | HN_SK_HELLO_FRESH);
    hidet_nccl__put32(f, 4);
    refused(enc(HN_SK_KIND_HELLO, 3, 2, 0, f, 4), "unknown flags");
}

static void test_welcome_joiner(void) {
    uint8_t body[HN_SK_NONCE + HN_SK_MAC] = {0};
    hidet_nccl__sk_msg_t m;
    parses(enc(HN_SK_KIND_WELCOME, 3, 0, HN_SK_WELCOME_JOINER, body, sizeof body), &m);
    CU_ASSERT_EQUAL(m.tag, HN_SK_WELCOME_JOINER);
    parses(enc(HN_SK_KIND_WELCOME, 3, 0, 0, body, HN_SK_NONCE), &m);
    refused(enc(HN_SK_KIND_WELCOME, 3, 0, 2, body, HN_SK_NONCE), "a welcome of kind 2");
}

static void test_heal(void) {
    uint8_t w[4];
    hidet_nccl__sk_msg_t m;
    hidet_nccl__put32(w, 5000);
    parses(enc(HN_SK_KIND_HEAL, 3, 1, 2, w, 4), &m);
    CU_ASSERT_EQUAL(m.wait_ms, 5000);
    CU_ASSERT_EQUAL(m.tag, 2);
    refused(enc(HN_SK_KIND_HEAL, 3, 1, 0, w, 4), "a heal of heal round 0");
    refused(enc(HN_SK_KIND_HEAL, 3, 1, 2, w, 2), "with a body of 2 bytes");
}

static void test_healed(void) {
    hidet_nccl__sk_msg_t m;
    uint8_t ok[2] = {0x07, 0x04}, nine[4] = {0xff, 0x01, 0x00, 0x01};
    parses(enc(HN_SK_KIND_HEALED, 3, 0, 2, ok, 2), &m);
    CU_ASSERT_EQUAL(hidet_nccl__sk_count_kept(m.body, 3), 3);
    CU_ASSERT_EQUAL(hidet_nccl__sk_bit(m.body + 1, 2), 1);
    parses(enc(HN_SK_KIND_HEALED, 9, 0, 3, nine, 4), &m);
    CU_ASSERT_EQUAL(hidet_nccl__sk_count_kept(m.body, 9), 9);
    uint8_t not_member[2] = {0x03, 0x04}, none[2] = {0, 0}, past[2] = {0x0f, 0}, joined_past[2] = {0x07, 0x08};
    refused(enc(HN_SK_KIND_HEALED, 3, 0, 2, not_member, 2), "takes in a rank it does not keep");
    refused(enc(HN_SK_KIND_HEALED, 3, 0, 2, none, 2), "keeps no rank");
    refused(enc(HN_SK_KIND_HEALED, 3, 0, 2, past, 2), "past its 3");
    refused(enc(HN_SK_KIND_HEALED, 3, 0, 2, joined_past, 2), "past its 3");
    refused(enc(HN_SK_KIND_HEALED, 3, 0, 2, ok, 1), "expected 2");
    refused(enc(HN_SK_KIND_HEALED, 3, 0, 0, ok, 2), "round 0");
}

static void test_bye(void) {
    hidet_nccl__sk_msg_t m;
    parses(enc(HN_SK_KIND_BYE, 3, 2, 0, NULL, 0), &m);
    CU_ASSERT_EQUAL(m.kind, HN_SK_KIND_BYE);
    refused(enc(HN_SK_KIND_BYE, 3, 2, 0, "x", 1), "a bye with a body");
    /* a kind past the last, and a version 3 peer: refused by the header, before any length is read */
    size_t total;
    char why[256] = "";
    enc(HN_SK_KIND_BYE, 3, 2, 0, NULL, 0);
    g_buf[10] = HN_SK_KIND_LAST + 1;
    CU_ASSERT_EQUAL(hidet_nccl__sk_total(g_buf, &total, why, sizeof why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "unknown kind 14"));
    enc(HN_SK_KIND_BYE, 3, 2, 0, NULL, 0);
    g_buf[8] = 3;
    CU_ASSERT_EQUAL(hidet_nccl__sk_total(g_buf, &total, why, sizeof why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "version"));
}

int main(void) {
    static const hn_test_t tests[] = {
        {"a fresh hello", test_hello_fresh},
        {"a joiner's welcome", test_welcome_joiner},
        {"heal", test_heal},
        {"healed", test_healed},
        {"bye; unknown kinds and versions", test_bye},
        {NULL, NULL},
    };
    return hn_run_tests("socket heal format", tests);
}
