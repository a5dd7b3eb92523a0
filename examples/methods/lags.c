/* LAGS-SGD (docs/algorithms.md s.7): every layer is sparsified on its own as
 * soon as backpropagation produces its gradient (last layer first), with its
 * own residual and k_l = d_l / 1000, and the layers' frames go out
 * all-gathered: every worker applies every worker's frames,
 * v -= (1/M) * sum_p decoded_p (lr is inside the residual recursion
 * acc = eps + lr * g). The small layers (b2, W2, b1) share one message: a
 * fusion buffer per worker merges their frames into a bundle, flushed when
 * the last of them is in; W1's frame goes alone.
 */
#include <stdlib.h>

#include "gradwire.h"

#include "common/util.h"
#include "methods.h"

/* The small layers, in fusion slot order; W1 goes alone. */
static const int fused[] = {MLP_B1, MLP_W2, MLP_B2};
#define NFUSED 3

typedef struct lags_state {
    gw_lags_layer **h; /* [worker * MLP_NT + tensor] */
    gw_fusion **fusion;         /* [worker] */
    frame_buf *small;           /* [worker * NFUSED]: frames before they are fused */
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
    st->fusion = xcalloc((size_t)M, sizeof *st->fusion);
    st->small = xcalloc((size_t)M * NFUSED, sizeof *st->small);
    st->u = xcalloc((size_t)M, sizeof *st->u);
    st->p = xcalloc((size_t)M, sizeof *st->p);
    st->acc = xcalloc((size_t)M * n1, sizeof(float));
    st->mem = xcalloc(n1, sizeof(float));
    for (i = 0; i < M; i++) {
        gw_fusion_options fo = GW_FUSION_OPTIONS_INIT;
        size_t bundle_cap = 16;
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
            if (t == MLP_W1)
                frame_buf_alloc(SIM_PUSH(s, i, t), cap);
            else {
                int f = 0;
                while (fused[f] != t)
                    f++;
                frame_buf_alloc(&st->small[(size_t)i * NFUSED + f], cap);
                bundle_cap += 12 + cap;
            }
            gw_codec_spec_free(spec);
        }
        fo.layers = NFUSED;
        fo.capacity = (size_t)1 << 16;
        check(gw_fusion_create(&st->fusion[i], &fo), "gw_fusion_create");
        frame_buf_alloc(SIM_PUSH(s, i, MLP_B1), bundle_cap); /* the bundle */
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
        int f = 0, flush = 0;
        frame_buf *fb;
        while (f < NFUSED && fused[f] != t)
            f++;
        fb = f < NFUSED ? &st->small[(size_t)i * NFUSED + f] : SIM_PUSH(s, i, t);
        SIM_TRY(s, gw_lags_layer_step(st->h[(size_t)i * MLP_NT + t], st->p[i] + T->off,
                                      GW_DTYPE_F32, T->rows * T->cols, s->lr, fb->data, fb->cap,
                                      &fb->size));
        if (f == NFUSED)
            continue;
        SIM_TRY(s, gw_fusion_add(st->fusion[i], (uint32_t)f, fb->data, fb->size, &flush));
        if (flush) { /* the last small layer is in: the bundle goes out */
            frame_buf *bundle = SIM_PUSH(s, i, MLP_B1);
            SIM_TRY(s, gw_fusion_flush(st->fusion[i], bundle->data, bundle->cap, &bundle->size));
        }
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

/* Every worker's W1 frame and bundle, in rank order: v -= (1/M) * decoded. */
static gw_status lags_apply(void *state, sim *s, int i)
{
    const float alpha = -1.0f / (float)s->M;
    const mlp_tensor *W1 = &mlp_tensors[MLP_W1];
    int p;
    (void)state;
    for (p = 0; p < s->M; p++) {
        const frame_buf *fb = SIM_PUSH(s, p, MLP_W1), *bundle = SIM_PUSH(s, p, MLP_B1);
        gw_bundle_entry e[NFUSED];
        size_t count, j;
        SIM_TRY(s, gw_decode_accumulate(fb->data, fb->size, alpha, s->x[i] + W1->off,
                                        W1->rows * W1->cols));
        SIM_TRY(s, gw_bundle_frames(bundle->data, bundle->size, e, NFUSED, &count));
        for (j = 0; j < count; j++) {
            const mlp_tensor *T;
            if (e[j].layer >= NFUSED) /* a valid bundle, but not of our layers */
                return sim_error(s, GW_ERR_FRAME_INDEX, "bundle layer");
            T = &mlp_tensors[fused[e[j].layer]];
            SIM_TRY(s, gw_decode_accumulate(bundle->data + e[j].offset, e[j].size, alpha,
                                            s->x[i] + T->off, T->rows * T->cols));
        }
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
    for (k = 0; k < (size_t)s->M * NFUSED; k++)
        free(st->small[k].data);
    for (i = 0; i < s->M; i++)
        gw_fusion_free(st->fusion[i]);
    free(st->fusion);
    free(st->small);
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
    .name = "lags", .title = "LAGS-SGD: top-k 0.1% per layer in backward order, small layers fused, all-gather",
    .create = lags_create, .push = lags_push, .serve = lags_serve, .apply = lags_apply,
    .destroy = lags_destroy, .diag_name = "delta(W1)", .diag = lags_diag, .one_way = 1,
    .gap_limit = 2.0, .min_ratio = 400.0, .quick_gap_limit = 12.0};
