/* ScaleCom's CLT-k (docs/algorithms.md s.4): per tensor, a leader that
 * rotates every step picks the indices (chunk-wise top-k of its own
 * accumulator) and sends them as one index frame; every worker extracts its
 * values there, the values are summed by an ordinary all-reduce (a plain
 * sum of float buffers of the same length and order on every worker), and
 * every worker applies the sum. The low-pass filtered memory keeps what was
 * not sent.
 *
 * Momentum: each worker feeds its Nesterov-corrected gradient p into the
 * memory (a = m + lr p) and, as Deep Gradient Compression does, clears its
 * momentum at the indices that were sent (momentum factor masking). Without
 * the masking, momentum keeps piling into entries that wait for a leader to
 * pick them, and training diverges at mu = 0.9 (docs/results.md).
 *
 * Phases of one step, per tensor (gw_cltk_* calls):
 *   push  (worker i)  begin: a_i = m_i + lr p_i; if i leads: select -> index frame
 *   serve (tensor)    every worker: extract its values at the leader's indices;
 *                     the values are summed in rank order (the all-reduce)
 *   apply (worker i)  x[I] -= sum / M and the memory update; u_i[I] = 0
 */
#include <stdlib.h>

#include "gradwire.h"

#include "common/util.h"
#include "methods.h"

#define CLTK_CHUNK 4096 /* elements per chunk of the leader's selection */

typedef struct cltk_state {
    gw_cltk **h;    /* [worker * MLP_NT + tensor] */
    float **u, **p; /* [worker]: local momentum and momentum-corrected gradient */
    uint32_t **idx; /* [worker]: indices of a tensor's round (momentum masking) */
    float **vals;   /* [worker * MLP_NT + tensor]: extracted values */
    float **sum;    /* [tensor]: their sum (what the all-reduce returns) */
    size_t *count;  /* [tensor]: values this step */
    size_t vcap[MLP_NT]; /* [tensor]: floats per value buffer */
    double overlap_sum;
    long overlap_n;
    gw_codec_spec *truth; /* exact top-k of the mean accumulator (the diagnostic) */
} cltk_state;

static gw_codec_spec *cltk_select_spec(uint64_t chunk)
{
    gw_codec_spec *spec;
    check(gw_codec_spec_create(&spec, GW_CODEC_INDEX), "gw_codec_spec_create");
    check(gw_codec_spec_set(spec, GW_PARAM_DENSITY_PPM, 1000000 / SPARSE_RATIO_CLTK),
          "gw_codec_spec_set(density)");
    check(gw_codec_spec_set(spec, GW_PARAM_CHUNK_SIZE, chunk), "gw_codec_spec_set(chunk)");
    return spec;
}

