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

bool max_payload(const CodecParams& p, uint64_t n, uint64_t* bytes) {
    if (n > static_cast<uint64_t>(sparse::kMaxN)) return false;
    *bytes = sparse::payload_size(n, p.v[kValueDtype]);
    return true;
}

gw_status encode(const CodecParams& p, const EncodeCtx& ctx, const float* x, uint64_t n,
                 uint8_t* payload, uint64_t* len, float* residual) {
    const kern::Table& t = kern::active();
    if (!t.all_finite(x, n)) return GW_ERR_NONFINITE;
    ScratchLayout at;
    const size_t at_idx = at.add(n * 4), at_val = at.add(n * 4);
    uint8_t* mem = static_cast<uint8_t*>(ctx.scratch->get(at.bytes()));
    if (!mem) return GW_ERR_OUT_OF_MEMORY;
    uint32_t* idx = reinterpret_cast<uint32_t*>(mem + at_idx);
    float* val = reinterpret_cast<float*>(mem + at_val);
    const float thr = threshold_of(p);
    const uint64_t count = t.threshold_select(x, n, thr, idx, n);
    sparse::write(p.v[kValueDtype], x, n, idx, val, count, payload, len, residual, thr);
    return GW_OK;
}

gw_status check(const CodecParams& p, const uint8_t* payload, uint64_t len, uint64_t n) {
    return sparse::check(p.v[kValueDtype], n, payload, len, n, threshold_of(p));
}

}  // namespace

extern constexpr Codec codec_threshold =
    CodecDef(GW_CODEC_THRESHOLD, "threshold", kParams)
        .entries(max_payload, encode, check, sparse::codec_decode<kValueDtype>, sparse::codec_accumulate<kValueDtype>);

}  // namespace gw
