/* hidet-nccl-trace [OPTIONS] DIR|FILE...: reads the flight recorder dumps of every rank
 * (hidet-nccl-trace.*.jsonl) and says in its first line where the ranks diverged, then the
 * detail; or, with --json, the same as one JSON document. Exit status: 0 nothing wrong found,
 * 1 something wrong found, 2 usage or input error (a bad option, a bad --ranks list, a --comm
 * key no dump holds, no dump could be read). What it prints of the dumps and their file names
 * is escaped (tr_say; the JSON is ASCII). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/trace/trace_read.h"

#define USAGE_ERROR 2

static void usage(FILE *out) {
    fprintf(out,
            "usage: hidet-nccl-trace [OPTIONS] DIR | FILE...\n"
            "  Reads the flight recorder dumps (hidet-nccl-trace.<rank>.jsonl) in DIR, or the files given,\n"
            "  and prints where the ranks diverged: first one line, the most telling finding over all\n"
            "  communicators (ranks that disagree about an operation, a rank that stopped behind the others,\n"
            "  a rank with no dump, work not completed), then each communicator's ranks and their last\n"
            "  operations.\n"
            "\n"
            "options:\n"
            "  -h, --help      this text\n"
            "  --json          the same as one JSON document on stdout: \"verdict\" (its kind: divergence,\n"
            "                  behind, missing_dump, not_completed or consistent; seq, ranks, communicator,\n"
            "                  field), then each communicator's verdict, ranks and last operations\n"
            "                  (docs/flight_recorder.md says every field)\n"
            "  --ranks LIST    only the dumps of these ranks (the rank in a dump's header, as in its file\n"
            "                  name); LIST is ranks and ranges, e.g. 0,2-5; a rank listed with no dump is\n"
            "                  reported missing, the ranks not listed are not\n"
            "  --comm KEY      only the communicator KEY (8 hex digits, as the report prints it)\n"
            "  --              the end of the options: what follows is paths\n"
            "  Options may come before or after the paths; a value may also follow '=' (--ranks=0,2-5).\n"
            "\n"
            "exit status:\n"
            "  0  nothing wrong found (every communicator consistent); a file that is not a readable dump\n"
            "     is skipped, said on stderr, and changes nothing here\n"
            "  1  something wrong found: ranks disagree, a rank behind, a rank with no dump, work not\n"
            "     completed\n"
            "  2  usage or input error: an unknown option, a bad --ranks list, a --comm key no dump holds,\n"
            "     no dump could be read (nothing on stdout)\n");
}

typedef struct {
    int json;
    const char *ranks; /* --ranks, as given */
    char comm[9];      /* --comm, lower case; "" if not given */
    char **paths;      /* the arguments that are not options, in order */
    int npaths;
} options_t;

/* The value of option name at argv[*i] ("--name VALUE" or "--name=VALUE"), or NULL (said). */
static const char *value_of(int argc, char **argv, int *i, const char *name, const char *seen) {
    const char *arg = argv[*i], *eq = strchr(arg, '=');
    if (seen != NULL) {
        tr_say(stderr, "hidet-nccl-trace: %s given twice", name);
        return NULL;
    }
    if (eq != NULL) return eq + 1;
    if (*i + 1 >= argc) {
        tr_say(stderr, "hidet-nccl-trace: %s needs a value (see --help)", name);
        return NULL;
    }
    return argv[++*i];
}

