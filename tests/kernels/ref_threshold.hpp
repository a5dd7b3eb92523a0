// Plain scalar reference for the "threshold" kernel family
// (src/kernels/threshold.hpp): every index with |x_i| >= t, by std::fabs,
// in increasing order.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gw::ref {

inline std::vector<uint32_t> threshold_select(const float* x, size_t n, float t) {
    std::vector<uint32_t> out;
    for (size_t i = 0; i < n; ++i)
        if (std::fabs(x[i]) >= t) out.push_back(uint32_t(i));
    return out;
}

}  // namespace gw::ref
