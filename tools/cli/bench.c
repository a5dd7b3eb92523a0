/* gradwire bench: a quick check of encode, decode and decode_accumulate of a
 * few codecs (1M elements by default): the best of repeated calls, in ms and
 * GB/s of float32 (4n bytes per call). Not the benchmark suite: that is
 * scripts/bench.sh (bench/, docs/performance.md). Progress goes to stderr. */
#include <stdlib.h>
#include <string.h>

#include <gradwire.h>

#include "cli.h"

#define MAX_SIZES 16
#define MAX_CODECS 32
static const char *const default_codecs[] = {"identity", "fp16", "sign", "scaled_sign", "topk",
                                             "qsgd"};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: gradwire bench [--quick] [--sizes N[,N...]] [--codecs NAME[,NAME...]]\n"
            "A quick check, not the benchmark suite (for that: bash scripts/bench.sh).\n"
            "  --quick          time each call for at least 0.02 s instead of 0.2 s\n"
            "  --sizes LIST     elements per tensor (default 1M; K, M, G suffixes)\n"
            "  --codecs LIST    codecs with default parameters (default\n"
            "                   identity,fp16,sign,scaled_sign,topk,qsgd; see gradwire codecs)\n"
            "Prints, per codec and size, the frame size and the best time of encode, decode and\n"
            "decode_accumulate in ms and in GB/s of float32 (4n bytes per call).\n");
}

typedef enum { OP_ENCODE, OP_DECODE, OP_ACCUMULATE } bench_op;

typedef struct bench_case {
    const gw_codec_spec *spec;
    const float *x;
    float *out;
    unsigned char *frame;
    size_t capacity, written;
    uint64_t n;
} bench_case;

static gw_status run_op(bench_case *c, bench_op op)
{
    switch (op) {
    case OP_ENCODE:
        return gw_encode(c->spec, NULL, c->x, GW_DTYPE_F32, c->n, c->frame, c->capacity,
                         &c->written);
    case OP_DECODE:
        return gw_decode(c->frame, c->written, c->out, c->n, NULL);
    default:
        return gw_decode_accumulate(c->frame, c->written, 1e-6f, c->out, c->n);
    }
}

/* Best seconds per call over calls adding up to at least min_time (3 at least). */
static gw_status time_op(bench_case *c, bench_op op, double min_time, double *best)
{
    double start = cli_now(), t0, t;
    int reps = 0;
    gw_status st;
    *best = 1e300;
    do {
        t0 = cli_now();
        st = run_op(c, op);
        t = cli_now();
        if (st != GW_OK) return st;
        if (t - t0 < *best) *best = t - t0;
        ++reps;
    } while (reps < 3 || t - start < min_time);
    return GW_OK;
}

/* Split a comma-separated list in place into at most `max` items. */
static int split_list(char *text, char **items, int max)
{
    int count = 0;
    char *tok = strtok(text, ",");
    while (tok) {
        if (count == max) return -1;
        items[count++] = tok;
        tok = strtok(NULL, ",");
    }
    return count;
}

static int bench_one(const char *name, uint64_t n, double min_time, int index, int total)
{
    static const char *const op_names[] = {"encode", "decode", "decode_accumulate"};
    gw_codec_spec *spec = NULL;
    gw_codec_id id;
    bench_case c;
    float *x = NULL;
    double best[3];
    gw_status st;
    uint64_t i, state = 0x9E3779B97F4A7C15ull;
    int op, rc = CLI_OK;
    memset(&c, 0, sizeof c);
    st = gw_codec_from_name(name, &id);
    if (st == GW_OK) st = gw_codec_spec_create(&spec, id);
    if (st == GW_OK) st = gw_encode_bound(spec, n, &c.capacity);
    if (st != GW_OK) {
        fprintf(stderr, "gradwire bench: %s: %s: %s\n", name, gw_status_name(st),
                gw_status_str(st));
        gw_codec_spec_free(spec);
        return CLI_USAGE;
    }
    c.spec = spec;
    c.n = n;
    c.x = x = (float *)malloc(n ? (size_t)n * sizeof(float) : 1);
    c.out = (float *)calloc(n ? (size_t)n : 1, sizeof(float));
    c.frame = (unsigned char *)malloc(c.capacity);
    if (!x || !c.out || !c.frame) {
        fprintf(stderr, "gradwire bench: out of memory for %llu elements\n", (unsigned long long)n);
        rc = CLI_BAD;
        goto done;
    }
    for (i = 0; i < n; ++i) { /* deterministic values in [-1, 1) */
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)(state >> 40) / 8388608.0f - 1.0f;
    }
    for (op = 0; op < 3; ++op) {
        fprintf(stderr, "bench [%d/%d] %s n=%llu: %s\n", index, total, name, (unsigned long long)n,
                op_names[op]);
        st = time_op(&c, (bench_op)op, min_time, &best[op]);
        if (st != GW_OK) {
            fprintf(stderr, "gradwire bench: %s %s: %s: %s\n", name, op_names[op],
                    gw_status_name(st), gw_status_str(st));
            rc = CLI_BAD;
            goto done;
        }
    }
    printf("%-13s %10llu %12lu", name, (unsigned long long)n, (unsigned long)c.written);
    for (op = 0; op < 3; ++op)
        printf(" %10.3f %7.2f", best[op] * 1e3, 4.0 * (double)n / best[op] / 1e9);
    printf("\n");
    fflush(stdout);
