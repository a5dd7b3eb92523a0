// Identity codec: float32 as is (4 bytes per element, little-endian).
#include <cstring>

#include "codecs/codec.hpp"
#include "kernels/kernels.hpp"
#include "util/bytes.hpp"

namespace gw {
namespace {

gw_status read_params(const uint8_t*, CodecParams* out) {
    out->id = GW_CODEC_IDENTITY;
    out->block_size = 0;
    return GW_OK;
}
void write_params(const CodecParams&, uint8_t*) {}

bool payload_size(const CodecParams&, uint64_t n, uint64_t* bytes) {
    if (n > UINT64_MAX / 4) return false;
    *bytes = n * 4;
    return true;
}

gw_status encode(const CodecParams&, const float* x, uint64_t n, uint8_t* payload,
                 float* residual) {
    if (!kern::active().all_finite(x, n)) return GW_ERR_NONFINITE;
    if (n == 0) return GW_OK;  // x may be NULL
    std::memcpy(payload, x, n * sizeof(float));
    if (residual) std::memset(residual, 0, n * sizeof(float));  // x - x == +0 exactly
    return GW_OK;
}

gw_status check(const CodecParams&, const uint8_t* payload, uint64_t n) {
    return floats_finite_le(payload, n) ? GW_OK : GW_ERR_FRAME_PAYLOAD;
}

void decode(const CodecParams&, const uint8_t* payload, uint64_t n, float* out) {
    std::memcpy(out, payload, n * sizeof(float));
}

void accumulate(const CodecParams&, const uint8_t* payload, uint64_t n, float alpha, float* acc) {
    kern::active().axpy(alpha, payload, acc, n);
}

}  // namespace

extern const Codec kIdentityCodec = {GW_CODEC_IDENTITY, "identity", 0, read_params, write_params,
                                     payload_size, encode, check, decode, accumulate};

}  // namespace gw
