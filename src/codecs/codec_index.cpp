// Index-only frames (docs/wire-format.md): the indices of the chunk-wise
// top-k of x (codecs/chunk_select.hpp, its rule revisions; chunk_size 0 =
// exact top-k), without
// values. This is CLT-k's leader message: every worker then reads its own
// values at those indices (feedback/cltk.hpp). Entries where x is zero carry
// no selection and are dropped, so a frame decodes to a 0/1 mask whose
// re-encoding gives the same bytes.
//
//   u32 count | count gaps as 4 byte planes (sparse_payload.hpp)
#include <algorithm>
#include <cstring>

#include "codecs/chunk_select.hpp"
#include "codecs/codec.hpp"
#include "codecs/sparse_payload.hpp"
#include "kernels/kernels.hpp"

namespace gw {
namespace {

// k, density_ppm, chunk_size (chunk_select.hpp), zstd; the revision came
// later: last, absent from the wire when 1.
constexpr ParamDef kParams[] = {sparse::kParamK, sparse::kParamDensity, chunks::kParamChunk,
                                sparse::kParamZstd, chunks::kParamRevision};

bool max_payload(const CodecParams& p, uint64_t n, uint64_t* bytes) {
    if (n > static_cast<uint64_t>(sparse::kMaxN)) return false;
    *bytes = 4 + 4 * chunks::max_entries(p, n);
    return true;
}

gw_status encode(const CodecParams& p, const EncodeCtx& ctx, const float* x, uint64_t n,
                 uint8_t* payload, uint64_t* len, float* residual) {
    const kern::Table& kt = *ctx.k;
    const chunks::Shares shares = chunks::shares_of(p, n);
    sparse::Selection s;
    const gw_status st = sparse::begin(ctx, x, n, kern::kTopkScratchBytes, shares.total(),
                                       sparse::Values::kNo, &s);
    if (st != GW_OK) return st;
    uint32_t* idx = s.idx;
    uint8_t* mem = s.work;
    const uint64_t k = chunks::select(*ctx.k, x, n, shares, idx, mem);
    uint64_t count = 0;
    for (uint64_t i = 0; i < k; ++i)
        if (x[idx[i]] != 0.0f) idx[count++] = idx[i];
    store_le<uint32_t>(payload, static_cast<uint32_t>(count));
    sparse::write_gaps(idx, count, payload + 4);
    *len = 4 + 4 * count;
    if (residual) generic_residual(kt, p, x, n, payload, *len, residual);
    return GW_OK;
}

gw_status check(const kern::Table& kt, const CodecParams& p, const uint8_t* payload, uint64_t len,
                uint64_t n) {
    if (len < 4) return GW_ERR_FRAME_LENGTH;
    const uint64_t count = load_le<uint32_t>(payload);
    const chunks::Shares shares = chunks::shares_of(p, n);
    if (count > shares.total() || len != 4 + 4 * count) return GW_ERR_FRAME_LENGTH;
    const gw_status st = sparse::check_gaps(kt, payload + 4, count, n);
    if (st != GW_OK) return st;
    return chunks::check_counts(kt, payload + 4, count, n, shares);
}

// The mask: acc[i] += alpha * 1 at the selected indices (same arithmetic as
// the dense kernels: t = alpha * v; acc = acc + t).
void accumulate(const kern::Table& kt, const CodecParams&, const uint8_t* payload, uint64_t,
                uint64_t, float alpha, float* acc) {
    sparse::for_each_index(kt, payload + 4, load_le<uint32_t>(payload),
                           [&](uint64_t, uint64_t c, const uint32_t* idx) {
                               const float t = alpha * 1.0f;
                               for (uint64_t j = 0; j < c; ++j) acc[idx[j]] = acc[idx[j]] + t;
                           });
}

void decode(const kern::Table& kt, const CodecParams&, const uint8_t* payload, uint64_t,
            uint64_t n, float* out) {
    float ones[sparse::kWalkChunk];
    std::fill(ones, ones + sparse::kWalkChunk, 1.0f);
    kern::ExpandCursor cur;
    kt.expand_begin(out, n, &cur);
    sparse::for_each_index(kt, payload + 4, load_le<uint32_t>(payload),
                           [&](uint64_t, uint64_t c, const uint32_t* idx) {
                               kt.expand_add(idx, ones, c, out, &cur);
                           });
    kt.expand_end(out, &cur);
}

}  // namespace

extern constexpr Codec codec_index =
    CodecDef(GW_CODEC_INDEX, "index", kParams)
        .entries(max_payload, encode, check, decode, accumulate);

void index_payload_indices(const kern::Table& kt, const uint8_t* payload, uint32_t* out) {
    sparse::for_each_index(kt, payload + 4, load_le<uint32_t>(payload),
                           [&](uint64_t first, uint64_t c, const uint32_t* idx) {
                               std::memcpy(out + first, idx, c * sizeof(uint32_t));
                           });
}

}  // namespace gw
