/* The parameter-server methods of the demo: sgdm (identity frames), ef
 * (dist-EF-blockSGDM, scaled sign both ways) and topk (exact top-k 1% both
 * ways), one implementation with a codec per slot.
 *
 * Layout (the reduce-scatter / all-gather layout of the paper): every tensor
 * is cut into slices (examples/common/sim.h); each slice has one gw_server
 * and, on every worker, one gw_worker. A step: each worker steps its slice
 * state machines on its gradient and pushes the frames; each server averages
 * its M frames plus its own residual and broadcasts one frame; every worker
 * applies it to its replica with gw_decode_accumulate(frame, -lr).
 */
#include <stdlib.h>

#include "gradwire.h"

#include "common/util.h"
#include "methods.h"

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

const method method_sgdm = {
    .name = "sgdm", .title = "full-precision SGD with Nesterov momentum (identity frames)",
    .create = ps_create, .push = ps_push, .serve = ps_serve, .apply = ps_apply,
    .destroy = ps_destroy, .spec = identity_spec};
const method method_ef = {
    .name = "ef", .title = "dist-EF-blockSGDM, scaled sign both ways",
    .create = ps_create, .push = ps_push, .serve = ps_serve, .apply = ps_apply,
    .destroy = ps_destroy, .spec = scaled_sign_spec, .diag_name = "phi(W1)", .diag = ef_phi_w1,
    /* about 30x with per-row blocks; blocks under ~128 elements fall below 25x */
    .gap_limit = 1.0, .min_ratio = 25.0};
const method method_topk = {
    .name = "topk", .title = "exact top-k 1% both ways with error feedback (SLGS per slice)",
    .create = ps_create, .push = ps_push, .serve = ps_serve, .apply = ps_apply,
    .destroy = ps_destroy, .spec = topk_spec};
/* topk is not --check'ed: compressed both ways it needs more than --quick's one
 * short epoch to catch up (65% there; 1.3 points from sgdm after 12 epochs). */
