// Wire frames (docs/wire-format.md). Format 2, little-endian, no padding:
//
//   off   size  field
//   0     4     magic "GWFR"
//   4     1     format version (2)
//   5     1     codec id
//   6     2     flags: bit 0 = zstd stage; the others must be 0
//   8     8     tag (caller-set; handles write make_tag(tensor, round))
//   16    8     element count n
//   24    8     payload length L (bytes on the wire)
//   32    2     codec parameter length P
//   34    2     reserved, must be 0
//   36    4     CRC32C of bytes [0, 36): the size fields can be trusted alone
//   40    P     codec parameters (the codec's declared widths, in order;
//               trailing ones at their `absent` value omitted)
//   40+P  L     payload; with the zstd flag: u64 raw length R, then one zstd frame
//   40+P+L 4    CRC32C of bytes [0, 40+P+L)
//
// Format 1 (26-byte header: magic, version, codec, flags, count, L, P; no tag,
// no header CRC, no zstd) is still decoded, never written.
#pragma once

#include <cstddef>
#include <cstdint>

#include "codecs/codec.hpp"

namespace gw::frame {

constexpr uint8_t kVersion = 2;
constexpr size_t kHeaderSize = 40;
constexpr size_t kHeaderSizeV1 = 26;
constexpr size_t kTrailerSize = 4;
constexpr uint16_t kFlagZstd = 1;

// The tag handles write into and expect from frames: the tensor id in the
// high 32 bits, the round (step or version) mod 2^32 in the low 32 bits. The
// public GW_TAG(tensor, step) / GW_TAG_TENSOR / GW_TAG_STEP (gradwire.h) are
// the ABI's definition of the same layout (tests/test_frame.cpp checks both
// agree); inside the core these three are the only place it is spelt out.
constexpr uint64_t make_tag(uint32_t tensor, uint64_t round) {
    return (uint64_t(tensor) << 32) | (round & 0xFFFFFFFFu);
}
constexpr uint32_t tag_tensor(uint64_t tag) { return static_cast<uint32_t>(tag >> 32); }
constexpr uint32_t tag_round(uint64_t tag) { return static_cast<uint32_t>(tag); }

// A validated frame: every length checked, checksums verified, payload
// checked by its codec. `payload` points into the caller's bytes, or, after
// the zstd stage, into the stage scratch of the context passed to open().
struct View {
    CodecParams params;
    unsigned format = 0;
    uint16_t flags = 0;
    uint64_t tag = 0;
    uint64_t count = 0;
    const uint8_t* payload = nullptr;  // raw payload (after the zstd stage)
    uint64_t payload_len = 0;          // its length
    uint64_t wire_payload_len = 0;     // L
    size_t frame_size = 0;
};

// Largest frame for n elements (false on overflow or n > GW_MAX_ELEMENTS).
bool frame_bound(const CodecParams& p, uint64_t n, size_t* size);

// Total frame size from the fixed header alone.
gw_status frame_size(const kern::Table& kt, const void* data, size_t size, size_t* total);

// gw_decode's output, which open() may fill as it checks the payload
// (Codec::decode_crc) instead of the payload being read again to decode it:
// `done` says it did. out holds unspecified bytes unless open returns GW_OK.
struct DecodeInto {
    float* out = nullptr;
    uint64_t capacity = 0;
    bool done = false;
};

// Validate the frame at the start of [data, data+size). With exact=true the
// frame must use all `size` bytes (GW_ERR_FRAME_TRAILING otherwise).
gw_status open(Context& cx, const void* data, size_t size, bool exact, View* view,
               DecodeInto* into = nullptr);

// Where the raw payload of a frame with params p starts in `out`.
inline uint8_t* payload_of(const CodecParams& p, void* out) {
    return static_cast<uint8_t*>(out) + kHeaderSize + params_wire_size(p);
}
// Header, parameters and CRCs around a raw payload of `len` bytes already at
// payload_of(p, out) (for a state machine that writes a codec's payload
// itself); returns the frame's size. A known payload CRC is joined with the
// header's instead of reading the payload again.
size_t seal(const kern::Table& kt, const CodecParams& p, uint64_t tag, uint64_t n, uint64_t len,
            uint16_t flags, void* out, PayloadCrc payload_crc = {});

// Encode x into a frame tagged `tag` (residual as in Codec::encode). Checks
// capacity against frame_bound first. Fails only before writing anything.
gw_status encode(Context& cx, const CodecParams& p, const EncodeCtx& ctx, uint64_t tag,
                 const float* x, uint64_t n, void* out, size_t capacity, size_t* written,
                 float* residual);

}  // namespace gw::frame
