// Plain scalar reference for the "scatter" kernel family
// (src/kernels/scatter.hpp): indexed loads and stores at strictly increasing
// positions, or at 0..k-1 when the positions are null.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "gradwire_types.h"
#include "ref_half.hpp"

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

// Gap planes -> indices: idx[j] = next + gap_j, next = idx[j] + 1.
inline uint64_t gap_indices(const uint8_t* planes, size_t stride, size_t count, uint64_t next,
                            uint32_t* idx) {
    for (size_t j = 0; j < count; ++j) {
        const uint32_t gap = uint32_t(planes[j]) | uint32_t(planes[stride + j]) << 8 |
                             uint32_t(planes[2 * stride + j]) << 16 |
                             uint32_t(planes[3 * stride + j]) << 24;
        next += gap;
        idx[j] = static_cast<uint32_t>(next);
        next += 1;
    }
    return next;
}

// A payload's count little-endian values of value_dtype, as floats.
inline std::vector<float> wire_values(const uint8_t* values, size_t count, gw_dtype value_dtype) {
    std::vector<float> v(count);
    if (value_dtype == GW_DTYPE_F16) {
        f16_to_f32(values, v.data(), count);
    } else if (value_dtype == GW_DTYPE_BF16) {
        bf16_to_f32(values, v.data(), count);
    } else {
        for (size_t j = 0; j < count; ++j) {
            const uint8_t* b = values + 4 * j;
            const uint32_t bits = uint32_t(b[0]) | uint32_t(b[1]) << 8 | uint32_t(b[2]) << 16 |
                                  uint32_t(b[3]) << 24;
            std::memcpy(&v[j], &bits, 4);
        }
    }
    return v;
}

// The whole payload (kernels.hpp): its planes to indices, its values to
// floats, then scatter_add.
inline void gap_scatter_add(const uint8_t* planes, size_t count, const uint8_t* values,
                            gw_dtype value_dtype, float alpha, float* acc) {
    std::vector<uint32_t> idx(count);
    gap_indices(planes, count, count, 0, idx.data());
    scatter_add(wire_values(values, count, value_dtype).data(), idx.data(), count, alpha, acc);
}

// Entries at strictly increasing positions written over zeros.
inline void expand(const uint32_t* idx, const float* v, size_t k, float* out, size_t n) {
    for (size_t i = 0; i < n; ++i) out[i] = 0.0f;
    for (size_t j = 0; j < k; ++j) out[idx[j]] = v[j];
}

// The same payload decoded over zeros.
inline void gap_expand(const uint8_t* planes, size_t count, const uint8_t* values,
                       gw_dtype value_dtype, float* out, size_t n) {
    std::vector<uint32_t> idx(count);
    gap_indices(planes, count, count, 0, idx.data());
    expand(idx.data(), wire_values(values, count, value_dtype).data(), count, out, n);
}

inline uint64_t gap_byte_sum(const uint8_t* p, size_t n) {
    uint64_t s = 0;
    for (size_t i = 0; i < n; ++i) s += p[i];
    return s;
}

}  // namespace gw::ref
