// Low-precision quantizer Q_(delta,b) of AsyLPG (docs/algorithms.md s.5;
// Yu et al. 2019, s.3): per block delta = ||v_b||_inf / (2^(b-1) - 1) and
// unbiased stochastic rounding to the grid c*delta, c in [-(2^(b-1)-1),
// 2^(b-1)-1], b bits per code (codes c + 2^(b-1) - 1; the paper's extra
// point -2^(b-1)*delta is never reached by |v_i| <= ||v||_inf, so no encoder
// writes it and no decoder accepts it). b = 1 has no such grid (the formula
// divides by 0): it is the two levels +-||v_b||_inf, rounded without bias.
// Parameters: bits (1..8 or 16), block_size (0 = one block per tensor),
// revision (the rounding rule: 2 = a byte per element, 1 = a word).
// The grid, payload and checks are shared with QSGD and TernGrad (grid_quant.hpp).
#include "codecs/codec.hpp"
#include "codecs/grid_quant.hpp"

namespace gw {
namespace {

enum Slot { kBits = 0, kBlock = 1, kRevision = 2 };
// The revision (grid_quant.hpp's rounding rule) came later: last, absent from the wire when 1.
constexpr ParamDef kParams[] = {{GW_PARAM_BITS, "bits", 1, 1, 16, 4},
                                {GW_PARAM_BLOCK_SIZE, "block_size", 4, 0, UINT32_MAX, 0},
                                revision_param(2)};

gq::Grid grid(const CodecParams& p) {
    return gq::ruled(gq::for_bits(static_cast<unsigned>(p.v[kBits])), p.v[kRevision]);
}

gw_status validate(const CodecParams& p) {
    return p.v[kBits] <= 8 || p.v[kBits] == 16 ? GW_OK : GW_ERR_INVALID_ARGUMENT;
}
using E = gq::Entries<grid, kBlock, gq::max_rule>;

}  // namespace

extern constexpr Codec codec_quant = E::def(GW_CODEC_QUANT, "quant", kParams).validate(validate);

}  // namespace gw
