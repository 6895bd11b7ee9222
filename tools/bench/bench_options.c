/* hidet-nccl-bench's command line: nccl-tests' letters where the meaning is the same (-b -e -f
 * -n -w -c -d -o -r -a -z -G, and their long names), the bench's own as long options. Numbers
 * by the one grammar (core/base/number.h): decimal digits and nothing else, then the range; a
 * bad value, name or option ends the run with status 2 and a message naming the flag, before
 * CUDA or NCCL is touched. */
#include <getopt.h>
#include <string.h>

#include "core/base/number.h"
#include "tools/bench/bench.h"

#define MAX_SIZE_G 1024 /* sizes up to 1024G: beyond any GPU's memory */

static void bad_option(const char *flag, const char *value, const char *expected) __attribute__((noreturn));
static void bad_option(const char *flag, const char *value, const char *expected) {
    fprintf(stderr, "hidet-nccl-bench: %s '%s' is not %s\n", flag, value, expected);
    exit(2);
}

static void usage_error(const char *fmt, const char *what) __attribute__((noreturn));
static void usage_error(const char *fmt, const char *what) {
    fprintf(stderr, "hidet-nccl-bench: ");
    fprintf(stderr, fmt, what);
    fprintf(stderr, "\nusage: hidet-nccl-bench [-c COLL|all] [-b SIZE] [-e SIZE] [-f F] [-n N] [-w N] [-d TYPE] "
                    "[-o OP] [-r ROOT] ... (--help: every option)\n");
    exit(2);
}

/* A size in bytes: digits, then at most one suffix K, M or G (powers of 1024, either case), as
 * nccl-tests takes them; no fraction (1.5M is 1536K), in 1 .. 1024G. */
static size_t parse_size(const char *flag, const char *s) {
    char digits[24];
    size_t n = strlen(s), mult = 1;
    char last = n > 0 ? s[n - 1] : '\0';
    if (last == 'K' || last == 'k') mult = (size_t)1 << 10;
    else if (last == 'M' || last == 'm') mult = (size_t)1 << 20;
    else if (last == 'G' || last == 'g') mult = (size_t)1 << 30;
    if (mult > 1) n--;
    uint64_t v = 0;
    int ok = n < sizeof digits; /* longer: past the range anyway */
    if (ok) {
        memcpy(digits, s, n);
        digits[n] = '\0';
        ok = hn_parse_uint(digits, 1, ((uint64_t)MAX_SIZE_G << 30) / mult, &v) == HN_NUMBER_OK;
    }
    if (!ok)
        bad_option(flag, s, "a size in 1 .. 1024G bytes: digits, then at most one of K, M, G (x1024 each: 64K, "
                            "128M; no fraction, sign or space)");
    return (size_t)v * mult;
}

/* A whole number in lo .. hi (lo >= 0). */
static int parse_count(const char *flag, const char *s, int lo, int hi) {
    int v;
    if (hn_parse_int(s, lo, hi, &v) != HN_NUMBER_OK) {
        char expected[96];
        snprintf(expected, sizeof expected, "a whole number in %d .. %d (decimal digits only)", lo, hi);
        bad_option(flag, s, expected);
    }
    return v;
}

static const char *const k_coll_list = "all_reduce, broadcast, reduce, all_gather, reduce_scatter, all_to_all, gather, "
                                "scatter, send_recv or all";

/* Collective names, comma-separated, or "all": added to opt.colls. */
static void parse_collectives(const char *flag, const char *s, const char *also) {
    char expected[320];
    snprintf(expected, sizeof expected, "a collective (%s; a comma-separated list too)%s", k_coll_list, also);
    const char *p = s;
    do {
        size_t len = strcspn(p, ",");
        int k = 0;
        while (k < COLL_COUNT && !(strlen(bench_colls[k].name) == len && strncmp(p, bench_colls[k].name, len) == 0))
            k++;
        if (k < COLL_COUNT) {
            opt.colls |= 1u << k;
        } else if (len == 3 && strncmp(p, "all", 3) == 0) {
            opt.colls |= (1u << COLL_COUNT) - 1;
            opt.all_colls = 1;
        } else {
            bad_option(flag, s, expected);
        }
        p += len;
    } while (*p++ == ',');
}

/* -c: 0 or 1 (nccl-tests' check) or collective names (digits only: the check). */
static void parse_c(const char *flag, const char *s) {
    if (*s != '\0' && strspn(s, "0123456789") == strlen(s)) opt.check = parse_count(flag, s, 0, 1);
    else parse_collectives(flag, s, " nor 0 or 1 (-c's check, as nccl-tests')");
}

