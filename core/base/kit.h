/*
 * The kit: what the library's parts outside core/ (the bootstrap backends) may use of the core,
 * besides the public headers. Nothing else of core/ is theirs to include.
 *
 *   messages   HN_ENTER at the top of a public function, HN_FAIL / HN_CHECK in it;
 *              hidet_nccl__say for a backend's message buffer
 *   logging    HN_WARN / HN_INFO / HN_TRACE on stderr, by HIDET_NCCL_DEBUG
 *   clock      hidet_nccl__now, and a poller: spin, then sleep with back-off (and jitter)
 *              until a deadline
 *   parsing    hidet_nccl__parse_nonneg_int, hidet_nccl__key_ok, hidet_nccl__rank_field,
 *              hidet_nccl__copy_sized for size-versioned structs, little-endian fields
 *   secrets    the job's secret, and a keyed MAC (HMAC-SHA-256, OpenSSL's libcrypto at run time)
 *   settings   the values of the environment variables the library reads, parsed once
 *              (core/base/settings_list.h holds the table)
 *   lifetime   hidet_nccl__at_finalize; hidet_nccl__comm_init_over
 */
#ifndef HIDET_NCCL_CORE_BASE_KIT_H_
#define HIDET_NCCL_CORE_BASE_KIT_H_

#include <stddef.h>
#include <stdint.h>

#include "core/base/settings_list.h"
#include "core/base/thread_int.h"
#include "hidet_nccl/bootstrap.h"

/* ---------------------------------------------------------------- messages */

/* At the start of every public call: clears the calling thread's message and names the
 * public function later messages are attributed to. A public function that the library
 * calls from inside another keeps the outer one's name and message: the depth is undone
 * when the function returns (the cleanup attribute, GCC and Clang). */
static inline int hidet_nccl__enter(const char *public_func) {
    hn_thread_t *t = &hidet_nccl__thread;
    if (t->depth++ == 0) {
        t->fresh = 0;
        t->prefix_len = 0;
        t->public_func = public_func;
    }
    return 1;
}
static inline void hidet_nccl__leave(int *entered) {
    (void)entered;
    hn_thread_t *t = &hidet_nccl__thread;
    if (t->depth > 0 && --t->depth == 0) t->public_func = NULL; /* later internal failures name their own */
}
#define HN_ENTER() \
    int hn_entered_ __attribute__((cleanup(hidet_nccl__leave), unused)) = hidet_nccl__enter(__func__)

/* A public function's failure (a backend's own public functions too, such as the rendezvous a
 * launcher serves): sets the calling thread's message to "hidet_nccl: <public function>:
 * <formatted>" and returns status. func names the function when no public call is under way. */
