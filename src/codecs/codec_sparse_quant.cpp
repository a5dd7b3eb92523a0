// Unbiased random sparsification composed with Q_(delta,b): the worker's
// message of Sparse-AsyLPG (docs/algorithms.md s.6; Yu et al. 2019, Alg. 2).
//
//   p_i = min(1, |a_i| * phi / ||a||_1),  keep a_i / p_i with probability p_i
//   then Q_(delta,b) of the kept values, delta = max_kept |a_i/p_i| / (2^(b-1)-1)
//
// phi is the parameter `budget` (float32 bits; 0 = ||a||_1 / ||a||_inf, the
// paper's largest budget, under which every kept value has magnitude
// ||a||_inf). Element i keeps iff word i of (seed, step, tensor) is below
// p_i * 2^32; kept value j rounds with word 2^40 + j. Entries whose code is
// the zero point carry nothing and are dropped (b >= 2), so a frame never
// holds one. Payload (zstd stage when it pays, as the sparse frames):
//
//   u32 nnz | f32 delta | nnz codes, `bits` wide, packed | gap planes (4 nnz bytes)
//
// Canonical: nnz == 0 iff delta == 0; delta finite, no sign bit; codes within
// the grid and never the zero point; indices increasing and below n.
#include <cmath>
#include <cstring>

#include "codecs/codec.hpp"
#include "codecs/grid_quant.hpp"
#include "codecs/sparse_payload.hpp"
#include "kernels/kernels.hpp"
#include "util/bytes.hpp"

