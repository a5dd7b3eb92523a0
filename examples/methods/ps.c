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
#include <string.h>

#include "gradwire.h"

#include "common/util.h"
#include "methods.h"

/* ------------------------------------------------------------------------ */
/* Error-feedback parameter server: one gw_worker per (worker, slot), one     */
/* gw_server per slot; m->spec(slot) is the codec both ways.                  */
/* ------------------------------------------------------------------------ */
typedef struct ps_state {
    const method *m;
    gw_worker **w;  /* [worker * nslots + slot] */
    gw_server **sv; /* [slot] */
} ps_state;

/* A slice's handles. Every slice of a tensor has the tensor's id (frames are
 * tagged GW_TAG(tensor, step)); the slice is the offset a server owns, which
 * is what lets gw_reshard join the slices of a checkpoint and cut them anew. */
static gw_worker_options worker_options(const config *cfg, const sim_slot *sl)
{
    gw_worker_options wo = GW_WORKER_OPTIONS_INIT;
    wo.n = sl->len;
    wo.momentum = cfg->mu > 0.0 ? GW_MOMENTUM_NESTEROV : GW_MOMENTUM_NONE;
    wo.mu = (float)cfg->mu;
    wo.tensor = (uint32_t)sl->tensor;
    wo.seed = cfg->seed;
    return wo;
}

static gw_server_options server_options(const sim_slot *sl, int workers)
{
    const mlp_tensor *T = &mlp_tensors[sl->tensor];
    gw_server_options so = GW_SERVER_OPTIONS_INIT;
    so.total = T->rows * T->cols;
    so.offset = sl->offset;
    so.length = sl->len;
    so.num_workers = (uint32_t)workers;
    so.tensor = (uint32_t)sl->tensor; /* pushes must carry GW_TAG(tensor, step) */
    return so;
}

