// QSGD (Alistarh et al. 2017), bucketed: per bucket of block_size elements
// the step delta = ||v_b||_2 / s, and each element is rounded without bias to
// the grid c*delta, c in [-s, s] (the paper's sign * ||v||_2 * xi(v_i, s) / s:
// rounding |v_i| and restoring the sign gives the same distribution), in
// ceil(log2(2s + 1)) bits per code. Fixed-width codes rather than the
// paper's Elias coding: the frame's size is known from (s, n), and decode is
// one pass. Parameters: levels s (1..32767), block_size (default 512, 0 = one
// bucket per tensor), revision (the rounding rule). Shares grid_quant.hpp.
#include <cmath>
#include <cstring>

#include "codecs/codec.hpp"
#include "codecs/grid_quant.hpp"
#include "kernels/kernels.hpp"

namespace gw {
namespace {

enum Slot { kLevels = 0, kBlock = 1, kRevision = 2 };
// The revision (grid_quant.hpp's rounding rule) came later: last, absent from the wire when 1.
constexpr ParamDef kParams[] = {{GW_PARAM_LEVELS, "levels", 2, 1, 32767, 7},
                                {GW_PARAM_BLOCK_SIZE, "block_size", 4, 0, UINT32_MAX, 512},
                                revision_param(2)};

gq::Grid grid(const CodecParams& p) {
    return gq::ruled(gq::symmetric(static_cast<int32_t>(p.v[kLevels])), p.v[kRevision]);
}

// delta = ||v||_2 / s, raised (by ulps) until delta * s >= ||v||_inf, so
// rounding in float never pushes an element off the grid.
gw_status l2_rule(const kern::Table& kt, const CodecParams&, const gq::Grid& g, const float* x,
                  uint64_t n, float* delta) {
    const uint32_t key = kt.max_abs_key(x, n);
    if (key >= 0x7F800000u) return GW_ERR_NONFINITE;
    const double norm = std::sqrt(kt.sum_sq(x, n));
    float m;
    std::memcpy(&m, &key, 4);
    const float d = static_cast<float>(norm / g.hi);
    if (!std::isfinite(d)) return GW_ERR_OVERFLOW;
    const float floor_step = gq::step_for(m, g.hi);
    *delta = d > floor_step ? d : floor_step;
    return GW_OK;
}

using E = gq::Entries<grid, kBlock, l2_rule>;

}  // namespace

extern constexpr Codec codec_qsgd = E::def(GW_CODEC_QSGD, "qsgd", kParams);

}  // namespace gw
