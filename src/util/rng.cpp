#include "util/rng.hpp"

namespace gw {

void rng_u32(uint64_t seed, uint32_t step, uint32_t tensor, uint64_t first, uint32_t* out,
             size_t n) {
    const std::array<uint32_t, 2> key = {static_cast<uint32_t>(seed),
                                         static_cast<uint32_t>(seed >> 32)};
    size_t j = 0;
    uint64_t i = first;
    while (j < n) {
        const uint64_t block = i >> 2;
        const auto w = philox4x32_10(
            {static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), step, tensor}, key);
        for (unsigned lane = static_cast<unsigned>(i & 3); lane < 4 && j < n; ++lane, ++i, ++j)
            out[j] = w[lane];
    }
}

}  // namespace gw
