/* Internal: communicators made over a bootstrap (core/boot/comm_init_bootstrap.c) and the
 * bootstraps they keep for recovery (core/boot/comm_keep.c). */
#ifndef HIDET_NCCL_CORE_BOOT_COMM_BOOTSTRAP_INT_H_
#define HIDET_NCCL_CORE_BOOT_COMM_BOOTSTRAP_INT_H_

#include "core/nccl/nccl_config_int.h"
#include "hidet_nccl/bootstrap.h"

/* hidet_nccl_comm_init with its options read: device_choice (an index, AUTO or CURRENT), the
 * checked deadline, NCCL's knobs. */
hidet_nccl_status_t hidet_nccl__comm_init_knobs(hidet_nccl_bootstrap_h bs, int device_choice, double timeout,
                                                const hn_knobs_t *knobs, int *comm_id);

/* What communicator comm_id keeps of the bootstrap it was made over: the bootstrap itself (one
 * more holder of it) when it can recover or heal, else its name and why it cannot; and its GPU. */
typedef struct {
    hidet_nccl_bootstrap_h bs; /* NULL: the bootstrap cannot recover (why says so), or it went on */
    char name[64];
    char why[320];      /* why it cannot recover, when it cannot */
    char heal_why[320]; /* why it cannot heal, when it cannot */
    int device;
    int recovered_into; /* the id a recovery made of it, or -1 */
    int round_failed;   /* a recovery of it failed on this rank (why says so): the bootstrap is out of use */
} hn_comm_boot_t;

/* Records comm_id's bootstrap (kept when it can recover). Drops it when the id is destroyed
 * healthy or after it failed; keeps it when the id dies of a failure (aborted by the error
 * policy, an old NCCL, hidet_nccl_comm_abort) so it can still be recovered; all at finalize. */
void hidet_nccl__comm_keep_bootstrap(int comm_id, hidet_nccl_bootstrap_h bs, int device);
/* Takes comm_id's record for a recovery: 0 and *out filled (out->bs now the caller's to hand on
 * or drop), or -1 when the id has none, -2 when it is being recovered on another thread, -3
 * when it was recovered already (out->recovered_into says into which). */
int hidet_nccl__comm_boot_take(int comm_id, hn_comm_boot_t *out);
/* Ends what take began: new_id >= 0: comm_id went on as new_id, whose record gets out->bs;
 * -1: the recovery failed, comm_id's bootstrap is dropped (it is out of use); -2: nothing was
 * done (refused before the round), the record stays. */
void hidet_nccl__comm_boot_done(int comm_id, const hn_comm_boot_t *taken, int new_id);

#endif