namespace gw {
namespace {

enum Slot { kBits = 0, kBudget = 1, kZstd = 2 };
constexpr ParamDef kParams[] = {
    {GW_PARAM_BITS, "bits", 1, 1, 16, 4},
    {GW_PARAM_BUDGET, "budget", 4, 0, 0x7F7FFFFF, 0},  // finite float >= 0; 0 = automatic
    sparse::kParamZstd,
};
constexpr uint64_t kHead = 8;
constexpr uint64_t kRoundWords = uint64_t(1) << 40;  // stream offset of the rounding words
constexpr uint64_t kChunk = kern::kRngChunk;

gq::Grid grid(const CodecParams& p) { return gq::for_bits(static_cast<unsigned>(p.v[kBits])); }
uint32_t zero_code(const gq::Grid& g) { return g.pair ? UINT32_MAX : static_cast<uint32_t>(-g.lo); }
uint64_t code_bytes(const gq::Grid& g, uint64_t nnz) { return ceil_div(nnz * g.width, 8); }

gw_status validate(const CodecParams& p) {
    return p.v[kBits] <= 8 || p.v[kBits] == 16 ? GW_OK : GW_ERR_INVALID_ARGUMENT;
}

bool max_payload(const CodecParams& p, uint64_t n, uint64_t* bytes) {
    if (n > static_cast<uint64_t>(sparse::kMaxN)) return false;
    *bytes = kHead + code_bytes(grid(p), n) + 4 * n;
    return true;
}

gw_status encode(const CodecParams& p, const EncodeCtx& ctx, const float* x, uint64_t n,
                 uint8_t* payload, uint64_t* len, float* residual) {
    const kern::Table& kt = *ctx.k;
    const gq::Grid g = grid(p);
    const uint32_t key = kt.max_abs_key(x, n);
    if (key >= 0x7F800000u) return GW_ERR_NONFINITE;
    const double l1 = kt.sum_abs(x, n);
    const uint32_t seed_step = static_cast<uint32_t>(ctx.step);
    // Scratch: indices, kept values, their codes.
    ScratchLayout at;
    const size_t at_idx = at.add(n * 4), at_val = at.add(n * 4), at_codes = at.add(n * 4);
    uint8_t* mem = static_cast<uint8_t*>(ctx.scratch->get(at.bytes()));
    if (!mem) return GW_ERR_OUT_OF_MEMORY;
    uint32_t* idx = reinterpret_cast<uint32_t*>(mem + at_idx);
    float* val = reinterpret_cast<float*>(mem + at_val);
    uint32_t* codes = reinterpret_cast<uint32_t*>(mem + at_codes);
    uint64_t nnz = 0;
    float delta = 0.0f;
    if (key != 0) {
        float m;
        std::memcpy(&m, &key, 4);
        uint32_t braw = static_cast<uint32_t>(p.v[kBudget]);
        float budget;
        std::memcpy(&budget, &braw, 4);
        const double phi = budget > 0.0f ? double(budget) : l1 / double(m);
        const double scale = phi / l1;
        // Sparsification: one word per element. A chunk's keep decisions and
        // kept positions come from the kernel (the same double arithmetic on
        // every target), then a / p_i for the kept elements alone.
        uint32_t words[kChunk], sel[kChunk];
        float kept_max = 0.0f;
        const auto p_of = [scale](double a) {
            const double pi = std::fabs(a) * scale;
            return pi > 1.0 ? 1.0 : pi;
        };
        for (uint64_t i = 0; i < n; i += kChunk) {
            const uint64_t c = n - i < kChunk ? n - i : kChunk;
            kt.rng_u32(ctx.seed, seed_step, ctx.tensor, i, words, c);
            const uint64_t kept = kt.random_keep(x + i, c, scale, words, sel);
            for (uint64_t s = 0; s < kept; ++s) {
                const uint64_t e = i + sel[s];
                const double a = double(x[e]);
                const float v = static_cast<float>(a / p_of(a));
                if (!std::isfinite(v)) return GW_ERR_OVERFLOW;
                idx[nnz] = static_cast<uint32_t>(e);
                val[nnz++] = v;
                const float mag = std::fabs(v);  // finite: no NaN for fmax to handle
                kept_max = mag > kept_max ? mag : kept_max;
            }
        }
        // Quantization of the kept values, then dropping zero codes.
        if (nnz) {
            delta = g.pair ? kept_max : gq::step_for(kept_max, g.hi);
            if (!gq::ends_finite(g, delta)) return GW_ERR_OVERFLOW;
            for (uint64_t i = 0; i < nnz; i += kChunk) {
                const uint64_t c = nnz - i < kChunk ? nnz - i : kChunk;
                kt.rng_u32(ctx.seed, seed_step, ctx.tensor, kRoundWords + i, words, c);
                kt.stoch_round(val + i, c, delta, g.lo, g.hi, g.pair, words, codes + i, nullptr);
            }
            const uint32_t zc = zero_code(g);
            uint64_t k = 0;
            for (uint64_t i = 0; i < nnz; ++i) {  // without branches: zero codes are random
                idx[k] = idx[i];
                codes[k] = codes[i];
                k += codes[i] != zc;
            }
            nnz = k;
            if (nnz == 0) delta = 0.0f;
        }
    }
    store_le<uint32_t>(payload, static_cast<uint32_t>(nnz));
    store_le<float>(payload + 4, delta);
    uint8_t* cp = payload + kHead;
    kt.pack_codes(codes, nnz, g.width, cp);
    sparse::write_gaps(idx, nnz, cp + code_bytes(g, nnz));
    *len = kHead + code_bytes(g, nnz) + 4 * nnz;
    if (residual) {
        generic_residual(kt, p, x, n, payload, *len, residual);
        // The pair grid may round a kept value to the opposite level: x + delta
        // can overflow there (only there); GW_ERR_OVERFLOW as codec.hpp says.
        if (g.pair)
            for (uint64_t i = 0; i < nnz; ++i)
                if (!std::isfinite(residual[idx[i]])) return GW_ERR_OVERFLOW;
    }
    return GW_OK;
}

gw_status check(const kern::Table& kt, const CodecParams& p, const uint8_t* payload, uint64_t len,
                uint64_t n) {
    const gq::Grid g = grid(p);
    if (len < kHead) return GW_ERR_FRAME_LENGTH;
    const uint64_t nnz = load_le<uint32_t>(payload);
    if (nnz > n || len != kHead + code_bytes(g, nnz) + 4 * nnz) return GW_ERR_FRAME_LENGTH;
    const uint32_t w = load_le<uint32_t>(payload + 4);
    if ((w & 0x80000000u) != 0 || (w & 0x7F800000u) == 0x7F800000u ||
        !gq::ends_finite(g, load_le<float>(payload + 4)))
        return GW_ERR_FRAME_PAYLOAD;
    if ((w == 0) != (nnz == 0)) return GW_ERR_FRAME_PAYLOAD;
    const uint8_t* cp = payload + kHead;
    if (!gq::padding_clear(cp, nnz, g.width)) return GW_ERR_FRAME_PAYLOAD;
    const uint32_t top = static_cast<uint32_t>(g.hi - g.lo), zc = zero_code(g);
    uint32_t codes[kChunk];
    for (uint64_t i = 0; i < nnz; i += kChunk) {
        const uint64_t c = nnz - i < kChunk ? nnz - i : kChunk;
        kt.unpack_codes(cp + i / 8 * g.width, c, g.width, codes);
        for (uint64_t j = 0; j < c; ++j)
            if (codes[j] > top || codes[j] == zc) return GW_ERR_FRAME_PAYLOAD;
    }
    return sparse::check_gaps(kt, cp + code_bytes(g, nnz), nnz, n);
}

// f(count, idx, values) over a checked payload, in chunks.
template <class F>
void walk(const kern::Table& kt, const CodecParams& p, const uint8_t* payload, F&& f) {
    const gq::Grid g = grid(p);
    const uint64_t nnz = load_le<uint32_t>(payload);
    const float delta = load_le<float>(payload + 4);
    const uint8_t* cp = payload + kHead;
    sparse::for_each_index(kt, cp + code_bytes(g, nnz), nnz,
                           [&](uint64_t first, uint64_t c, const uint32_t* idx) {
                               uint32_t codes[kChunk];
                               float v[kChunk];
                               kt.unpack_codes(cp + first / 8 * g.width, c, g.width, codes);
                               kt.dequant(codes, c, delta, g.lo, g.pair, v);
                               f(c, idx, v);
                           });
}

void decode(const kern::Table& kt, const CodecParams& p, const uint8_t* payload, uint64_t,
            uint64_t n, float* out) {
    kern::ExpandCursor cur;
    kt.expand_begin(out, n, &cur);
    walk(kt, p, payload, [&](uint64_t c, const uint32_t* idx, const float* v) {
        kt.expand_add(idx, v, c, out, &cur);
    });
    kt.expand_end(out, &cur);
}

void accumulate(const kern::Table& kt, const CodecParams& p, const uint8_t* payload, uint64_t,
                uint64_t, float alpha, float* acc) {
    walk(kt, p, payload, [&](uint64_t c, const uint32_t* idx, const float* v) {
        for (uint64_t j = 0; j < c; ++j) {
            const float t = alpha * v[j];
            acc[idx[j]] = acc[idx[j]] + t;
        }
    });
}

}  // namespace

extern constexpr Codec codec_sparse_quant =
    CodecDef(GW_CODEC_SPARSE_QUANT, "sparse_quant", kParams)
        .entries(max_payload, encode, check, decode, accumulate)
        .validate(validate)
        .caps(kCapStochastic | kCapStochasticRounding);

}  // namespace gw
