// Reference for the "copy_crc" family: the identity payload is x's float32
// values as little-endian bytes; the kernels' CRC is ref::crc32c of those
// bytes and their flag ref::all_finite of the floats.
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

// The decode: out = the floats of in's 4n little-endian bytes, *crc
// continued over those bytes; whether every value is finite.
inline bool le32_copy_finite_crc(const uint8_t* in, float* out, size_t n, uint32_t* crc) {
    for (size_t i = 0; i < n; ++i) {
        uint32_t u = 0;
        for (int k = 0; k < 4; ++k) u |= uint32_t(in[4 * i + k]) << (8 * k);
        std::memcpy(&out[i], &u, 4);
    }
    *crc = crc32c(*crc, in, 4 * n);
    return all_finite(out, n);
}

}  // namespace gw::ref
