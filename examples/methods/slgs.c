/* SLGS, the baseline of the LAGS-SGD paper: top-k with error feedback over
 * the concatenated model (one selection across all layers), frames
 * all-gathered so every worker applies every worker's frame. */
#include <stdlib.h>

#include "gradwire.h"

#include "common/util.h"
#include "methods.h"

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
    check(gw_codec_spec_set(spec, GW_PARAM_K,
                            (MLP_NPARAM + SPARSE_RATIO_LAGS - 1) / SPARSE_RATIO_LAGS),
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

const method method_slgs = {
    .name = "slgs", .title = "SLGS: top-k 0.1% over the whole model, error feedback, all-gather",
    .create = slgs_create, .push = slgs_push, .serve = method_no_serve, .apply = slgs_apply,
    .destroy = slgs_destroy, .one_way = 1, .gap_limit = 2.0, .min_ratio = 400.0};