/* hidet's names and short names, and nccl-tests' half, float and double. */
static void parse_dtype(const char *flag, const char *s) {
    static const char *const aliases[][2] = {{"half", "float16"}, {"float", "float32"}, {"double", "float64"}};
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(s, aliases[i][0]) == 0) s = aliases[i][1];
    if (hidet_nccl_dtype_from_name(s, &opt.dtype) == HIDET_NCCL_SUCCESS) return;
    char expected[512] = "a data type (";
    for (int d = 0; d < HIDET_NCCL_NUM_DTYPES; d++) {
        const char *name;
        hidet_nccl_dtype_name((hidet_nccl_dtype_t)d, &name);
        strcat(expected, name);
        strcat(expected, d + 1 < HIDET_NCCL_NUM_DTYPES ? ", " : "; ");
    }
    strcat(expected, "short names as f32, bf16; nccl-tests' half, float, double)");
    bad_option(flag, s, expected);
}

static void parse_op(const char *flag, const char *s) {
    if (hidet_nccl_op_from_name(s, &opt.op) != HIDET_NCCL_SUCCESS)
        bad_option(flag, s, "a reduction op (sum, prod, max, min or avg)");
}

static void parse_root(const char *flag, const char *s) {
    opt.root = strcmp(s, "-1") == 0 ? -1 : -2;
    if (opt.root == -2 && hn_parse_int(s, 0, 1 << 20, &opt.root) != HN_NUMBER_OK)
        bad_option(flag, s, "a root rank in 0 .. 1048576, or -1 (each rank in turn)");
}

static const char k_usage[] =
    "usage: hidet-nccl-bench [options]     one process per GPU: under hidet-nccl-run -n N, mpirun -np N or\n"
    "                                      srun --mpi=pmix (no MPI linked: the library's bootstraps)\n"
    "\n"
    "Each collective through hidet-nccl against the same raw NCCL call on the same communicator and buffers,\n"
    "in nccl-tests' table: size, count, type, redop, root; out of place, then in place: time, algbw, busbw,\n"
    "#wrong; then raw NCCL's time and busbw, the library/raw busbw ratio and the library/raw time ratio.\n"
    "\n"
    "Collectives:\n"
    "  -c, --collective COLL   all_reduce (the default), broadcast, reduce, all_gather, reduce_scatter,\n"
    "                          all_to_all, gather, scatter, send_recv (a ring: send to the next rank, receive\n"
    "                          from the previous, in one group), or all (each in turn); a comma-separated list\n"
    "                          too. -c with digits is nccl-tests' check (below).\n"
    "\n"
    "As nccl-tests' options of the same letters:\n"
    "  -b, --minbytes SIZE     smallest size (8); digits, then at most one of K, M, G (x1024 each)\n"
    "  -e, --maxbytes SIZE     largest size (128M)\n"
    "  -f, --stepfactor F      each size F times the one before (2); F in (1, 1024]\n"
    "  -n, --iters N           calls per timing (20)\n"
    "  -w, --warmup_iters N    untimed calls of the library and of raw NCCL per size first (5)\n"
    "  -c, --check 0|1         1: every size checked exactly once, out of place and in place, before it is\n"
    "                          timed; #wrong counts the wrong elements over the ranks (1)\n"
    "  -d, --datatype TYPE     bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16,\n"
    "                          bfloat16, tfloat32, float32, float64, float8_e4m3, float8_e5m2, complex64,\n"
    "                          complex128 (float32); short names (f32, bf16) and nccl-tests' half, float,\n"
    "                          double too\n"
    "  -o, --op OP             sum, prod, max, min or avg (sum): all_reduce, reduce and reduce_scatter\n"
    "  -r, --root R            root of broadcast, reduce, gather and scatter (0); -1: each rank in turn\n"
    "  -a, --average 0..3      a time over the ranks: 0 rank 0's, 1 the mean (nccl-tests' default), 2 the\n"
    "                          least, 3 the greatest (the default here: a collective ends with its slowest rank)\n"
    "  -z, --blocking 0|1      1: each call waited for (stream synchronized) before the next one (0)\n"
    "  -G, --cudagraph N       N > 0: the -n calls of a timing captured in one CUDA graph, the time that of N\n"
    "                          replays (0)\n"
    "  -h, --help              this text\n"
    "\n"
    "The bench's own:\n"
    "  --reps N                fastest of N alternating runs of the library and raw NCCL per size (3)\n"
    "  --aa                    raw NCCL in the library's columns too (A/A): the ratios' own noise\n"
    "  --samples FILE          append every timed run there (rank 0): collective, size, in place, run,\n"
    "                          library and raw us per call, one line each (not with --modes)\n"
    "  --init-times            first, the time to a ready communicator: raw ncclCommInitRank four ways\n"
    "                          against the library's shared-file bootstrap (medians of 15)\n"
    "  --tmpdir DIR            where --init-times makes its rendezvous directory (/tmp; shared by every node)\n"
    "  --modes                 library memory (hidet_nccl_mem_alloc, registered AUTO) against raw NCCL plain,\n"
    "                          registered and window, in place; -c all_reduce, all_gather or reduce_scatter\n"
    "  --tune FILE             --modes, and append the crossover table measured to FILE (for\n"
    "                          HIDET_NCCL_TUNE_FILE)\n"
    "\n"
    "Moved to long options, as nccl-tests gives these letters other meanings: -r N (runs) is --reps N,\n"
    "-m is --modes, -t FILE is --tune FILE, -T DIR is --tmpdir DIR, -C COLL is -c COLL.\n"
    "\n"
    "busbw = algbw x nccl-tests' factor for n ranks: all_reduce 2(n-1)/n; all_gather, reduce_scatter,\n"
    "all_to_all, gather, scatter (n-1)/n, their size being count x n x element size (count: per rank);\n"
    "broadcast, reduce, send_recv 1. One rank: busbw 0 where the factor has (n-1).\n"
    "Exit status: 0; 1 when a check found a wrong value or a call failed; 2 for a bad command line.\n";

