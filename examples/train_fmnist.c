/*
 * train_fmnist.c - gradwire's main demo: dist-EF-blockSGDM on Fashion-MNIST.
 *
 * M simulated workers train an MLP 784-256-10 (examples/common/mlp.h) and
 * exchange their gradients through gradwire, with two methods on the same
 * initial weights, data order and learning-rate schedule:
 *
 *   sgdm  full-precision distributed SGD with Nesterov momentum: the
 *         error-feedback state machines with GW_CODEC_IDENTITY frames, where
 *         the residuals stay zero.
 *   ef    dist-EF-blockSGDM (docs/algorithms.md): blockwise scaled sign
 *         (||v_b||_1/d_b * sign(v_b)) from the workers to the servers and
 *         back, error feedback on both sides. Default blocks: one per row of
 *         a weight matrix, i.e. per output unit (--blocks).
 *
 * Layout (the reduce-scatter / all-gather layout of the paper): every tensor
 * is cut into slices (examples/common/sim.h); each slice has one gw_server
 * and, on every worker, one gw_worker. A step: each worker steps its slice
 * state machines on its gradient and pushes the frames; each server averages
 * its M frames plus its own residual and broadcasts one frame; every worker
 * applies it to its replica with gw_decode_accumulate(frame, -lr).
 *
 * This file holds the gradwire calls; data, model, threads, command line and
 * the training loop are in examples/common/. A new method is a `method`
 * entry: for another codec in the same scheme, a spec function; for another
 * scheme, its own create/push/serve/apply.
 *
 * Exit status: 0 on success (also when the comparison fails, unless --check),
 * 1 on errors or a failed --check, 2 on a bad command line, 77 when the data
 * files are missing (meson's "skipped").
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gradwire.h"

#include "common/args.h"
#include "common/idx.h"
#include "common/mlp.h"
#include "common/pool.h"
#include "common/sim.h"
#include "common/util.h"

/* --check thresholds */
#define GAP_LIMIT 1.0         /* accuracy points, full run */
#define GAP_LIMIT_QUICK 5.0   /* --quick: one epoch on a subset */
#define LEARN_FLOOR 80.0      /* ef test accuracy (%), full run */
#define LEARN_FLOOR_QUICK 70.0
#define RATIO_LIMIT 25.0      /* float32 bytes / ef bytes: about 30x with per-row blocks;
                                 blocks under ~128 elements fall below 25x */

/* ------------------------------------------------------------------------ */
/* Error-feedback parameter server: one gw_worker per (worker, slot), one     */
/* gw_server per slot; m->spec(slot) is the codec both ways.                  */
/* ------------------------------------------------------------------------ */
typedef struct ps_state {
    gw_worker **w;  /* [worker * nslots + slot] */
    gw_server **sv; /* [slot] */
} ps_state;

static void *ps_create(sim *s, const method *m)
{
    const config *cfg = s->cfg;
    ps_state *ps = xcalloc(1, sizeof *ps);
    int i, j;
    ps->w = xcalloc((size_t)s->M * (size_t)s->nslots, sizeof *ps->w);
    ps->sv = xcalloc((size_t)s->nslots, sizeof *ps->sv);
    for (j = 0; j < s->nslots; j++) {
        const sim_slot *sl = &s->slot[j];
        const mlp_tensor *T = &mlp_tensors[sl->tensor];
        gw_codec_spec *spec = m->spec(s, sl);
        gw_server_options so = GW_SERVER_OPTIONS_INIT;
        size_t cap;

        so.total = T->rows * T->cols;
        so.offset = sl->offset;
        so.length = sl->len;
        so.num_workers = (uint32_t)s->M;
        so.tensor = sl->id; /* pushes must carry GW_TAG(sl->id, step) */
        /* Broadcast with `spec`, and reject pushes of any other codec. */
        check(gw_server_create(&ps->sv[j], &so, spec, spec), "gw_server_create");
        check(gw_server_frame_bound(ps->sv[j], &cap), "gw_server_frame_bound");
        frame_buf_alloc(&s->bcast[j], cap);

        for (i = 0; i < s->M; i++) {
            gw_worker_options wo = GW_WORKER_OPTIONS_INIT;
            gw_worker **w = &ps->w[(size_t)i * s->nslots + j];
            wo.n = sl->len;
            wo.momentum = cfg->mu > 0.0 ? GW_MOMENTUM_NESTEROV : GW_MOMENTUM_NONE;
            wo.mu = (float)cfg->mu;
            wo.tensor = sl->id;
            wo.seed = cfg->seed;
            check(gw_worker_create(w, &wo, spec), "gw_worker_create");
            check(gw_worker_frame_bound(*w, &cap), "gw_worker_frame_bound");
            frame_buf_alloc(SIM_PUSH(s, i, j), cap);
        }
        gw_codec_spec_free(spec); /* the handles keep their own copies */
    }
    return ps;
}

