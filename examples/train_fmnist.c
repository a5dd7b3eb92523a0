/*
 * train_fmnist.c - gradwire's main demo.
 *
 * M simulated workers train an MLP (784-256-10, ReLU, softmax cross-entropy)
 * on Fashion-MNIST with two-way compressed, error-compensated SGD with
 * Nesterov momentum (dist-EF-blockSGDM, ALGORITHMS.md sections 2-3), and the
 * same run with full-precision frames as the baseline (same initial weights,
 * data order and learning-rate schedule):
 *
 *   sgdm  every frame is GW_CODEC_IDENTITY (float32).  With the identity codec
 *         the error-feedback state machines are exactly full-precision
 *         distributed SGD with Nesterov momentum.
 *   ef    workers and servers send blockwise scaled sign frames
 *         (||v||_1/d * sign(v), one block per slice) with error feedback.
 *
 * Layout (the reduce-scatter / all-gather layout of the paper): every
 * parameter tensor (W1, b1, W2, b2) is split into M contiguous slices with
 * gw_shard_range; slice s is owned by its own gw_server.  Worker i has one
 * gw_worker per (tensor, slice), pushes the slice's frame to the slice's
 * server; the server averages the M frames plus its own residual and
 * broadcasts one frame; every worker applies it to its own model replica with
 * gw_decode_accumulate(frame, -lr).  The replicas stay bit-identical.
 *
 * Bytes are real frame sizes: every frame pushed plus every broadcast frame
 * once per receiving worker.
 *
 * Momentum defaults to 0.7, not the usual 0.9: this MLP's gradients are
 * heavy-tailed (small scaled-sign contraction phi), error feedback delivers
 * the dropped part with a delay, and with mu = 0.9 the ef run becomes
 * unstable and ends several points below sgdm (see examples/README.md).
 *
 * Uses only the public header gradwire.h.  Data: Debian's
 * dataset-fashion-mnist package (gzipped idx files), read with zlib.
 *
 * Exit status: 0 on success (also when the comparison fails, unless --check),
 * 1 on errors or a failed --check, 77 when the data files are missing (the
 * "skipped" code of meson's test harness), 2 on bad command-line arguments.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "gradwire.h"

/* ------------------------------------------------------------------------ */
/* Model shape                                                                */
/* ------------------------------------------------------------------------ */
#define IN_DIM 784
#define HID 256
#define OUT_DIM 10
#define IMG_SIDE 28

#define NT 4 /* parameter tensors */
enum { T_W1, T_B1, T_W2, T_B2 };
static const char *const tensor_name[NT] = {"W1", "b1", "W2", "b2"};
static const uint64_t tensor_len[NT] = {(uint64_t)IN_DIM * HID, HID, (uint64_t)HID * OUT_DIM,
                                        OUT_DIM};
/* Flat parameter vector: W1 [IN_DIM][HID] | b1 [HID] | W2 [HID][OUT_DIM] | b2 [OUT_DIM]. */
#define OFF_W1 0
#define OFF_B1 (OFF_W1 + IN_DIM * HID)
#define OFF_W2 (OFF_B1 + HID)
#define OFF_B2 (OFF_W2 + HID * OUT_DIM)
#define NPARAM (OFF_B2 + OUT_DIM)
static const uint64_t tensor_off[NT] = {OFF_W1, OFF_B1, OFF_W2, OFF_B2};

#define DEFAULT_DATA_DIR "/usr/share/datasets/fashion-mnist"
#define EXIT_SKIP 77
#define EXIT_USAGE 2

#define GAP_LIMIT 1.0   /* accuracy points */
#define RATIO_LIMIT 30.0

enum { METHOD_SGDM = 0, METHOD_EF = 1, NMETHOD = 2 };
static const char *const method_name[NMETHOD] = {"sgdm", "ef"};

/* ------------------------------------------------------------------------ */
/* Small helpers                                                              */
/* ------------------------------------------------------------------------ */
static void die(const char *msg)
{
    fprintf(stderr, "train_fmnist: %s\n", msg);
    exit(1);
}

static void check(gw_status st, const char *what)
{
    if (st != GW_OK) {
        fprintf(stderr, "train_fmnist: %s failed: %s (%d)\n", what, gw_status_str(st), (int)st);
        exit(1);
    }
}

static void *xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p)
        die("out of memory");
    return p;
}

static void *xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        die("out of memory");
    return p;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* splitmix64: the demo's own generator for init and shuffling, so both
 * methods see the same initial weights and the same data order. */
static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static float uniform_pm(uint64_t *state, float a) /* uniform in [-a, a) */
{
    float u = (float)(splitmix64(state) >> 40) * (1.0f / 16777216.0f);
    return (2.0f * u - 1.0f) * a;
}

static void format_bytes(double bytes, char *buf, size_t cap)
{
    if (bytes >= 1024.0 * 1024.0)
        snprintf(buf, cap, "%.2f MiB", bytes / (1024.0 * 1024.0));
    else if (bytes >= 1024.0)
        snprintf(buf, cap, "%.1f KiB", bytes / 1024.0);
    else
        snprintf(buf, cap, "%.0f B", bytes);
}

/* ------------------------------------------------------------------------ */
/* Fashion-MNIST idx files (gzipped; gzopen also reads plain files)           */
/* ------------------------------------------------------------------------ */
typedef struct dataset {
    int n;
    unsigned char *images; /* n * IN_DIM bytes, 0..255 */
    unsigned char *labels; /* n bytes, 0..9 */
} dataset;

