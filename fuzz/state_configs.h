/* The handle configurations fuzz_state loads blobs into, shared with the seed
 * writer (make_seeds.c) so the seed corpus holds valid checkpoints of exactly
 * these handles. C99 and C++. Codecs come from gw_codec_list(), so a newly
 * registered codec gets its own worker and server configurations. */
#ifndef GW_FUZZ_STATE_CONFIGS_H
#define GW_FUZZ_STATE_CONFIGS_H

#include <stddef.h>

#include "gradwire.h"

#define FUZZ_STATE_N 4          /* elements of every worker, and of server slices */
#define FUZZ_STATE_MAX_CODECS 64

static inline size_t fuzz_codec_ids(gw_codec_id *ids) {
    size_t count = 0;
    if (gw_codec_list(ids, FUZZ_STATE_MAX_CODECS, &count) != GW_OK) return 0;
    return count < FUZZ_STATE_MAX_CODECS ? count : FUZZ_STATE_MAX_CODECS;
}

/* Worker configuration i: 0..5 are the momentum x error-feedback grid with a
 * blockwise scaled sign; then one Nesterov worker per codec. Returns 0 when i
 * is past the last one, else 1 with *w created (or 1 with *w NULL on error). */
static inline int fuzz_worker_config(size_t i, gw_worker **w) {
    gw_codec_id ids[FUZZ_STATE_MAX_CODECS];
    const size_t ncodecs = fuzz_codec_ids(ids);
    gw_worker_options o;
    gw_codec_spec *spec = NULL;
    *w = NULL;
    if (i >= 6 + ncodecs) return 0;
    gw_worker_options_init(&o, GW_WORKER_OPTIONS_VERSION);
    o.n = FUZZ_STATE_N;
    if (i < 6) {
        o.momentum = (gw_momentum)(i / 2);
        o.mu = o.momentum == GW_MOMENTUM_NONE ? 0.0f : 0.9f;
        o.error_feedback = (int)(i % 2);
        if (gw_codec_spec_create(&spec, GW_CODEC_SCALED_SIGN) != GW_OK) return 1;
        gw_codec_spec_set(spec, GW_PARAM_BLOCK_SIZE, 2);
    } else {
        o.tensor = 7;
        o.seed = 11;
        if (gw_codec_spec_create(&spec, ids[i - 6]) != GW_OK) return 1;
    }
    if (gw_worker_create(w, &o, spec) != GW_OK) *w = NULL;
    gw_codec_spec_free(spec);
    return 1;
}

/* Server configuration i: 0 a slice [4, 8) of 8 with two workers; 1 the
 * majority vote (SIGN, no error feedback, three workers); 2 an empty slice;
 * then one single-worker server per codec. Same return convention. The
 * tensor id is in *tensor and the codec workers push in *push_codec. */
static inline int fuzz_server_config(size_t i, gw_server **s, uint32_t *tensor, gw_codec_id *push_codec) {
    gw_codec_id ids[FUZZ_STATE_MAX_CODECS];
    const size_t ncodecs = fuzz_codec_ids(ids);
    gw_server_options o;
    gw_codec_spec *spec = NULL;
    gw_codec_id codec = GW_CODEC_SCALED_SIGN;
    *s = NULL;
    if (i >= 3 + ncodecs) return 0;
    gw_server_options_init(&o, GW_SERVER_OPTIONS_VERSION);
    o.total = 8, o.offset = 4, o.length = FUZZ_STATE_N, o.num_workers = 2;
    *push_codec = GW_CODEC_SCALED_SIGN;
    if (i == 1) {
        codec = *push_codec = GW_CODEC_SIGN;
        o.error_feedback = 0, o.num_workers = 3, o.tensor = 2;
    } else if (i == 2) {
        o.total = 3, o.offset = 3, o.length = 0;
    } else if (i >= 3) {
        codec = ids[i - 3];
        o.num_workers = 1, o.tensor = 9;
    }
    *tensor = o.tensor;
    if (gw_codec_spec_create(&spec, codec) != GW_OK) return 1;
    if (gw_server_create(s, &o, spec, NULL) != GW_OK) *s = NULL;
    gw_codec_spec_free(spec);
    return 1;
}

/* CLT-k configuration i: 0 worker 0 of 2, beta 0.5, chunks of 2; 1 worker 1
 * of 3, beta 1, two dense warm-up rounds, exact top-k. Same convention. */
