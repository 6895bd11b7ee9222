/* Internal: the socket backend's recovery round (bootstrap_socket/socket_recover.c). */
#ifndef HIDET_NCCL_BOOTSTRAP_SOCKET_SOCKET_RECOVER_INT_H_
#define HIDET_NCCL_BOOTSTRAP_SOCKET_SOCKET_RECOVER_INT_H_

#include "bootstrap_socket/socket_state_int.h"

/* The plug-in's recover (hidet_nccl/bootstrap.h): on success s is renumbered to the survivors. */
hidet_nccl_status_t hidet_nccl__sk_recover(hn_sk_state_t *s, uint64_t epoch, double wait_s, double timeout_s,
                                           unsigned char *kept, char *msg, size_t n);

#endif
