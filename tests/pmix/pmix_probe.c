/* Makes the PMIx bootstrap and prints the status name and the message (for pmix_missing_test.sh). */
#include <stdio.h>

#include "hidet_nccl/bootstrap.h"

int main(void) {
    hidet_nccl_bootstrap_h bs = NULL;
    hidet_nccl_status_t st = hidet_nccl_bootstrap_pmix(&bs);
    printf("%s\n%s\n", hidet_nccl_status_string(st), hidet_nccl_last_error());
    hidet_nccl_bootstrap_destroy(bs);
    return st == HIDET_NCCL_SUCCESS ? 0 : 1;
}