static uint32_t be32(const unsigned char *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static int gz_read_all(gzFile f, void *buf, size_t n)
{
    unsigned char *p = buf;
    while (n > 0) {
        unsigned chunk = n > (1u << 24) ? (1u << 24) : (unsigned)n;
        int got = gzread(f, p, chunk);
        if (got <= 0)
            return -1;
        p += got;
        n -= (size_t)got;
    }
    return 0;
}

/* Read one idx file with `ndim` dimensions and unsigned-byte data. Returns 0,
 * EXIT_SKIP when the file does not exist, 1 on a malformed file. */
static int read_idx(const char *dir, const char *name, unsigned ndim, uint32_t dims[3],
                    unsigned char **data)
{
    char path[4096];
    unsigned char head[4 + 4 * 3];
    gzFile f;
    size_t total = 1;
    unsigned i;
    int extra;

    snprintf(path, sizeof path, "%s/%s.gz", dir, name);
    f = gzopen(path, "rb");
    if (!f) {
        snprintf(path, sizeof path, "%s/%s", dir, name);
        f = gzopen(path, "rb");
    }
    if (!f) {
        fprintf(stderr,
                "train_fmnist: cannot open %s/%s.gz: %s\n"
                "  Fashion-MNIST is not installed there. On Debian/Ubuntu:\n"
                "    apt-get install dataset-fashion-mnist\n"
                "  or download the four idx files (gzipped or not) and pass --data DIR.\n",
                dir, name, errno ? strerror(errno) : "cannot open");
        return EXIT_SKIP;
    }
    if (gz_read_all(f, head, 4 + 4 * ndim) != 0) {
        fprintf(stderr, "train_fmnist: %s: truncated idx header\n", path);
        gzclose(f);
        return 1;
    }
    /* Magic: two zero bytes, type 0x08 (unsigned byte), number of dimensions. */
    if (head[0] != 0 || head[1] != 0 || head[2] != 0x08 || head[3] != ndim) {
        fprintf(stderr,
                "train_fmnist: %s: not an idx%u-ubyte file (magic %02x %02x %02x %02x)\n", path,
                ndim, head[0], head[1], head[2], head[3]);
        gzclose(f);
        return 1;
    }
    for (i = 0; i < ndim; i++) {
        dims[i] = be32(head + 4 + 4 * i);
        if (dims[i] == 0 || dims[i] > 10000000u) {
            fprintf(stderr, "train_fmnist: %s: implausible dimension %u\n", path, dims[i]);
            gzclose(f);
            return 1;
        }
        total *= dims[i];
    }
    if (ndim == 3 && (dims[1] != IMG_SIDE || dims[2] != IMG_SIDE)) {
        fprintf(stderr, "train_fmnist: %s: images are %ux%u, expected %dx%d\n", path, dims[1],
                dims[2], IMG_SIDE, IMG_SIDE);
        gzclose(f);
        return 1;
    }
    *data = xmalloc(total);
    if (gz_read_all(f, *data, total) != 0) {
        fprintf(stderr, "train_fmnist: %s: truncated (expected %zu data bytes)\n", path, total);
        free(*data);
        *data = NULL;
        gzclose(f);
        return 1;
    }
    extra = gzgetc(f);
    gzclose(f);
    if (extra != -1) {
        fprintf(stderr, "train_fmnist: %s: trailing bytes after the data\n", path);
        free(*data);
        *data = NULL;
        return 1;
    }
    return 0;
}

static int load_split(const char *dir, const char *prefix, dataset *ds)
{
    char name[64];
    uint32_t idims[3] = {0, 0, 0}, ldims[3] = {0, 0, 0};
    int rc, i;

    snprintf(name, sizeof name, "%s-images-idx3-ubyte", prefix);
    rc = read_idx(dir, name, 3, idims, &ds->images);
    if (rc)
        return rc;
    snprintf(name, sizeof name, "%s-labels-idx1-ubyte", prefix);
    rc = read_idx(dir, name, 1, ldims, &ds->labels);
    if (rc)
        return rc;
    if (idims[0] != ldims[0]) {
        fprintf(stderr, "train_fmnist: %s: %u images but %u labels\n", prefix, idims[0], ldims[0]);
        return 1;
    }
    ds->n = (int)idims[0];
    for (i = 0; i < ds->n; i++) {
        if (ds->labels[i] >= OUT_DIM) {
            fprintf(stderr, "train_fmnist: %s: label %d of sample %d out of range\n", prefix,
                    ds->labels[i], i);
            return 1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* The MLP: plain C loops, row-major, the 256-wide hidden axis innermost       */
/* ------------------------------------------------------------------------ */
/* y[0..HID) += a * x[0..HID): fixed trip count, restrict, vectorizes at -O2. */
static void axpy_hid(float *restrict y, float a, const float *restrict x)
{
    int j;
    for (j = 0; j < HID; j++)
        y[j] += a * x[j];
}

/* Forward pass for n samples given transposed inputs xt[IN_DIM][n].
 * hid[n][HID] receives ReLU activations, z[n][OUT_DIM] logits. Looping k
 * outermost streams W1 once per batch while the activations stay in cache;
 * zero pixels (about half of Fashion-MNIST) are skipped. */
static void mlp_forward(const float *restrict x, const float *restrict xt, int n,
                        float *restrict hid, float *restrict z)
{
    const float *W1 = x + OFF_W1, *b1 = x + OFF_B1, *W2 = x + OFF_W2, *b2 = x + OFF_B2;
    int b, k, j, c;

    for (b = 0; b < n; b++)
        memcpy(hid + (size_t)b * HID, b1, HID * sizeof(float));
    for (k = 0; k < IN_DIM; k++) {
        const float *w = W1 + (size_t)k * HID;
        const float *xk = xt + (size_t)k * n;
        for (b = 0; b < n; b++)
            if (xk[b] != 0.0f)
                axpy_hid(hid + (size_t)b * HID, xk[b], w);
    }
    for (b = 0; b < n; b++) {
        float *h = hid + (size_t)b * HID;
        float *zb = z + (size_t)b * OUT_DIM;
        for (j = 0; j < HID; j++)
            h[j] = h[j] > 0.0f ? h[j] : 0.0f;
        for (c = 0; c < OUT_DIM; c++)
            zb[c] = b2[c];
        for (j = 0; j < HID; j++) {
            const float hv = h[j];
            const float *w = W2 + (size_t)j * OUT_DIM;
            if (hv != 0.0f)
                for (c = 0; c < OUT_DIM; c++)
                    zb[c] += hv * w[c];
        }
    }
}

/* Softmax cross-entropy: returns the summed loss, writes dz = (p - onehot) * scale. */
static double softmax_xent(const float *z, const unsigned char *y, int n, float scale, float *dz)
{
    double loss = 0.0;
    int b, c;
    for (b = 0; b < n; b++) {
        const float *zb = z + (size_t)b * OUT_DIM;
        float *db = dz + (size_t)b * OUT_DIM;
        float zmax = zb[0], sum = 0.0f;
        for (c = 1; c < OUT_DIM; c++)
            zmax = zb[c] > zmax ? zb[c] : zmax;
        for (c = 0; c < OUT_DIM; c++) {
            db[c] = expf(zb[c] - zmax);
            sum += db[c];
        }
        loss += (double)(logf(sum) - (zb[y[b]] - zmax));
        for (c = 0; c < OUT_DIM; c++)
            db[c] = db[c] / sum * scale;
        db[y[b]] -= scale;
    }
    return loss;
}

/* Backward pass: gradient of the mean loss over the n samples into grad[NPARAM]. */
static void mlp_backward(const float *restrict x, const float *restrict xt, int n,
                         const float *restrict hid, const float *restrict dz,
                         float *restrict dhid, float *restrict grad)
{
    const float *W2 = x + OFF_W2;
    float *gW1 = grad + OFF_W1, *gb1 = grad + OFF_B1, *gW2 = grad + OFF_W2, *gb2 = grad + OFF_B2;
    int b, k, j, c;

    memset(gW2, 0, sizeof(float) * HID * OUT_DIM);
    memset(gb2, 0, sizeof(float) * OUT_DIM);
    memset(gb1, 0, sizeof(float) * HID);
    for (b = 0; b < n; b++) {
        const float *h = hid + (size_t)b * HID;
        const float *db = dz + (size_t)b * OUT_DIM;
        float *dh = dhid + (size_t)b * HID;
        for (c = 0; c < OUT_DIM; c++)
            gb2[c] += db[c];
        for (j = 0; j < HID; j++) {
            const float *w = W2 + (size_t)j * OUT_DIM;
            float *gw = gW2 + (size_t)j * OUT_DIM;
            float s = 0.0f;
            if (h[j] <= 0.0f) { /* ReLU gate: no gradient through inactive units */
                dh[j] = 0.0f;
                continue;
            }
            for (c = 0; c < OUT_DIM; c++) {
                gw[c] += h[j] * db[c];
                s += db[c] * w[c];
            }
            dh[j] = s;
        }
        for (j = 0; j < HID; j++)
            gb1[j] += dh[j];
    }
    /* dW1[k][:] = sum_b x[b][k] * dh[b][:]; each row of dW1 written once. */
    for (k = 0; k < IN_DIM; k++) {
        float *g = gW1 + (size_t)k * HID;
        const float *xk = xt + (size_t)k * n;
        memset(g, 0, sizeof(float) * HID);
        for (b = 0; b < n; b++)
            if (xk[b] != 0.0f)
                axpy_hid(g, xk[b], dhid + (size_t)b * HID);
    }
}

/* Gather samples idx[0..n) into transposed, scaled inputs xt[IN_DIM][n]. */
static void gather_batch(const dataset *ds, const int *idx, int n, float *xt, unsigned char *y)
{
    int b, k;
    for (b = 0; b < n; b++) {
        const unsigned char *img = ds->images + (size_t)idx[b] * IN_DIM;
        for (k = 0; k < IN_DIM; k++)
            xt[(size_t)k * n + b] = (float)img[k] * (1.0f / 255.0f);
        y[b] = ds->labels[idx[b]];
    }
}

static void init_params(float *x, uint64_t seed)
{
    uint64_t st = seed ^ 0x5EEDC0DE12345678ull;
    const float a1 = sqrtf(6.0f / IN_DIM);              /* He uniform (ReLU layer) */
    const float a2 = sqrtf(6.0f / (HID + OUT_DIM));     /* Glorot uniform (output)  */
    size_t i;
    for (i = 0; i < (size_t)IN_DIM * HID; i++)
        x[OFF_W1 + i] = uniform_pm(&st, a1);
    for (i = 0; i < (size_t)HID * OUT_DIM; i++)
        x[OFF_W2 + i] = uniform_pm(&st, a2);
    memset(x + OFF_B1, 0, sizeof(float) * HID);
    memset(x + OFF_B2, 0, sizeof(float) * OUT_DIM);
}

/* ------------------------------------------------------------------------ */
/* A tiny thread pool: run tasks 0..n-1, the calling thread helps.            */
/* Tasks write disjoint outputs, so results do not depend on scheduling.      */
/* ------------------------------------------------------------------------ */
typedef void (*task_fn)(void *ctx, int index);

typedef struct pool {
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    task_fn fn;
    void *ctx;
    int ntasks, next, remaining, quit;
    unsigned long gen;
    int nhelpers;
    pthread_t *helpers;
} pool;

static void pool_drain(pool *p) /* called and returns with p->mu held */
{
    while (p->next < p->ntasks) {
        const int i = p->next++;
        task_fn fn = p->fn;
        void *ctx = p->ctx;
        pthread_mutex_unlock(&p->mu);
        fn(ctx, i);
        pthread_mutex_lock(&p->mu);
        if (--p->remaining == 0)
            pthread_cond_broadcast(&p->done);
    }
}

static void *pool_thread(void *arg)
{
    pool *p = arg;
    unsigned long seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->quit && p->gen == seen)
            pthread_cond_wait(&p->wake, &p->mu);
        if (p->quit)
            break;
        seen = p->gen;
        pool_drain(p);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void pool_init(pool *p, int nthreads)
{
    int i;
    memset(p, 0, sizeof *p);
    if (pthread_mutex_init(&p->mu, NULL) || pthread_cond_init(&p->wake, NULL) ||
        pthread_cond_init(&p->done, NULL))
        die("cannot initialize pthread objects");
    p->helpers = xcalloc((size_t)(nthreads > 1 ? nthreads - 1 : 1), sizeof(pthread_t));
    for (i = 0; i < nthreads - 1; i++) {
        if (pthread_create(&p->helpers[i], NULL, pool_thread, p) != 0)
            break; /* fewer helpers is fine */
        p->nhelpers++;
    }
}

static void pool_run(pool *p, task_fn fn, void *ctx, int n)
{
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->ntasks = n;
    p->next = 0;
    p->remaining = n;
    p->gen++;
    if (p->nhelpers > 0)
        pthread_cond_broadcast(&p->wake);
    pool_drain(p);
    while (p->remaining > 0)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

static void pool_destroy(pool *p)
{
    int i;
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (i = 0; i < p->nhelpers; i++)
        pthread_join(p->helpers[i], NULL);
    free(p->helpers);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->mu);
}

/* ------------------------------------------------------------------------ */
/* Configuration                                                              */
/* ------------------------------------------------------------------------ */
typedef struct config {
    int epochs;
    int workers;
    int batch;
    double lr;
    double lr_final; /* fraction of lr reached at the end of the cosine */
    double mu;       /* Nesterov momentum */
    int methods;     /* bit mask of 1 << METHOD_* */
    uint64_t seed;
    int check;
    int quick;
    int threads;
    uint32_t block; /* scaled-sign block size, 0 = one block per slice */
    int train_limit, test_limit; /* 0 = all */
    const char *data_dir;
    FILE *csv;                    /* --csv: one row per epoch, for plotting */
} config;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: train_fmnist [options]\n"
            "  --epochs N       epochs per method (default 12; 1 with --quick)\n"
            "  --workers M      simulated workers (default 4)\n"
            "  --batch B        minibatch per worker (default 32)\n"
            "  --lr X           peak learning rate, cosine decay to 1%% (default 0.1)\n"
            "  --mu X           Nesterov momentum, both methods (default 0.7; see README)\n"
            "  --method ef|sgdm|both   (default both)\n"
            "  --seed S         init and data order (default 1)\n"
            "  --block N        scaled-sign block size (default 0: one block per slice)\n"
            "  --threads T      compute threads (default: min(workers, CPUs))\n"
            "  --data DIR       idx files (default " DEFAULT_DATA_DIR ")\n"
            "  --csv FILE       write per-epoch results as CSV (scripts/plot_demo.py plots them)\n"
            "  --quick          1 epoch on a 12800-sample subset (smoke test)\n"
            "  --check          exit 1 unless gap <= %.1f point and ratio >= %.0fx\n"
            "                   (with --quick the gap limit is 5 points)\n",
            GAP_LIMIT, RATIO_LIMIT);
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static void bad_arg(const char *opt, const char *val)
{
    fprintf(stderr, "train_fmnist: invalid value for %s: '%s'\n", opt, val ? val : "(missing)");
    usage(stderr);
    exit(EXIT_USAGE);
}

static void parse_args(int argc, char **argv, config *cfg)
{
    int i, epochs_given = 0;
    long v;
    cfg->epochs = 12;
    cfg->workers = 4;
    cfg->batch = 32;
    cfg->lr = 0.1;
    cfg->lr_final = 0.01;
    cfg->mu = 0.7;
    cfg->methods = (1 << METHOD_SGDM) | (1 << METHOD_EF);
    cfg->seed = 1;
    cfg->check = 0;
    cfg->quick = 0;
    cfg->threads = 0;
    cfg->block = 0;
    cfg->train_limit = 0;
    cfg->test_limit = 0;
    cfg->data_dir = DEFAULT_DATA_DIR;
    cfg->csv = NULL;

    for (i = 1; i < argc; i++) {
        const char *opt = argv[i];
        const char *val = NULL;
        char optbuf[64];
        const char *eq = strchr(opt, '=');
        if (strncmp(opt, "--", 2) == 0 && eq && (size_t)(eq - opt) < sizeof optbuf) {
            memcpy(optbuf, opt, (size_t)(eq - opt));
            optbuf[eq - opt] = '\0';
            opt = optbuf;
            val = eq + 1;
        }
#define NEED_VAL() do { if (!val) { if (i + 1 >= argc) bad_arg(opt, NULL); val = argv[++i]; } } while (0)
        if (!strcmp(opt, "--help") || !strcmp(opt, "-h")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(opt, "--check")) {
            cfg->check = 1;
        } else if (!strcmp(opt, "--quick")) {
            cfg->quick = 1;
        } else if (!strcmp(opt, "--epochs")) {
            NEED_VAL();
            if (parse_long(val, 1, 1000, &v))
                bad_arg(opt, val);
            cfg->epochs = (int)v;
            epochs_given = 1;
        } else if (!strcmp(opt, "--workers")) {
            NEED_VAL();
            if (parse_long(val, 1, 256, &v))
                bad_arg(opt, val);
            cfg->workers = (int)v;
        } else if (!strcmp(opt, "--batch")) {
            NEED_VAL();
            if (parse_long(val, 1, 4096, &v))
                bad_arg(opt, val);
            cfg->batch = (int)v;
        } else if (!strcmp(opt, "--threads")) {
            NEED_VAL();
            if (parse_long(val, 0, 256, &v))
                bad_arg(opt, val);
            cfg->threads = (int)v;
        } else if (!strcmp(opt, "--block")) {
            NEED_VAL();
            if (parse_long(val, 0, 1L << 30, &v))
                bad_arg(opt, val);
            cfg->block = (uint32_t)v;
        } else if (!strcmp(opt, "--seed")) {
            char *end;
            NEED_VAL();
            errno = 0;
            cfg->seed = (uint64_t)strtoull(val, &end, 0);
            if (errno || end == val || *end || val[0] == '-')
                bad_arg(opt, val);
        } else if (!strcmp(opt, "--lr")) {
            char *end;
            NEED_VAL();
            errno = 0;
            cfg->lr = strtod(val, &end);
            if (errno || end == val || *end || !(cfg->lr > 0.0 && cfg->lr < 100.0))
                bad_arg(opt, val);
        } else if (!strcmp(opt, "--mu")) {
            char *end;
            NEED_VAL();
            errno = 0;
            cfg->mu = strtod(val, &end);
            if (errno || end == val || *end || !(cfg->mu >= 0.0 && cfg->mu < 1.0))
                bad_arg(opt, val);
        } else if (!strcmp(opt, "--method")) {
            NEED_VAL();
            if (!strcmp(val, "ef"))
                cfg->methods = 1 << METHOD_EF;
            else if (!strcmp(val, "sgdm"))
                cfg->methods = 1 << METHOD_SGDM;
            else if (!strcmp(val, "both"))
                cfg->methods = (1 << METHOD_SGDM) | (1 << METHOD_EF);
            else
                bad_arg(opt, val);
        } else if (!strcmp(opt, "--data")) {
            NEED_VAL();
            cfg->data_dir = val;
        } else if (!strcmp(opt, "--csv")) {
            NEED_VAL();
            if (!(cfg->csv = fopen(val, "w"))) {
                fprintf(stderr, "train_fmnist: cannot write %s\n", val);
                exit(EXIT_USAGE);
            }
            fprintf(cfg->csv, "method,epoch,lr,train_loss,test_loss,test_acc,bytes_per_step\n");
        } else {
            fprintf(stderr, "train_fmnist: unknown option '%s'\n", argv[i]);
            usage(stderr);
            exit(EXIT_USAGE);
        }
#undef NEED_VAL
    }
    if (cfg->quick) {
        if (!epochs_given)
            cfg->epochs = 1;
        cfg->train_limit = 12800;
        cfg->test_limit = 2000;
    }
    if (cfg->check && cfg->methods != ((1 << METHOD_SGDM) | (1 << METHOD_EF))) {
        fprintf(stderr, "train_fmnist: --check compares both methods; use --method both\n");
        exit(EXIT_USAGE);
    }
}

/* ------------------------------------------------------------------------ */
/* The simulated cluster                                                      */
/* ------------------------------------------------------------------------ */
typedef struct frame_buf {
    unsigned char *data;
    size_t cap, size;
} frame_buf;

typedef struct worker_state {
    float *x;    /* this worker's model replica */
    float *grad; /* its stochastic gradient */
    float *xt, *hid, *dhid, *z, *dz;
    unsigned char *y;
    double loss; /* mean loss of its last minibatch */
    gw_worker **ef;    /* [t * M + s]: one state machine per tensor slice */
    frame_buf *push;   /* [t * M + s]: the frame it pushes */
} worker_state;

typedef struct cluster {
    const config *cfg;
    int M, B, method;
    uint64_t soff[NT][256], slen[NT][256]; /* slice s of tensor t */
    worker_state *w;
    gw_server **sv;  /* [t * M + s] */
    frame_buf *bcast; /* [t * M + s] */
    /* per step */
    const dataset *train;
    const int *batch_idx; /* M * B sample indices of this step */
    float lr;
    /* per evaluation */
    const dataset *test;
    int test_n, eval_chunk;
    int *eval_correct;
    double *eval_loss;
    /* first error reported by a task */
    pthread_mutex_t err_mu;
    gw_status err;
    const char *err_what;
} cluster;

static void task_error(cluster *c, gw_status st, const char *what)
{
    pthread_mutex_lock(&c->err_mu);
    if (c->err == GW_OK) {
        c->err = st;
        c->err_what = what;
    }
    pthread_mutex_unlock(&c->err_mu);
}

static void check_tasks(cluster *c)
{
    if (c->err != GW_OK)
        check(c->err, c->err_what);
}

static void cluster_create(cluster *c, const config *cfg, int method)
{
    const int M = cfg->workers, B = cfg->batch;
    gw_codec_options codec;
    int i, t, s;

    memset(c, 0, sizeof *c);
    c->cfg = cfg;
    c->M = M;
    c->B = B;
    c->method = method;
    if (pthread_mutex_init(&c->err_mu, NULL))
        die("cannot initialize a mutex");
    c->err = GW_OK;

    check(gw_codec_options_init(&codec, GW_CODEC_OPTIONS_VERSION), "gw_codec_options_init");
    codec.codec = method == METHOD_EF ? GW_CODEC_SCALED_SIGN : GW_CODEC_IDENTITY;
    codec.block_size = method == METHOD_EF ? cfg->block : 0; /* 0: one block per slice */

    for (t = 0; t < NT; t++)
        for (s = 0; s < M; s++)
            check(gw_shard_range(tensor_len[t], (uint32_t)M, (uint32_t)s, &c->soff[t][s],
                                 &c->slen[t][s]),
                  "gw_shard_range");

    /* One server per tensor slice. */
    c->sv = xcalloc((size_t)NT * M, sizeof *c->sv);
    c->bcast = xcalloc((size_t)NT * M, sizeof *c->bcast);
    for (t = 0; t < NT; t++) {
        for (s = 0; s < M; s++) {
            gw_server_options so;
            frame_buf *fb = &c->bcast[t * M + s];
            if (c->slen[t][s] == 0)
                continue; /* tensor shorter than M: this slice is empty */
            check(gw_server_options_init(&so, GW_SERVER_OPTIONS_VERSION),
                  "gw_server_options_init");
            so.total = tensor_len[t];
            so.offset = c->soff[t][s];
            so.length = c->slen[t][s];
            so.num_workers = (uint32_t)M;
            so.codec = codec;
            so.error_feedback = 1;
            check(gw_server_create(&c->sv[t * M + s], &so), "gw_server_create");
            check(gw_server_frame_bound(c->sv[t * M + s], &fb->cap), "gw_server_frame_bound");
            fb->data = xmalloc(fb->cap);
        }
    }

    /* M workers: model replica, scratch, one EF state machine per tensor slice. */
    c->w = xcalloc((size_t)M, sizeof *c->w);
    for (i = 0; i < M; i++) {
        worker_state *w = &c->w[i];
        w->x = xmalloc(sizeof(float) * NPARAM);
        w->grad = xmalloc(sizeof(float) * NPARAM);
        w->xt = xmalloc(sizeof(float) * IN_DIM * (size_t)B);
        w->hid = xmalloc(sizeof(float) * HID * (size_t)B);
        w->dhid = xmalloc(sizeof(float) * HID * (size_t)B);
        w->z = xmalloc(sizeof(float) * OUT_DIM * (size_t)B);
        w->dz = xmalloc(sizeof(float) * OUT_DIM * (size_t)B);
        w->y = xmalloc((size_t)B);
        init_params(w->x, cfg->seed); /* same init on every worker */
        w->ef = xcalloc((size_t)NT * M, sizeof *w->ef);
        w->push = xcalloc((size_t)NT * M, sizeof *w->push);
        for (t = 0; t < NT; t++) {
            for (s = 0; s < M; s++) {
                gw_worker_options wo;
                frame_buf *fb = &w->push[t * M + s];
                if (c->slen[t][s] == 0)
                    continue;
                check(gw_worker_options_init(&wo, GW_WORKER_OPTIONS_VERSION),
                      "gw_worker_options_init");
                wo.n = c->slen[t][s];
                wo.codec = codec;
                wo.momentum = GW_MOMENTUM_NESTEROV;
                wo.mu = (float)cfg->mu;
                wo.error_feedback = 1;
                check(gw_worker_create(&w->ef[t * M + s], &wo), "gw_worker_create");
                check(gw_worker_frame_bound(w->ef[t * M + s], &fb->cap), "gw_worker_frame_bound");
                fb->data = xmalloc(fb->cap);
            }
        }
    }
}

static void cluster_destroy(cluster *c)
{
    int i, j;
    const int n = NT * c->M;
    for (i = 0; i < c->M; i++) {
        worker_state *w = &c->w[i];
        for (j = 0; j < n; j++) {
            gw_worker_free(w->ef[j]);
            free(w->push[j].data);
        }
        free(w->ef);
        free(w->push);
        free(w->x);
        free(w->grad);
        free(w->xt);
        free(w->hid);
        free(w->dhid);
        free(w->z);
        free(w->dz);
        free(w->y);
    }
    free(c->w);
    for (j = 0; j < n; j++) {
        gw_server_free(c->sv[j]);
        free(c->bcast[j].data);
    }
    free(c->sv);
    free(c->bcast);
    pthread_mutex_destroy(&c->err_mu);
}

/* Phase 1 (per worker): minibatch gradient, then one frame per tensor slice. */
static void task_compute(void *ctx, int i)
{
    cluster *c = ctx;
    worker_state *w = &c->w[i];
    const int M = c->M, B = c->B;
    int t, s;

    gather_batch(c->train, c->batch_idx + (size_t)i * B, B, w->xt, w->y);
    mlp_forward(w->x, w->xt, B, w->hid, w->z);
    w->loss = softmax_xent(w->z, w->y, B, 1.0f / (float)B, w->dz) / B;
    mlp_backward(w->x, w->xt, B, w->hid, w->dz, w->dhid, w->grad);

    for (t = 0; t < NT; t++) {
        for (s = 0; s < M; s++) {
            frame_buf *fb = &w->push[t * M + s];
            gw_status st;
            if (c->slen[t][s] == 0)
                continue;
            st = gw_worker_step(w->ef[t * M + s], w->grad + tensor_off[t] + c->soff[t][s], c->lr,
                                fb->data, fb->cap, &fb->size);
            if (st != GW_OK) {
                task_error(c, st, "gw_worker_step");
                return;
            }
        }
    }
}

/* Phase 2 (per server): average the M pushed slice frames, broadcast one. */
static void task_serve(void *ctx, int j)
{
    cluster *c = ctx;
    const int M = c->M, t = j / M, s = j % M;
    frame_buf *out = &c->bcast[j];
    gw_status st;
    int i;

    if (c->slen[t][s] == 0)
        return;
    for (i = 0; i < M; i++) { /* fixed push order: deterministic sums */
        const frame_buf *in = &c->w[i].push[j];
        st = gw_server_push(c->sv[j], in->data, in->size);
        if (st != GW_OK) {
            task_error(c, st, "gw_server_push");
            return;
        }
    }
    st = gw_server_step(c->sv[j], c->lr, out->data, out->cap, &out->size);
    if (st != GW_OK)
        task_error(c, st, "gw_server_step");
}

/* Phase 3 (per worker): x -= lr * D for every broadcast slice frame. */
static void task_apply(void *ctx, int i)
{
    cluster *c = ctx;
    worker_state *w = &c->w[i];
    const int M = c->M;
    int t, s;
    for (t = 0; t < NT; t++) {
        for (s = 0; s < M; s++) {
            const frame_buf *fb = &c->bcast[t * M + s];
            gw_status st;
            if (c->slen[t][s] == 0)
                continue;
            st = gw_decode_accumulate(fb->data, fb->size, -c->lr,
                                      w->x + tensor_off[t] + c->soff[t][s], c->slen[t][s]);
            if (st != GW_OK) {
                task_error(c, st, "gw_decode_accumulate");
                return;
            }
        }
    }
}

#define EVAL_SUB 256 /* samples per forward call during evaluation */

/* Test-set evaluation of worker 0's replica, one chunk per task. */
static void task_eval(void *ctx, int chunk)
{
    cluster *c = ctx;
    const int first = chunk * c->eval_chunk;
    const int last = first + c->eval_chunk < c->test_n ? first + c->eval_chunk : c->test_n;
    float *xt = xmalloc(sizeof(float) * IN_DIM * EVAL_SUB);
    float *hid = xmalloc(sizeof(float) * HID * EVAL_SUB);
    float *z = xmalloc(sizeof(float) * OUT_DIM * EVAL_SUB);
    float *dz = xmalloc(sizeof(float) * OUT_DIM * EVAL_SUB);
    unsigned char y[EVAL_SUB];
    int idx[EVAL_SUB];
    int correct = 0, start, b, k;
    double loss = 0.0;

    for (start = first; start < last; start += EVAL_SUB) {
        const int n = last - start < EVAL_SUB ? last - start : EVAL_SUB;
        for (b = 0; b < n; b++)
            idx[b] = start + b;
        gather_batch(c->test, idx, n, xt, y);
        mlp_forward(c->w[0].x, xt, n, hid, z);
        loss += softmax_xent(z, y, n, 1.0f, dz);
        for (b = 0; b < n; b++) {
            const float *zb = z + (size_t)b * OUT_DIM;
            int best = 0;
            for (k = 1; k < OUT_DIM; k++)
                if (zb[k] > zb[best])
                    best = k;
            correct += best == y[b];
        }
    }
    c->eval_correct[chunk] = correct;
    c->eval_loss[chunk] = loss;
    free(xt);
    free(hid);
    free(z);
    free(dz);
}

static double evaluate(cluster *c, pool *p, const dataset *test, int test_n, double *loss)
{
    const int nchunks = 8;
    int i, correct = 0;
    c->test = test;
    c->test_n = test_n;
    c->eval_chunk = (test_n + nchunks - 1) / nchunks;
    c->eval_correct = xcalloc(nchunks, sizeof(int));
    c->eval_loss = xcalloc(nchunks, sizeof(double));
    pool_run(p, task_eval, c, nchunks);
    *loss = 0.0;
    for (i = 0; i < nchunks; i++) {
        correct += c->eval_correct[i];
        *loss += c->eval_loss[i];
    }
    *loss /= test_n;
    free(c->eval_correct);
    free(c->eval_loss);
    return 100.0 * correct / test_n;
}

/* Bytes per step if every frame were an identity (float32) frame: each
 * worker pushes every slice, each slice's broadcast reaches all M workers. */
static double identity_bytes_per_step(const config *cfg)
{
    const int M = cfg->workers;
    gw_codec_options codec;
    double bytes = 0.0;
    float *zeros = xcalloc(tensor_len[T_W1], sizeof(float));
    unsigned char *frame;
    size_t cap, written;
    int t, s;

    check(gw_codec_options_init(&codec, GW_CODEC_OPTIONS_VERSION), "gw_codec_options_init");
    codec.codec = GW_CODEC_IDENTITY;
    check(gw_encode_bound(&codec, tensor_len[T_W1], &cap), "gw_encode_bound");
    frame = xmalloc(cap);
    for (t = 0; t < NT; t++) {
        for (s = 0; s < M; s++) {
            uint64_t off, len;
            check(gw_shard_range(tensor_len[t], (uint32_t)M, (uint32_t)s, &off, &len),
                  "gw_shard_range");
            if (len == 0)
                continue;
            check(gw_encode(&codec, zeros, len, frame, cap, &written), "gw_encode");
            bytes += 2.0 * M * (double)written; /* M pushes + M receivers */
        }
    }
    free(frame);
    free(zeros);
    return bytes;
}

/* ------------------------------------------------------------------------ */
/* Training                                                                   */
/* ------------------------------------------------------------------------ */
typedef struct run_result {
    int ran;
    double test_acc, test_loss, train_loss, bytes_per_step, seconds;
    int replicas_identical;
} run_result;

/* Cosine decay from lr to lr*lr_final over the run; changes every step, which
 * exercises the state machines' lr_prev/lr residual rescaling. */
static float lr_at(const config *cfg, long step, long total)
{
    const double lo = cfg->lr * cfg->lr_final;
    const double frac = total > 1 ? (double)step / (double)(total - 1) : 1.0;
    return (float)(lo + 0.5 * (cfg->lr - lo) * (1.0 + cos(3.14159265358979323846 * frac)));
}

static void shuffle(int *perm, int n, uint64_t seed, int epoch)
{
    uint64_t st = seed * 0x9E3779B97F4A7C15ull + (uint64_t)epoch + 1;
    int i;
    for (i = 0; i < n; i++)
        perm[i] = i;
    for (i = n - 1; i > 0; i--) {
        const int j = (int)(((splitmix64(&st) >> 32) * (uint64_t)(i + 1)) >> 32);
        const int tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
    }
}

static void progress(int tty, const char *method, int epoch, int epochs, int step, int steps,
                     double loss, int *last_decile)
{
    if (tty) {
        if (step == steps || step % 5 == 0)
            fprintf(stderr, "\r  [%-4s] epoch %d/%d  step %d/%d  %3d%%  loss %.4f   ", method,
                    epoch, epochs, step, steps, (int)(100L * step / steps), loss);
        if (step == steps)
            fprintf(stderr, "\r%70s\r", "");
        fflush(stderr);
    } else {
        const int decile = (int)(10L * step / steps);
        if (decile > *last_decile && step < steps) {
            *last_decile = decile;
            fprintf(stderr, "  [%s] epoch %d/%d  step %d/%d  %d%%  loss %.4f\n", method, epoch,
                    epochs, step, steps, (int)(100L * step / steps), loss);
        }
    }
}

/* Mean over W1's slices of the scaled-sign contraction factor of worker 0's
 * last gradient (ALGORITHMS.md s.1): 1 for a flat vector, ~0.64 for Gaussian
 * noise, small for heavy-tailed gradients, which error feedback then has to
 * deliver over many steps. */
static double w1_phi(const cluster *c)
{
    double sum = 0.0;
    int s, n = 0;
    for (s = 0; s < c->M; s++) {
        double phi;
        if (c->slen[T_W1][s] == 0)
            continue;
        check(gw_scaled_sign_phi(c->w[0].grad + OFF_W1 + c->soff[T_W1][s], c->slen[T_W1][s], 0,
                                 &phi),
              "gw_scaled_sign_phi");
        sum += phi;
        n++;
    }
    return n ? sum / n : 1.0;
}

static run_result train(const config *cfg, int method, pool *p, const dataset *train_set,
                        int train_n, const dataset *test_set, int test_n, double ref_bytes)
{
    const int M = cfg->workers, B = cfg->batch;
    const int steps = train_n / (M * B);
    const long total = (long)steps * cfg->epochs;
    const int tty = isatty(fileno(stderr));
    cluster c;
    run_result res;
    int *perm = xmalloc(sizeof(int) * (size_t)train_n);
    double t0 = now_seconds();
    long global = 0;
    int epoch, i;

    memset(&res, 0, sizeof res);
    res.ran = 1;
    cluster_create(&c, cfg, method);
    c.train = train_set;

    printf("\n== %s: %s ==\n", method_name[method],
           method == METHOD_EF ? "dist-EF-blockSGDM, scaled sign both ways"
                               : "full precision (identity frames)");
    for (epoch = 1; epoch <= cfg->epochs; epoch++) {
        double loss_sum = 0.0, bytes = 0.0, te0 = now_seconds(), test_loss, acc;
        int last_decile = 0, step;
        float lr = 0.0f;

        shuffle(perm, train_n, cfg->seed, epoch);
        for (step = 0; step < steps; step++, global++) {
            double step_loss = 0.0;
            int j;
            lr = lr_at(cfg, global, total);
            c.lr = lr;
            c.batch_idx = perm + (size_t)step * M * B;

            pool_run(p, task_compute, &c, M);
            check_tasks(&c);
            pool_run(p, task_serve, &c, NT * M);
            check_tasks(&c);
            pool_run(p, task_apply, &c, M);
            check_tasks(&c);

            for (i = 0; i < M; i++) {
                step_loss += c.w[i].loss;
                for (j = 0; j < NT * M; j++)
                    bytes += (double)c.w[i].push[j].size;
            }
            for (j = 0; j < NT * M; j++)
                bytes += (double)M * (double)c.bcast[j].size;
            loss_sum += step_loss / M;
            progress(tty, method_name[method], epoch, cfg->epochs, step + 1, steps,
                     loss_sum / (step + 1), &last_decile);
        }
        acc = evaluate(&c, p, test_set, test_n, &test_loss);
        res.train_loss = loss_sum / steps;
        res.test_acc = acc;
        res.test_loss = test_loss;
        res.bytes_per_step = bytes / steps;
        printf("  epoch %2d/%d  lr %.4f  train loss %.4f  test loss %.4f  acc %6.2f%%"
               "  %8.0f B/step  ratio %4.1fx  phi(W1) %.3f  %.1f s\n",
               epoch, cfg->epochs, lr, res.train_loss, test_loss, acc, res.bytes_per_step,
               ref_bytes / res.bytes_per_step, w1_phi(&c), now_seconds() - te0);
        fflush(stdout);
        if (cfg->csv)
            fprintf(cfg->csv, "%s,%d,%.6f,%.6f,%.6f,%.4f,%.0f\n", method_name[method], epoch, lr,
                    res.train_loss, test_loss, acc, res.bytes_per_step);
    }
    res.seconds = now_seconds() - t0;

    /* Every worker applied the same broadcast frames: replicas must agree bit for bit. */
    res.replicas_identical = 1;
    for (i = 1; i < M; i++)
        if (memcmp(c.w[0].x, c.w[i].x, sizeof(float) * NPARAM) != 0)
            res.replicas_identical = 0;

    cluster_destroy(&c);
    free(perm);
    return res;
}

/* ------------------------------------------------------------------------ */
int main(int argc, char **argv)
{
    config cfg;
    dataset train_set, test_set;
    run_result res[NMETHOD];
    pool p;
    int ncpu, nthreads, rc, train_n, test_n, m, t;
    double ref_bytes, t0;
    char b1[32];

    setvbuf(stdout, NULL, _IOLBF, 0);
    parse_args(argc, argv, &cfg);
    memset(res, 0, sizeof res);
    memset(&train_set, 0, sizeof train_set);
    memset(&test_set, 0, sizeof test_set);

    t0 = now_seconds();
    rc = load_split(cfg.data_dir, "train", &train_set);
    if (!rc)
        rc = load_split(cfg.data_dir, "t10k", &test_set);
    if (rc) {
        free(train_set.images);
        free(train_set.labels);
        free(test_set.images);
        free(test_set.labels);
        return rc;
    }
    train_n = cfg.train_limit && cfg.train_limit < train_set.n ? cfg.train_limit : train_set.n;
    test_n = cfg.test_limit && cfg.test_limit < test_set.n ? cfg.test_limit : test_set.n;
    if (train_n < cfg.workers * cfg.batch) {
        fprintf(stderr, "train_fmnist: workers * batch (%d) exceeds the %d training samples\n",
                cfg.workers * cfg.batch, train_n);
        return EXIT_USAGE;
    }

    ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu < 1)
        ncpu = 1;
    nthreads = cfg.threads > 0 ? cfg.threads : (cfg.workers < ncpu ? cfg.workers : ncpu);
    pool_init(&p, nthreads);

    ref_bytes = identity_bytes_per_step(&cfg);

    printf("gradwire %s (SIMD %s): Fashion-MNIST, %d simulated workers\n", gw_version_string(),
           gw_simd_target_name(gw_simd_active_target()), cfg.workers);
    printf("  data      %s: %d train / %d test samples%s (loaded in %.1f s)\n", cfg.data_dir,
           train_n, test_n, cfg.quick ? " (--quick subset)" : "", now_seconds() - t0);
    printf("  model     MLP %d-%d-%d ReLU, softmax cross-entropy, %d parameters:", IN_DIM, HID,
           OUT_DIM, NPARAM);
    for (t = 0; t < NT; t++)
        printf(" %s %llu", tensor_name[t], (unsigned long long)tensor_len[t]);
    printf("\n");
    printf("  training  %d epochs x %d steps, batch %d per worker (%d global), seed %llu\n",
           cfg.epochs, train_n / (cfg.workers * cfg.batch), cfg.batch, cfg.batch * cfg.workers,
           (unsigned long long)cfg.seed);
    printf("            lr %g cosine -> %g, Nesterov momentum mu %g, %d compute thread%s\n",
           cfg.lr, cfg.lr * cfg.lr_final, cfg.mu, p.nhelpers + 1, p.nhelpers ? "s" : "");
    printf("  layout    each tensor in %d slices (gw_shard_range), one gw_server per slice and\n"
           "            one gw_worker per worker and slice: %d gw_worker + %d gw_server handles\n",
           cfg.workers, NT * cfg.workers * cfg.workers, NT * cfg.workers);
    format_bytes(ref_bytes, b1, sizeof b1);
    printf("  float32   %.0f bytes/step (%s) pushed + broadcast with identity frames\n",
           ref_bytes, b1);
    fflush(stdout);

    for (m = 0; m < NMETHOD; m++)
        if (cfg.methods & (1 << m))
            res[m] = train(&cfg, m, &p, &train_set, train_n, &test_set, test_n, ref_bytes);
    pool_destroy(&p);

    if (res[METHOD_SGDM].ran && fabs(res[METHOD_SGDM].bytes_per_step - ref_bytes) > 0.5)
        printf("note: the identity run sent %.0f bytes/step, %.0f expected\n",
               res[METHOD_SGDM].bytes_per_step, ref_bytes);

    printf("\n== summary ==\n");
    printf("  %-6s %10s %11s %14s %12s %9s %10s  %s\n", "method", "test acc", "gap (pts)",
           "bytes/step", "", "ratio", "time", "replicas");
    for (m = 0; m < NMETHOD; m++) {
        const run_result *r = &res[m];
        char gap[32];
        if (!r->ran)
            continue;
        format_bytes(r->bytes_per_step, b1, sizeof b1);
        if (m == METHOD_EF && res[METHOD_SGDM].ran)
            snprintf(gap, sizeof gap, "%+.2f", res[METHOD_SGDM].test_acc - r->test_acc);
        else
            snprintf(gap, sizeof gap, "-");
        printf("  %-6s %9.2f%% %11s %14.0f %12s %8.1fx %9.1fs  %s\n", method_name[m],
               r->test_acc, gap, r->bytes_per_step, b1, ref_bytes / r->bytes_per_step,
               r->seconds, r->replicas_identical ? "identical" : "DIFFER");
    }

    rc = 0;
    if (res[METHOD_SGDM].ran && res[METHOD_EF].ran) {
        const double gap = res[METHOD_SGDM].test_acc - res[METHOD_EF].test_acc;
        const double ratio = ref_bytes / res[METHOD_EF].bytes_per_step;
        const double gap_limit = cfg.quick ? 5.0 : GAP_LIMIT;
        const int ok_gap = gap <= gap_limit;
        const int ok_ratio = ratio >= RATIO_LIMIT;
        const int ok_sync = res[METHOD_SGDM].replicas_identical && res[METHOD_EF].replicas_identical;
        const int pass = ok_gap && ok_ratio && ok_sync;
        printf("%s: accuracy gap %.2f points (<= %.1f: %s), compression %.2fx (>= %.0fx: %s)%s%s\n",
               pass ? "PASS" : "FAIL", gap, gap_limit, ok_gap ? "yes" : "no", ratio, RATIO_LIMIT,
               ok_ratio ? "yes" : "no", ok_sync ? "" : ", replicas differ",
               cfg.quick ? " [--quick: 1 epoch, gap limit 5 points]" : "");
        if (cfg.check && !pass)
            rc = 1;
    } else {
        printf("(run --method both for the PASS/FAIL comparison)\n");
    }
    printf("total time %.1f s\n", now_seconds() - t0);

    free(train_set.images);
    free(train_set.labels);
    free(test_set.images);
    free(test_set.labels);
    if (cfg.csv)
        fclose(cfg.csv);
    return rc;
}
