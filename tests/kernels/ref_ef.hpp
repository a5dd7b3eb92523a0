// Plain scalar reference for the "ef" kernel family (src/kernels/ef.hpp):
// ef_combine and momentum_update, in the operation order of kernels.hpp.
// Simple loops, no tricks, deliberately independent of the kernel code.
#pragma once

#include <cstddef>

#include "kernels/kernels.hpp"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF  // the build also passes -ffp-contract=off
#endif

namespace gw::ref {

// ---- error feedback ----
inline void ef_combine(const float* g, const float* m, const float* e, kern::EfCoef c, float* p,
                       size_t n) {
    for (size_t i = 0; i < n; ++i) {
        const float t1 = c.mu * m[i];
        const float t2 = c.kg * g[i];
        const float m1 = t1 + t2;
        const float t3 = c.nu * m1;
        const float t4 = c.kp * g[i];
        const float t5 = t3 + t4;
        const float t6 = c.r * e[i];
        p[i] = t5 + t6;
    }
}

inline void momentum_update(float* m, const float* g, float mu, float kg, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        const float t1 = mu * m[i];
        const float t2 = kg * g[i];
        m[i] = t1 + t2;
    }
}

}  // namespace gw::ref