static void *cltk_create(sim *s, const method *m)
{
    const int M = s->M;
    cltk_state *st = xcalloc(1, sizeof *st);
    gw_codec_spec *spec = cltk_select_spec(CLTK_CHUNK);
    int i, t;
    (void)m;
    st->h = xcalloc((size_t)M * MLP_NT, sizeof *st->h);
    st->vals = xcalloc((size_t)M * MLP_NT, sizeof *st->vals);
    st->u = xcalloc((size_t)M, sizeof *st->u);
    st->p = xcalloc((size_t)M, sizeof *st->p);
    st->idx = xcalloc((size_t)M, sizeof *st->idx);
    st->sum = xcalloc(MLP_NT, sizeof *st->sum);
    st->count = xcalloc(MLP_NT, sizeof *st->count);
    for (i = 0; i < M; i++) {
        st->u[i] = xcalloc(MLP_NPARAM, sizeof(float));
        st->p[i] = xcalloc(MLP_NPARAM, sizeof(float));
        st->idx[i] = xcalloc(MLP_NPARAM, sizeof(uint32_t));
        for (t = 0; t < MLP_NT; t++) {
            const mlp_tensor *T = &mlp_tensors[t];
            gw_cltk_options o = GW_CLTK_OPTIONS_INIT;
            gw_cltk **h = &st->h[(size_t)i * MLP_NT + t];
            size_t cap;
            o.n = T->rows * T->cols;
            o.num_workers = (uint32_t)M;
            o.rank = (uint32_t)i;
            o.beta = CLTK_BETA;
            o.warmup_steps = 0;
            o.tensor = (uint32_t)t;
            check(gw_cltk_create(h, &o, spec), "gw_cltk_create");
            check(gw_cltk_index_frame_bound(*h, &cap), "gw_cltk_index_frame_bound");
            frame_buf_alloc(SIM_PUSH(s, i, t), cap);
            check(gw_cltk_values_bound(*h, &cap), "gw_cltk_values_bound");
            if (cap > st->vcap[t])
                st->vcap[t] = cap;
            st->vals[(size_t)i * MLP_NT + t] = xcalloc(cap, sizeof(float));
            if (i == 0)
                st->sum[t] = xcalloc(cap, sizeof(float));
        }
    }
    gw_codec_spec_free(spec);
    st->truth = cltk_select_spec(0);
    return st;
}

static gw_status cltk_push(void *state, sim *s, int i)
{
    cltk_state *st = state;
    int t;
    method_nesterov(st->u[i], s->grad[i], (float)s->cfg->mu, st->p[i], MLP_NPARAM);
    for (t = 0; t < MLP_NT; t++) {
        const mlp_tensor *T = &mlp_tensors[t];
        gw_cltk *h = st->h[(size_t)i * MLP_NT + t];
        frame_buf *fb = SIM_PUSH(s, i, t);
        uint32_t leader;
        SIM_TRY(s, gw_cltk_begin(h, st->p[i] + T->off, GW_DTYPE_F32, T->rows * T->cols, s->lr));
        SIM_TRY(s, gw_cltk_leader(h, &leader));
        if (leader == (uint32_t)i)
            SIM_TRY(s, gw_cltk_select(h, fb->data, fb->cap, &fb->size));
    }
    return GW_OK;
}

/* Overlap of this step's CLT-k indices with the exact top-k of the workers'
 * mean accumulator (the paper's diagnostic), on W1. */
static gw_status cltk_overlap(cltk_state *st, sim *s)
{
    const mlp_tensor *T = &mlp_tensors[MLP_W1];
    const uint64_t n = T->rows * T->cols;
    float *mean = xcalloc(n, sizeof(float)), *mem = xmalloc(n * sizeof(float));
    uint32_t *mine = xmalloc(n * sizeof(uint32_t)), *best = xmalloc(n * sizeof(uint32_t));
    size_t cap, written, kmine, kbest;
    unsigned char *frame;
    double overlap;
    uint64_t j;
    int i;
    for (i = 0; i < s->M; i++) {
        /* a_i = m_i + lr p_i, as the handle computed it */
        SIM_TRY(s, gw_cltk_memory(st->h[(size_t)i * MLP_NT + MLP_W1], mem, n));
        for (j = 0; j < n; j++)
            mean[j] += (mem[j] + s->lr * st->p[i][T->off + j]) / (float)s->M;
    }
    check(gw_encode_bound(st->truth, n, &cap), "gw_encode_bound");
    frame = xmalloc(cap);
    SIM_TRY(s, gw_encode(st->truth, NULL, mean, GW_DTYPE_F32, n, frame, cap, &written));
    SIM_TRY(s, gw_index_frame_indices(frame, written, best, n, &kbest));
    SIM_TRY(s, gw_cltk_indices(st->h[MLP_W1], mine, n, &kmine));
    SIM_TRY(s, gw_index_overlap(mine, kmine, best, kbest, &overlap));
    st->overlap_sum += overlap;
    st->overlap_n++;
    free(frame);
    free(mean);
    free(mem);
    free(mine);
    free(best);
    return GW_OK;
}

