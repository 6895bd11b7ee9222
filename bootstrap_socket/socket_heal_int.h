/* Internal: the socket backend's heal round, a client's side (bootstrap_socket/socket_heal.c). */
#ifndef HIDET_NCCL_BOOTSTRAP_SOCKET_SOCKET_HEAL_INT_H_
#define HIDET_NCCL_BOOTSTRAP_SOCKET_SOCKET_HEAL_INT_H_

#include "bootstrap_socket/socket_state_int.h"

/* The plug-in's heal (hidet_nccl/bootstrap.h): on success s is renumbered to the members, in job
 * order. Without a served rendezvous: HIDET_NCCL_ERROR_UNSUPPORTED, saying why. */
hidet_nccl_status_t hidet_nccl__sk_heal(hn_sk_state_t *s, uint64_t *epoch, double wait_s, double timeout_s,
                                        unsigned char *members, unsigned char *joined, char *msg, size_t n);

#endif
