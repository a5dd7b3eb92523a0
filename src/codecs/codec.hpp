// The interface every compressor implements. A codec knows its parameters,
// the exact payload size for n elements, and how to encode, check, decode and
// decode-accumulate a payload. The frame layer (src/frame) wraps payloads in
// headers and checksums; codecs never see untrusted lengths.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gradwire.h"

namespace gw {

struct CodecParams {
    gw_codec_id id = GW_CODEC_IDENTITY;
    uint32_t block_size = 0;  // SCALED_SIGN only; 0 = one block
};

struct Codec {
    gw_codec_id id;
    const char* name;
    size_t params_size;  // bytes of codec parameters on the wire (fixed per codec in v1)

    // Parse / write the wire parameters (exactly params_size bytes).
    gw_status (*read_params)(const uint8_t* in, CodecParams* out);
    void (*write_params)(const CodecParams& p, uint8_t* out);

    // Exact payload bytes for n elements; false if it would not fit in 64 bits.
    bool (*payload_size)(const CodecParams& p, uint64_t n, uint64_t* bytes);

    // Encode x[0..n) into payload (exactly payload_size bytes). If residual is
    // non-null also write residual[i] = x[i] - decoded[i] (residual may equal x).
    // Returns GW_ERR_NONFINITE before writing anything if x holds NaN/Inf.
    gw_status (*encode)(const CodecParams& p, const float* x, uint64_t n, uint8_t* payload,
                        float* residual);

    // Validate an untrusted payload of the right size: GW_OK or GW_ERR_FRAME_PAYLOAD.
    gw_status (*check)(const CodecParams& p, const uint8_t* payload, uint64_t n);

    // On a checked payload: out = decoded; acc += alpha * decoded.
    void (*decode)(const CodecParams& p, const uint8_t* payload, uint64_t n, float* out);
    void (*accumulate)(const CodecParams& p, const uint8_t* payload, uint64_t n, float alpha,
                       float* acc);
};

// nullptr for an unknown id.
const Codec* codec_for(unsigned id);

// Validate public codec options into params.
gw_status codec_params_from_options(const gw_codec_options* opts, CodecParams* out);

// Residual for codecs without a fused path: residual = x - decoded.
void generic_residual(const Codec& c, const CodecParams& p, const float* x, uint64_t n,
                      const uint8_t* payload, float* residual);

}  // namespace gw

namespace gw {
// ALGORITHMS.md s.1 diagnostic: min_b ||v_b||_1^2 / (d_b ||v_b||_2^2); 1 for n == 0.
gw_status scaled_sign_phi(const float* x, uint64_t n, uint32_t block_size, double* phi);
}  // namespace gw
