// Plain scalar reference for the "scatter" kernel family
// (src/kernels/scatter.hpp): indexed loads and stores at strictly increasing
// positions, or at 0..k-1 when the positions are null.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF  // the build also passes -ffp-contract=off
#endif

namespace gw::ref {

inline size_t position(const uint32_t* idx, size_t j) { return idx ? idx[j] : j; }

inline void gather(const float* x, const uint32_t* idx, size_t k, float* out) {
    for (size_t j = 0; j < k; ++j) out[j] = x[position(idx, j)];
}

inline void scatter_add(const float* v, const uint32_t* idx, size_t k, float alpha, float* acc) {
    for (size_t j = 0; j < k; ++j) {
        const float t = alpha * v[j];
        acc[position(idx, j)] += t;
    }
}

inline void scatter_zero(const uint32_t* idx, size_t k, float* a) {
    for (size_t j = 0; j < k; ++j) a[position(idx, j)] = 0.0f;
}

// x[idx[j]] -= s[j] / d when every result is finite; otherwise nothing.
inline bool scatter_sub_div(float* x, const uint32_t* idx, const float* s, size_t k, float d) {
    for (size_t j = 0; j < k; ++j) {
        const float q = s[j] / d;
        const float r = x[position(idx, j)] - q;
        if (std::isnan(r) || std::isinf(r)) return false;
    }
    for (size_t j = 0; j < k; ++j) {
        const float q = s[j] / d;
        x[position(idx, j)] -= q;
    }
    return true;
}

}  // namespace gw::ref
