// Codec-independent diagnostics over whole frames (docs/c-api.md, "Sparse
// codecs"): what a codec keeps of a vector, measured through the encoder
// itself so it holds for every codec.
#pragma once

#include <cstdint>

#include "codecs/codec.hpp"
#include "gradwire_types.h"

namespace gw::frame {

// ||x - C(x)||^2 / ||x||^2 (0 for x = 0): the residual comes out of encode()
// (a frame is written to scratch and dropped). ctx.scratch is the codec's
// working memory. GW_ERR_INVALID_ARGUMENT when the codec cannot frame n
// elements; otherwise encode()'s status.
gw_status contraction(Context& cx, const CodecParams& p, const EncodeCtx& ctx, const float* x,
                      uint64_t n, double* ratio);

}  // namespace gw::frame
