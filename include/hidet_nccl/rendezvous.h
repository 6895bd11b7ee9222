/*
 * A served socket rendezvous: the meeting point of a job's socket bootstraps, hosted outside the
 * ranks (as torchrun's agent hosts its store), so that it outlives any rank. hidet-nccl-run
 * serves one for a job it starts with --master-addr/--master-port on node 0 (or --rendezvous
 * socket on one host) and tells its ranks so ($HIDET_NCCL_RENDEZVOUS_SERVED=1): every rank, rank
 * 0 included, is then a client of it. It admits the ranks as rank 0 does (the job secret proved
 * both ways, a deadline per connection, strangers and floods dropped), relays broadcasts and
 * allgathers, tells the ranks at once when one of them dies (its connection closes), and is the
 * one decider of the socket backend's recovery rounds (hidet_nccl_bootstrap_recover). Protocol:
 * docs/bootstrap_socket.md. It serves every bootstrap the job's ranks make, in the order they make
 * them, from a thread of the calling process, until hidet_nccl_rendezvous_stop.
 */
#ifndef HIDET_NCCL_RENDEZVOUS_H_
#define HIDET_NCCL_RENDEZVOUS_H_

#include <stddef.h>

#include "hidet_nccl/hidet_nccl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hidet_nccl_rendezvous *hidet_nccl_rendezvous_h;

/*
 * Size-versioned, as the library's other parameter structs (hidet_nccl/bootstrap.h). The job's
 * secret is read as its ranks read it: $HIDET_NCCL_JOB_SECRET_FILE, else $HIDET_NCCL_JOB_SECRET
 * (call hidet_nccl_settings_reload after setting either in this process); without one, whoever
 * knows the job key may take a rank's place, and a warning says so.
 *   port:      the port to listen on, on every interface; 0: one the system picks
 *              (hidet_nccl_rendezvous_port tells which)
 *   job_key:   the ranks' $HIDET_NCCL_JOB_KEY; NULL: "socket-<port>", the ranks' default
 *   nranks:    the number of ranks of the job, 1 .. 65536 (required)
 *   timeout_s: how long the ranks of one bootstrap have to come, from the first that came; those
 *              that came are then refused, naming the missing. 0: $HIDET_NCCL_TIMEOUT's
 */
typedef struct {
    size_t size; /* sizeof(hidet_nccl_rendezvous_params_t), for growth */
    int port;
    const char *job_key;
    int nranks;
    double timeout_s;
} hidet_nccl_rendezvous_params_t;

#define HIDET_NCCL_RENDEZVOUS_PARAMS_INIT { sizeof(hidet_nccl_rendezvous_params_t), 0, NULL, -1, 0.0 }

/* Listens on params->port and serves the job from a thread of its own until stopped. Errors:
 * INVALID_ARGUMENT (a field out of range, a bad secret), BOOTSTRAP (the port in use, named),
 * SYSTEM. */
hidet_nccl_status_t hidet_nccl_rendezvous_start(const hidet_nccl_rendezvous_params_t *params,
                                                hidet_nccl_rendezvous_h *out);
/* The port it listens on (the system's choice when params->port was 0). */
hidet_nccl_status_t hidet_nccl_rendezvous_port(hidet_nccl_rendezvous_h rv, int *port);
/* How many of the bootstraps it serves still have a rank connected (as of its last wait): a
 * launcher whose own ranks ended keeps serving while the other nodes' ranks are there. */
hidet_nccl_status_t hidet_nccl_rendezvous_live(hidet_nccl_rendezvous_h rv, int *sessions);
/* Stops serving, closes every connection (the ranks still connected see it closed) and frees rv.
 * NULL is a no-op. */
hidet_nccl_status_t hidet_nccl_rendezvous_stop(hidet_nccl_rendezvous_h rv);

#ifdef __cplusplus
}
#endif

#endif /* HIDET_NCCL_RENDEZVOUS_H_ */
