// C entry points of LAGS-SGD: the layer state machine (feedback/lags_layer.hpp)
// and the system model (feedback/lags_plan.hpp).
#include <cmath>

#include "feedback/lags_plan.hpp"
#include "handles.hpp"
#include "kernels/kernels.hpp"

using namespace gw::api;

namespace {
bool finite_nonneg(double v) { return std::isfinite(v) && v >= 0.0; }
}  // namespace

extern "C" {

gw_status gw_lags_layer_create(gw_lags_layer** h, const gw_lags_layer_options* o,
                               const gw_codec_spec* codec) {
    return create_tensor_machine<gw::LagsLayerConfig>(h, o, GW_LAGS_LAYER_OPTIONS_VERSION, codec);
}

gw_status gw_lags_layer_set_k(gw_lags_layer* h, uint64_t k) {
    if (!h) return GW_ERR_NULL_POINTER;
    return h->impl.set_k(k);
}

gw_status gw_lags_layer_k(const gw_lags_layer* h, uint64_t* k) {
    return read_value(h, &gw::LagsLayer::k, k);
}

gw_status gw_lags_layer_step(gw_lags_layer* h, const void* grad, gw_dtype dtype, uint64_t n,
                             float lr, void* frame, size_t capacity, size_t* written) {
    return tensor_step(h, grad, dtype, n, lr, frame, capacity, written);
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
    return read_vector(h, &gw::LagsLayer::residual, out, n);
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
    gw::Scratch mem(gw::malloc_allocator());
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
    return gw::lags::delta(t, xs, workers, n, k, delta);
}

}  // extern "C"
