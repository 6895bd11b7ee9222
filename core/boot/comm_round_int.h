/* Internal: what hidet_nccl_comm_recover and hidet_nccl_comm_heal share (core/boot/comm_round.c):
 * taking a communicator's bootstrap record for a round, NCCL's word on it, and the members'
 * agreement on whether the old communicator can shrink. */
#ifndef HIDET_NCCL_CORE_BOOT_COMM_ROUND_INT_H_
#define HIDET_NCCL_CORE_BOOT_COMM_ROUND_INT_H_

#include "core/boot/comm_bootstrap_int.h"
#include "core/comm/registry_int.h"
#include "core/nccl/nccl_loader_int.h"

#define HN_SHRINK_VERSION 22700 /* ncclCommShrink */

/* The record of comm_id taken for a round (*b filled), with a clear error when there is none to
 * take: recovered or healed already, a round on another thread, destroyed, borrowed, not made
 * over a bootstrap. dead: the registry no longer has comm_id (slot unread then). */
hidet_nccl_status_t hidet_nccl__comm_round_take(int comm_id, const hn_slot_t *slot, int dead, hn_comm_boot_t *b);
/* 1 when NCCL reports an error on the live communicator comm (*err gets it). */
int hidet_nccl__comm_nccl_error(const hn_nccl_t *n, ncclComm_t comm, ncclResult_t *err);
/* The old ranks not kept (size entries of kept), malloc'ed, for ncclCommShrink; NULL: no memory. */
int *hidet_nccl__comm_lost_ranks(const unsigned char *kept, int size, int lost);
/* Every member's word (mine: up to 8 yes/no bits) over the renumbered bootstrap: *all has each bit
 * set that every one of the n members set. */
hidet_nccl_status_t hidet_nccl__comm_agree(hidet_nccl_bootstrap_h bs, unsigned mine, int n, double timeout,
                                          unsigned *all);

#endif
