// Family "sparsify": random_keep, the keep test of unbiased random
// sparsification (Sparse-AsyLPG, docs/algorithms.md s.6) over one chunk of
// stream words. It is one plain loop for every target: each arch file
// compiles it with its own -m flags, and the compiler vectorizes it where the
// target converts u32 words to double in a vector (SSE4.2 and up). IEEE
// double arithmetic, without contraction, gives every target the same
// decisions as the scalar one.
#pragma once

#include <cmath>

#include "kernels/common.hpp"

namespace gw::kern {
namespace {

template <class Arch>
struct Sparsify {
    static size_t random_keep(const float* x, size_t n, double scale, const uint32_t* words,
                              uint32_t* sel) {
        uint32_t keep[kRngChunk];
        if (n > kRngChunk) n = kRngChunk;  // the contract; never more than one chunk
        // p > 0 and word < min(1, a) * 2^32 is word < a * 2^32: a word is
        // below 2^32 and not below 0 (and a NaN compares false either way).
        // Without the clamp the loop has no branch, and it vectorizes.
        for (size_t j = 0; j < n; ++j) {
            const double a = std::fabs(double(x[j])) * scale;
            keep[j] = uint32_t(double(words[j]) < a * 0x1.0p32);
        }
        size_t kept = 0;
        for (size_t j = 0; j < n; ++j) {  // without branches: keeping is a coin flip
            sel[kept] = uint32_t(j);
            kept += keep[j];
        }
        return kept;
    }
};

template <class Arch>
constexpr void sparsify_entries(Table& t) {
    t.random_keep = &Sparsify<Arch>::random_keep;
}

}  // namespace
}  // namespace gw::kern