enum { OPT_CHECK = 256, OPT_COLLECTIVE, OPT_REPS, OPT_INIT_TIMES, OPT_TMPDIR, OPT_MODES, OPT_TUNE, OPT_AA, OPT_SAMPLES };

static const struct option k_long_options[] = {
    {"minbytes", required_argument, NULL, 'b'},  {"maxbytes", required_argument, NULL, 'e'},
    {"stepfactor", required_argument, NULL, 'f'}, {"iters", required_argument, NULL, 'n'},
    {"warmup_iters", required_argument, NULL, 'w'}, {"check", required_argument, NULL, OPT_CHECK},
    {"collective", required_argument, NULL, OPT_COLLECTIVE}, {"datatype", required_argument, NULL, 'd'},
    {"op", required_argument, NULL, 'o'},        {"root", required_argument, NULL, 'r'},
    {"average", required_argument, NULL, 'a'},   {"blocking", required_argument, NULL, 'z'},
    {"cudagraph", required_argument, NULL, 'G'}, {"help", no_argument, NULL, 'h'},
    {"reps", required_argument, NULL, OPT_REPS}, {"init-times", no_argument, NULL, OPT_INIT_TIMES},
    {"tmpdir", required_argument, NULL, OPT_TMPDIR}, {"modes", no_argument, NULL, OPT_MODES},
    {"tune", required_argument, NULL, OPT_TUNE}, {"aa", no_argument, NULL, OPT_AA},
    {"samples", required_argument, NULL, OPT_SAMPLES}, {NULL, 0, NULL, 0}};

/* An option getopt did not take: what it is, and where a moved one went. */
static void unknown_option(char **argv, int missing_argument) {
    static const char *const moved[][2] = {
        {"m", "library memory modes are --modes"},       {"t", "the tuning file is --tune FILE"},
        {"T", "the rendezvous directory is --tmpdir DIR"}, {"C", "the collective is -c COLL"},
        {"g", "one GPU per process: start N processes (hidet-nccl-run -n N)"}};
    char text[64];
    if (optopt != 0 && optopt < 256) snprintf(text, sizeof text, "-%c", optopt);
    else snprintf(text, sizeof text, "%.60s", argv[optind - 1]);
    if (missing_argument) usage_error("%s needs a value", text);
    for (size_t i = 0; i < sizeof moved / sizeof moved[0]; i++) {
        if (optopt == moved[i][0][0]) {
            fprintf(stderr, "hidet-nccl-bench: unknown option '%s' (nccl-tests' letter; %s)\n", text, moved[i][1]);
            exit(2);
        }
    }
    usage_error("unknown option '%s'", text);
}

/* How the user spelled the option just read: "--iters" or "-n". */
static const char *flag_name(int c, int long_index, char *buf, size_t bytes) {
    if (long_index >= 0) snprintf(buf, bytes, "--%s", k_long_options[long_index].name);
    else snprintf(buf, bytes, "-%c", c);
    return buf;
}