static inline int fuzz_cltk_config(size_t i, gw_cltk **h) {
    gw_cltk_options o;
    gw_codec_spec *spec = NULL;
    *h = NULL;
    if (i >= 2) return 0;
    gw_cltk_options_init(&o, GW_CLTK_OPTIONS_VERSION);
    o.n = FUZZ_STATE_N;
    o.num_workers = i == 0 ? 2 : 3;
    o.rank = (uint32_t)i;
    o.beta = i == 0 ? 0.5f : 1.0f;
    o.warmup_steps = i == 0 ? 0 : 2;
    o.tensor = 5;
    if (gw_codec_spec_create(&spec, GW_CODEC_INDEX) != GW_OK) return 1;
    gw_codec_spec_set(spec, GW_PARAM_K, 2);
    gw_codec_spec_set(spec, GW_PARAM_CHUNK_SIZE, i == 0 ? 2 : 0);
    if (gw_cltk_create(h, &o, spec) != GW_OK) *h = NULL;
    gw_codec_spec_free(spec);
    return 1;
}

/* LAGS layer configuration i: 0 top-k k = 2; 1 chunk-wise top-k k = 1 of
 * chunks of 2, tensor 3. Same convention. */
static inline int fuzz_lags_config(size_t i, gw_lags_layer **h) {
    gw_lags_layer_options o;
    gw_codec_spec *spec = NULL;
    *h = NULL;
    if (i >= 2) return 0;
    gw_lags_layer_options_init(&o, GW_LAGS_LAYER_OPTIONS_VERSION);
    o.n = FUZZ_STATE_N;
    o.tensor = (uint32_t)(3 * i);
    if (gw_codec_spec_create(&spec, i == 0 ? GW_CODEC_TOPK : GW_CODEC_CHUNK_TOPK) != GW_OK) return 1;
    gw_codec_spec_set(spec, GW_PARAM_K, i == 0 ? 2 : 1);
    if (i == 1) gw_codec_spec_set(spec, GW_PARAM_CHUNK_SIZE, 2);
    if (gw_lags_layer_create(h, &o, spec) != GW_OK) *h = NULL;
    gw_codec_spec_free(spec);
    return 1;
}

/* AsyLPG master configuration i: 0 plain, b_x in 2..8, tau 1, epochs of 3,
 * L1 + L2; 1 accelerated, full-precision models, tau 0, epochs of 2. x0 is
 * the fixed vector below. Same convention. */
static inline int fuzz_asylpg_master_config(size_t i, gw_asylpg_master **h) {
    static const float x0[FUZZ_STATE_N] = {0.25f, -0.5f, 1.0f, 0.0f};
    gw_asylpg_master_options o;
    *h = NULL;
    if (i >= 2) return 0;
    gw_asylpg_master_options_init(&o, GW_ASYLPG_MASTER_OPTIONS_VERSION);
    o.n = FUZZ_STATE_N;
    o.variant = i == 0 ? GW_ASYLPG_PLAIN : GW_ASYLPG_ACC;
    o.lr = 0.1f;
    o.l1 = i == 0 ? 0.01f : 0.0f;
    o.l2 = i == 0 ? 0.1f : 0.0f;
    o.epoch_length = i == 0 ? 3 : 2;
    o.tau = i == 0 ? 1 : 0;
    o.bits_min = i == 0 ? 2 : 0;
    o.bits_max = i == 0 ? 8 : 0;
    o.tensor = 4;
    o.seed = 3;
    if (gw_asylpg_master_create(h, &o, x0, FUZZ_STATE_N) != GW_OK) *h = NULL;
    return 1;
}

/* AsyLPG worker configuration i: 0 quant 4 bits, 1 sparse_quant 2 bits,
 * 2 identity. Same convention. */
static inline int fuzz_asylpg_worker_config(size_t i, gw_asylpg_worker **h) {
    static const gw_codec_id codecs[3] = {GW_CODEC_QUANT, GW_CODEC_SPARSE_QUANT, GW_CODEC_IDENTITY};
    gw_asylpg_worker_options o;
    gw_codec_spec *spec = NULL;
    *h = NULL;
    if (i >= 3) return 0;
    gw_asylpg_worker_options_init(&o, GW_ASYLPG_WORKER_OPTIONS_VERSION);
    o.n = FUZZ_STATE_N;
    o.tensor = 4;
    o.seed = 5 + i;
    if (gw_codec_spec_create(&spec, codecs[i]) != GW_OK) return 1;
    if (i < 2) gw_codec_spec_set(spec, GW_PARAM_BITS, i == 0 ? 4 : 2);
    if (gw_asylpg_worker_create(h, &o, spec) != GW_OK) *h = NULL;
    gw_codec_spec_free(spec);
    return 1;
}

#endif /* GW_FUZZ_STATE_CONFIGS_H */
