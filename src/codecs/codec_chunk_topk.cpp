// Chunk-wise top-k (docs/algorithms.md s.4, ScaleCom's selection as a codec):
// the top k_j of every chunk of c = chunk_size elements, k_j by the frame's
// rule revision (codecs/chunk_select.hpp: 2 = exactly k in all, 1 = the first
// rule's ceil per chunk; chunk_size 0 = one chunk, exact top-k). k,
// value_dtype and zstd as in the topk codec; the payload is the shared
// sparse payload, and the decoder also checks that no chunk holds more than
// its k_j entries (what no encoder writes, no decoder accepts).
#include "codecs/chunk_select.hpp"
#include "codecs/codec.hpp"
#include "codecs/sparse_payload.hpp"
#include "kernels/kernels.hpp"

namespace gw {
namespace {

enum { kValueDtype = 3 };  // after k, density_ppm, chunk_size (chunk_select.hpp)
// The revision came later: last, absent from the wire when 1.
constexpr ParamDef kParams[] = {sparse::kParamK,          sparse::kParamDensity,
                                chunks::kParamChunk,      sparse::kParamValueDtype,
                                sparse::kParamZstd,       chunks::kParamRevision};
using E = sparse::Entries<chunks::max_entries, kValueDtype>;

gw_status encode(const CodecParams& p, const EncodeCtx& ctx, const float* x, uint64_t n,
                 uint8_t* payload, uint64_t* len, float* residual) {
    const chunks::Shares shares = chunks::shares_of(p, n);
    // Scratch: the selection's work area, the indices, the gathered values.
    sparse::Selection s;
    const gw_status st = sparse::begin(ctx, x, n, kern::kTopkScratchBytes, shares.total(),
                                       sparse::Values::kYes, &s);
    if (st != GW_OK) return st;
    const auto [mem, idx, val] = s;
    const uint64_t k = chunks::select(*ctx.k, x, n, shares, idx, mem);
    sparse::write(*ctx.k, p.v[kValueDtype], x, n, idx, val, k, payload, len, residual);
    return GW_OK;
}

gw_status check(const kern::Table& kt, const CodecParams& p, const uint8_t* payload, uint64_t len,
                uint64_t n) {
    const int64_t vdt = p.v[kValueDtype];
    const chunks::Shares shares = chunks::shares_of(p, n);
    const gw_status st = sparse::check(kt, vdt, shares.total(), payload, len, n);
    if (st != GW_OK) return st;
    const uint64_t nnz = load_le<uint32_t>(payload);
    return chunks::check_counts(kt, payload + 4 + nnz * sparse::value_size(vdt), nnz, n, shares);
}

}  // namespace

extern constexpr Codec codec_chunk_topk =
    CodecDef(GW_CODEC_CHUNK_TOPK, "chunk_topk", kParams)
        .entries(E::max_payload, encode, check, E::decode, E::accumulate);

}  // namespace gw
