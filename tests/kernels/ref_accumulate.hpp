// Plain scalar reference for the "accumulate" kernel family
// (src/kernels/accumulate.hpp): axpy over a float payload at any byte offset.
// Simple loops, deliberately independent of the kernel code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF  // the build also passes -ffp-contract=off
#endif

namespace gw::ref {

// ---- axpy (x: little-endian float32, may be unaligned) ----
inline void axpy(float alpha, const void* x, float* acc, size_t n) {
    const unsigned char* p = static_cast<const unsigned char*>(x);
    for (size_t i = 0; i < n; ++i) {
        const unsigned char* b = p + 4 * i;
        const uint32_t u = uint32_t(b[0]) | uint32_t(b[1]) << 8 | uint32_t(b[2]) << 16 |
                           uint32_t(b[3]) << 24;
        float xi;
        std::memcpy(&xi, &u, 4);
        const float t = alpha * xi;
        acc[i] = acc[i] + t;
    }
}

}  // namespace gw::ref
