// 16-bit float casts: IEEE half (fp16) and bfloat16, 2 bytes per element.
// Encoding rounds to nearest even and saturates to the largest finite value,
// so error feedback keeps whatever does not fit instead of receiving an Inf.
#include "codecs/codec.hpp"
#include "kernels/kernels.hpp"

namespace gw {
namespace {

gw_status read_params_fp16(const uint8_t*, CodecParams* out) {
    *out = CodecParams{GW_CODEC_FP16, 0};
    return GW_OK;
}
gw_status read_params_bf16(const uint8_t*, CodecParams* out) {
    *out = CodecParams{GW_CODEC_BF16, 0};
    return GW_OK;
}
void write_params(const CodecParams&, uint8_t*) {}

bool payload_size(const CodecParams&, uint64_t n, uint64_t* bytes) {
    if (n > UINT64_MAX / 2) return false;
    *bytes = n * 2;
    return true;
}

template <gw_codec_id Id>
void accumulate(const CodecParams&, const uint8_t* payload, uint64_t n, float alpha, float* acc) {
    if (Id == GW_CODEC_FP16)
        kern::active().f16_accumulate(payload, alpha, acc, n);
    else
        kern::active().bf16_accumulate(payload, alpha, acc, n);
}

template <gw_codec_id Id>
gw_status encode(const CodecParams& p, const float* x, uint64_t n, uint8_t* payload,
                 float* residual) {
    const kern::Table& t = kern::active();
    if (!t.all_finite(x, n)) return GW_ERR_NONFINITE;
    if (Id == GW_CODEC_FP16)
        t.f32_to_f16(x, payload, n);
    else
        t.f32_to_bf16(x, payload, n);
    if (residual) {
        const Codec* c = codec_for(Id);
        generic_residual(*c, p, x, n, payload, residual);
    }
    return GW_OK;
}

template <gw_codec_id Id>
gw_status check(const CodecParams&, const uint8_t* payload, uint64_t n) {
    const kern::Table& t = kern::active();
    const bool ok = Id == GW_CODEC_FP16 ? t.f16_all_finite(payload, n)
                                        : t.bf16_all_finite(payload, n);
    return ok ? GW_OK : GW_ERR_FRAME_PAYLOAD;
}

template <gw_codec_id Id>
void decode(const CodecParams&, const uint8_t* payload, uint64_t n, float* out) {
    if (Id == GW_CODEC_FP16)
        kern::active().f16_to_f32(payload, out, n);
    else
        kern::active().bf16_to_f32(payload, out, n);
}

}  // namespace

extern const Codec kFp16Codec = {GW_CODEC_FP16,
                                 "fp16",
                                 0,
                                 read_params_fp16,
                                 write_params,
                                 payload_size,
                                 encode<GW_CODEC_FP16>,
                                 check<GW_CODEC_FP16>,
                                 decode<GW_CODEC_FP16>,
                                 accumulate<GW_CODEC_FP16>};
extern const Codec kBf16Codec = {GW_CODEC_BF16,
                                 "bf16",
                                 0,
                                 read_params_bf16,
                                 write_params,
                                 payload_size,
                                 encode<GW_CODEC_BF16>,
                                 check<GW_CODEC_BF16>,
                                 decode<GW_CODEC_BF16>,
                                 accumulate<GW_CODEC_BF16>};

}  // namespace gw