__attribute__((cold)) hidet_nccl_status_t hidet_nccl__fail(hidet_nccl_status_t status, const char *func,
                                     const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define HN_FAIL(status, ...) hidet_nccl__fail((status), __func__, __VA_ARGS__)

/* Returns from the enclosing function if expr fails; the callee has set the message. */
#define HN_CHECK(expr)                                  \
    do {                                                \
        hidet_nccl_status_t hn_st_ = (expr);            \
        if (hn_st_ != HIDET_NCCL_SUCCESS) return hn_st_; \
    } while (0)

#define HN_CHECK_NOT_NULL(ptr) \
    do {                       \
        if ((ptr) == NULL)     \
            return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "argument '%s' is NULL", #ptr); \
    } while (0)

/* Formats into a backend's message buffer (msg, msg_bytes; may be NULL/0) and returns st. */
hidet_nccl_status_t hidet_nccl__say(char *msg, size_t msg_bytes, hidet_nccl_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---------------------------------------------------------------- logging */

/* On stderr, level from HIDET_NCCL_DEBUG (WARN by default, INFO, TRACE; NONE silences).
 * Lines are prefixed "<host>:<pid> [<rank>] hidet_nccl <LEVEL>". */
typedef enum {
    HN_LOG_NONE = 0,
    HN_LOG_WARN = 1,
    HN_LOG_INFO = 2,
    HN_LOG_TRACE = 3
} hn_log_level_t;

hn_log_level_t hidet_nccl__log_level(void);
void hidet_nccl__log(hn_log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The level is tested before the arguments are formatted. */
#define HN_LOG(level, ...)                                                             \
    do {                                                                               \
        if (hidet_nccl__log_level() >= (level)) hidet_nccl__log((level), __VA_ARGS__); \
    } while (0)
#define HN_WARN(...) HN_LOG(HN_LOG_WARN, __VA_ARGS__)
#define HN_INFO(...) HN_LOG(HN_LOG_INFO, __VA_ARGS__)
#define HN_TRACE(...) HN_LOG(HN_LOG_TRACE, __VA_ARGS__)

/* ---------------------------------------------------------------- clock and polling */

/* Monotonic seconds. */
double hidet_nccl__now(void);

/* A polling loop against a deadline: no pause while under spin_s (what is awaited is
 * probably about to be done), then sleeps that start at first_ns and double up to max_ns,
 * each scaled by a random factor in [0.75, 1.25) when jitter is set (so many processes
 * polling one file system do not move in step). */
typedef struct {
    double start, timeout_s, spin_s;
    long sleep_ns, max_ns;
    int jitter;
    unsigned seed;
} hn_poll_t;

void hidet_nccl__poll_begin(hn_poll_t *p, double timeout_s, double spin_s, long first_ns, long max_ns, int jitter);
/* Seconds since poll_begin. */
double hidet_nccl__poll_waited(const hn_poll_t *p);
/* 1 once more than timeout_s has passed. */
int hidet_nccl__poll_expired(const hn_poll_t *p);
/* One pause of the loop. */
void hidet_nccl__poll_pause(hn_poll_t *p);

/* ---------------------------------------------------------------- parsing */

/* 1 and *out if s is a whole non-negative decimal integer (at most 2^30), else 0. */
int hidet_nccl__parse_nonneg_int(const char *s, int *out);

/* 1 if key is 1 to max_len of the characters A-Z a-z 0-9 . _ - (a job key), else 0. */
int hidet_nccl__key_ok(const char *key, size_t max_len);

/* A rank field of a backend's params: the value given (>= 0), else the launcher's hint; when
 * neither and required, HIDET_NCCL_ERROR_INVALID_ARGUMENT in msg naming the field and where the
 * hints were looked for. */
hidet_nccl_status_t hidet_nccl__rank_field(int given, int hint, const char *field, int required,
                                           const hidet_nccl_bootstrap_init_args_t *args, int *out, char *msg,
                                           size_t msg_bytes);

/* Little-endian fields of the backends' wire and file formats. */
static inline void hidet_nccl__put16(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void hidet_nccl__put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void hidet_nccl__put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint32_t hidet_nccl__get16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static inline uint32_t hidet_nccl__get32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t hidet_nccl__get64(const uint8_t *p) {
    return (uint64_t)hidet_nccl__get32(p) | (uint64_t)hidet_nccl__get32(p + 4) << 32;
}

/* Framed records, the shape of the backends' files and messages (untrusted bytes):
 *   0 magic[8]   8 u16 version   10 u16 kind   12 u32 world size   16 u32 rank
 *   20 u32 body bytes   24 u64 sequence number   32 char key[64], NUL-padded
 *   ... the rest of a header of header_bytes, the body, u32 CRC-32 (zlib) of all before it */
#define HN_FRAME_KEY_AT 32
#define HN_FRAME_KEY_BYTES 64
typedef struct {
    uint32_t kind, world, rank, body;
    uint64_t seq;
    char key[HN_FRAME_KEY_BYTES + 1];
} hn_frame_t;
/* Writes the common head into out (the header zeroed first); returns the record's whole
 * length, or 0 if it does not fit in cap or the key is empty or too long. */
size_t hidet_nccl__frame_begin(uint8_t *out, size_t cap, size_t header_bytes, const uint8_t magic[8], uint32_t version,
                               const hn_frame_t *f);
/* Writes the checksum of out[0 .. total-4) into its last 4 bytes; returns total. */
size_t hidet_nccl__frame_seal(uint8_t *out, size_t total);
/* From a header alone (magic, version, body not over max_body): the record's whole length, so
 * a reader knows how much more to read. 0, or -1 and why ("what" names the record). */
int hidet_nccl__frame_total(const uint8_t *head, size_t header_bytes, const uint8_t magic[8], uint32_t version,
                            uint32_t max_body, const char *what, size_t *total, char *why, size_t why_bytes);
/* A whole record: length, magic, version, checksum, key, world size (1 .. max_world) and rank;
 * *f filled. 0, or -1 and why. */
int hidet_nccl__frame_check(const uint8_t *buf, size_t len, size_t header_bytes, const uint8_t magic[8],
                            uint32_t version, uint32_t max_body, uint32_t max_world, const char *what, hn_frame_t *f,
                            char *why, size_t why_bytes);

/* A caller's size-versioned struct (its first member a size_t `size`) into ours: `dst`
 * holds our defaults (dst_bytes = sizeof our struct). A smaller, older struct: its `size`
 * bytes are copied and the rest keeps the defaults. A larger, newer one: accepted only if
 * every byte past ours is zero (fields this library does not know, left unset). A size too
 * small to hold `size` itself is refused. 0, or -1 and why ("what" names the struct). */
int hidet_nccl__copy_sized(void *dst, size_t dst_bytes, const void *src, const char *what, char *why,
                           size_t why_bytes);

/* ---------------------------------------------------------------- secrets */

/* A rendezvous authenticates its peers by a per-job secret that never travels: each side
 * proves it holds it with a MAC over fresh nonces (core/base/mac.c). */
#define HN_MAC_BYTES 32
#define HN_SECRET_MIN 16
#define HN_SECRET_MAX 4096

/* The job's secret: the bytes of $HIDET_NCCL_JOB_SECRET_FILE (a regular file of the user's,
 * readable by nobody else, 16 .. 4096 bytes, trailing newlines dropped), else
 * $HIDET_NCCL_JOB_SECRET. 1 and out[0 .. *len); 0 when neither is set; -1 and why. */
int hidet_nccl__job_secret(uint8_t out[HN_SECRET_MAX], size_t *len, char *why, size_t why_bytes);
/* HMAC-SHA-256 of data under key. 0, or -1 and why (no libcrypto: the places tried). */
int hidet_nccl__mac(const uint8_t *key, size_t key_len, const void *data, size_t len, uint8_t out[HN_MAC_BYTES],
                    char *why, size_t why_bytes);
/* 1 if a and b are equal, compared in time that does not depend on where they differ. */
int hidet_nccl__mac_equal(const uint8_t a[HN_MAC_BYTES], const uint8_t b[HN_MAC_BYTES]);

/* ---------------------------------------------------------------- settings */

/* Every environment variable the library reads, except the launchers' rank variables (given
 * to backends as hints, see hidet_nccl_bootstrap_init_args_t): HN_SETTING_<id> of each row of
 * core/base/settings_list.h, where types, defaults, ranges and documentation are. */
#define HN_SETTING_ENUM(id, ...) HN_SETTING_##id,
typedef enum {
    HN_SETTINGS(HN_SETTING_ENUM) HN_NUM_SETTINGS
} hn_setting_t;

/* The value as text: the environment's if set and valid, else the default; NULL when
 * neither. Valid until the second settings reload after the call (copy it to keep it). */
const char *hidet_nccl__setting_str(hn_setting_t id);
/* 1 if the variable is set to a non-empty value. */
int hidet_nccl__setting_is_set(hn_setting_t id);
/* NULL if the variable's value is valid (or unset); else the reason it is not, naming the
 * variable and the value. */
const char *hidet_nccl__setting_error(hn_setting_t id);
/* Numeric settings; a bad value is HIDET_NCCL_ERROR_INVALID_ARGUMENT with the reason as the
 * thread's message, and *out the default (for a release that must go on regardless). */
hidet_nccl_status_t hidet_nccl__setting_int(hn_setting_t id, int *out);
hidet_nccl_status_t hidet_nccl__setting_double(hn_setting_t id, double *out);
/* HIDET_NCCL_TIMEOUT in seconds (default 300). */
hidet_nccl_status_t hidet_nccl__timeout_seconds(double *seconds);
/* The longest deadline anything accepts, in seconds (about 115 days): past it, a deadline is
 * a mistake, and the clock arithmetic of the waits would overflow. */
#define HN_TIMEOUT_MAX_S 1e7
/* A caller's deadline: 0 is HIDET_NCCL_TIMEOUT's; a negative, NaN, infinite or absurd one (past
 * HN_TIMEOUT_MAX_S) is HIDET_NCCL_ERROR_INVALID_ARGUMENT naming what (e.g. "options->timeout_s"). */
hidet_nccl_status_t hidet_nccl__deadline_seconds(double given, const char *what, double *seconds);

/* ---------------------------------------------------------------- lifetime */

/* Adds fn to run (once per registration, in order) at the end of every hidet_nccl_finalize.
 * Registering the same fn twice keeps one. At most 8 hooks. */
void hidet_nccl__at_finalize(void (*fn)(void));

/* A communicator in one call (hidet_nccl_mpi_comm_init): a bootstrap of ops(params) whose
 * init has options->timeout_s as its deadline (0 or options NULL: $HIDET_NCCL_TIMEOUT), then
 * hidet_nccl_comm_init with options, then the bootstrap released. When a step fails its
 * message is kept over the release's. */
hidet_nccl_status_t hidet_nccl__comm_init_over(const hidet_nccl_bootstrap_t *ops, const void *params,
                                               const hidet_nccl_init_options_t *options, int *comm_id);

#endif
