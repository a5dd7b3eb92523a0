// C entry points of LAGS-SGD: the layer state machine (feedback/lags_layer.hpp)
// and the system model (feedback/lags_plan.hpp).
#include <cmath>

#include "api_internal.hpp"
#include "feedback/lags_layer.hpp"
#include "feedback/lags_plan.hpp"
#include "kernels/kernels.hpp"

struct gw_lags_layer {
    gw::LagsLayer impl;
};

using namespace gw::api;

namespace {
bool finite_nonneg(double v) { return std::isfinite(v) && v >= 0.0; }
}  // namespace

extern "C" {

gw_status gw_lags_layer_options_init(gw_lags_layer_options* o, unsigned int version) {
    return init_versioned(o, version, GW_LAGS_LAYER_OPTIONS_VERSION,
                          gw_lags_layer_options GW_LAGS_LAYER_OPTIONS_INIT);
}

gw_status gw_lags_layer_create(gw_lags_layer** h, const gw_lags_layer_options* o,
                               const gw_codec_spec* codec) {
    if (!h || !o || !codec) return GW_ERR_NULL_POINTER;
    if (!known_version(o->version, GW_LAGS_LAYER_OPTIONS_VERSION)) return GW_ERR_OPTIONS_VERSION;
    if (o->n == 0 || o->n > GW_MAX_ELEMENTS) return GW_ERR_INVALID_ARGUMENT;
    gw::LagsLayerConfig c;
    c.n = o->n;
    c.tensor = o->tensor;
    c.seed = o->seed;
    c.codec = codec->p;
    return create_handle(h, c);
}

void gw_lags_layer_free(gw_lags_layer* h) { delete h; }

gw_status gw_lags_layer_frame_bound(const gw_lags_layer* h, size_t* bound) {
    if (!h || !bound) return GW_ERR_NULL_POINTER;
    *bound = h->impl.frame_bound();
    return GW_OK;
}

gw_status gw_lags_layer_set_k(gw_lags_layer* h, uint64_t k) {
    if (!h) return GW_ERR_NULL_POINTER;
    return h->impl.set_k(k);
}

gw_status gw_lags_layer_k(const gw_lags_layer* h, uint64_t* k) {
    if (!h || !k) return GW_ERR_NULL_POINTER;
    *k = h->impl.k();
    return GW_OK;
}

gw_status gw_lags_layer_step(gw_lags_layer* h, const void* grad, gw_dtype dtype, uint64_t n,
                             float lr, void* frame, size_t capacity, size_t* written) {
    if (!h || !grad || !frame || !written) return GW_ERR_NULL_POINTER;
    if (!valid_dtype(dtype)) return GW_ERR_INVALID_ARGUMENT;
    if (n != h->impl.config().n) return GW_ERR_COUNT_MISMATCH;
    if (overlaps(grad, span_bytes(n, dtype_size(dtype)), frame, capacity)) return GW_ERR_OVERLAP;
    return h->impl.step(grad, dtype, lr, frame, capacity, written);
}

gw_status gw_lags_layer_step_dense(gw_lags_layer* h, const void* grad, gw_dtype dtype,
                                   uint64_t n, float lr, float* out) {
    if (!h || !grad || !out) return GW_ERR_NULL_POINTER;
    if (!valid_dtype(dtype)) return GW_ERR_INVALID_ARGUMENT;
    if (n != h->impl.config().n) return GW_ERR_COUNT_MISMATCH;
    if (overlaps(grad, span_bytes(n, dtype_size(dtype)), out, span_bytes(n, sizeof(float))))
        return GW_ERR_OVERLAP;
    return h->impl.step_dense(grad, dtype, lr, out);
}

gw_status gw_lags_layer_residual(const gw_lags_layer* h, float* out, uint64_t n) {
    if (!h || !out) return GW_ERR_NULL_POINTER;
    if (n != h->impl.config().n) return GW_ERR_COUNT_MISMATCH;
    h->impl.residual(out);
    return GW_OK;
}

gw_status gw_lags_layer_step_count(const gw_lags_layer* h, uint64_t* steps) {
    if (!h || !steps) return GW_ERR_NULL_POINTER;
    *steps = h->impl.steps();
    return GW_OK;
}

gw_status gw_lags_layer_save_bound(const gw_lags_layer* h, size_t* bound) {
    return save_bound(h, bound);
}
gw_status gw_lags_layer_save(const gw_lags_layer* h, void* blob, size_t capacity,
                             size_t* written) {
    return save(h, blob, capacity, written);
}
gw_status gw_lags_layer_load(gw_lags_layer* h, const void* blob, size_t size) {
    return load(h, blob, size);
}

gw_status gw_lags_network_init(gw_lags_network* net, unsigned int version) {
    return init_versioned(net, version, GW_LAGS_NETWORK_VERSION,
                          gw_lags_network GW_LAGS_NETWORK_INIT);
}

gw_status gw_lags_plan(const gw_lags_network* net, size_t layers, const uint64_t* n,
                       const double* t_backward, const double* t_sparsify, double* ratio,
                       uint64_t* k, gw_lags_verdict* verdict, double* t_plan, double* t_dense) {
    if (!net || !t_plan || !t_dense) return GW_ERR_NULL_POINTER;
    if (layers && (!n || !t_backward || !ratio || !k || !verdict)) return GW_ERR_NULL_POINTER;
    if (!known_version(net->version, GW_LAGS_NETWORK_VERSION)) return GW_ERR_OPTIONS_VERSION;
    if (net->num_workers == 0 || !finite_nonneg(net->allgather_alpha) ||
        !finite_nonneg(net->allgather_beta) || !finite_nonneg(net->allreduce_alpha) ||
        !finite_nonneg(net->allreduce_beta) || (net->value_bytes != 2 && net->value_bytes != 4) ||
        !(std::isfinite(net->max_ratio) && net->max_ratio >= 1.0))
        return GW_ERR_INVALID_ARGUMENT;
    for (size_t j = 0; j < layers; ++j)
        if (n[j] == 0 || n[j] > GW_MAX_ELEMENTS || !finite_nonneg(t_backward[j]) ||
            (t_sparsify && !finite_nonneg(t_sparsify[j])))
            return GW_ERR_INVALID_ARGUMENT;
    gw::lags::Network m;
    m.workers = net->num_workers;
    m.ag_alpha = net->allgather_alpha;
    m.ag_beta = net->allgather_beta;
    m.ar_alpha = net->allreduce_alpha;
    m.ar_beta = net->allreduce_beta;
    m.value_bytes = net->value_bytes;
    m.max_ratio = net->max_ratio;
    gw::Scratch mem;
    auto* out = static_cast<gw::lags::LayerPlan*>(mem.get(layers * sizeof(gw::lags::LayerPlan) + 1));
    if (!out) return GW_ERR_OUT_OF_MEMORY;
    double tp = 0, td = 0;
    const gw_status st = gw::lags::plan(m, layers, n, t_backward, t_sparsify, out, &tp, &td);
    if (st != GW_OK) return st;
    for (size_t j = 0; j < layers; ++j) {
        ratio[j] = out[j].ratio;
        k[j] = out[j].k;
        verdict[j] = static_cast<gw_lags_verdict>(out[j].verdict);
    }
    *t_plan = tp;
    *t_dense = td;
    return GW_OK;
}

gw_status gw_lags_s_max(double t_f, double t_b, double t_c, double* s) {
    if (!s) return GW_ERR_NULL_POINTER;
    if (!finite_nonneg(t_f) || !(std::isfinite(t_b) && t_b > 0) || !(std::isfinite(t_c) && t_c > 0))
        return GW_ERR_INVALID_ARGUMENT;
    *s = gw::lags::s_max(t_f, t_b, t_c);
    return GW_OK;
}

gw_status gw_sparsity_delta(const float* const* xs, uint32_t workers, uint64_t n, uint64_t k,
                            double* delta) {
    if (!xs || !delta) return GW_ERR_NULL_POINTER;
    if (workers == 0 || n == 0 || n > GW_MAX_ELEMENTS || n > UINT32_MAX || k > n)
        return GW_ERR_INVALID_ARGUMENT;
    const gw::kern::Table& t = gw::kern::active();
    for (uint32_t p = 0; p < workers; ++p) {
        if (!xs[p]) return GW_ERR_NULL_POINTER;
        if (!t.all_finite(xs[p], n)) return GW_ERR_NONFINITE;
    }
    return gw::lags::delta(xs, workers, n, k, delta);
}

}  // extern "C"
