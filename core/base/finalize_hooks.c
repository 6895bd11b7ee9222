/* Hooks run by hidet_nccl_finalize for the optional parts of the library. */
#include <pthread.h>

#include "core/base/finalize_hooks_int.h"

#define MAX_HOOKS 8

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static void (*g_hooks[MAX_HOOKS])(void);
static int g_count;

void hidet_nccl__at_finalize(void (*fn)(void)) {
    pthread_mutex_lock(&g_lock);
    int known = 0;
    for (int i = 0; i < g_count; i++) known |= g_hooks[i] == fn;
    if (!known && g_count < MAX_HOOKS) g_hooks[g_count++] = fn;
    pthread_mutex_unlock(&g_lock);
}

void hidet_nccl__run_finalize_hooks(void) {
    void (*hooks[MAX_HOOKS])(void);
    pthread_mutex_lock(&g_lock);
    int n = g_count;
    for (int i = 0; i < n; i++) hooks[i] = g_hooks[i];
    pthread_mutex_unlock(&g_lock);
    for (int i = 0; i < n; i++) hooks[i]();
}
