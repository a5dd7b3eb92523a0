/* gradwire demo: the README's C example grown a little. One worker and one
 * server run two-way compressed SGD (error feedback on both sides, no
 * momentum: with momentum 0.9 top-k at 5% overshoots on this problem) on f(x) = ||x - t||^2 / 2 with each of a few codecs; printed:
 * bytes per frame each way and ||x - t|| / ||t|| along the way. Deterministic
 * (no clock in the output): the Python command prints the same bytes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gradwire.h>

#include "cli.h"

#define CHECKPOINTS 5

typedef struct demo_codec {
    const char *label;
    gw_codec_id codec;
    gw_param param; /* 0: defaults only */
    int64_t value;
} demo_codec;

static const demo_codec demo_codecs[] = {
    {"identity", GW_CODEC_IDENTITY, (gw_param)0, 0},
    {"fp16", GW_CODEC_FP16, (gw_param)0, 0},
    {"scaled_sign block_size=100", GW_CODEC_SCALED_SIGN, GW_PARAM_BLOCK_SIZE, 100},
    {"topk density_ppm=50000", GW_CODEC_TOPK, GW_PARAM_DENSITY_PPM, 50000},
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: gradwire demo [--n N] [--steps S] [--lr X]\n"
            "One worker and one server, two-way compressed SGD with error feedback (no momentum)\n"
            "on f(x) = ||x - t||^2 / 2 (the README's C example), once per codec.\n"
            "  --n N       elements (default 100000; K, M suffixes)\n"
            "  --steps S   steps (default 100)\n"
            "  --lr X      learning rate (default 0.1)\n"
            "Prints the bytes of each frame (worker to server, server to worker), the ratio to\n"
            "float32 and ||x - t|| / ||t|| at five points of the run.\n");
}

static double distance(const float *x, const float *t, uint64_t n)
{
    double s = 0;
    uint64_t i;
    for (i = 0; i < n; ++i) {
        double d = (double)x[i] - (double)t[i];
        s += d * d;
    }
    return sqrt(s);
}

#define TRY(call)                                                                       \
    do {                                                                                \
        st = (call);                                                                    \
        if (st != GW_OK) {                                                              \
            fprintf(stderr, "gradwire demo: %s: %s: %s\n", #call, gw_status_name(st),   \
                    gw_status_str(st));                                                 \
            goto done;                                                                  \
        }                                                                               \
    } while (0)

static int run_codec(const demo_codec *dc, const float *t, uint64_t n, int steps, float lr,
                     const int *marks, float *x, float *grad)
{
    gw_worker_options wo = GW_WORKER_OPTIONS_INIT;
    gw_server_options so = GW_SERVER_OPTIONS_INIT;
    gw_codec_spec *spec = NULL;
    gw_worker *worker = NULL;
    gw_server *server = NULL;
    unsigned char *wframe = NULL, *sframe = NULL;
    size_t wcap = 0, scap = 0, wsize = 0, ssize = 0;
    uint64_t wbytes = 0, sbytes = 0, i;
    double norm_t = distance(t, x, n), dist[CHECKPOINTS]; /* x is all zero here */
    gw_status st = GW_OK;
    int step, m = 0;
    TRY(gw_codec_spec_create(&spec, dc->codec));
    if (dc->param) TRY(gw_codec_spec_set(spec, dc->param, dc->value));
    wo.n = n;
    wo.momentum = GW_MOMENTUM_NONE;
    wo.mu = 0.0f;
    so.total = so.length = n;
    so.num_workers = 1;
    TRY(gw_worker_create(&worker, &wo, spec));
    TRY(gw_server_create(&server, &so, spec, spec));
    TRY(gw_worker_frame_bound(worker, &wcap));
    TRY(gw_server_frame_bound(server, &scap));
    wframe = (unsigned char *)malloc(wcap);
    sframe = (unsigned char *)malloc(scap);
    if (!wframe || !sframe) {
        st = GW_ERR_OUT_OF_MEMORY;
        fprintf(stderr, "gradwire demo: out of memory\n");
        goto done;
    }
    for (step = 1; step <= steps; ++step) {
        for (i = 0; i < n; ++i) grad[i] = x[i] - t[i];
        TRY(gw_worker_step(worker, grad, GW_DTYPE_F32, n, lr, wframe, wcap, &wsize));
        TRY(gw_server_push(server, wframe, wsize));
        TRY(gw_server_step(server, lr, sframe, scap, &ssize));
        TRY(gw_decode_accumulate(sframe, ssize, -lr, x, n));
        wbytes += wsize;
        sbytes += ssize;
        while (m < CHECKPOINTS && marks[m] == step) dist[m++] = distance(x, t, n) / norm_t;
    }
    printf("%-27s %9llu %9llu %7.1fx", dc->label, (unsigned long long)(wbytes / (uint64_t)steps),
           (unsigned long long)(sbytes / (uint64_t)steps),
           4.0 * (double)n * (double)steps / (double)wbytes);
    for (m = 0; m < CHECKPOINTS; ++m) printf(" %8.4f", dist[m]);
    printf("\n");
done:
    free(wframe);
    free(sframe);
    gw_worker_free(worker);
    gw_server_free(server);
    gw_codec_spec_free(spec);
    return st == GW_OK ? CLI_OK : CLI_BAD;
}

