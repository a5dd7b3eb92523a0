/* LAGS-SGD (docs/algorithms.md s.7): every layer is sparsified on its own as
 * soon as backpropagation produces its gradient (last layer first), with its
 * own residual and k_l = d_l / 1000, and the layers' frames go out
 * all-gathered: every worker applies every worker's frames,
 * v -= (1/M) * sum_p decoded_p (lr is inside the residual recursion
 * acc = eps + lr * g).
 */
#include <stdlib.h>

#include "gradwire.h"

#include "common/util.h"
#include "methods.h"

typedef struct lags_state {
    gw_lags_layer **h; /* [worker * MLP_NT + tensor] */
    float **u, **p;    /* [worker]: local momentum and momentum-corrected gradient */
    float *acc, *mem;  /* delta diagnostic scratch: [M * n(W1)], [n(W1)] */
    double delta_sum;
    long delta_n;
} lags_state;

static void *lags_create(sim *s, const method *m)
{
    const int M = s->M;
    lags_state *st = xcalloc(1, sizeof *st);
    const uint64_t n1 = mlp_tensors[MLP_W1].rows * mlp_tensors[MLP_W1].cols;
    int i, t;
    (void)m;
    st->h = xcalloc((size_t)M * MLP_NT, sizeof *st->h);
    st->u = xcalloc((size_t)M, sizeof *st->u);
    st->p = xcalloc((size_t)M, sizeof *st->p);
    st->acc = xcalloc((size_t)M * n1, sizeof(float));
    st->mem = xcalloc(n1, sizeof(float));
    for (i = 0; i < M; i++) {
        st->u[i] = xcalloc(MLP_NPARAM, sizeof(float));
        st->p[i] = xcalloc(MLP_NPARAM, sizeof(float));
        for (t = 0; t < MLP_NT; t++) {
            const mlp_tensor *T = &mlp_tensors[t];
            const uint64_t n = T->rows * T->cols;
            gw_lags_layer_options o = GW_LAGS_LAYER_OPTIONS_INIT;
            gw_lags_layer **h = &st->h[(size_t)i * MLP_NT + t];
            gw_codec_spec *spec;
            size_t cap;
            check(gw_codec_spec_create(&spec, GW_CODEC_TOPK), "gw_codec_spec_create");
            check(gw_codec_spec_set(spec, GW_PARAM_K,
                                    (int64_t)((n + SPARSE_RATIO_LAGS - 1) / SPARSE_RATIO_LAGS)),
                  "gw_codec_spec_set(k)");
            o.n = n;
            o.tensor = (uint32_t)t;
            check(gw_lags_layer_create(h, &o, spec), "gw_lags_layer_create");
            check(gw_lags_layer_frame_bound(*h, &cap), "gw_lags_layer_frame_bound");
            frame_buf_alloc(SIM_PUSH(s, i, t), cap);
            gw_codec_spec_free(spec);
        }
    }
    return st;
}

/* Layers in backward order, as backpropagation hands them over. */
static gw_status lags_push(void *state, sim *s, int i)
{
    lags_state *st = state;
    int t;
    method_nesterov(st->u[i], s->grad[i], (float)s->cfg->mu, st->p[i], MLP_NPARAM);
    for (t = MLP_NT - 1; t >= 0; t--) {
        const mlp_tensor *T = &mlp_tensors[t];
        frame_buf *fb = SIM_PUSH(s, i, t);
        SIM_TRY(s, gw_lags_layer_step(st->h[(size_t)i * MLP_NT + t], st->p[i] + T->off,
                                      GW_DTYPE_F32, T->rows * T->cols, s->lr, fb->data, fb->cap,
                                      &fb->size));
    }
    return GW_OK;
}

/* delta of W1 (Assumption 1 of the paper holds when <= 1): the workers'
 * accumulators acc_p = eps_p + decoded_p, rebuilt after the step. */
static gw_status lags_serve(void *state, sim *s, int t)
{
    lags_state *st = state;
    const mlp_tensor *T = &mlp_tensors[MLP_W1];
    const uint64_t n = T->rows * T->cols;
    const float *xs[64];
    size_t kf;
    double delta;
    int i;
    if (t != MLP_W1 || s->M > 64)
        return GW_OK;
    for (i = 0; i < s->M; i++) {
        float *acc = st->acc + (size_t)i * n;
        const frame_buf *fb = SIM_PUSH(s, i, MLP_W1);
        SIM_TRY(s, gw_lags_layer_residual(st->h[(size_t)i * MLP_NT + MLP_W1], acc, n));
        SIM_TRY(s, gw_decode_accumulate(fb->data, fb->size, 1.0f, acc, n));
        xs[i] = acc;
    }
    kf = (size_t)((n + SPARSE_RATIO_LAGS - 1) / SPARSE_RATIO_LAGS);
    SIM_TRY(s, gw_sparsity_delta(xs, (uint32_t)s->M, n, kf, &delta));
    st->delta_sum += delta;
    st->delta_n++;
    return GW_OK;
}

static gw_status lags_apply(void *state, sim *s, int i)
{
    int p, t;
    (void)state;
    for (p = 0; p < s->M; p++)
        for (t = 0; t < MLP_NT; t++) {
            const mlp_tensor *T = &mlp_tensors[t];
            const frame_buf *fb = SIM_PUSH(s, p, t);
            SIM_TRY(s, gw_decode_accumulate(fb->data, fb->size, -1.0f / (float)s->M,
                                            s->x[i] + T->off, T->rows * T->cols));
        }
    return GW_OK;
}

static double lags_diag(void *state, const sim *s)
{
    lags_state *st = state;
    const double mean = st->delta_n ? st->delta_sum / (double)st->delta_n : 0.0;
    (void)s;
    st->delta_sum = 0.0;
    st->delta_n = 0;
    return mean;
}

static void lags_destroy(void *state, sim *s)
{
    lags_state *st = state;
    size_t k;
    int i;
    for (k = 0; k < (size_t)s->M * MLP_NT; k++)
        gw_lags_layer_free(st->h[k]);
    for (i = 0; i < s->M; i++) {
        free(st->u[i]);
        free(st->p[i]);
    }
    free(st->h);
    free(st->u);
    free(st->p);
    free(st->acc);
    free(st->mem);
    free(st);
}

const method method_lags = {
    .name = "lags", .title = "LAGS-SGD: top-k 0.1% per layer in backward order, all-gather",
    .create = lags_create, .push = lags_push, .serve = lags_serve, .apply = lags_apply,
    .destroy = lags_destroy, .diag_name = "delta(W1)", .diag = lags_diag, .one_way = 1,
    .gap_limit = 2.0, .min_ratio = 400.0, .quick_gap_limit = 12.0};