/* Whether arg is option name, alone or with "=VALUE". */
static int is_option(const char *arg, const char *name) {
    size_t n = strlen(name);
    return strncmp(arg, name, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

/* argv into o (options anywhere; after "--" only paths): 0, 1 for --help (printed), or
 * USAGE_ERROR (said). */
static int parse_options(int argc, char **argv, options_t *o) {
    const char *comm = NULL;
    int only_paths = 0;
    o->paths = argv + 1; /* paths are gathered in place: argv[1 ..] */
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        if (only_paths || a[0] != '-' || a[1] == '\0') {
            o->paths[o->npaths++] = a;
        } else if (!strcmp(a, "--")) {
            only_paths = 1;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 1;
        } else if (!strcmp(a, "--json")) {
            o->json = 1;
        } else if (is_option(a, "--ranks")) {
            if ((o->ranks = value_of(argc, argv, &i, "--ranks", o->ranks)) == NULL) return USAGE_ERROR;
        } else if (is_option(a, "--comm")) {
            if ((comm = value_of(argc, argv, &i, "--comm", comm)) == NULL) return USAGE_ERROR;
        } else {
            tr_say(stderr, "hidet-nccl-trace: unknown option '%s' (see --help)", a);
            return USAGE_ERROR;
        }
    }
    if (o->npaths == 0) {
        usage(stderr);
        return USAGE_ERROR;
    }
    if (comm != NULL) {
        size_t n = strlen(comm);
        for (size_t k = 0; k < n && k < 8; k++) o->comm[k] = (char)tolower((unsigned char)comm[k]);
        if (n != 8 || strspn(o->comm, "0123456789abcdef") != 8) {
            o->comm[0] = '\0';
            tr_say(stderr, "hidet-nccl-trace: --comm '%s': a communicator's key is 8 hex digits, as the report "
                   "prints it (e.g. be366285)", comm);
            return USAGE_ERROR;
        }
    }
    return 0;
}

/* Whether some dump holds communicator key; if none does, says so with the keys they hold (the
 * first 64). */
static int key_present(const tr_set_t *set, const char *key) {
    enum { SHOWN = 64 };
    char keys[SHOWN][9], list[SHOWN * 10 + 8] = "";
    size_t nkeys = 0;
    int more = 0;
    for (size_t d = 0; d < set->ndumps; d++)
        for (size_t c = 0; c < set->dumps[d].ncomms; c++) {
            const char *k = set->dumps[d].comms[c].key;
            if (!strcmp(k, key)) return 1;
            size_t j = 0;
            while (j < nkeys && strcmp(keys[j], k)) j++;
            if (j < nkeys) continue;
            if (nkeys == SHOWN) more = 1;
            else memcpy(keys[nkeys++], k, sizeof keys[0]);
        }
    for (size_t j = 0; j < nkeys; j++) snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", j ? ", " : "", keys[j]);
    tr_say(stderr, "hidet-nccl-trace: --comm %s: none of the %zu dump(s) read holds that communicator; the keys "
           "they hold: %s%s", key, set->ndumps, nkeys == 0 ? "none" : list, more ? ", ..." : "");
    return 0;
}

int main(int argc, char **argv) {
    options_t o = {0};
    int r = parse_options(argc, argv, &o);
    if (r != 0) return r == 1 ? 0 : r;
    tr_ranks_t listed = {0};
    if (o.ranks != NULL) {
        char why[160];
        if (tr_parse_ranks(o.ranks, &listed, why, sizeof why) != 0) {
            tr_say(stderr, "hidet-nccl-trace: --ranks '%s': %s (a list of ranks and ranges, e.g. 0,2-5)", o.ranks, why);
            return USAGE_ERROR;
        }
    }
    tr_set_t set = {0};
    int refused = 0;
    for (int i = 0; i < o.npaths; i++) tr_read_path(&set, o.paths[i], stderr, &refused);
    int status = USAGE_ERROR;
    tr_analysis_t *a = NULL;
    if (set.ndumps == 0) {
        tr_say(stderr, "hidet-nccl-trace: no dump could be read%s", refused ? "" : " (none found)");
        goto done;
    }
    if (o.comm[0] && !key_present(&set, o.comm)) goto done; /* of every dump read: a chosen rank may have none */
    if (o.ranks != NULL) tr_keep_ranks(&set, &listed, stderr);
    if ((a = tr_analyze(&set, o.ranks ? &listed : NULL, o.comm[0] ? o.comm : NULL)) == NULL) {
        tr_say(stderr, "hidet-nccl-trace: out of memory");
        goto done;
    }
    if (!o.json) tr_print_text(a, stdout);
    else if (tr_print_json(a, refused, stdout) != 0) {
        tr_say(stderr, "hidet-nccl-trace: out of memory writing the JSON");
        goto done;
    }
    status = tr_analysis_bad(a);
done:
    tr_analysis_free(a);
    tr_free(&set);
    tr_ranks_free(&listed);
    return status;
}
