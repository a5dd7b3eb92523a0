// Counter-based random numbers: Philox4x32-10 (Salmon et al., SC'11).
// Element i of the stream (seed, step, tensor) is word i%4 of the block
// philox(counter = {i/4 low, i/4 high, step, tensor}, key = seed), so any
// element can be generated independently, in any order, on any target.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace gw {

// Inline, so that callers drawing single words (the quantizers' tie words)
// overlap independent blocks.
inline std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> c,
                                             std::array<uint32_t, 2> k) {
    for (int round = 0; round < 10; ++round) {
        const uint64_t p0 = uint64_t(0xD2511F53u) * c[0], p1 = uint64_t(0xCD9E8D57u) * c[2];
        c = {uint32_t(p1 >> 32) ^ c[1] ^ k[0], uint32_t(p1), uint32_t(p0 >> 32) ^ c[3] ^ k[1],
             uint32_t(p0)};
        k[0] += 0x9E3779B9u;
        k[1] += 0xBB67AE85u;
    }
    return c;
}

// Word i of the stream (seed, step, tensor).
inline uint32_t rng_word(uint64_t seed, uint32_t step, uint32_t tensor, uint64_t i) {
    const uint64_t block = i >> 2;
    return philox4x32_10({uint32_t(block), uint32_t(block >> 32), step, tensor},
                         {uint32_t(seed), uint32_t(seed >> 32)})[i & 3];
}

void rng_u32(uint64_t seed, uint32_t step, uint32_t tensor, uint64_t first, uint32_t* out,
             size_t n);

// 24 high bits of the word, scaled to [0, 1).
inline float u32_to_unit_float(uint32_t w) { return static_cast<float>(w >> 8) * 0x1.0p-24f; }

}  // namespace gw
