// Identity codec: float32 as is (4 bytes per element, little-endian).
#include <cstring>

#include "codecs/codec.hpp"
#include "codecs/dense_payload.hpp"
#include "kernels/kernels.hpp"
#include "util/bytes.hpp"

namespace gw {
namespace {

bool max_payload(const CodecParams&, uint64_t n, uint64_t* bytes) {
    if (n > UINT64_MAX / 4) return false;
    *bytes = n * 4;
    return true;
}

// From kFusedCrcMin payload bytes on, one kernel checks, copies and takes
// the CRC in one read of x, instead of three passes over memory.
gw_status encode(const CodecParams&, const EncodeCtx& ctx, const float* x, uint64_t n,
                 uint8_t* payload, uint64_t* len, float* residual) {
    const kern::Table& kt = *ctx.k;
    if (n == 0) {  // x and residual may be NULL
        *len = 0;
        return GW_OK;
    }
    if (ctx.crc && n >= kFusedCrcMin / 4) {
        // Nothing is kept on failure: the frame buffer is scratch until GW_OK.
        uint32_t crc = 0;
        if (!kt.f32_copy_finite_crc(x, payload, n, &crc)) return GW_ERR_NONFINITE;
        *ctx.crc = PayloadCrc{true, crc};
    } else {
        if (!kt.all_finite(x, n)) return GW_ERR_NONFINITE;
        f32_to_le(payload, x, n);
    }
    *len = n * 4;
    if (residual) std::memset(residual, 0, n * sizeof(float));  // x - x == +0 exactly
    return GW_OK;
}

gw_status check(const kern::Table&, const CodecParams&, const uint8_t* payload, uint64_t len,
                uint64_t n) {
    if (len != n * 4) return GW_ERR_FRAME_LENGTH;
    return floats_finite_le(payload, n) ? GW_OK : GW_ERR_FRAME_PAYLOAD;
}

// The check and the CRC tile by tile (one read of the payload, not two),
// for payloads beyond L2 (check_crc_min below): the second pass over one in
// L2 reads it from there.
gw_status check_crc(const kern::Table& kt, const CodecParams& p, const uint8_t* payload,
                    uint64_t len, uint64_t n, uint32_t* crc) {
    if (len != n * 4) {
        *crc = kt.crc32c(0, payload, static_cast<size_t>(len));
        return check(kt, p, payload, len, n);
    }
    return check_crc_tiles<4>(kt, payload, n, floats_finite_le, crc);
}

// gw_decode's check and copy in one kernel: one read of the payload.
gw_status decode_crc(const kern::Table& kt, const CodecParams& p, const uint8_t* payload,
                     uint64_t len, uint64_t n, float* out, uint32_t* crc) {
    if (len != n * 4) return check_crc(kt, p, payload, len, n, crc);
    uint32_t c = 0;
    const bool finite = kt.le32_copy_finite_crc(payload, out, n, &c);
    *crc = c;
    return finite ? GW_OK : GW_ERR_FRAME_PAYLOAD;
}

void decode(const kern::Table&, const CodecParams&, const uint8_t* payload, uint64_t, uint64_t n,
            float* out) {
    decode_back_to_front<4>(
        n, [&](uint64_t at, uint64_t c) { f32_from_le(out + at, payload + 4 * at, c); });
}

// The axpy kernel reads the little-endian payload as it is.
void accumulate(const kern::Table& kt, const CodecParams&, const uint8_t* payload, uint64_t,
                uint64_t n, float alpha, float* acc) {
    kt.axpy(alpha, payload, acc, n);
}

void accumulate_range(const kern::Table& kt, const CodecParams&, const uint8_t* payload, uint64_t,
                      uint64_t lo, uint64_t hi, float alpha, float* acc) {
    kt.axpy(alpha, payload + 4 * lo, acc, hi - lo);
}

}  // namespace

extern constexpr Codec codec_identity =
    CodecDef(GW_CODEC_IDENTITY, "identity")
        .entries(max_payload, encode, check, decode, accumulate)
        .ranges(accumulate_range, nullptr)
        .check_crc(check_crc, kInL2Bytes + 1)
        .decode_crc(decode_crc);

}  // namespace gw
