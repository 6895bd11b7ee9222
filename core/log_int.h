/* Internal: logging on stderr, level from HIDET_NCCL_DEBUG (WARN by default, INFO, TRACE;
 * NONE silences). Lines are prefixed "<host>:<pid> [<rank>] hidet_nccl <LEVEL>". */
#ifndef HIDET_NCCL_CORE_LOG_INT_H_
#define HIDET_NCCL_CORE_LOG_INT_H_

typedef enum {
    HN_LOG_NONE = 0,
    HN_LOG_WARN = 1,
    HN_LOG_INFO = 2,
    HN_LOG_TRACE = 3
} hn_log_level_t;

hn_log_level_t hidet_nccl__log_level(void);
void hidet_nccl__log(hn_log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The rank shown in the prefix (from the first communicator or bootstrap that knows it). */
void hidet_nccl__log_set_rank(int rank);

/* The level is tested before the arguments are formatted. */
#define HN_LOG(level, ...)                                                   \
    do {                                                                     \
        if (hidet_nccl__log_level() >= (level)) hidet_nccl__log((level), __VA_ARGS__); \
    } while (0)
#define HN_WARN(...) HN_LOG(HN_LOG_WARN, __VA_ARGS__)
#define HN_INFO(...) HN_LOG(HN_LOG_INFO, __VA_ARGS__)
#define HN_TRACE(...) HN_LOG(HN_LOG_TRACE, __VA_ARGS__)

#endif
