// Plain scalar reference for the "sparsify" kernel family
// (src/kernels/sparsify.hpp), from the definition of Sparse-AsyLPG's keep
// test (docs/algorithms.md s.6): p_j = min(1, |x_j| * scale) in double;
// element j stays iff p_j > 0 and its word is below p_j * 2^32.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gw::ref {

inline std::vector<uint32_t> random_keep(const float* x, size_t n, double scale,
                                         const uint32_t* words) {
    std::vector<uint32_t> kept;
    for (size_t j = 0; j < n; ++j) {
        double p = std::fabs(static_cast<double>(x[j])) * scale;
        if (p > 1.0) p = 1.0;
        if (p > 0.0 && static_cast<double>(words[j]) < p * 4294967296.0)
            kept.push_back(static_cast<uint32_t>(j));
    }
    return kept;
}

}  // namespace gw::ref
