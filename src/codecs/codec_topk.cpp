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
using E = sparse::Entries<k_of, kValueDtype>;

gw_status encode(const CodecParams& p, const EncodeCtx& ctx, const float* x, uint64_t n,
                 uint8_t* payload, uint64_t* len, float* residual) {
    const kern::Table& kt = *ctx.k;
    const uint64_t k = k_of(p, n);
    // Scratch: the selection's work area (with room for its one-pass path),
    // k indices, k gathered values.
    const size_t work = kern::topk_scratch_bytes(n, k);
    sparse::Selection s;
    const gw_status st = sparse::begin(ctx, x, n, work, k, sparse::Values::kYes, &s);
    if (st != GW_OK) return st;
    kt.topk_select(x, n, k, s.idx, s.work, work);
    sparse::write(*ctx.k, p.v[kValueDtype], x, n, s.idx, s.val, k, payload, len, residual);
    return GW_OK;
}

}  // namespace

extern constexpr Codec codec_topk =
    CodecDef(GW_CODEC_TOPK, "topk", kParams)
        .entries(E::max_payload, encode, E::check, E::decode, E::accumulate);

}  // namespace gw
