// Plain scalar reference for the "accumulate" kernel family
// (src/kernels/accumulate.hpp): axpy over a float payload at any byte offset.
// Simple loops, deliberately independent of the kernel code.
#pragma once

#include <cstddef>
#include <cstring>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF  // the build also passes -ffp-contract=off
#endif

namespace gw::ref {

// ---- axpy (x may be unaligned) ----
inline void axpy(float alpha, const void* x, float* acc, size_t n) {
    const unsigned char* p = static_cast<const unsigned char*>(x);
    for (size_t i = 0; i < n; ++i) {
        float xi;
        std::memcpy(&xi, p + 4 * i, 4);
        const float t = alpha * xi;
        acc[i] = acc[i] + t;
    }
}

}  // namespace gw::ref