/* Worker i: m = mu m + g; p = mu m + g + (lr_prev/lr) e; frame C(p); e = p - C(p). */
static gw_status ps_push(void *state, sim *s, int i)
{
    ps_state *ps = state;
    int j;
    for (j = 0; j < s->nslots; j++) {
        frame_buf *fb = SIM_PUSH(s, i, j);
        SIM_TRY(s, gw_worker_step(ps->w[(size_t)i * s->nslots + j], s->grad[i] + s->slot[j].start,
                                  GW_DTYPE_F32, s->slot[j].len, s->lr, fb->data, fb->cap,
                                  &fb->size));
    }
    return GW_OK;
}

/* Server of slot j: average the M pushes (fixed order: deterministic sums),
 * q = mean + (lr_prev/lr) e_s, broadcast C(q), e_s = q - C(q). */
static gw_status ps_serve(void *state, sim *s, int j)
{
    ps_state *ps = state;
    frame_buf *out = &s->bcast[j];
    int i;
    for (i = 0; i < s->M; i++) {
        const frame_buf *in = SIM_PUSH(s, i, j);
        SIM_TRY(s, gw_server_push(ps->sv[j], in->data, in->size));
    }
    SIM_TRY(s, gw_server_step(ps->sv[j], s->lr, out->data, out->cap, &out->size));
    return GW_OK;
}

/* Worker i: x -= lr * D(broadcast) for every slot. */
static gw_status ps_apply(void *state, sim *s, int i)
{
    int j;
    (void)state;
    for (j = 0; j < s->nslots; j++) {
        const frame_buf *fb = &s->bcast[j];
        SIM_TRY(s, gw_decode_accumulate(fb->data, fb->size, -s->lr, s->x[i] + s->slot[j].start,
                                        s->slot[j].len));
    }
    return GW_OK;
}

static void ps_destroy(void *state, sim *s)
{
    ps_state *ps = state;
    size_t k;
    for (k = 0; k < (size_t)s->M * (size_t)s->nslots; k++)
        gw_worker_free(ps->w[k]);
    for (k = 0; k < (size_t)s->nslots; k++)
        gw_server_free(ps->sv[k]);
    free(ps->w);
    free(ps->sv);
    free(ps);
}

/* ------------------------------------------------------------------------ */
/* The codecs                                                                 */
/* ------------------------------------------------------------------------ */
static gw_codec_spec *identity_spec(const sim *s, const sim_slot *sl)
{
    gw_codec_spec *spec;
    (void)s;
    (void)sl;
    check(gw_codec_spec_create(&spec, GW_CODEC_IDENTITY), "gw_codec_spec_create");
    return spec;
}

/* Elements per scaled-sign block in slot sl (0: the whole slice is one block). */
static uint32_t ef_block_size(const config *cfg, const sim_slot *sl)
{
    const mlp_tensor *T = &mlp_tensors[sl->tensor];
    switch (cfg->blocks) {
    case BLOCKS_ROW:
        return T->is_weight ? (uint32_t)T->cols : 0; /* one scale per output unit */
    case BLOCKS_FIXED:
        return cfg->block_size;
    case BLOCKS_TENSOR:
    default:
        return 0;
    }
}

