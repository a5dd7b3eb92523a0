// Threshold sparsification (docs/algorithms.md s.8): every element with
// |x_i| >= t, t = the float whose bits are the parameter `threshold` (finite,
// >= 0). Selection: the `threshold` kernel family (one pass, SIMD). Values
// as value_dtype; an entry whose stored value rounds below t (f16/bf16) or to
// zero is dropped and stays in the residual, so every stored magnitude is at
// least t and the decoder checks exactly that. The payload is the shared
// sparse payload (codecs/sparse_payload.hpp) with nnz <= n, n < 2^32.
#include <cstring>

#include "codecs/codec.hpp"
#include "codecs/sparse_payload.hpp"
#include "kernels/kernels.hpp"

namespace gw {
namespace {

enum Slot { kThreshold = 0, kValueDtype = 1, kZstd = 2 };
constexpr ParamDef kParams[] = {
    {GW_PARAM_THRESHOLD, "threshold", 4, 0, 0x7F7FFFFF, 0x3A83126F},  // FLT_MAX; 1e-3
    sparse::kParamValueDtype,
    sparse::kParamZstd,
};

float threshold_of(const CodecParams& p) {
    const uint32_t bits = static_cast<uint32_t>(p.v[kThreshold]);
    float t;
    std::memcpy(&t, &bits, 4);
    return t;
}

uint64_t every(const CodecParams&, uint64_t n) { return n; }  // entries at most
using E = sparse::Entries<every, kValueDtype>;

gw_status encode(const CodecParams& p, const EncodeCtx& ctx, const float* x, uint64_t n,
                 uint8_t* payload, uint64_t* len, float* residual) {
    const kern::Table& kt = *ctx.k;
    sparse::Selection s;
    const gw_status st = sparse::begin(ctx, x, n, 0, n, sparse::Values::kYes, &s);
    if (st != GW_OK) return st;
    const float thr = threshold_of(p);
    const uint64_t count = kt.threshold_select(x, n, thr, s.idx, n);
    sparse::write(*ctx.k, p.v[kValueDtype], x, n, s.idx, s.val, count, payload, len, residual, thr);
    return GW_OK;
}

gw_status check(const kern::Table& kt, const CodecParams& p, const uint8_t* payload, uint64_t len,
                uint64_t n) {
    return sparse::check(kt, p.v[kValueDtype], n, payload, len, n, threshold_of(p));
}

}  // namespace

extern constexpr Codec codec_threshold =
    CodecDef(GW_CODEC_THRESHOLD, "threshold", kParams)
        .entries(E::max_payload, encode, check, E::decode, E::accumulate);

}  // namespace gw
