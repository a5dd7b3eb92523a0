// Plain scalar reference for the "norms" kernel family (src/kernels/norms.hpp):
// sum_abs and sum_sq (in double, the fixed 16-lane order of kernels.hpp),
// all_finite and all_kept. Written straight from the semantics in src/kernels/kernels.hpp:
// simple loops, no tricks, deliberately independent of the kernel code.
#pragma once

#include <cmath>
#include <cstddef>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF  // the build also passes -ffp-contract=off
#endif

namespace gw::ref {

// ---- reductions: element i goes to lane i % 16, then lanes fold 8,4,2,1 ----
inline double fold_lanes(double lane[16]) {
    for (int s = 8; s >= 1; s /= 2)
        for (int j = 0; j < s; ++j) lane[j] = lane[j] + lane[j + s];
    return lane[0];
}

inline double sum_abs(const float* x, size_t n) {
    double lane[16] = {0.0};
    for (size_t i = 0; i < n; ++i)
        lane[i % 16] = lane[i % 16] + std::fabs(static_cast<double>(x[i]));
    return fold_lanes(lane);
}

inline double sum_sq(const float* x, size_t n) {
    double lane[16] = {0.0};
    for (size_t i = 0; i < n; ++i) {
        const double d = static_cast<double>(x[i]);
        const double sq = d * d;  // exact: 24-bit * 24-bit fits in 53 bits
        lane[i % 16] = lane[i % 16] + sq;
    }
    return fold_lanes(lane);
}

inline bool all_finite(const float* x, size_t n) {
    for (size_t i = 0; i < n; ++i)
        if (!std::isfinite(x[i])) return false;
    return true;
}

// Each of x[0..n) finite, nonzero and at least min_mag in magnitude (the
// kernel reads the same values as little-endian bytes).
inline bool all_kept(const float* x, size_t n, float min_mag) {
    for (size_t i = 0; i < n; ++i)
        if (!std::isfinite(x[i]) || x[i] == 0.0f || std::fabs(x[i]) < min_mag) return false;
    return true;
}

}  // namespace gw::ref
