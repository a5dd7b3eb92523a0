// 16-bit float casts: IEEE half (fp16) and bfloat16, 2 bytes per element.
// Encoding rounds to nearest even and saturates to the largest finite value,
// so error feedback keeps whatever does not fit instead of receiving an Inf.
#include "codecs/codec.hpp"
#include "codecs/dense_payload.hpp"
#include "kernels/kernels.hpp"

namespace gw {
namespace {

bool max_payload(const CodecParams&, uint64_t n, uint64_t* bytes) {
    if (n > UINT64_MAX / 2) return false;
    *bytes = n * 2;
    return true;
}

template <gw_codec_id Id>
void accumulate(const kern::Table& kt, const CodecParams&, const uint8_t* payload, uint64_t,
                uint64_t n, float alpha, float* acc) {
    if (Id == GW_CODEC_FP16)
        kt.f16_accumulate(payload, alpha, acc, n);
    else
        kt.bf16_accumulate(payload, alpha, acc, n);
}

// Large arrays go in one kernel that checks finiteness as it reads x and
// computes the payload's CRC while the output is in registers or L1, instead
// of three passes over memory. Below kFuse elements (kFusedCrcMin payload
// bytes) the passes are in cache anyway and the frame layer's CRC costs less
// than joining CRCs.
constexpr uint64_t kFuse = kFusedCrcMin / 2;

template <gw_codec_id Id>
void convert(const kern::Table& kt, const float* x, uint8_t* payload, uint64_t n) {
    if (Id == GW_CODEC_FP16)
        kt.f32_to_f16(x, payload, n);
    else
        kt.f32_to_bf16(x, payload, n);
}

template <gw_codec_id Id>
bool payload_finite(const kern::Table& kt, const uint8_t* payload, uint64_t n) {
    return Id == GW_CODEC_FP16 ? kt.f16_all_finite(payload, n) : kt.bf16_all_finite(payload, n);
}

template <gw_codec_id Id>
gw_status encode(const CodecParams& p, const EncodeCtx& ctx, const float* x, uint64_t n,
                 uint8_t* payload, uint64_t* len, float* residual) {
    const kern::Table& kt = *ctx.k;
    if (ctx.crc && n >= kFuse) {
        // Nothing is kept on failure: the caller's frame buffer is scratch
        // until GW_OK (the CRC is the caller's to use only then).
        uint32_t crc = 0;
        const bool finite = Id == GW_CODEC_FP16 ? kt.f16_encode_finite_crc(x, payload, n, &crc)
                                                : kt.bf16_encode_finite_crc(x, payload, n, &crc);
        if (!finite) return GW_ERR_NONFINITE;
        *ctx.crc = PayloadCrc{true, crc};
    } else {
        if (!kt.all_finite(x, n)) return GW_ERR_NONFINITE;
        convert<Id>(kt, x, payload, n);
    }
    *len = n * 2;
    if (residual) generic_residual(kt, p, x, n, payload, *len, residual);
    return GW_OK;
}

template <gw_codec_id Id>
gw_status check(const kern::Table& kt, const CodecParams&, const uint8_t* payload, uint64_t len,
                uint64_t n) {
    if (len != n * 2) return GW_ERR_FRAME_LENGTH;
    return payload_finite<Id>(kt, payload, n) ? GW_OK : GW_ERR_FRAME_PAYLOAD;
}

template <gw_codec_id Id>
void to_f32(const kern::Table& kt, const uint8_t* payload, float* out, uint64_t n) {
    if (Id == GW_CODEC_FP16)
        kt.f16_to_f32(payload, out, n);
    else
        kt.bf16_to_f32(payload, out, n);
}

// The check and the CRC tile by tile (one read of the payload, not two).
template <gw_codec_id Id>
gw_status check_crc(const kern::Table& kt, const CodecParams& p, const uint8_t* payload,
                    uint64_t len, uint64_t n, uint32_t* crc) {
    if (len != n * 2) {
        *crc = kt.crc32c(0, payload, static_cast<size_t>(len));
        return check<Id>(kt, p, payload, len, n);
    }
    // The decode kernel without an output: the test and the CRC in one loop.
    uint32_t c = 0;
    const bool finite = Id == GW_CODEC_FP16 ? kt.f16_decode_finite_crc(payload, nullptr, n, &c)
                                            : kt.bf16_decode_finite_crc(payload, nullptr, n, &c);
    *crc = c;
    return finite ? GW_OK : GW_ERR_FRAME_PAYLOAD;
}

// gw_decode's check and decode in one kernel: one read of the payload.
template <gw_codec_id Id>
gw_status decode_crc(const kern::Table& kt, const CodecParams& p, const uint8_t* payload,
                     uint64_t len, uint64_t n, float* out, uint32_t* crc) {
    if (len != n * 2) return check_crc<Id>(kt, p, payload, len, n, crc);
    uint32_t c = 0;
    const bool finite = Id == GW_CODEC_FP16 ? kt.f16_decode_finite_crc(payload, out, n, &c)
                                            : kt.bf16_decode_finite_crc(payload, out, n, &c);
    *crc = c;
    return finite ? GW_OK : GW_ERR_FRAME_PAYLOAD;
}

template <gw_codec_id Id>
void decode(const kern::Table& kt, const CodecParams&, const uint8_t* payload, uint64_t, uint64_t n,
            float* out) {
    decode_back_to_front<2>(n, [&](uint64_t at, uint64_t c) {
        to_f32<Id>(kt, payload + 2 * at, out + at, c);
    });
}

// Element i is bytes [2i, 2i+2): a range is the same kernel on a sub-array.
template <gw_codec_id Id>
void accumulate_range(const kern::Table& kt, const CodecParams& p, const uint8_t* payload, uint64_t,
                      uint64_t lo, uint64_t hi, float alpha, float* acc) {
    accumulate<Id>(kt, p, payload + 2 * lo, 0, hi - lo, alpha, acc);
}

template <gw_codec_id Id>
constexpr Codec half_codec(const char* name) {
    return CodecDef(Id, name)
        .entries(max_payload, encode<Id>, check<Id>, decode<Id>, accumulate<Id>)
        .ranges(accumulate_range<Id>, nullptr)
        .check_crc(check_crc<Id>)
        .decode_crc(decode_crc<Id>);
}

}  // namespace

extern constexpr Codec codec_fp16 = half_codec<GW_CODEC_FP16>("fp16");
extern constexpr Codec codec_bf16 = half_codec<GW_CODEC_BF16>("bf16");

}  // namespace gw