static gw_codec_spec *scaled_sign_spec(const sim *s, const sim_slot *sl)
{
    gw_codec_spec *spec;
    check(gw_codec_spec_create(&spec, GW_CODEC_SCALED_SIGN), "gw_codec_spec_create");
    check(gw_codec_spec_set(spec, GW_PARAM_BLOCK_SIZE, ef_block_size(s->cfg, sl)),
          "gw_codec_spec_set(block_size)");
    return spec;
}

/* Contraction factor of the scaled sign (docs/algorithms.md s.1) on worker 0's
 * last W1 gradient, mean over W1's slices: 1 for a flat vector, ~0.64 for
 * Gaussian noise; small values mean error feedback carries a lot of mass. */
static double ef_phi_w1(void *state, const sim *s)
{
    double sum = 0.0;
    int j, n = 0;
    (void)state;
    for (j = 0; j < s->nslots; j++) {
        const sim_slot *sl = &s->slot[j];
        double phi;
        if (sl->tensor != MLP_W1)
            continue;
        check(gw_scaled_sign_phi(s->grad[0] + sl->start, sl->len, ef_block_size(s->cfg, sl),
                                 &phi),
              "gw_scaled_sign_phi");
        sum += phi;
        n++;
    }
    return n ? sum / n : 1.0;
}

/* Exact top-k, 1% of each slice, error feedback on both sides: with one slice
 * per tensor this is the SLGS baseline per layer. */
static gw_codec_spec *topk_spec(const sim *s, const sim_slot *sl)
{
    gw_codec_spec *spec;
    (void)s;
    (void)sl;
    check(gw_codec_spec_create(&spec, GW_CODEC_TOPK), "gw_codec_spec_create");
    check(gw_codec_spec_set(spec, GW_PARAM_DENSITY_PPM, 10000), "gw_codec_spec_set(density)");
    return spec;
}

/* ------------------------------------------------------------------------ */
/* SLGS: top-k with error feedback over the concatenated model (one selection */
/* across all layers), frames all-gathered: every worker applies every frame. */
/* ------------------------------------------------------------------------ */
#define SPARSE_RATIO_LAGS 1000 /* c = d / k of LAGS and SLGS (the 1000x) */

typedef struct slgs_state {
    gw_worker **w; /* [worker]: the whole flat gradient */
} slgs_state;

static void *slgs_create(sim *s, const method *m)
{
    const config *cfg = s->cfg;
    slgs_state *st = xcalloc(1, sizeof *st);
    gw_codec_spec *spec;
    int i;
    (void)m;
    check(gw_codec_spec_create(&spec, GW_CODEC_TOPK), "gw_codec_spec_create");
    check(gw_codec_spec_set(spec, GW_PARAM_K, (MLP_NPARAM + SPARSE_RATIO_LAGS - 1) / SPARSE_RATIO_LAGS),
          "gw_codec_spec_set(k)");
    st->w = xcalloc((size_t)s->M, sizeof *st->w);
    for (i = 0; i < s->M; i++) {
        gw_worker_options wo = GW_WORKER_OPTIONS_INIT;
        size_t cap;
        wo.n = MLP_NPARAM;
        wo.momentum = cfg->mu > 0.0 ? GW_MOMENTUM_NESTEROV : GW_MOMENTUM_NONE;
        wo.mu = (float)cfg->mu;
        check(gw_worker_create(&st->w[i], &wo, spec), "gw_worker_create");
        check(gw_worker_frame_bound(st->w[i], &cap), "gw_worker_frame_bound");
        frame_buf_alloc(SIM_PUSH(s, i, 0), cap);
    }
    gw_codec_spec_free(spec);
    return st;
}