/* One option (c, as getopt_long gave it, spelled `flag`) into opt. */
static void take_option(int c, const char *flag, char **argv) {
    switch (c) {
        case 'b': opt.min_bytes = parse_size(flag, optarg); break;
        case 'e': opt.max_bytes = parse_size(flag, optarg); break;
        case 'f':
            if (hn_parse_decimal(optarg, 1, 1, 1024, &opt.factor) != HN_NUMBER_OK)
                bad_option(flag, optarg, "a factor in (1, 1024] (digits, optionally '.' and digits: 2, 1.5)");
            break;
        case 'n': opt.iters = parse_count(flag, optarg, 1, 1000000); break;
        case 'w': opt.warmup = parse_count(flag, optarg, 0, 1000000); break;
        case 'c': parse_c(flag, optarg); break;
        case OPT_CHECK: opt.check = parse_count(flag, optarg, 0, 1); break;
        case OPT_COLLECTIVE: parse_collectives(flag, optarg, ""); break;
        case 'd': parse_dtype(flag, optarg); break;
        case 'o': parse_op(flag, optarg); break;
        case 'r': parse_root(flag, optarg); break;
        case 'a': opt.average = parse_count(flag, optarg, 0, 3); break;
        case 'z': opt.blocking = parse_count(flag, optarg, 0, 1); break;
        case 'G': opt.graph_launches = parse_count(flag, optarg, 0, 1000000); break;
        case OPT_REPS: opt.reps = parse_count(flag, optarg, 1, 1000); break;
        case OPT_INIT_TIMES: opt.init_times = 1; break;
        case OPT_AA: opt.aa = 1; break;
        case OPT_SAMPLES: opt.samples = optarg; break;
        case OPT_TMPDIR: opt.tmpdir = optarg; break;
        case OPT_MODES: opt.modes = 1; break;
        case OPT_TUNE: opt.tune_file = optarg, opt.modes = 1; break;
        case 'h': fputs(k_usage, stdout); exit(0);
        default: unknown_option(argv, c == ':');
    }
}

/* What the options say together: sizes in order, -G without -z, --modes' collectives, and a
 * named reduction the data type cannot do (with -c all that collective is skipped instead). */
static void check_together(void) {
    if (opt.min_bytes > opt.max_bytes) {
        fprintf(stderr, "hidet-nccl-bench: -b %zu bytes is more than -e %zu bytes\n", opt.min_bytes, opt.max_bytes);
        exit(2);
    }
    if (opt.graph_launches > 0 && opt.blocking)
        usage_error("%s", "-G (CUDA graph replays) and -z 1 (a wait after each call) do not go together");
    if (opt.colls == 0) opt.colls = 1u << COLL_ALL_REDUCE;
    unsigned mem_colls = 1u << COLL_ALL_REDUCE | 1u << COLL_ALL_GATHER | 1u << COLL_REDUCE_SCATTER;
    if (opt.aa && opt.modes) usage_error("%s is for the collectives' table, not --modes or --tune", "--aa");
    if (opt.samples != NULL && opt.modes) usage_error("%s is for the collectives' table, not --modes or --tune", "--samples");
    if (opt.modes && ((opt.colls & ~mem_colls) != 0 || (opt.colls & (opt.colls - 1)) != 0))
        usage_error("%s", "--modes takes one collective: -c all_reduce, all_gather or reduce_scatter");
    hidet_nccl_reduction_t red;
    if (opt.all_colls || hidet_nccl_reduction(opt.dtype, opt.op, &red) == HIDET_NCCL_SUCCESS) return;
    for (int k = 0; k < COLL_COUNT; k++) {
        if ((opt.colls >> k & 1u) && bench_colls[k].reduces) {
            char why[512];
            snprintf(why, sizeof why, "%s", hidet_nccl_last_error()); /* before the next call clears it */
            const char *dname = "?", *oname = "?";
            hidet_nccl_dtype_name(opt.dtype, &dname);
            hidet_nccl_op_name(opt.op, &oname);
            fprintf(stderr, "hidet-nccl-bench: -c %s -d %s -o %s: %s\n", bench_colls[k].name, dname, oname, why);
            exit(2);
        }
    }
}

void bench_parse_options(int argc, char **argv) {
    opterr = 0; /* messages of our own, naming what moved where */
    for (;;) {
        int long_index = -1;
        int c = getopt_long(argc, argv, ":b:e:f:n:w:c:d:o:r:a:z:G:h", k_long_options, &long_index);
        if (c == -1) break;
        char flag[48];
        take_option(c, flag_name(c, long_index, flag, sizeof flag), argv);
    }
    if (optind < argc) usage_error("unexpected argument '%s'", argv[optind]);
    check_together();
}
