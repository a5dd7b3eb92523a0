// C entry points of the CLT-k state machine (feedback/cltk.hpp).
#include <cmath>

#include "handles.hpp"

using namespace gw::api;

extern "C" {

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
    return create_handle(h, o, c);
}

gw_status gw_cltk_values_bound(const gw_cltk* h, size_t* count) {
    return read_value(h, &gw::Cltk::values_bound, count);
}

gw_status gw_cltk_leader(const gw_cltk* h, uint32_t* leader) {
    return read_value(h, &gw::Cltk::leader, leader);
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

gw_status gw_cltk_memory(const gw_cltk* h, float* out, uint64_t n) {
    return read_vector(h, &gw::Cltk::memory, out, n);
}

gw_status gw_cltk_indices(const gw_cltk* h, uint32_t* idx, size_t capacity, size_t* count) {
    if (!h || !count || (!idx && capacity)) return GW_ERR_NULL_POINTER;
    const uint64_t k = h->impl.index_count();
    if (capacity < k) return GW_ERR_BUFFER_TOO_SMALL;
    if (k) h->impl.indices(idx);
    *count = static_cast<size_t>(k);
    return GW_OK;
}

gw_status gw_scalecom_rate(double flops_per_gradient, uint32_t* rate) {
    if (!rate) return GW_ERR_NULL_POINTER;
    const uint32_t r = gw::scalecom_rate(flops_per_gradient);
    if (r == 0) return GW_ERR_INVALID_ARGUMENT;
    *rate = r;
    return GW_OK;
}

}  // extern "C"
