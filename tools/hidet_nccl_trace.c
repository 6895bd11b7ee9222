/* hidet-nccl-trace DIR|FILE...: reads the flight recorder dumps of every rank
 * (hidet-nccl-trace.*.jsonl) and says in its first line where the ranks diverged, then the
 * detail. Exit status: 0 nothing wrong found, 1 something wrong found, 2 no dump could be
 * read (usage, a missing directory, a directory with no dump, every file refused). What it
 * prints of the dumps and their file names is escaped (tr_say). */
#include <stdio.h>
#include <string.h>

#include "tools/trace_read.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: hidet-nccl-trace DIR | FILE...\n"
            "  Reads the flight recorder dumps (hidet-nccl-trace.<rank>.jsonl) in DIR, or the files given,\n"
            "  and prints where the ranks diverged: first one line (ranks that disagree about an operation,\n"
            "  a rank that stopped behind the others, a rank with no dump, work not completed), then each\n"
            "  communicator's ranks and their last operations.\n"
            "  Exit 0: nothing wrong found; 1: something wrong found; 2: no dump could be read.\n");
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    tr_set_t set = {0};
    int refused = 0;
    for (int i = 1; i < argc; i++) tr_read_path(&set, argv[i], stderr, &refused);
    if (set.ndumps == 0) {
        tr_say(stderr, "hidet-nccl-trace: no dump could be read%s", refused ? "" : " (none found)");
        return 2;
    }
    int bad = tr_report(&set, stdout);
    tr_free(&set);
    return bad;
}
