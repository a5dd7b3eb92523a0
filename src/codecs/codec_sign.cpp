// Sign codec (signSGD / signum): one bit per element, decodes to +1 or -1.
// Bit i&7 of byte i>>3 is 1 iff x[i] < 0, so sign(0) = +1.
#include "codecs/codec.hpp"
#include "codecs/sign_bits.hpp"
#include "kernels/kernels.hpp"
#include "util/bytes.hpp"

namespace gw {
namespace {

bool max_payload(const CodecParams&, uint64_t n, uint64_t* bytes) {
    *bytes = ceil_div(n, 8);
    return true;
}

gw_status encode(const CodecParams&, const EncodeCtx& ctx, const float* x, uint64_t n,
                 uint8_t* payload, uint64_t* len, float* residual) {
    const kern::Table& kt = *ctx.k;
    if (!kt.all_finite(x, n)) return GW_ERR_NONFINITE;
    if (residual)
        kt.sign_pack_residual(x, n, 1.0f, payload, residual);
    else
        kt.sign_pack(x, n, payload);
    *len = ceil_div(n, 8);
    return GW_OK;
}

gw_status check(const kern::Table&, const CodecParams&, const uint8_t* payload, uint64_t len,
                uint64_t n) {
    if (len != ceil_div(n, 8)) return GW_ERR_FRAME_LENGTH;
    return sign_padding_clear(payload, n) ? GW_OK : GW_ERR_FRAME_PAYLOAD;
}

void decode(const kern::Table& kt, const CodecParams&, const uint8_t* payload, uint64_t, uint64_t n,
            float* out) {
    kt.sign_unpack(payload, n, 1.0f, out);
}

void accumulate(const kern::Table& kt, const CodecParams&, const uint8_t* payload, uint64_t,
                uint64_t n, float alpha, float* acc) {
    kt.sign_accumulate(payload, n, alpha, acc);  // alpha * (+-1) == +-alpha
}

// lo is a multiple of 8: the range starts on a byte of the bit field.
void accumulate_range(const kern::Table& kt, const CodecParams&, const uint8_t* payload, uint64_t,
                      uint64_t lo, uint64_t hi, float alpha, float* acc) {
    kt.sign_accumulate(payload + lo / 8, hi - lo, alpha, acc);
}

bool sign_range(const CodecParams&, const uint8_t* payload, uint64_t, uint64_t lo, uint64_t,
                const uint8_t** bits, float* s) {
    *bits = payload + lo / 8;
    *s = 1.0f;
    return true;
}

}  // namespace

extern constexpr Codec codec_sign =
    CodecDef(GW_CODEC_SIGN, "sign")
        .entries(max_payload, encode, check, decode, accumulate)
        .ranges(accumulate_range, sign_range);

}  // namespace gw
