// C entry points around the sparse codecs: float parameters, random-k
// positions and the raw-value path for all-reduce (gather / scatter-add),
// and the codec-independent diagnostics (contraction, compression ratio).
#include <cmath>
#include <cstring>

#include "api_internal.hpp"
#include "codecs/randk_positions.hpp"
#include "frame/diagnostics.hpp"
#include "frame/frame.hpp"
#include "kernels/kernels.hpp"
#include "util/index_sets.hpp"

using namespace gw::api;

namespace {

bool float_param(int param) { return param == GW_PARAM_THRESHOLD || param == GW_PARAM_BUDGET; }

}  // namespace

extern "C" {

gw_status gw_codec_spec_set_f32(gw_codec_spec* spec, gw_param param, float value) {
    if (!spec) return GW_ERR_NULL_POINTER;
    if (!float_param(gw::enum_value(param)) || !(std::isfinite(value) && value >= 0.0f))
        return GW_ERR_INVALID_ARGUMENT;
    uint32_t bits;
    std::memcpy(&bits, &value, 4);
    bits &= 0x7FFFFFFFu;  // -0 is +0
    return gw::set_param(&spec->p, gw::enum_value(param), bits);
}

gw_status gw_codec_spec_get_f32(const gw_codec_spec* spec, gw_param param, float* value) {
    if (!spec || !value) return GW_ERR_NULL_POINTER;
    const int slot = gw::param_slot(*spec->p.codec, gw::enum_value(param));
    if (slot < 0 || !float_param(gw::enum_value(param))) return GW_ERR_INVALID_ARGUMENT;
    const uint32_t bits = static_cast<uint32_t>(spec->p.v[slot]);
    std::memcpy(value, &bits, 4);
    return GW_OK;
}

gw_status gw_randk_positions(unsigned int revision, uint64_t seed, uint32_t step, uint32_t tensor,
                             uint64_t n, uint64_t k, uint32_t* idx) {
    if (!idx && k) return GW_ERR_NULL_POINTER;
    if (revision < 1 || revision > 2 || n > UINT32_MAX || k > n) return GW_ERR_INVALID_ARGUMENT;
    gw::randk::for_each_position(gw::kern::active(), revision, seed, step, tensor, n, k,
                                 [&](uint64_t first, uint64_t c, const uint32_t* p) {
                                     std::memcpy(idx + first, p, c * sizeof(uint32_t));
                                 });
    return GW_OK;
}

gw_status gw_randk_indices(uint64_t seed, uint32_t step, uint32_t tensor, uint64_t n, uint64_t k,
                           uint32_t* idx) {
    return gw_randk_positions(1, seed, step, tensor, n, k, idx);
}

gw_status gw_gather(const float* x, uint64_t n, const uint32_t* idx, size_t k, float* out) {
    if ((!x && n) || ((!idx || !out) && k)) return GW_ERR_NULL_POINTER;
    if (n > GW_MAX_ELEMENTS || !gw::index::valid(idx, k, n)) return GW_ERR_INVALID_ARGUMENT;
    if (overlaps(x, span_bytes(n, 4), out, span_bytes(k, 4)) ||
        overlaps(idx, span_bytes(k, 4), out, span_bytes(k, 4)))
        return GW_ERR_OVERLAP;
    gw::kern::active().gather(x, idx, k, out);
    return GW_OK;
}

gw_status gw_scatter_add(const float* values, const uint32_t* idx, size_t k, float alpha,
                         float* acc, uint64_t n) {
    if (((!values || !idx) && k) || (!acc && n)) return GW_ERR_NULL_POINTER;
    if (n > GW_MAX_ELEMENTS || !std::isfinite(alpha) || !gw::index::valid(idx, k, n))
        return GW_ERR_INVALID_ARGUMENT;
    if (overlaps(values, span_bytes(k, 4), acc, span_bytes(n, 4)) ||
        overlaps(idx, span_bytes(k, 4), acc, span_bytes(n, 4)))
        return GW_ERR_OVERLAP;
    const gw::kern::Table& t = gw::kern::active();
    if (!t.all_finite(values, k)) return GW_ERR_NONFINITE;
    t.scatter_add(values, idx, k, alpha, acc);
    return GW_OK;
}

gw_status gw_codec_contraction(const gw_codec_spec* spec, const gw_encode_ctx* ctx,
                               const float* x, uint64_t n, double* ratio) {
    if (!spec || !ratio || (!x && n)) return GW_ERR_NULL_POINTER;
    if (ctx && !known_version(ctx->version, GW_ENCODE_CTX_VERSION)) return GW_ERR_OPTIONS_VERSION;
    if (n > GW_MAX_ELEMENTS) return GW_ERR_INVALID_ARGUMENT;
    gw::Context& cx = gw::thread_context();
    const gw::EncodeCtx c =
        ctx ? gw::encode_ctx(cx, ctx->seed, ctx->step, ctx->tensor) : gw::encode_ctx(cx, 0, 0, 0);
    return gw::frame::contraction(cx, spec->p, c, x, n, ratio);
}

gw_status gw_frame_compression_ratio(const void* frame, size_t size, double* ratio) {
    if (!ratio || (!frame && size)) return GW_ERR_NULL_POINTER;
    gw::frame::View v;
    const gw_status st = gw::frame::open(gw::thread_context(), frame, size, true, &v);
    if (st != GW_OK) return st;
    *ratio = 4.0 * static_cast<double>(v.count) / static_cast<double>(v.frame_size);
    return GW_OK;
}

}  // extern "C"
