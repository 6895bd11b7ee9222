/* Internal: the calling thread's group bookkeeping (core/comm/group.c). */
#ifndef HIDET_NCCL_CORE_COMM_GROUP_INT_H_
#define HIDET_NCCL_CORE_COMM_GROUP_INT_H_

#include <nccl.h>

#include "core/base/thread_int.h"
#include "hidet_nccl/hidet_nccl.h"

/* How many hidet_nccl_group_start calls of this thread are not yet ended (kept in the thread's
 * block, read by every collective). */
static inline int hidet_nccl__group_depth(void) { return hidet_nccl__thread.group_depth; }
/* A second communicator used inside the current group (group.c): from then on all of them are
 * in the thread's array. */
hidet_nccl_status_t hidet_nccl__group_track_more(ncclComm_t comm);
/* Remembers a communicator used inside the current group, to await it at group_end. Inlined:
 * a group's calls on one communicator check one word of the thread's first line. */
static inline hidet_nccl_status_t hidet_nccl__group_track(ncclComm_t comm) {
    if (__builtin_expect(hidet_nccl__thread.group_first == comm, 1)) return HIDET_NCCL_SUCCESS;
    if (hidet_nccl__thread.group_first == NULL) {
        hidet_nccl__thread.group_first = comm;
        return HIDET_NCCL_SUCCESS;
    }
    return hidet_nccl__group_track_more(comm);
}
/* Remembers a split inside the current group: at group_end, *child (malloc'ed, freed
 * there) is awaited and registered under the pending id. */
hidet_nccl_status_t hidet_nccl__group_add_split(int id, ncclComm_t *child);

#endif
