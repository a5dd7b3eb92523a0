// Plain scalar reference for the "crc" kernel family (src/kernels/crc.hpp):
// CRC32C by its bit-at-a-time definition, independent of the kernels'
// slicing-by-8 tables and the SSE4.2 instruction.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF  // the build also passes -ffp-contract=off
#endif

namespace gw::ref {

// ---- CRC32C: reflected, polynomial 0x82F63B78, one bit at a time ----
inline uint32_t crc32c(uint32_t crc, const void* data, size_t n) {
    const unsigned char* p = static_cast<const unsigned char*>(data);
    uint32_t c = ~crc;
    for (size_t i = 0; i < n; ++i) {
        c ^= p[i];
        for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : (c >> 1);
    }
    return ~c;
}

}  // namespace gw::ref
