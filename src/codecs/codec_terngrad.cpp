// TernGrad (Wen et al. 2017): per block s = ||v_b||_inf and each element sent
// as s * sign(v_i) * Bernoulli(|v_i| / s), i.e. unbiased stochastic rounding
// to the ternary grid {-s, 0, s}; 2 bits per element (codes 0, 1, 2).
// It is Q_(delta,2) of the quant codec under its own name and id, as users
// look for it (the paper's layer-wise scaling is block_size 0, the default;
// its optional gradient clipping is left to error feedback, which keeps what
// a clipped value would have lost). Parameters: block_size, revision (the
// rounding rule). Shares grid_quant.hpp.
#include "codecs/codec.hpp"
#include "codecs/grid_quant.hpp"

namespace gw {
namespace {

enum Slot { kBlock = 0, kRevision = 1 };
// The revision (grid_quant.hpp's rounding rule) came later: last, absent from the wire when 1.
constexpr ParamDef kParams[] = {{GW_PARAM_BLOCK_SIZE, "block_size", 4, 0, UINT32_MAX, 0},
                                revision_param(2)};

gq::Grid grid(const CodecParams& p) { return gq::ruled(gq::symmetric(1), p.v[kRevision]); }

using E = gq::Entries<grid, kBlock, gq::max_rule>;

}  // namespace

extern constexpr Codec codec_terngrad = E::def(GW_CODEC_TERNGRAD, "terngrad", kParams);

}  // namespace gw
