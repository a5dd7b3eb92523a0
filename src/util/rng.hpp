// Counter-based random numbers: Philox4x32-10 (Salmon et al., SC'11).
// Element i of the stream (seed, step, tensor) is word i%4 of the block
// philox(counter = {i/4 low, i/4 high, step, tensor}, key = seed), so any
// element can be generated independently, in any order, on any target.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace gw {

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key);

void rng_u32(uint64_t seed, uint32_t step, uint32_t tensor, uint64_t first, uint32_t* out,
             size_t n);

// 24 high bits of the word, scaled to [0, 1).
inline float u32_to_unit_float(uint32_t w) { return static_cast<float>(w >> 8) * 0x1.0p-24f; }

}  // namespace gw