done:
    free(x);
    free(c.out);
    free(c.frame);
    gw_codec_spec_free(spec);
    return rc;
}

int cmd_bench(int argc, char **argv)
{
    char *size_items[MAX_SIZES], *codec_items[MAX_CODECS];
    uint64_t sizes[MAX_SIZES];
    const char *codecs[MAX_CODECS];
    int nsizes = 1, ncodecs = (int)(sizeof default_codecs / sizeof default_codecs[0]);
    double min_time = 0.2;
    int i, j, rc = CLI_OK;
    sizes[0] = (uint64_t)1 << 20;
    for (i = 0; i < ncodecs; ++i) codecs[i] = default_codecs[i];
    for (i = 0; i < argc; ++i) {
        if (cli_is_help(argv[i])) {
            usage(stdout);
            return CLI_OK;
        } else if (strcmp(argv[i], "--quick") == 0) {
            min_time = 0.02;
        } else if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
            nsizes = split_list(argv[++i], size_items, MAX_SIZES);
            if (nsizes <= 0) {
                fprintf(stderr, "gradwire bench: --sizes: 1 to %d sizes\n", MAX_SIZES);
                return CLI_USAGE;
            }
            for (j = 0; j < nsizes; ++j) {
                if (cli_parse_count(size_items[j], "--sizes", &sizes[j])) return CLI_USAGE;
                if (sizes[j] == 0 || sizes[j] > ((uint64_t)1 << 30)) {
                    fprintf(stderr, "gradwire bench: --sizes: each from 1 to 1G elements\n");
                    return CLI_USAGE;
                }
            }
        } else if (strcmp(argv[i], "--codecs") == 0 && i + 1 < argc) {
            ncodecs = split_list(argv[++i], codec_items, MAX_CODECS);
            if (ncodecs <= 0) {
                fprintf(stderr, "gradwire bench: --codecs: 1 to %d codecs\n", MAX_CODECS);
                return CLI_USAGE;
            }
            for (j = 0; j < ncodecs; ++j) codecs[j] = codec_items[j];
        } else {
            fprintf(stderr, "gradwire bench: unknown or incomplete option '%s'\n", argv[i]);
            usage(stderr);
            return CLI_USAGE;
        }
    }
    for (i = 0; i < ncodecs; ++i) {
        gw_codec_id id;
        gw_status st = gw_codec_from_name(codecs[i], &id);
        if (st != GW_OK) {
            fprintf(stderr, "gradwire bench: %s: %s: %s\n", codecs[i], gw_status_name(st),
                    gw_status_str(st));
            return CLI_USAGE;
        }
    }
    printf("gradwire bench: a quick check, not the benchmark suite (run bash scripts/bench.sh;\n"
           "docs/performance.md). SIMD target %s; best of calls over %.2f s; GB/s of float32\n"
           "(4n bytes per call)\n",
           gw_simd_target_name(gw_simd_active_target()), min_time);
    printf("%-13s %10s %12s %10s %7s %10s %7s %10s %7s\n", "codec", "elements", "frame bytes",
           "encode ms", "GB/s", "decode ms", "GB/s", "accum ms", "GB/s");
    fflush(stdout);
    for (j = 0; j < nsizes && rc == CLI_OK; ++j)
        for (i = 0; i < ncodecs && rc == CLI_OK; ++i)
            rc = bench_one(codecs[i], sizes[j], min_time, j * ncodecs + i + 1, nsizes * ncodecs);
    if (rc == CLI_OK) fprintf(stderr, "bench: done\n");
    return rc;
}
