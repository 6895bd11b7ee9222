#include "tests/proc_state.h"

#include <stdio.h>
#include <string.h>

char hn_test_proc_state(pid_t pid) {
    char path[64], stat[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL) return 0;
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = '\0';
    const char *end = strrchr(stat, ')'); /* "pid (comm) S ...": comm may hold anything */
    return end != NULL && end[1] == ' ' ? end[2] : 0;
}
