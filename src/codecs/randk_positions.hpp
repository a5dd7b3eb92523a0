// The k positions of random-k (docs/algorithms.md s.8), a pure function of
// (seed, step, tensor, n, k): selection sampling (Knuth's Algorithm S) over
// the Philox stream of (seed, step, tensor), element i taken when
//   word_i * (n - i) < (k - taken) * 2^32
// i.e. with probability (k - taken) / (n - i) in exact integer arithmetic.
// Exactly k positions, increasing, O(n) time and O(1) memory, identical on
// every worker holding the same seed, so values at them add up in an
// all-reduce and no index travels.
#pragma once

#include <cstdint>

#include "kernels/kernels.hpp"

namespace gw::randk {

// Most positions one call of for_each_position's f receives.
constexpr uint64_t kChunk = kern::kRngChunk;
// Elements whose words are screened together before the exact test.
constexpr uint64_t kBlock = 16;

// f(first, count, idx): the positions in increasing order, in chunks.
template <class F>
void for_each_position(uint64_t seed, uint32_t step, uint32_t tensor, uint64_t n, uint64_t k,
                       F&& f) {
    uint32_t words[kChunk], idx[kChunk];
    uint64_t taken = 0, held = 0;
    for (uint64_t first = 0; first < n && taken < k; first += kChunk) {
        const uint64_t c = n - first < kChunk ? n - first : kChunk;
        kern::active().rng_u32(seed, step, tensor, first, words, static_cast<size_t>(c));
        for (uint64_t j0 = 0; j0 < c && taken < k; j0 += kBlock) {
            const uint64_t end = c - j0 < kBlock ? c : j0 + kBlock;
            // n - i only shrinks within the block, so if its smallest word
            // times n - (its last i) reaches the bound, no element is taken:
            // one vectorized min instead of a multiply and a branch each.
            uint32_t wmin = UINT32_MAX;
            for (uint64_t j = j0; j < end; ++j) wmin = words[j] < wmin ? words[j] : wmin;
            if (uint64_t(wmin) * (n - (first + end - 1)) >= (k - taken) << 32) continue;
            for (uint64_t j = j0; j < end && taken < k; ++j) {
                const uint64_t i = first + j;
                if (uint64_t(words[j]) * (n - i) < (k - taken) << 32) {
                    idx[held++] = static_cast<uint32_t>(i);
                    ++taken;
                    if (held == kChunk) {
                        f(taken - held, held, idx);
                        held = 0;
                    }
                }
            }
        }
    }
    if (held) f(taken - held, held, idx);
}

}  // namespace gw::randk
