/* Deadlines and waits for the tests, so that a suite that passes on a quiet machine passes on a
 * busy one, under the sanitizers and under valgrind.
 *
 * A test never sleeps to let something happen: it waits for the thing itself (a file, a line, a
 * byte on a pipe, a flag, a port that accepts) and gives up only after a deadline far beyond what
 * the work needs, saying what it waited for. A deadline a test gives the product and expects to
 * be met is
 *     hn_test_deadline(per_rank_s, ranks, floor_s) = max(floor_s, per_rank_s * ranks / cores) * slowdown
 * per_rank_s: what one rank's share of the work may take on one core of a machine also busy with
 * other work (a generous multiple of a quiet machine's time); cores: the CPUs this process may run
 * on; slowdown: hn_test_slowdown(). A deadline the test expects to pass (a rank that never comes,
 * a call that must time out) is the scenario, not a bound on the work: it is not scaled, and what
 * the test asserts must not depend on the machine beating it. */
#ifndef HIDET_NCCL_TESTS_DEADLINE_H_
#define HIDET_NCCL_TESTS_DEADLINE_H_

/* How many times slower than a quiet machine's optimized build this run may be:
 * HIDET_NCCL_TEST_SLOWDOWN when set (.bazelrc sets it for --config=asan, ubsan and san), else 1;
 * and at least 3 in a build with AddressSanitizer (known when compiled), at least 20 under valgrind. */
double hn_test_slowdown(void);
/* The CPUs this process may run on (at least 1). */
int hn_test_cores(void);
/* max(floor_s, per_rank_s * ranks / hn_test_cores()) * hn_test_slowdown(): see above. */
double hn_test_deadline(double per_rank_s, int ranks, double floor_s);
/* seconds * hn_test_slowdown(): the deadline of a wait for one thing. */
double hn_test_scaled(double seconds);
/* Seconds of the monotonic clock. */
double hn_test_now(void);
/* setenv(name, seconds as a number) (HIDET_NCCL_TIMEOUT; the caller reloads the settings). */
void hn_test_setenv_seconds(const char *name, double seconds);

/* A wait for something the test can look at: hn_wait_begin, then hn_wait_more(&w, ready) in a loop
 * until it returns 0. */
typedef struct {
    double start, end;
    const char *what;
    int ok; /* 1 once ready was seen */
} hn_wait_t;
/* A wait for `what` (named in the message when it fails) of hn_test_scaled(seconds) at most. */
hn_wait_t hn_wait_begin(double seconds, const char *what);
/* 0 when ready (w->ok = 1) or when the deadline has passed (then it says on stderr what it waited
 * for and how long); else sleeps a poll interval (1 .. 10 ms) and returns 1. */
int hn_wait_more(hn_wait_t *w, int ready);
/* Waits until `cond` holds, at most hn_test_scaled(seconds); sets held to 1 if it held, else 0. */
#define HN_WAIT_FOR(held, cond, seconds, what)                \
    do {                                                      \
        hn_wait_t hn_w_ = hn_wait_begin((seconds), (what));   \
        while (hn_wait_more(&hn_w_, (cond))) {                \
        }                                                     \
        (held) = hn_w_.ok;                                    \
    } while (0)

/* A pipe as a meeting point between a test and the processes it forked: each side that has reached
 * its point writes a byte (hn_test_tell); the side that waits for `count` of them reads them,
 * at most hn_test_scaled(seconds), and says what it waited for when they do not come. */
void hn_test_tell(int fd);
int hn_test_await(int fd, int count, double seconds, const char *what);

#endif
