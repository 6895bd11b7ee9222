/* The roots of a scalable init: how many for n ranks, and that they are distinct ranks spread
 * evenly, rank 0 first. */
#include "core/boot/init_roots_int.h"
#include "tests/cunit_runner.h"

static void test_counts(void) {
    CU_ASSERT_EQUAL(hidet_nccl__init_roots(1, 128), 1);
    CU_ASSERT_EQUAL(hidet_nccl__init_roots(128, 128), 1);
    CU_ASSERT_EQUAL(hidet_nccl__init_roots(129, 128), 2);
    CU_ASSERT_EQUAL(hidet_nccl__init_roots(1024, 128), 8);
    CU_ASSERT_EQUAL(hidet_nccl__init_roots(2, 1), 2);
    CU_ASSERT_EQUAL(hidet_nccl__init_roots(5, 0), 1);
}

/* For many n and roots: exactly nroots ranks are roots, indices 0 .. nroots-1 once each, in
 * rank order, rank 0 the first, and no two roots closer than floor(n / nroots). */
static void test_spread(void) {
    for (int n = 1; n <= 300; n++)
        for (int nroots = 1; nroots <= n; nroots += (nroots < 10 ? 1 : 7)) {
            int next = 0, last = -1, ok = 1;
            for (int r = 0; r < n; r++) {
                int i = hidet_nccl__init_root_index(r, n, nroots);
                if (i < 0) continue;
                ok &= i == next++;
                ok &= last < 0 || r - last >= n / nroots;
                last = r;
            }
            ok &= next == nroots && hidet_nccl__init_root_index(0, n, nroots) == 0;
            if (!ok) {
                CU_FAIL("roots not spread as promised");
                return;
            }
        }
    CU_ASSERT_EQUAL(hidet_nccl__init_root_index(-1, 8, 2), -1);
    CU_ASSERT_EQUAL(hidet_nccl__init_root_index(8, 8, 2), -1);
    CU_ASSERT_EQUAL(hidet_nccl__init_root_index(4, 8, 2), 1);
    CU_ASSERT_EQUAL(hidet_nccl__init_root_index(3, 8, 2), -1);
}

int main(void) {
    static const hn_test_t tests[] = {
        {"how many roots", test_counts},
        {"roots spread evenly", test_spread},
        {NULL, NULL},
    };
    return hn_run_tests("init_roots", tests);
}
