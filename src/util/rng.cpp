#include "util/rng.hpp"

namespace gw {

namespace {
constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;

inline void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
    const uint64_t p = static_cast<uint64_t>(a) * b;
    hi = static_cast<uint32_t>(p >> 32);
    lo = static_cast<uint32_t>(p);
}
}  // namespace

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
    for (int round = 0; round < 10; ++round) {
        uint32_t hi0, lo0, hi1, lo1;
        mulhilo(kMul0, c[0], hi0, lo0);
        mulhilo(kMul1, c[2], hi1, lo1);
        c = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
        k[0] += kWeyl0;
        k[1] += kWeyl1;
    }
    return c;
}

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