static gw_status slgs_push(void *state, sim *s, int i)
{
    slgs_state *st = state;
    frame_buf *fb = SIM_PUSH(s, i, 0);
    SIM_TRY(s, gw_worker_step(st->w[i], s->grad[i], GW_DTYPE_F32, MLP_NPARAM, s->lr, fb->data,
                              fb->cap, &fb->size));
    return GW_OK;
}

static gw_status no_serve(void *state, sim *s, int j)
{
    (void)state;
    (void)s;
    (void)j;
    return GW_OK;
}

/* All-gather: x -= (lr / M) * sum_p D(frame_p), in rank order on every worker. */
static gw_status slgs_apply(void *state, sim *s, int i)
{
    int p;
    (void)state;
    for (p = 0; p < s->M; p++) {
        const frame_buf *fb = SIM_PUSH(s, p, 0);
        SIM_TRY(s, gw_decode_accumulate(fb->data, fb->size, -s->lr / (float)s->M, s->x[i],
                                        MLP_NPARAM));
    }
    return GW_OK;
}

static void slgs_destroy(void *state, sim *s)
{
    slgs_state *st = state;
    int i;
    for (i = 0; i < s->M; i++)
        gw_worker_free(st->w[i]);
    free(st->w);
    free(st);
}

static const method methods[] = {
    {"sgdm", "full-precision SGD with Nesterov momentum (identity frames)", ps_create, ps_push,
     ps_serve, ps_apply, ps_destroy, identity_spec, NULL, NULL, 0},
    {"ef", "dist-EF-blockSGDM, scaled sign both ways", ps_create, ps_push, ps_serve, ps_apply,
     ps_destroy, scaled_sign_spec, "phi(W1)", ef_phi_w1, 0},
    {"topk", "exact top-k 1% both ways with error feedback (SLGS per slice)", ps_create, ps_push,
     ps_serve, ps_apply, ps_destroy, topk_spec, NULL, NULL, 0},
    {"slgs", "SLGS: top-k 0.1% over the whole model, error feedback, all-gather", slgs_create,
     slgs_push, no_serve, slgs_apply, slgs_destroy, NULL, NULL, NULL, 1},
};
#define NMETHOD ((int)(sizeof methods / sizeof methods[0]))
enum { M_SGDM = 0, M_EF = 1 };

/* ------------------------------------------------------------------------ */
/* Reference: bytes per step if every frame were float32 (identity)           */
/* ------------------------------------------------------------------------ */
static double identity_bytes_per_step(const config *cfg)
{
    gw_codec_spec *spec;
    gw_encode_ctx ctx = GW_ENCODE_CTX_INIT;
    float *zeros = xcalloc(MLP_NPARAM, sizeof(float));
    unsigned char *frame;
    size_t cap, written;
    double bytes = 0.0;
    int nslots, j;
    sim_slot *slot = sim_layout(cfg, &nslots);

    check(gw_codec_spec_create(&spec, GW_CODEC_IDENTITY), "gw_codec_spec_create");
    check(gw_encode_bound(spec, MLP_NPARAM, &cap), "gw_encode_bound");
    frame = xmalloc(cap);
    for (j = 0; j < nslots; j++) {
        ctx.tensor = slot[j].id;
        ctx.tag = GW_TAG(slot[j].id, 0);
        check(gw_encode(spec, &ctx, zeros, GW_DTYPE_F32, slot[j].len, frame, cap, &written),
              "gw_encode");
        bytes += 2.0 * cfg->workers * (double)written; /* M pushes + M receivers */
    }
    gw_codec_spec_free(spec);
    free(frame);
    free(zeros);
    free(slot);
    return bytes;
}

/* The float32 bytes a method's traffic replaces: one-way methods have no
 * broadcast back, so their reference is the M pushes alone. */
static double method_ref_bytes(const method *m, double ref_bytes)
{
    return m->one_way ? ref_bytes / 2.0 : ref_bytes;
}

