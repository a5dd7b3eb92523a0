// Reference for the "copy_crc" family: the identity payload is x's float32
// values as little-endian bytes; the kernel's CRC is ref::crc32c of those
// bytes and its flag ref::all_finite of x.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "ref_crc.hpp"
#include "ref_norms.hpp"

namespace gw::ref {

// The 4n little-endian bytes of x.
inline std::vector<uint8_t> f32_le_bytes(const float* x, size_t n) {
    std::vector<uint8_t> b(4 * n);
    for (size_t i = 0; i < n; ++i) {
        uint32_t u;
        std::memcpy(&u, &x[i], 4);
        for (int k = 0; k < 4; ++k) b[4 * i + k] = uint8_t(u >> (8 * k));
    }
    return b;
}

// out = those bytes, *crc continued over them; whether every x is finite.
inline bool f32_copy_finite_crc(const float* x, uint8_t* out, size_t n, uint32_t* crc) {
    const std::vector<uint8_t> b = f32_le_bytes(x, n);
    if (n != 0) std::memcpy(out, b.data(), b.size());
    *crc = crc32c(*crc, b.data(), b.size());
    return all_finite(x, n);
}

}  // namespace gw::ref
