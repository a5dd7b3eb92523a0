// Wire frame v1 (docs/wire-format.md): a fixed header, codec parameters, the
// payload and a CRC32C trailer, little-endian with no padding.
//
//   off  size  field
//   0    4     magic "GWFR"
//   4    1     format version (1)
//   5    1     codec id
//   6    2     flags (all reserved in v1: must be 0)
//   8    8     element count
//   16   8     payload length L
//   24   2     codec parameter length P
//   26   P     codec parameters
//   26+P L     payload
//   26+P+L 4   CRC32C of bytes [0, 26+P+L)
#pragma once

#include <cstddef>
#include <cstdint>

#include "codecs/codec.hpp"

namespace gw::frame {

constexpr uint8_t kMagic[4] = {'G', 'W', 'F', 'R'};
constexpr size_t kHeaderSize = 26;
constexpr size_t kTrailerSize = 4;

// A validated frame: every length checked, checksum verified, payload checked
// by its codec. Pointers alias the caller's bytes.
struct View {
    const Codec* codec = nullptr;
    CodecParams params;
    uint64_t count = 0;
    const uint8_t* payload = nullptr;
    uint64_t payload_size = 0;
    size_t frame_size = 0;
};

// Exact frame size for n elements (false on overflow).
bool frame_size(const Codec& c, const CodecParams& p, uint64_t n, size_t* size);

// Validate the frame at the start of [data, data+size). With exact=true the
// frame must use all `size` bytes (GW_ERR_FRAME_TRAILING otherwise).
gw_status open(const void* data, size_t size, bool exact, View* view);

// Encode x into a frame (residual as in Codec::encode). Checks capacity first.
gw_status encode(const CodecParams& p, const float* x, uint64_t n, void* out, size_t capacity,
                 size_t* written, float* residual);

}  // namespace gw::frame
