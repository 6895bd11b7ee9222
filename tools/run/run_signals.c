/* The signals hidet-nccl-run takes: those that would end it by default stop the job instead
 * (what each one does is run_stop.c's); they and SIGCHLD are blocked and read through a
 * signalfd, in order, by the main loop; the watchdog ignores them. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>

#include "tools/run/run.h"

/* The signals that would end the launcher by default (and so leave the rendezvous directory
 * behind): they stop the job, as Ctrl-C does. SIGPIPE is a reader of our output gone (`| head`):
 * the ranks get SIGTERM. SIGUSR1/SIGUSR2 are passed to the ranks and stop nothing themselves. */
static const int k_stopping[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGALRM, SIGPIPE, SIGUSR1, SIGUSR2};

/* Signals arrive through a signalfd, so the main loop sees them in order. */
int run_signal_fd(void) {
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    for (size_t i = 0; i < sizeof k_stopping / sizeof k_stopping[0]; i++) sigaddset(&mask, k_stopping[i]);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0) run_die(1, "signalfd: %s", strerror(errno));
    return sfd;
}

/* In the watchdog: deaf to the signals that stop a job (the launcher stops it, then says done). */
void run_ignore_stopping(void) {
    for (size_t i = 0; i < sizeof k_stopping / sizeof k_stopping[0]; i++) signal(k_stopping[i], SIG_IGN);
}
