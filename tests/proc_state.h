/* A process's state as Linux's /proc shows it, for the test programs that watch ranks die. */
#ifndef HIDET_NCCL_TESTS_PROC_STATE_H_
#define HIDET_NCCL_TESTS_PROC_STATE_H_

#include <sys/types.h>

/* The state letter of /proc/<pid>/stat ('R', 'S', 'Z', ...), or 0 when there is no such entry
 * (no such process, or reaped) or it cannot be read or parsed. */
char hn_test_proc_state(pid_t pid);

#endif
