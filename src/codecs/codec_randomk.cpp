// Random-k (docs/algorithms.md s.8): the values of x at k positions drawn
// from (seed, step, tensor) by the frame's rule revision
// (codecs/randk_positions.hpp: 2 = stratified, O(k); 1 = selection sampling,
// O(n), absent from the wire); no index on the wire. The payload carries the draw, so any receiver regenerates them:
//
//   u64 seed | u32 step (low 32 bits) | u32 tensor | k values (value_dtype)
//
// k = the parameter, or ceil(n * density_ppm / 1e6); min(k, n); n < 2^32.
// Values are stored as they are (a zero too: the positions are implied), as
// f32 or f16/bf16 rounded to nearest even and saturated. Workers sharing
// (seed, step, tensor) pick the same positions, so the same values can also
// go through an all-reduce as raw floats (gw_randk_indices, gw_gather,
// gw_scatter_add).
#include <cstring>

#include "codecs/codec.hpp"
#include "codecs/randk_positions.hpp"
#include "codecs/sparse_payload.hpp"
#include "kernels/kernels.hpp"

namespace gw {
namespace {

enum Slot { kK = 0, kDensity = 1, kValueDtype = 2, kRevision = 3 };
constexpr uint64_t kHead = 16;
// The revision came later: last, absent from the wire when 1.
constexpr ParamDef kParams[] = {sparse::kParamK, sparse::kParamDensity, sparse::kParamValueDtype,
                                revision_param(2)};

uint64_t k_of(const CodecParams& p, uint64_t n) { return sparse::k_of(p.v[kK], p.v[kDensity], n); }

bool max_payload(const CodecParams& p, uint64_t n, uint64_t* bytes) {
    if (n > static_cast<uint64_t>(sparse::kMaxN)) return false;
    *bytes = kHead + k_of(p, n) * sparse::value_size(p.v[kValueDtype]);
    return true;
}

// Positions of a payload: f(first, count, idx).
template <class F>
void positions(const kern::Table& kt, const CodecParams& p, const uint8_t* payload, uint64_t n,
               uint64_t k, F&& f) {
    randk::for_each_position(kt, p.v[kRevision], load_le<uint64_t>(payload),
                             load_le<uint32_t>(payload + 8), load_le<uint32_t>(payload + 12), n, k,
                             f);
}

gw_status encode(const CodecParams& p, const EncodeCtx& ctx, const float* x, uint64_t n,
                 uint8_t* payload, uint64_t* len, float* residual) {
    const kern::Table& kt = *ctx.k;
    // NaN/Inf is refused where it would reach the frame or the residual (or
    // the caller's state: check_unread). Otherwise only the k values sent
    // are read, and the encode is O(k), as a gather is.
    const bool read_all = residual || ctx.check_unread;
    if (read_all && !kt.all_finite(x, n)) return GW_ERR_NONFINITE;
    bool finite = true;
    const uint64_t k = k_of(p, n);
    const int64_t vdt = p.v[kValueDtype];
    const size_t vs = sparse::value_size(vdt);
    store_le<uint64_t>(payload, ctx.seed);
    store_le<uint32_t>(payload + 8, static_cast<uint32_t>(ctx.step));
    store_le<uint32_t>(payload + 12, ctx.tensor);
    uint8_t* out = payload + kHead;
    if (residual && residual != x && n) std::memmove(residual, x, n * sizeof(float));
    positions(kt, p, payload, n, k, [&](uint64_t first, uint64_t c, const uint32_t* idx) {
        float v[randk::kChunk], dec[randk::kChunk];
        kt.gather(x, idx, c, v);
        if (!read_all) finite = kt.all_finite(v, c) && finite;
        uint8_t* dst = out + first * vs;
        if (vdt == GW_DTYPE_F16)
            kt.f32_to_f16(v, dst, c);
        else if (vdt == GW_DTYPE_BF16)
            kt.f32_to_bf16(v, dst, c);
        else
            f32_to_le(dst, v, c);
        if (residual) {
            sparse::values_to_f32(kt, vdt, dst, c, dec);
            for (uint64_t j = 0; j < c; ++j) residual[idx[j]] = v[j] - dec[j];
        }
    });
    if (!finite) return GW_ERR_NONFINITE;  // the payload is output only
    *len = kHead + k * vs;
    return GW_OK;
}

gw_status check(const kern::Table& kt, const CodecParams& p, const uint8_t* payload, uint64_t len,
                uint64_t n) {
    const int64_t vdt = p.v[kValueDtype];
    const uint64_t k = k_of(p, n);
    if (len != kHead + k * sparse::value_size(vdt)) return GW_ERR_FRAME_LENGTH;
    const uint8_t* v = payload + kHead;
    const bool finite = vdt == GW_DTYPE_F16    ? kt.f16_all_finite(v, k)
                        : vdt == GW_DTYPE_BF16 ? kt.bf16_all_finite(v, k)
                                               : floats_finite_le(v, k);
    return finite ? GW_OK : GW_ERR_FRAME_PAYLOAD;
}

void accumulate(const kern::Table& kt, const CodecParams& p, const uint8_t* payload, uint64_t,
                uint64_t n, float alpha, float* acc) {
    const int64_t vdt = p.v[kValueDtype];
    const size_t vs = sparse::value_size(vdt);
    positions(kt, p, payload, n, k_of(p, n), [&](uint64_t first, uint64_t c, const uint32_t* idx) {
        float v[randk::kChunk];
        sparse::values_to_f32(kt, vdt, payload + kHead + first * vs, c, v);
        kt.scatter_add(v, idx, c, alpha, acc);  // t = alpha * v; acc = acc + t
    });
}

void decode(const kern::Table& kt, const CodecParams& p, const uint8_t* payload, uint64_t,
            uint64_t n, float* out) {
    const int64_t vdt = p.v[kValueDtype];
    const size_t vs = sparse::value_size(vdt);
    kern::ExpandCursor cur;
    kt.expand_begin(out, n, &cur);
    positions(kt, p, payload, n, k_of(p, n), [&](uint64_t first, uint64_t c, const uint32_t* idx) {
        float v[randk::kChunk];
        sparse::values_to_f32(kt, vdt, payload + kHead + first * vs, c, v);
        kt.expand_add(idx, v, c, out, &cur);
    });
    kt.expand_end(out, &cur);
}

}  // namespace

extern constexpr Codec codec_randomk =
    CodecDef(GW_CODEC_RANDOMK, "randomk", kParams)
        .entries(max_payload, encode, check, decode, accumulate)
        .caps(kCapStochastic | kCapDrawInPayload);

}  // namespace gw
