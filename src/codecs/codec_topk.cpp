// Exact top-k by magnitude with sparse frames (docs/algorithms.md s.8; with
// the worker/server error feedback over one tensor it is the SLGS baseline).
//
// Selection: the k elements with the largest |x_i|, ties to the lower index
// (kernel family `select`: a radix selection, never a sort). k is the
// parameter `k`, or ceil(n * density_ppm / 1e6) when k is 0; min(k, n).
// Values are stored as value_dtype (f32, or f16/bf16 rounded to nearest even
// and saturated: error feedback keeps the excess). The payload is the shared
// sparse payload (codecs/sparse_payload.hpp) with nnz <= k, n < 2^32.
#include "codecs/codec.hpp"
#include "codecs/sparse_payload.hpp"
#include "kernels/kernels.hpp"

namespace gw {
namespace {

enum Slot { kK = 0, kDensity = 1, kValueDtype = 2, kZstd = 3 };
constexpr ParamDef kParams[] = {sparse::kParamK, sparse::kParamDensity, sparse::kParamValueDtype,
                                sparse::kParamZstd};

uint64_t k_of(const CodecParams& p, uint64_t n) { return sparse::k_of(p.v[kK], p.v[kDensity], n); }

bool max_payload(const CodecParams& p, uint64_t n, uint64_t* bytes) {
    if (n > static_cast<uint64_t>(sparse::kMaxN)) return false;
    *bytes = sparse::payload_size(k_of(p, n), p.v[kValueDtype]);
    return true;
}

gw_status encode(const CodecParams& p, const EncodeCtx& ctx, const float* x, uint64_t n,
                 uint8_t* payload, uint64_t* len, float* residual) {
    const kern::Table& t = kern::active();
    if (!t.all_finite(x, n)) return GW_ERR_NONFINITE;
    const uint64_t k = k_of(p, n);
    // Scratch: the selection's work area (with room for its one-pass path),
    // k indices, k gathered values.
    const size_t work = kern::topk_scratch_bytes(n, k);
    ScratchLayout at;
    at.add(work);
    const size_t at_idx = at.add(k * 4), at_val = at.add(k * 4);
    uint8_t* mem = static_cast<uint8_t*>(ctx.scratch->get(at.bytes()));
    if (!mem) return GW_ERR_OUT_OF_MEMORY;
    uint32_t* idx = reinterpret_cast<uint32_t*>(mem + at_idx);
    float* val = reinterpret_cast<float*>(mem + at_val);
    t.topk_select(x, n, k, idx, mem, work);
    sparse::write(p.v[kValueDtype], x, n, idx, val, k, payload, len, residual);
    return GW_OK;
}

gw_status check(const CodecParams& p, const uint8_t* payload, uint64_t len, uint64_t n) {
    return sparse::check(p.v[kValueDtype], k_of(p, n), payload, len, n);
}

}  // namespace

extern constexpr Codec codec_topk =
    CodecDef(GW_CODEC_TOPK, "topk", kParams)
        .entries(max_payload, encode, check, sparse::codec_decode<kValueDtype>, sparse::codec_accumulate<kValueDtype>);

}  // namespace gw
