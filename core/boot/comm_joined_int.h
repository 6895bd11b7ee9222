/* Internal: which ranks of a healed communicator are new (core/boot/comm_joined.c). */
#ifndef HIDET_NCCL_CORE_BOOT_COMM_JOINED_INT_H_
#define HIDET_NCCL_CORE_BOOT_COMM_JOINED_INT_H_

#include "hidet_nccl/bootstrap.h"

/* comm_id was made over bs right after a heal round whose joined (the job's numbering) it gives:
 * kept by the communicator's places (bs's current numbering). */
void hidet_nccl__comm_joined_set(int comm_id, hidet_nccl_bootstrap_h bs, const unsigned char *joined);

#endif
