// The stochastic grid quantizer the quant (AsyLPG's Q_(delta,b)), QSGD and
// TernGrad codecs share (docs/algorithms.md s.5): x is cut into blocks, each
// block gets one step delta from its codec's scale rule, and every element is
// rounded to a neighbouring grid point c*delta with the probability that makes
// it unbiased. Rule revision 1 draws word i of the Philox stream (seed, step,
// tensor) for element i; revision 2 the same probabilities from byte i%4 of
// word i/4 (and, 1 time in 256, a tie word: kernels.hpp's stoch_round8).
// Codes c - lo are bit-packed, `width` bits each, LSB first.
//
//   payload: B float32 deltas | per block ceil(d_b * width / 8) code bytes
//
// Every block starts on a byte boundary. Canonical: a delta is finite and not
// negative (no sign bit); a code never exceeds hi - lo; padding bits are 0; a
// zero delta has all codes 0 (the encoder writes a zero block so).
#pragma once

#include <cstddef>
#include <cstdint>

#include "codecs/codec.hpp"

namespace gw::gq {

struct Grid {
    int32_t lo = 0, hi = 0;  // grid indices: c in [lo, hi]
    bool pair = false;       // two levels +-delta (1-bit quantizer) instead of c*delta
    unsigned width = 1;      // bits per code
    int64_t rule = 1;        // rounding rule revision (the frame's GW_PARAM_REVISION)
};

// g rounding by the rule of a codec's revision parameter.
inline Grid ruled(Grid g, int64_t revision) {
    g.rule = revision;
    return g;
}

// c in [-levels, levels] (levels >= 1).
Grid symmetric(int32_t levels);
// AsyLPG's b-bit grid: levels 2^(b-1) - 1 for b >= 2; b = 1 is the pair grid.
Grid for_bits(unsigned b);

// The step of a block, from its elements (finite or not). GW_ERR_NONFINITE if
// they hold NaN/Inf, GW_ERR_OVERFLOW if the step would not be finite.
using ScaleRule = gw_status (*)(const kern::Table& kt, const CodecParams& p, const Grid& g,
                                const float* x, uint64_t n, float* delta);

// Scale rule of AsyLPG and TernGrad: the smallest float delta with
// delta * levels >= ||x||_inf (for the pair grid delta = ||x||_inf).
gw_status max_rule(const kern::Table& kt, const CodecParams& p, const Grid& g, const float* x,
                   uint64_t n, float* delta);
// Smallest float step >= m / levels with step * levels >= m (m >= 0 finite).
float step_for(float m, int32_t levels);

// True if the grid's outermost points +-hi*delta are finite floats (as the
// decoder computes them): a frame never decodes to an infinity.
bool ends_finite(const Grid& g, float delta);

bool payload_size(const Grid& g, uint64_t block_size, uint64_t n, uint64_t* bytes);
gw_status encode(const CodecParams& p, const Grid& g, ScaleRule rule, uint64_t block_size,
                 const EncodeCtx& ctx, const float* x, uint64_t n, uint8_t* payload,
                 uint64_t* len, float* residual);
gw_status check(const kern::Table& kt, const Grid& g, uint64_t block_size, const uint8_t* payload,
                uint64_t len, uint64_t n);
void decode(const kern::Table& kt, const Grid& g, uint64_t block_size, const uint8_t* payload,
            uint64_t n, float* out);
void accumulate(const kern::Table& kt, const Grid& g, uint64_t block_size, const uint8_t* payload,
                uint64_t n, float alpha, float* acc);

// Bit packing is the kernels' (pack_codes / unpack_codes).
// True if the bits after c codes in the last byte are 0.
bool padding_clear(const uint8_t* in, size_t c, unsigned width);

// The Codec entries of a grid codec: its grid from its parameters, the slot
// of its block_size parameter and its scale rule; def() is its descriptor
// (every grid codec rounds at random, drawing from (seed, step, tensor)).
template <Grid (*G)(const CodecParams&), size_t BlockSlot, ScaleRule R>
struct Entries {
    template <size_t N>
    static constexpr CodecDef def(gw_codec_id id, const char* name, const ParamDef (&params)[N]) {
        return CodecDef(id, name, params)
            .entries(max_payload, encode, check, decode, accumulate)
            .caps(kCapStochastic | kCapStochasticRounding);
    }
    static uint64_t block(const CodecParams& p) { return static_cast<uint64_t>(p.v[BlockSlot]); }
    static bool max_payload(const CodecParams& p, uint64_t n, uint64_t* bytes) {
        return payload_size(G(p), block(p), n, bytes);
    }
    static gw_status encode(const CodecParams& p, const EncodeCtx& ctx, const float* x, uint64_t n,
                            uint8_t* payload, uint64_t* len, float* residual) {
        return gq::encode(p, G(p), R, block(p), ctx, x, n, payload, len, residual);
    }
    static gw_status check(const kern::Table& kt, const CodecParams& p, const uint8_t* payload,
                           uint64_t len, uint64_t n) {
        return gq::check(kt, G(p), block(p), payload, len, n);
    }
    static void decode(const kern::Table& kt, const CodecParams& p, const uint8_t* payload,
                       uint64_t, uint64_t n, float* out) {
        gq::decode(kt, G(p), block(p), payload, n, out);
    }
    static void accumulate(const kern::Table& kt, const CodecParams& p, const uint8_t* payload,
                           uint64_t, uint64_t n, float alpha, float* acc) {
        gq::accumulate(kt, G(p), block(p), payload, n, alpha, acc);
    }
};

// Exact E||Q(x) - x||^2 = sum_i (x_i - z_i)(z_i + delta - x_i) on the grid g
// with step delta (z_i the grid point below x_i), in double (s.6's mu-condition).
double expected_sq_error(const Grid& g, const float* x, uint64_t n, float delta);

}  // namespace gw::gq
