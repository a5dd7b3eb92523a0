// C entry points of the CLT-k state machine (feedback/cltk.hpp).
#include <cmath>

#include "api_internal.hpp"
#include "feedback/cltk.hpp"

struct gw_cltk {
    gw::Cltk impl;
};

using namespace gw::api;

extern "C" {

gw_status gw_cltk_options_init(gw_cltk_options* o, unsigned int version) {
    return init_versioned(o, version, GW_CLTK_OPTIONS_VERSION, gw_cltk_options GW_CLTK_OPTIONS_INIT);
}

gw_status gw_cltk_create(gw_cltk** h, const gw_cltk_options* o, const gw_codec_spec* index) {
    if (!h || !o || !index) return GW_ERR_NULL_POINTER;
    if (!known_version(o->version, GW_CLTK_OPTIONS_VERSION)) return GW_ERR_OPTIONS_VERSION;
    if (o->n == 0 || o->n > GW_MAX_ELEMENTS) return GW_ERR_INVALID_ARGUMENT;
    if (o->num_workers == 0 || o->rank >= o->num_workers) return GW_ERR_INVALID_ARGUMENT;
    if (!(o->beta > 0.0f && o->beta <= 1.0f)) return GW_ERR_INVALID_ARGUMENT;  // also NaN
    if (index->p.codec->id != GW_CODEC_INDEX) return GW_ERR_INVALID_ARGUMENT;
    gw::CltkConfig c;
    c.n = o->n;
    c.workers = o->num_workers;
    c.rank = o->rank;
    c.beta = o->beta;
    c.warmup = o->warmup_steps;
    c.tensor = o->tensor;
    c.index = index->p;
    return create_handle(h, c);
}

void gw_cltk_free(gw_cltk* h) { delete h; }

gw_status gw_cltk_index_frame_bound(const gw_cltk* h, size_t* bound) {
    if (!h || !bound) return GW_ERR_NULL_POINTER;
    *bound = h->impl.index_frame_bound();
    return GW_OK;
}

gw_status gw_cltk_values_bound(const gw_cltk* h, size_t* count) {
    if (!h || !count) return GW_ERR_NULL_POINTER;
    *count = static_cast<size_t>(h->impl.values_bound());
    return GW_OK;
}

gw_status gw_cltk_leader(const gw_cltk* h, uint32_t* leader) {
    if (!h || !leader) return GW_ERR_NULL_POINTER;
    *leader = h->impl.leader();
    return GW_OK;
}

gw_status gw_cltk_set_leader(gw_cltk* h, uint32_t leader) {
    if (!h) return GW_ERR_NULL_POINTER;
    return h->impl.set_leader(leader);
}

gw_status gw_cltk_begin(gw_cltk* h, const void* grad, gw_dtype dtype, uint64_t n, float lr) {
    if (!h || !grad) return GW_ERR_NULL_POINTER;
    if (const gw_status st = h->impl.sequence(gw::Cltk::Call::kBegin); st != GW_OK) return st;
    if (!valid_dtype(dtype)) return GW_ERR_INVALID_ARGUMENT;
    if (n != h->impl.config().n) return GW_ERR_COUNT_MISMATCH;
    return h->impl.begin(grad, dtype, lr);
}

gw_status gw_cltk_select(gw_cltk* h, void* frame, size_t capacity, size_t* written) {
    if (!h || !frame || !written) return GW_ERR_NULL_POINTER;
    return h->impl.select(frame, capacity, written);
}

gw_status gw_cltk_extract(gw_cltk* h, const void* frame, size_t size, float* values,
                          size_t capacity, size_t* count) {
    if (!h || !count || (!values && capacity) || (!frame && size)) return GW_ERR_NULL_POINTER;
    if (const gw_status st = h->impl.sequence(gw::Cltk::Call::kExtract); st != GW_OK) return st;
    if (overlaps(frame, size, values, span_bytes(capacity, sizeof(float)))) return GW_ERR_OVERLAP;
    uint64_t c = 0;
    const gw_status st = h->impl.extract(frame, size, values, capacity, &c);
    if (st == GW_OK) *count = static_cast<size_t>(c);
    return st;
}

gw_status gw_cltk_apply(gw_cltk* h, const float* summed, size_t count, float* x, uint64_t n) {
    if (!h || (!summed && count)) return GW_ERR_NULL_POINTER;
    if (const gw_status st = h->impl.sequence(gw::Cltk::Call::kApply); st != GW_OK) return st;
    if (x && n != h->impl.config().n) return GW_ERR_COUNT_MISMATCH;
    if (x && overlaps(summed, span_bytes(count, sizeof(float)), x, span_bytes(n, sizeof(float))))
        return GW_ERR_OVERLAP;
    return h->impl.apply(summed, count, x);
}

gw_status gw_cltk_reset_round(gw_cltk* h) {
    if (!h) return GW_ERR_NULL_POINTER;
    h->impl.reset_round();
    return GW_OK;
}

gw_status gw_cltk_step_count(const gw_cltk* h, uint64_t* steps) {
    if (!h || !steps) return GW_ERR_NULL_POINTER;
    *steps = h->impl.steps();
    return GW_OK;
}

gw_status gw_cltk_memory(const gw_cltk* h, float* out, uint64_t n) {
    if (!h || !out) return GW_ERR_NULL_POINTER;
    if (n != h->impl.config().n) return GW_ERR_COUNT_MISMATCH;
    h->impl.memory(out);
    return GW_OK;
}

gw_status gw_cltk_indices(const gw_cltk* h, uint32_t* idx, size_t capacity, size_t* count) {
    if (!h || !count || (!idx && capacity)) return GW_ERR_NULL_POINTER;
    const uint64_t k = h->impl.index_count();
    if (capacity < k) return GW_ERR_BUFFER_TOO_SMALL;
    if (k) h->impl.indices(idx);
    *count = static_cast<size_t>(k);
    return GW_OK;
}

gw_status gw_cltk_save_bound(const gw_cltk* h, size_t* bound) { return save_bound(h, bound); }

gw_status gw_cltk_save(const gw_cltk* h, void* blob, size_t capacity, size_t* written) {
    if (h && !h->impl.between_rounds()) return GW_ERR_SEQUENCE;
    return save(h, blob, capacity, written);
}

gw_status gw_cltk_load(gw_cltk* h, const void* blob, size_t size) { return load(h, blob, size); }

gw_status gw_scalecom_rate(double flops_per_gradient, uint32_t* rate) {
    if (!rate) return GW_ERR_NULL_POINTER;
    const uint32_t r = gw::scalecom_rate(flops_per_gradient);
    if (r == 0) return GW_ERR_INVALID_ARGUMENT;
    *rate = r;
    return GW_OK;
}

}  // extern "C"
