/* SIGUSR1 makes a flight recorder dump (with a trace directory set): the handler only writes
 * a byte to a pipe (async-signal-safe); a thread of the library reads it and dumps. A handler
 * the program installed before is still called; a program that ignores SIGUSR1 keeps it
 * ignored (no handler is installed). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "core/base/log_int.h"
#include "core/trace/trace_int.h"

static int g_pipe[2] = {-1, -1};
static struct sigaction g_previous;

static void on_usr1(int sig, siginfo_t *info, void *context) {
    int saved = errno;
    char byte = 'u';
    if (write(g_pipe[1], &byte, 1) < 0) { /* the pipe is full: a dump is coming anyway */
    }
    errno = saved;
    if (g_previous.sa_flags & SA_SIGINFO) {
        if (g_previous.sa_sigaction != NULL) g_previous.sa_sigaction(sig, info, context);
    } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
        g_previous.sa_handler(sig);
    }
}

static void *dump_thread(void *arg) {
    (void)arg;
    char byte;
    for (;;) {
        ssize_t got = read(g_pipe[0], &byte, 1);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return NULL;
        char path[4200];
        if (hidet_nccl__trace_dump(NULL, "SIGUSR1", path, sizeof path) == HIDET_NCCL_SUCCESS)
            HN_INFO("flight recorder dumped to %s (SIGUSR1)", path);
        else
            HN_WARN("flight recorder (SIGUSR1): %s", hidet_nccl_last_error());
    }
}

static void install(void) {
    if (hidet_nccl__setting_str(HN_SETTING_TRACE_DIR) == NULL) return;
    struct sigaction now;
    if (sigaction(SIGUSR1, NULL, &now) != 0 || (!(now.sa_flags & SA_SIGINFO) && now.sa_handler == SIG_IGN)) return;
    if (pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        HN_WARN("flight recorder: pipe2: %s; SIGUSR1 makes no dump", strerror(errno));
        return;
    }
    /* The thread blocks every signal: they go to the program's threads, as before. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t thread;
    int e = pthread_create(&thread, NULL, dump_thread, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e != 0) {
        HN_WARN("flight recorder: pthread_create: %s; SIGUSR1 makes no dump", strerror(e));
        return;
    }
    pthread_detach(thread);
    int flags = fcntl(g_pipe[0], F_GETFL);
    fcntl(g_pipe[0], F_SETFL, flags & ~O_NONBLOCK); /* the thread waits; the handler never does */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_usr1;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    g_previous = now;
    sigaction(SIGUSR1, &sa, NULL);
    HN_INFO("flight recorder: SIGUSR1 dumps into %s", hidet_nccl__setting_str(HN_SETTING_TRACE_DIR));
}

void hidet_nccl__trace_signal_install(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, install);
}
