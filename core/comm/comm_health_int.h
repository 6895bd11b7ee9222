/* Internal: applying a communicator's error policy (core/comm/comm_health.c). */
#ifndef HIDET_NCCL_CORE_COMM_COMM_HEALTH_INT_H_
#define HIDET_NCCL_CORE_COMM_COMM_HEALTH_INT_H_

#include <stddef.h>

#include "hidet_nccl/hidet_nccl.h"

/* After communicator `id` failed with st (its message set) in `event` ("hidet_nccl_comm_wait
 * passed its deadline"): the flight recorder dumps (trace directory set); with the policy
 * ABORT_PROCESS, prints the message and aborts the process; with ABORT_COMM, aborts an owned
 * communicator and kills its id (later uses say "communicator id N was aborted after
 * <event>"). broken (the communicator cannot be trusted any more: comm_wait's failures)
 * under the policy RETURN: the id is marked failed when NCCL can shrink it (2.27), else
 * aborted as with ABORT_COMM. Returns st. */
hidet_nccl_status_t hidet_nccl__comm_failed(int id, hidet_nccl_status_t st, int broken, const char *event);

/* News of communicator comm_id's peers from the layer that knows how its ranks met (the
 * bootstrap kept for recovery): 1 and why when a peer began a recovery round (so this
 * communicator cannot finish its work), else 0. Non-blocking. Given once (core/boot). */
typedef int (*hn_peer_news_fn)(int comm_id, char *why, size_t why_bytes);
/* hidet_nccl_comm_wait asks it every HN_PEER_NEWS_EVERY_S while it waits. */
void hidet_nccl__at_comm_wait(hn_peer_news_fn news);
#define HN_PEER_NEWS_EVERY_S 0.05

#endif
