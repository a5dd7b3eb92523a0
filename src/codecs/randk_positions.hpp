// The k positions of random-k (docs/algorithms.md s.8), a pure function of
// (revision, seed, step, tensor, n, k) over the Philox stream of (seed, step,
// tensor): exactly k positions, increasing, O(1) memory, identical on every
// worker holding the same seed, so values at them add up in an all-reduce
// and no index travels.
//
// Revision 2 (stratified, O(k) words): stratum j of k covers
//   [floor(j n / k), floor((j+1) n / k)), s_j = its size (floor(n/k) or one more)
// and holds one position, start + floor(word_j * s_j / 2^32) with Lemire's
// exact rejection: a word whose low product half is below 2^32 mod s_j is
// replaced by the next retry word, stream elements k, k+1, ... in order. Every
// element is taken with probability exactly 1/s_j (k/n when k divides n).
//
// Revision 1 (selection sampling, Knuth's Algorithm S, O(n) words): element i
// taken when word_i * (n - i) < (k - taken) * 2^32, i.e. with probability
// (k - taken) / (n - i) in exact integer arithmetic: a uniform k-subset.
#pragma once

#include <cstdint>

#include "kernels/kernels.hpp"

namespace gw::randk {

// Most positions one call of for_each_position's f receives.
constexpr uint64_t kChunk = kern::kRngChunk;
// Elements whose words are screened together before the exact test.
constexpr uint64_t kBlock = 16;

// Revision 1: f(first, count, idx), the positions in increasing order, in chunks.
template <class F>
void for_each_selected(const kern::Table& kt, uint64_t seed, uint32_t step, uint32_t tensor,
                       uint64_t n, uint64_t k, F&& f) {
    uint32_t words[kChunk], idx[kChunk];
    uint64_t taken = 0, held = 0;
    for (uint64_t first = 0; first < n && taken < k; first += kChunk) {
        const uint64_t c = n - first < kChunk ? n - first : kChunk;
        kt.rng_u32(seed, step, tensor, first, words, static_cast<size_t>(c));
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

// Revision 2 (n < 2^32): f(first, count, idx) as for_each_selected.
template <class F>
void for_each_stratum(const kern::Table& kt, uint64_t seed, uint32_t step, uint32_t tensor,
                      uint64_t n, uint64_t k, F&& f) {
    if (k == 0) return;
    uint32_t words[kChunk], idx[kChunk];
    const uint64_t q = n / k, r = n % k;
    uint64_t start = 0, frac = 0, retry = k;  // frac = j r mod k
    for (uint64_t first = 0; first < k; first += kChunk) {
        const uint64_t c = k - first < kChunk ? k - first : kChunk;
        kt.rng_u32(seed, step, tensor, first, words, static_cast<size_t>(c));
        for (uint64_t j = 0; j < c; ++j) {
            const bool extra = frac + r >= k;  // floor((j+1) r / k) - floor(j r / k)
            frac = extra ? frac + r - k : frac + r;
            const uint32_t size = static_cast<uint32_t>(q + extra);
            uint64_t m = uint64_t(words[j]) * size;
            if (static_cast<uint32_t>(m) < size) {
                const uint32_t reject = (0u - size) % size;  // 2^32 mod size
                while (static_cast<uint32_t>(m) < reject) {
                    uint32_t w;
                    kt.rng_u32(seed, step, tensor, retry++, &w, 1);
                    m = uint64_t(w) * size;
                }
            }
            idx[j] = static_cast<uint32_t>(start + (m >> 32));
            start += size;
        }
        f(first, c, idx);
    }
}

// The positions of `revision` (1 or 2).
template <class F>
void for_each_position(const kern::Table& kt, int64_t revision, uint64_t seed, uint32_t step,
                       uint32_t tensor, uint64_t n, uint64_t k, F&& f) {
    if (revision == 1)
        for_each_selected(kt, seed, step, tensor, n, k, f);
    else
        for_each_stratum(kt, seed, step, tensor, n, k, f);
}

}  // namespace gw::randk
