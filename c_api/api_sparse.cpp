// C entry points around the sparse codecs: float parameters, random-k
// positions and the raw-value paths for all-reduce (gather / scatter-add, the
// 16-bit cast with error feedback),
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

// gw_ef_cast's tile: how many 16-bit values a big-endian host converts at a time.
constexpr size_t kCastTile = 4096;

// The 16-bit value of a NaN or Inf y: Inf keeps its sign, NaN stays a (quiet) NaN.
uint16_t nonfinite_bits(float y, bool f16) {
    uint32_t b;
    std::memcpy(&b, &y, 4);
    const uint16_t sign = static_cast<uint16_t>((b >> 16) & 0x8000u);
    if (std::isinf(y)) return static_cast<uint16_t>(sign | (f16 ? 0x7C00u : 0x7F80u));
    return static_cast<uint16_t>(sign | (f16 ? 0x7E00u : 0x7FC0u));
}

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

gw_status gw_ef_cast(const float* x, uint64_t n, float alpha, float* e, gw_dtype dtype,
                     void* out, uint64_t* nonfinite) {
    if ((!x || !e || !out) && n) return GW_ERR_NULL_POINTER;
    const int d = gw::enum_value(dtype);
    if (n > GW_MAX_ELEMENTS || (d != GW_DTYPE_F16 && d != GW_DTYPE_BF16) || !std::isfinite(alpha))
        return GW_ERR_INVALID_ARGUMENT;
    const size_t fb = span_bytes(n, 4), hb = span_bytes(n, 2);
    if (overlaps(x, fb, e, fb) || overlaps(x, fb, out, hb) || overlaps(e, fb, out, hb))
        return GW_ERR_OVERLAP;
    const gw::kern::Table& t = gw::kern::active();
    const bool f16 = d == GW_DTYPE_F16;
    const auto kernel = f16 ? t.f16_ef_cast : t.bf16_ef_cast;
    uint8_t* o = static_cast<uint8_t*>(out);
    uint8_t le[2 * kCastTile];  // the kernel's little-endian values, on big-endian hosts
    uint64_t bad = 0;
    // A tile at a time (the byte order of big-endian hosts is fixed per tile);
    // the kernel stops before a NaN / Inf y, which goes out as it is.
    for (uint64_t i0 = 0; i0 < n; i0 += kCastTile) {
        const size_t c = static_cast<size_t>(n - i0 < kCastTile ? n - i0 : kCastTile);
        uint8_t* h = gw::kHostLittleEndian ? o + 2 * i0 : le;
        for (size_t i = 0; i < c;) {
            i += kernel(x + i0 + i, alpha, e + i0 + i, h + 2 * i, c - i);
            if (i < c) {
                const float t1 = alpha * x[i0 + i];
                gw::store_le<uint16_t>(h + 2 * i, nonfinite_bits(e[i0 + i] + t1, f16));
                ++bad, ++i;
            }
        }
        if constexpr (!gw::kHostLittleEndian) {
            for (size_t j = 0; j < c; ++j) {
                const uint16_t v = gw::load_le<uint16_t>(le + 2 * j);
                std::memcpy(o + 2 * (i0 + j), &v, 2);
            }
        }
    }
    if (nonfinite) *nonfinite = bad;
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
