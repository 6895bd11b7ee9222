/* The calling thread's block of what the collectives read (core/base/thread_int.h). */
#include "core/base/thread_int.h"

_Thread_local hn_thread_t hidet_nccl__thread;
_Atomic unsigned long hidet_nccl__generation = 1;