static gw_status cltk_serve(void *state, sim *s, int t)
{
    cltk_state *st = state;
    uint32_t leader;
    const frame_buf *index;
    size_t count = 0, j;
    int i;
    if (t >= MLP_NT)
        return GW_OK;
    SIM_TRY(s, gw_cltk_leader(st->h[t], &leader));
    index = SIM_PUSH(s, leader, t);
    for (i = 0; i < s->M; i++) {
        float *v = st->vals[(size_t)i * MLP_NT + t];
        SIM_TRY(s, gw_cltk_extract(st->h[(size_t)i * MLP_NT + t], index->data, index->size, v,
                                   st->vcap[t], &count));
        for (j = 0; j < count; j++) /* the all-reduce, in rank order */
            st->sum[t][j] = i ? st->sum[t][j] + v[j] : v[j];
    }
    st->count[t] = count;
    s->extra_bytes[t] = (double)s->M * (double)count * sizeof(float);
    if (t == MLP_W1)
        return cltk_overlap(st, s);
    return GW_OK;
}

static gw_status cltk_apply(void *state, sim *s, int i)
{
    cltk_state *st = state;
    int t;
    for (t = 0; t < MLP_NT; t++) {
        const mlp_tensor *T = &mlp_tensors[t];
        gw_cltk *h = st->h[(size_t)i * MLP_NT + t];
        size_t count, j;
        SIM_TRY(s, gw_cltk_apply(h, st->sum[t], st->count[t], s->x[i] + T->off,
                                 T->rows * T->cols));
        SIM_TRY(s, gw_cltk_indices(h, st->idx[i], MLP_NPARAM, &count));
        for (j = 0; j < count; j++) /* momentum factor masking */
            st->u[i][T->off + st->idx[i][j]] = 0.0f;
    }
    return GW_OK;
}

/* Mean overlap since the last call (one epoch). */
static double cltk_diag(void *state, const sim *s)
{
    cltk_state *st = state;
    const double mean = st->overlap_n ? st->overlap_sum / (double)st->overlap_n : 0.0;
    (void)s;
    st->overlap_sum = 0.0;
    st->overlap_n = 0;
    return mean;
}

static void cltk_destroy(void *state, sim *s)
{
    cltk_state *st = state;
    size_t k;
    int i;
    for (k = 0; k < (size_t)s->M * MLP_NT; k++) {
        gw_cltk_free(st->h[k]);
        free(st->vals[k]);
    }
    for (i = 0; i < s->M; i++) {
        free(st->u[i]);
        free(st->p[i]);
        free(st->idx[i]);
    }
    for (k = 0; k < MLP_NT; k++)
        free(st->sum[k]);
    gw_codec_spec_free(st->truth);
    free(st->h);
    free(st->vals);
    free(st->u);
    free(st->p);
    free(st->idx);
    free(st->sum);
    free(st->count);
    free(st);
}

/* --quick's gap limit: 100 steps leave CLT-k barely trained and its quick gap
 * swings with any change of the trajectory (seeds 1-12: 10-28 points under the
 * ceil-per-chunk rule, 11-30 under exactly k). Seed 1 went from 20.95 to
 * 30.10 when the index codec's default became exactly k (rule revision 2: one
 * W1 entry fewer per step); the full run stays within its 2 points. */
const method method_cltk = {
    .name = "cltk", .title = "ScaleCom CLT-k 1% (chunk-wise top-k of a cyclic leader, values all-reduced)",
    .create = cltk_create, .push = cltk_push, .serve = cltk_serve, .apply = cltk_apply,
    .destroy = cltk_destroy, .diag_name = "overlap(W1)", .diag = cltk_diag, .one_way = 1,
    .gap_limit = 2.0, .min_ratio = 90.0, .quick_gap_limit = 31.0, .quick_floor = 50.0};