int cmd_demo(int argc, char **argv)
{
    uint64_t n = 100000, steps64 = 100, i;
    double lr = 0.1;
    int marks[CHECKPOINTS], m, rc = CLI_OK;
    size_t c;
    float *t, *x, *grad;
    for (m = 0; m < argc; ++m) {
        if (cli_is_help(argv[m])) {
            usage(stdout);
            return CLI_OK;
        } else if (strcmp(argv[m], "--n") == 0 && m + 1 < argc) {
            if (cli_parse_count(argv[++m], "--n", &n)) return CLI_USAGE;
        } else if (strcmp(argv[m], "--steps") == 0 && m + 1 < argc) {
            if (cli_parse_count(argv[++m], "--steps", &steps64)) return CLI_USAGE;
        } else if (strcmp(argv[m], "--lr") == 0 && m + 1 < argc) {
            char *end = NULL;
            lr = strtod(argv[++m], &end);
            if (*end != '\0' || !(lr > 0 && lr < 100)) {
                fprintf(stderr, "gradwire demo: --lr: expected a number in (0, 100)\n");
                return CLI_USAGE;
            }
        } else {
            fprintf(stderr, "gradwire demo: unknown or incomplete option '%s'\n", argv[m]);
            usage(stderr);
            return CLI_USAGE;
        }
    }
    if (n < 1 || n > ((uint64_t)1 << 26) || steps64 < 1 || steps64 > 100000) {
        fprintf(stderr, "gradwire demo: --n from 1 to 64M, --steps from 1 to 100000\n");
        return CLI_USAGE;
    }
    for (m = 0; m < CHECKPOINTS; ++m) /* ceil((m + 1) * steps / CHECKPOINTS) */
        marks[m] = (int)(((uint64_t)(m + 1) * steps64 + CHECKPOINTS - 1) / CHECKPOINTS);
    t = (float *)malloc((size_t)n * sizeof(float));
    x = (float *)malloc((size_t)n * sizeof(float));
    grad = (float *)malloc((size_t)n * sizeof(float));
    if (!t || !x || !grad) {
        fprintf(stderr, "gradwire demo: out of memory\n");
        rc = CLI_BAD;
        goto done;
    }
    for (i = 0; i < n; ++i) /* a multiplicative hash of i, in [-1, 1), exact in float32 */
        t[i] = (float)((uint32_t)(i * 2654435761u) >> 9) / 4194304.0f - 1.0f;
    printf("gradwire demo: one worker, one server, f(x) = ||x - t||^2 / 2, n = %llu, %d steps,\n"
           "lr %g, no momentum, error feedback both ways; float32 is %llu bytes\n",
           (unsigned long long)n, (int)steps64, lr, (unsigned long long)(4 * n));
    printf("%-27s %9s %9s %8s", "codec", "worker B", "server B", "ratio");
    for (m = 0; m < CHECKPOINTS; ++m) {
        char head[24];
        snprintf(head, sizeof head, "step %d", marks[m]);
        printf(" %8s", head);
    }
    printf("\n");
    for (c = 0; c < sizeof demo_codecs / sizeof demo_codecs[0] && rc == CLI_OK; ++c) {
        for (i = 0; i < n; ++i) x[i] = 0.0f;
        rc = run_codec(&demo_codecs[c], t, n, (int)steps64, (float)lr, marks, x, grad);
    }
    if (rc == CLI_OK)
        printf("worker B, server B: bytes per frame; ratio: float32 bytes / worker bytes;\n"
               "step S: ||x - t|| / ||t|| after S steps (1 at the start)\n");
done:
    free(t);
    free(x);
    free(grad);
    return rc;
}