static void *ps_create(sim *s, const method *m)
{
    const config *cfg = s->cfg;
    ps_state *ps = xcalloc(1, sizeof *ps);
    int i, j;
    ps->m = m;
    ps->w = xcalloc((size_t)s->M * (size_t)s->nslots, sizeof *ps->w);
    ps->sv = xcalloc((size_t)s->nslots, sizeof *ps->sv);
    for (j = 0; j < s->nslots; j++) {
        const sim_slot *sl = &s->slot[j];
        gw_codec_spec *spec = m->spec(s, sl);
        const gw_server_options so = server_options(sl, s->M);
        size_t cap;

        /* Broadcast with `spec`, and reject pushes of any other codec. */
        check(gw_server_create(&ps->sv[j], &so, spec, spec), "gw_server_create");
        check(gw_server_frame_bound(ps->sv[j], &cap), "gw_server_frame_bound");
        frame_buf_alloc(&s->bcast[j], cap);

        for (i = 0; i < s->M; i++) {
            const gw_worker_options wo = worker_options(cfg, sl);
            gw_worker **w = &ps->w[(size_t)i * s->nslots + j];
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
/* Checkpoints: each handle's blob; a run of another size re-shards them       */
/* ------------------------------------------------------------------------ */
typedef struct blob_buf {
    unsigned char *data;
    size_t cap, size;
} blob_buf;

static unsigned char *blob_room(blob_buf *b, size_t need)
{
    if (need > b->cap) {
        free(b->data);
        b->data = xmalloc(need);
        b->cap = need;
    }
    return b->data;
}

/* Worker i's handles, one per slice, and the servers of slices j = i mod M. */
static void ps_save(void *state, sim *s, int i, ckpt_writer *ck)
{
    ps_state *ps = state;
    blob_buf b = {NULL, 0, 0};
    size_t bound;
    int j;
    for (j = 0; j < s->nslots; j++) {
        const sim_slot *sl = &s->slot[j];
        const gw_worker *w = ps->w[(size_t)i * s->nslots + j];
        check(gw_worker_save_bound(w, &bound), "gw_worker_save_bound");
        check(gw_worker_save(w, blob_room(&b, bound), bound, &b.size), "gw_worker_save");
        ckpt_put_blob(ck, CKPT_WORKER, (uint32_t)j, (uint32_t)sl->tensor, sl->offset, sl->len,
                      b.data, b.size);
    }
    for (j = i; j < s->nslots; j += s->M) {
        const sim_slot *sl = &s->slot[j];
        check(gw_server_save_bound(ps->sv[j], &bound), "gw_server_save_bound");
        check(gw_server_save(ps->sv[j], blob_room(&b, bound), bound, &b.size),
              "gw_server_save");
        ckpt_put_blob(ck, CKPT_SERVER, (uint32_t)j, (uint32_t)sl->tensor, sl->offset, sl->len,
                      b.data, b.size);
    }
    free(b.data);
}

/* The slice a saved blob holds, as a slot (for the codec and the options). */
static sim_slot blob_slot(const ckpt_blob *b)
{
    sim_slot sl;
    memset(&sl, 0, sizeof sl);
    sl.tensor = (int)b->tensor;
    sl.offset = b->offset;
    sl.len = b->len;
    sl.start = mlp_tensors[b->tensor].off + b->offset;
    return sl;
}

static int overlaps(const ckpt_blob *b, const sim_slot *sl)
{
    return b->tensor == (uint32_t)sl->tensor && b->offset < sl->offset + sl->len &&
           sl->offset < b->offset + b->len;
}

/* acc[start + k] += scale * v[k] */
static void add_scaled(double *acc, const float *v, uint64_t n, double scale)
{
    uint64_t k;
    for (k = 0; k < n; k++)
        acc[k] += scale * (double)v[k];
}

/* What the saved state owes the model (sim.h, method.restore): every saved
 * handle loaded into a scratch handle of the saving run's layout. */
static void saved_mass(const ps_state *ps, sim *s, const ckpt_set *old, double *before,
                       double *round)
{
    const double inv = 1.0 / (double)old->workers;
    float *v = xmalloc(sizeof(float) * MLP_NPARAM);
    uint32_t r, k;
    for (r = 0; r < old->workers; r++)
        for (k = 0; k < old->file[r].nblobs; k++) {
            const ckpt_blob *b = &old->file[r].blob[k];
            const sim_slot sl = blob_slot(b);
            gw_codec_spec *spec = ps->m->spec(s, &sl);
            if (b->kind == CKPT_WORKER) {
                const gw_worker_options wo = worker_options(s->cfg, &sl);
                gw_worker *w;
                check(gw_worker_create(&w, &wo, spec), "gw_worker_create");
                check(gw_worker_load(w, b->data, b->size), "gw_worker_load(saved)");
                check(gw_worker_residual(w, v, sl.len), "gw_worker_residual");
                add_scaled(before + sl.start, v, sl.len, inv);
                add_scaled(round + sl.start, v, sl.len, inv);
                if (wo.momentum != GW_MOMENTUM_NONE) {
                    check(gw_worker_momentum(w, v, sl.len), "gw_worker_momentum");
                    add_scaled(before + MLP_NPARAM + sl.start, v, sl.len, inv);
                    add_scaled(round + MLP_NPARAM + sl.start, v, sl.len, inv);
                }
                gw_worker_free(w);
            } else {
                const gw_server_options so = server_options(&sl, (int)old->workers);
                gw_server *sv;
                check(gw_server_create(&sv, &so, spec, spec), "gw_server_create");
                check(gw_server_load(sv, b->data, b->size), "gw_server_load(saved)");
                check(gw_server_residual(sv, v, sl.len), "gw_server_residual");
                add_scaled(before + sl.start, v, sl.len, 1.0);
                gw_server_free(sv);
            }
            gw_codec_spec_free(spec);
        }
    free(v);
}

/* The blob of new worker (or slot owner) `rank` for slice sl, from the saved
 * blobs of `kind` overlapping it (worker blobs: every old rank's pieces at
 * their offsets; server blobs: the slices, whoever saved them). */
static const unsigned char *reshard(const ckpt_set *old, uint32_t kind, const sim_slot *sl,
                                    int workers, int rank, blob_buf *out)
{
    gw_reshard_part *parts = NULL;
    gw_reshard_options o = GW_RESHARD_OPTIONS_INIT;
    size_t n = 0, cap = 0, need = 0;
    uint32_t r, k;
    for (r = 0; r < old->workers; r++)
        for (k = 0; k < old->file[r].nblobs; k++) {
            const ckpt_blob *b = &old->file[r].blob[k];
            if (b->kind != kind || !overlaps(b, sl))
                continue;
            if (n == cap) {
                gw_reshard_part *np;
                cap = cap ? 2 * cap : 16;
                if (!(np = realloc(parts, cap * sizeof *parts)))
                    die("out of memory");
                parts = np;
            }
            parts[n].blob = b->data;
            parts[n].size = b->size;
            parts[n].rank = kind == CKPT_WORKER ? r : 0; /* ignored for servers */
            parts[n].offset = b->offset;
            n++;
        }
    o.workers_in = old->workers;
    o.workers_out = (uint32_t)workers;
    o.rank_out = (uint32_t)rank;
    o.offset = sl->offset;
    o.length = sl->len;
    {
        const gw_status st = gw_reshard(parts, n, &o, NULL, 0, &need);
        if (st != GW_ERR_BUFFER_TOO_SMALL)
            check(st == GW_OK ? GW_ERR_INVALID_ARGUMENT : st, "gw_reshard(size)");
    }
    check(gw_reshard(parts, n, &o, blob_room(out, need), need, &out->size), "gw_reshard");
    free(parts);
    return out->data;
}

/* The saved blob of `kind` and slot j in file r (the layout is checked). */
static const ckpt_blob *saved_blob(const ckpt_set *old, uint32_t r, uint32_t kind, int j)
{
    uint32_t k;
    for (k = 0; k < old->file[r].nblobs; k++)
        if (old->file[r].blob[k].kind == kind && old->file[r].blob[k].slot == (uint32_t)j)
            return &old->file[r].blob[k];
    die("a checkpoint blob is missing");
    return NULL;
}

/* sim.h, method.restore: at the saving run's M and S each handle loads its
 * own blob as saved (the run goes on bit for bit); otherwise gw_reshard
 * builds it (worker residuals and momenta: the mean over the old workers;
 * server residuals: cut and joined at the new slices). */
static void ps_restore(void *state, sim *s, const ckpt_set *old, const int *own_worker,
                       const int *own_slot, double *before, double *after, double *round)
{
    ps_state *ps = state;
    const int same = old->workers == (uint32_t)s->M && old->shards == (uint32_t)s->cfg->shards;
    const double inv = 1.0 / (double)s->M;
    float *v = xmalloc(sizeof(float) * MLP_NPARAM);
    blob_buf b = {NULL, 0, 0};
    int i, j;

    saved_mass(ps, s, old, before, round);
    for (i = 0; i < s->M; i++) {
        if (!own_worker[i])
            continue;
        for (j = 0; j < s->nslots; j++) {
            const sim_slot *sl = &s->slot[j];
            gw_worker *w = ps->w[(size_t)i * s->nslots + j];
            if (same) {
                const ckpt_blob *sb = saved_blob(old, (uint32_t)i, CKPT_WORKER, j);
                check(gw_worker_load(w, sb->data, sb->size), "gw_worker_load");
            } else {
                reshard(old, CKPT_WORKER, sl, s->M, i, &b);
                check(gw_worker_load(w, b.data, b.size), "gw_worker_load(re-sharded)");
            }
            check(gw_worker_residual(w, v, sl->len), "gw_worker_residual");
            add_scaled(after + sl->start, v, sl->len, inv);
            if (s->cfg->mu > 0.0) {
                check(gw_worker_momentum(w, v, sl->len), "gw_worker_momentum");
                add_scaled(after + MLP_NPARAM + sl->start, v, sl->len, inv);
            }
        }
    }
    for (j = 0; j < s->nslots; j++) {
        const sim_slot *sl = &s->slot[j];
        if (!own_slot[j])
            continue;
        if (same) {
            const ckpt_blob *sb = saved_blob(old, (uint32_t)j % old->workers, CKPT_SERVER, j);
            check(gw_server_load(ps->sv[j], sb->data, sb->size), "gw_server_load");
        } else {
            reshard(old, CKPT_SERVER, sl, s->M, j % s->M, &b);
            check(gw_server_load(ps->sv[j], b.data, b.size), "gw_server_load(re-sharded)");
        }
        check(gw_server_residual(ps->sv[j], v, sl->len), "gw_server_residual");
        add_scaled(after + sl->start, v, sl->len, 1.0);
    }
    free(b.data);
    free(v);
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
    .destroy = ps_destroy, .spec = identity_spec, .save = ps_save, .restore = ps_restore};
const method method_ef = {
    .name = "ef", .title = "dist-EF-blockSGDM, scaled sign both ways",
    .create = ps_create, .push = ps_push, .serve = ps_serve, .apply = ps_apply,
    .destroy = ps_destroy, .spec = scaled_sign_spec, .diag_name = "phi(W1)", .diag = ef_phi_w1,
    .save = ps_save, .restore = ps_restore,
    /* about 30x with per-row blocks; blocks under ~128 elements fall below 25x */
    .gap_limit = 1.0, .min_ratio = 25.0};
const method method_topk = {
    .name = "topk", .title = "exact top-k 1% both ways with error feedback (SLGS per slice)",
    .create = ps_create, .push = ps_push, .serve = ps_serve, .apply = ps_apply,
    .destroy = ps_destroy, .spec = topk_spec, .save = ps_save, .restore = ps_restore};
/* topk is not --check'ed: compressed both ways it needs more than --quick's one
 * short epoch to catch up (65% there; 1.3 points from sgdm after 12 epochs). */
