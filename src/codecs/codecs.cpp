// Codec registry (a fixed enum, no plugins) and helpers shared by codecs.
#include <cstring>

#include "codecs/codec.hpp"
#include "util/bytes.hpp"

namespace gw {

extern const Codec kIdentityCodec;
extern const Codec kFp16Codec;
extern const Codec kBf16Codec;
extern const Codec kSignCodec;
extern const Codec kScaledSignCodec;

const Codec* codec_for(unsigned id) {
    switch (id) {
        case GW_CODEC_IDENTITY: return &kIdentityCodec;
        case GW_CODEC_FP16: return &kFp16Codec;
        case GW_CODEC_BF16: return &kBf16Codec;
        case GW_CODEC_SIGN: return &kSignCodec;
        case GW_CODEC_SCALED_SIGN: return &kScaledSignCodec;
        default: return nullptr;
    }
}

gw_status codec_params_from_options(const gw_codec_options* opts, CodecParams* out) {
    if (!opts) return GW_ERR_NULL_POINTER;
    if (opts->version != GW_CODEC_OPTIONS_VERSION) return GW_ERR_OPTIONS_VERSION;
    const int id = enum_value(opts->codec);
    if (id < 0 || !codec_for(static_cast<unsigned>(id))) return GW_ERR_INVALID_ARGUMENT;
    // block_size only means something to the blockwise codec; elsewhere it must be 0.
    if (id != GW_CODEC_SCALED_SIGN && opts->block_size != 0) return GW_ERR_INVALID_ARGUMENT;
    out->id = static_cast<gw_codec_id>(id);
    out->block_size = opts->block_size;
    return GW_OK;
}

void generic_residual(const Codec& c, const CodecParams& p, const float* x, uint64_t n,
                      const uint8_t* payload, float* residual) {
    if (residual != x) std::memmove(residual, x, n * sizeof(float));
    // x + (-1)*D == x - D exactly in IEEE arithmetic.
    c.accumulate(p, payload, n, -1.0f, residual);
}

}  // namespace gw