/* ------------------------------------------------------------------------ */
/* Selected methods from "sgdm,ef"; exits on an unknown name. */
static int select_methods(const char *list, int *selected)
{
    char buf[256];
    char *tok;
    int m, count = 0;
    if (strlen(list) >= sizeof buf) {
        fprintf(stderr, "%s: --method list too long\n", util_prog);
        exit(EXIT_USAGE);
    }
    strcpy(buf, list);
    memset(selected, 0, sizeof(int) * NMETHOD);
    for (tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        for (m = 0; m < NMETHOD && strcmp(tok, methods[m].name); m++)
            ;
        if (m == NMETHOD) {
            fprintf(stderr, "%s: unknown method '%s' (try --help)\n", util_prog, tok);
            exit(EXIT_USAGE);
        }
        count += !selected[m];
        selected[m] = 1;
    }
    return count;
}

static void print_header(const config *cfg, int train_n, int test_n, int nthreads,
                         double ref_bytes)
{
    const int M = cfg->workers, S = cfg->shards;
    char buf[32], bb[32];
    int t;
    printf("gradwire %s (SIMD %s): Fashion-MNIST, %d simulated workers\n", gw_version_string(),
           gw_simd_target_name(gw_simd_active_target()), M);
    printf("  data      %s: %d train / %d test samples%s\n", cfg->data_dir, train_n, test_n,
           cfg->quick ? " (--quick subset)" : "");
    printf("  model     MLP %d-%d-%d ReLU, softmax cross-entropy, %d parameters:", MLP_IN,
           MLP_HID, MLP_OUT, MLP_NPARAM);
    for (t = 0; t < MLP_NT; t++) {
        const mlp_tensor *T = &mlp_tensors[t];
        if (T->rows > 1)
            printf(" %s [%llu][%llu]", T->name, (unsigned long long)T->rows,
                   (unsigned long long)T->cols);
        else
            printf(" %s [%llu]", T->name, (unsigned long long)T->cols);
    }
    printf("\n");
    printf("  training  %d epochs x %d steps, batch %d per worker (%d global), seed %llu\n",
           cfg->epochs, train_n / (M * cfg->batch), cfg->batch, cfg->batch * M,
           (unsigned long long)cfg->seed);
    printf("            lr %g cosine -> %g, Nesterov momentum mu %g, %d compute thread%s\n",
           cfg->lr, cfg->lr * cfg->lr_final, cfg->mu, nthreads, nthreads > 1 ? "s" : "");
    printf("  layout    each tensor in %d slices (weights between rows), one gw_server per\n"
           "            slice, one gw_worker per worker and slice\n", S);
    printf("  blocks    scaled sign: %s%s\n", blocks_name(cfg, buf, sizeof buf),
           cfg->blocks == BLOCKS_ROW      ? " (one block per weight row = per output unit; "
                                            "biases one per slice)"
           : cfg->blocks == BLOCKS_TENSOR ? " (one block per slice frame)"
                                          : " elements per block");
    format_bytes(ref_bytes, bb, sizeof bb);
    printf("  float32   %.0f bytes/step (%s) pushed + broadcast with identity frames\n",
           ref_bytes, bb);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    config cfg;
    dataset train_set, test_set;
    run_result res[NMETHOD];
    int selected[NMETHOD];
    char names[128] = "";
    pool p;
    int rc, train_n, test_n, m, nthreads;
    double ref_bytes, t0;
    char b1[32];

    util_prog = "train_fmnist";
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (m = 0; m < NMETHOD; m++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", m ? ", " : "",
                 methods[m].name);
    parse_args(argc, argv, &cfg, names);
    select_methods(cfg.methods, selected);
    if (cfg.check && !(selected[M_SGDM] && selected[M_EF])) {
        fprintf(stderr, "%s: --check compares sgdm and ef; select both\n", util_prog);
        return EXIT_USAGE;
    }
    memset(res, 0, sizeof res);

    t0 = now_seconds();
    rc = idx_load(cfg.data_dir, "train", &train_set);
    if (rc)
        return rc;
    rc = idx_load(cfg.data_dir, "t10k", &test_set);
    if (rc) {
        idx_free(&train_set);
        return rc;
    }
    train_n = cfg.train_limit && cfg.train_limit < train_set.n ? cfg.train_limit : train_set.n;
    test_n = cfg.test_limit && cfg.test_limit < test_set.n ? cfg.test_limit : test_set.n;
    if (train_n < cfg.workers * cfg.batch) {
        fprintf(stderr, "%s: workers * batch (%d) exceeds the %d training samples\n", util_prog,
                cfg.workers * cfg.batch, train_n);
        return EXIT_USAGE;
    }

    nthreads = cfg.threads > 0 ? cfg.threads
                               : (cfg.workers < pool_cpus() ? cfg.workers : pool_cpus());
    pool_init(&p, nthreads);
    ref_bytes = identity_bytes_per_step(&cfg);
    print_header(&cfg, train_n, test_n, p.nhelpers + 1, ref_bytes);

    for (m = 0; m < NMETHOD; m++)
        if (selected[m])
            res[m] = sim_run(&cfg, &methods[m], &p, &train_set, train_n, &test_set, test_n,
                             method_ref_bytes(&methods[m], ref_bytes));
    pool_destroy(&p);

    printf("\n== summary ==\n");
    printf("  %-6s %10s %11s %14s %12s %9s %10s  %s\n", "method", "test acc", "gap (pts)",
           "bytes/step", "", "ratio", "time", "replicas");
    for (m = 0; m < NMETHOD; m++) {
        const run_result *r = &res[m];
        char gap[32];
        if (!r->ran)
            continue;
        format_bytes(r->bytes_per_step, b1, sizeof b1);
        if (m != M_SGDM && res[M_SGDM].ran)
            snprintf(gap, sizeof gap, "%+.2f", res[M_SGDM].test_acc - r->test_acc);
        else
            snprintf(gap, sizeof gap, "-");
        printf("  %-6s %9.2f%% %11s %14.0f %12s %8.1fx %9.1fs  %s\n", methods[m].name,
               r->test_acc, gap, r->bytes_per_step, b1,
               method_ref_bytes(&methods[m], ref_bytes) / r->bytes_per_step,
               r->seconds, r->replicas_identical ? "identical" : "DIFFER");
    }

    rc = 0;
    if (res[M_SGDM].ran && res[M_EF].ran) {
        const double gap = res[M_SGDM].test_acc - res[M_EF].test_acc;
        const double ratio = ref_bytes / res[M_EF].bytes_per_step;
        const double gap_limit = cfg.quick ? GAP_LIMIT_QUICK : GAP_LIMIT;
        const double floor = cfg.quick ? LEARN_FLOOR_QUICK : LEARN_FLOOR;
        const int ok_learn = res[M_EF].test_acc >= floor;
        const int ok_gap = gap <= gap_limit;
        const int ok_ratio = ratio >= RATIO_LIMIT;
        const int ok_sync = res[M_SGDM].replicas_identical && res[M_EF].replicas_identical;
        const int pass = ok_learn && ok_gap && ok_ratio && ok_sync;
        printf("%s: ef accuracy %.2f%% (>= %.0f: %s), gap %.2f points (<= %.1f: %s), "
               "compression %.2fx (>= %.0fx: %s), replicas %s%s\n",
               pass ? "PASS" : "FAIL", res[M_EF].test_acc, floor, ok_learn ? "yes" : "no", gap,
               gap_limit, ok_gap ? "yes" : "no", ratio, RATIO_LIMIT, ok_ratio ? "yes" : "no",
               ok_sync ? "identical" : "DIFFER",
               cfg.quick ? " [--quick: 1 epoch on a subset, looser limits]" : "");
        if (cfg.check && !pass)
            rc = 1;
    } else {
        printf("(select sgdm and ef for the PASS/FAIL comparison)\n");
    }
    printf("total time %.1f s\n", now_seconds() - t0);

    idx_free(&train_set);
    idx_free(&test_set);
    if (cfg.csv)
        fclose(cfg.csv);
    return rc;
}
