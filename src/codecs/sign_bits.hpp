// Sign-bit payloads: the sign codec's bit field and the blockwise scaled-sign
// payload, whose layout is defined here once for the codec
// (codecs/codec_scaled_sign.cpp) and for the state machines that write it
// fused with error feedback (feedback/fused_sign.hpp).
#pragma once

#include <cstdint>

#include "util/bytes.hpp"

namespace gw {

// True if the bits past n in the last byte of an n-bit sign field are zero
// (encoders always write them as zero; anything else is not a canonical frame).
inline bool sign_padding_clear(const uint8_t* bits, uint64_t n) {
    const unsigned used = static_cast<unsigned>(n & 7);
    if (used == 0) return true;
    return (bits[n >> 3] >> used) == 0;
}

// The scaled-sign payload of n elements in blocks of `block_size` (0: one
// block): B float32 scales, then per block ceil(d_b/8) bytes of sign bits
// (bit i&7 of byte i>>3 of a block's field is set iff element i is negative),
// so every block starts on a byte boundary whatever the block size.
struct ScaledSignLayout {
    uint64_t n = 0;
    uint64_t blocks = 0;       // B
    uint64_t block = 0;        // elements per full block
    uint64_t block_bytes = 0;  // sign bytes per full block

    ScaledSignLayout(uint64_t block_size, uint64_t count)
        : n(count),
          blocks(0),
          block(block_size == 0 ? count : block_size),
          block_bytes(ceil_div(block, 8)) {
        blocks = n == 0 ? 0 : ceil_div(n, block);
    }
    // Elements in block b.
    uint64_t len(uint64_t b) const { return b + 1 < blocks ? block : n - b * block; }
    // Offsets in the payload of block b's scale and of its first sign byte.
    uint64_t scale_offset(uint64_t b) const { return 4 * b; }
    uint64_t bits_offset(uint64_t b) const { return 4 * blocks + b * block_bytes; }
    // Payload bytes; false if they would not fit in 64 bits.
    bool size(uint64_t* bytes) const {
        if (blocks > UINT64_MAX / 4) return false;
        const uint64_t full = n == 0 ? 0 : blocks - 1;
        const uint64_t tail = n - full * block;
        // full blocks * block_bytes never exceeds ceil(n/8) + blocks, so no overflow below.
        const uint64_t bits = full * block_bytes + ceil_div(tail, 8);
        if (bits > UINT64_MAX - blocks * 4) return false;
        *bytes = blocks * 4 + bits;
        return true;
    }
};

}  // namespace gw
