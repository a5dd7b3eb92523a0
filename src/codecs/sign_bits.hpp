// Sign-bit payload helpers shared by the sign and scaled-sign codecs.
#pragma once

#include <cstdint>

namespace gw {

// True if the bits past n in the last byte of an n-bit sign field are zero
// (encoders always write them as zero; anything else is not a canonical frame).
inline bool sign_padding_clear(const uint8_t* bits, uint64_t n) {
    const unsigned used = static_cast<unsigned>(n & 7);
    if (used == 0) return true;
    return (bits[n >> 3] >> used) == 0;
}

}  // namespace gw
