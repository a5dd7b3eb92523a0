// Family "scatter": indexed loads and stores at k positions of an n-element
// vector (sparse exchanges: gw_gather / gw_scatter_add, CLT-k's extract and
// apply). The positions are strictly increasing, so no two writes meet and
// every element is written at most once; null positions mean 0..k-1 (CLT-k's
// dense rounds).
//
// One body for every target: each access is a cache miss of its own, so
// what pays is keeping misses in flight (a prefetch kAhead entries early),
// not vector registers. The family still sits in every target's table, so a
// backend whose memory is elsewhere (docs/kernels.md, "the backend seam")
// replaces it with the rest.
#pragma once

#include <cmath>

#include "kernels/common.hpp"

namespace gw::kern {
namespace {

// Gap planes -> indices, 8 or 16 at a time where the target has the vectors:
// idx_j = (next - 1) + the inclusive prefix sum of (gap_i + 1), in u32 lanes
// (exact: the caller has checked every index is below 2^32). The loop-carried
// chain is one add and one broadcast per vector, against one add per index in
// the scalar loop. run() does whole vectors and returns how many indices it wrote.
template <class Arch>
struct GapVec {
    static constexpr bool kOn = false;
};
#if defined(GW_KERN_XSIMD) && defined(__AVX2__) && defined(__x86_64__)
template <>
struct GapVec<xsimd::avx2> {
    static constexpr bool kOn = true;
    static __m256i bytes(const uint8_t* p) {
        return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    }
    static size_t run(const uint8_t* p, size_t stride, size_t count, uint64_t next,
                      uint32_t* idx) {
        __m256i base = _mm256_set1_epi32(int(uint32_t(next - 1)));
        size_t j = 0;
        for (; j + 8 <= count; j += 8) {
            const uint8_t* q = p + j;
            __m256i g = _mm256_or_si256(bytes(q), _mm256_slli_epi32(bytes(q + stride), 8));
            g = _mm256_or_si256(g, _mm256_slli_epi32(bytes(q + 2 * stride), 16));
            g = _mm256_or_si256(g, _mm256_slli_epi32(bytes(q + 3 * stride), 24));
            g = _mm256_add_epi32(g, _mm256_set1_epi32(1));
            g = _mm256_add_epi32(g, _mm256_slli_si256(g, 4));  // within each 128-bit half
            g = _mm256_add_epi32(g, _mm256_slli_si256(g, 8));
            // The low half's total into the high half.
            g = _mm256_add_epi32(g, _mm256_permute2x128_si256(_mm256_shuffle_epi32(g, 0xFF), g,
                                                              0x08));
            g = _mm256_add_epi32(g, base);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(idx + j), g);
            base = _mm256_permutevar8x32_epi32(g, _mm256_set1_epi32(7));
        }
        return j;
    }
    static uint64_t byte_sum(const uint8_t* p, size_t n, size_t* done) {
        __m256i s = _mm256_setzero_si256();
        size_t i = 0;
        for (; i + 32 <= n; i += 32)
            s = _mm256_add_epi64(
                s, _mm256_sad_epu8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)),
                                   _mm256_setzero_si256()));
        alignas(32) uint64_t l[4];
        _mm256_store_si256(reinterpret_cast<__m256i*>(l), s);
        *done = i;
        return l[0] + l[1] + l[2] + l[3];
    }
};
#endif
#if defined(GW_KERN_XSIMD) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__x86_64__)
template <>
struct GapVec<xsimd::avx512bw> {
    static constexpr bool kOn = true;
    static __m512i bytes(const uint8_t* p) {
        return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    }
    // Lanes moved up by S (lane j gets lane j - S, zeros below).
    template <int S>
    static __m512i up(__m512i v) {
        return _mm512_alignr_epi32(v, _mm512_setzero_si512(), 16 - S);
    }
    static size_t run(const uint8_t* p, size_t stride, size_t count, uint64_t next,
                      uint32_t* idx) {
        __m512i base = _mm512_set1_epi32(int(uint32_t(next - 1)));
        size_t j = 0;
        for (; j + 16 <= count; j += 16) {
            const uint8_t* q = p + j;
            __m512i g = _mm512_or_si512(bytes(q), _mm512_slli_epi32(bytes(q + stride), 8));
            g = _mm512_or_si512(g, _mm512_slli_epi32(bytes(q + 2 * stride), 16));
            g = _mm512_or_si512(g, _mm512_slli_epi32(bytes(q + 3 * stride), 24));
            g = _mm512_add_epi32(g, _mm512_set1_epi32(1));
            g = _mm512_add_epi32(g, up<1>(g));
            g = _mm512_add_epi32(g, up<2>(g));
            g = _mm512_add_epi32(g, up<4>(g));
            g = _mm512_add_epi32(g, up<8>(g));
            g = _mm512_add_epi32(g, base);
            _mm512_storeu_si512(idx + j, g);
            base = _mm512_permutexvar_epi32(_mm512_set1_epi32(15), g);
        }
        return j;
    }
    static uint64_t byte_sum(const uint8_t* p, size_t n, size_t* done) {
        __m512i s = _mm512_setzero_si512();
        size_t i = 0;
        for (; i + 64 <= n; i += 64)
            s = _mm512_add_epi64(s, _mm512_sad_epu8(_mm512_loadu_si512(p + i),
                                                    _mm512_setzero_si512()));
        *done = i;
        return _mm512_reduce_add_epi64(s);
    }
};
#endif

template <class Arch>
struct Scatter {
    static constexpr size_t kAhead = 32;
    static size_t at(const uint32_t* idx, size_t j) { return idx ? idx[j] : j; }
    template <class T>
    static void ahead(const T* p, const uint32_t* idx, size_t j, size_t k, int rw) {
        if (idx && j + kAhead < k) {
            if (rw)
                __builtin_prefetch(p + idx[j + kAhead], 1);
            else
                __builtin_prefetch(p + idx[j + kAhead], 0);
        }
    }

    static void gather(const float* x, const uint32_t* idx, size_t k, float* out) {
        for (size_t j = 0; j < k; ++j) {
            ahead(x, idx, j, k, 0);
            out[j] = x[at(idx, j)];
        }
    }
    static void scatter_add(const float* v, const uint32_t* idx, size_t k, float alpha,
                            float* acc) {
        for (size_t j = 0; j < k; ++j) {
            ahead(acc, idx, j, k, 1);
            const float t = alpha * v[j];
            acc[at(idx, j)] = acc[at(idx, j)] + t;
        }
    }
    static void scatter_zero(const uint32_t* idx, size_t k, float* a) {
        for (size_t j = 0; j < k; ++j) {
            ahead(a, idx, j, k, 1);
            a[at(idx, j)] = 0.0f;
        }
    }
    static bool scatter_sub_div(float* x, const uint32_t* idx, const float* s, size_t k, float d) {
        for (size_t j = 0; j < k; ++j) {
            ahead(x, idx, j, k, 0);
            const float q = s[j] / d;
            if (!std::isfinite(x[at(idx, j)] - q)) return false;
        }
        for (size_t j = 0; j < k; ++j) {
            ahead(x, idx, j, k, 1);
            const float q = s[j] / d;
            x[at(idx, j)] = x[at(idx, j)] - q;
        }
        return true;
    }

    static uint64_t gap_indices(const uint8_t* planes, size_t stride, size_t count,
                                uint64_t next, uint32_t* idx) {
        size_t j = 0;
        if constexpr (GapVec<Arch>::kOn) {
            j = GapVec<Arch>::run(planes, stride, count, next, idx);
            if (j) next = uint64_t(idx[j - 1]) + 1;
        }
        for (; j < count; ++j) {
            const uint8_t* q = planes + j;
            next += uint32_t(q[0]) | uint32_t(q[stride]) << 8 | uint32_t(q[2 * stride]) << 16 |
                    uint32_t(q[3 * stride]) << 24;
            idx[j] = static_cast<uint32_t>(next);
            next += 1;
        }
        return next;
    }
    // The whole payload's planes decoded into a ring kBlock at a time, two
    // blocks ahead of the scatter, so that the prefetch runs kAhead entries
    // early across block edges and the decode's shuffles overlap the
    // scatter's misses (a decode, then a scatter, per chunk left 5 of a 1M
    // top-k frame's 15 us outside the scatter).
    static void gap_scatter_add(const uint8_t* planes, size_t count, const void* values,
                                float alpha, float* acc) {
        constexpr size_t kBlock = 64, kRing = 2 * kBlock, kNear = kBlock - kAhead;
        static_assert(kAhead < kBlock);
        // Zeroed: the prefetches past the last entry read slots never decoded
        // (or decoded earlier), valid positions either way.
        uint32_t ring[kRing] = {};
        const unsigned char* v = cbytes(values);
        uint64_t next = 0;
        size_t decoded = 0;
        const auto fill = [&](size_t upto) {
            for (; decoded < upto && decoded < count; decoded += kBlock) {
                const size_t c = count - decoded < kBlock ? count - decoded : kBlock;
                next = gap_indices(planes + decoded, count, c, next, ring + decoded % kRing);
            }
        };
        const auto add = [&](const uint32_t* at, const uint32_t* ahead, const unsigned char* w,
                             size_t c) {
            for (size_t t = 0; t < c; ++t) {
                __builtin_prefetch(acc + ahead[t], 1);
                const float u = alpha * load_f32(w + 4 * t);
                float& a = acc[at[t]];
                a = a + u;
            }
        };
        fill(kRing);
        for (size_t j0 = 0; j0 < count; j0 += kBlock) {
            const size_t c = count - j0 < kBlock ? count - j0 : kBlock;
            const uint32_t* at = ring + j0 % kRing;  // a block never wraps the ring
            const uint32_t* later = ring + (j0 + kBlock) % kRing;
            add(at, at + kAhead, v + 4 * j0, c < kNear ? c : kNear);
            if (c > kNear) add(at + kNear, later, v + 4 * (j0 + kNear), c - kNear);
            fill(j0 + kBlock + kRing);  // into the block just scattered
        }
    }
    static uint64_t gap_byte_sum(const uint8_t* p, size_t n) {
        uint64_t s = 0;
        size_t i = 0;
        if constexpr (GapVec<Arch>::kOn) s = GapVec<Arch>::byte_sum(p, n, &i);
        for (; i < n; ++i) s += p[i];
        return s;
    }
};

template <class Arch>
constexpr void scatter_entries(Table& t) {
    t.gap_indices = &Scatter<Arch>::gap_indices;
    t.gap_byte_sum = &Scatter<Arch>::gap_byte_sum;
    t.gap_scatter_add = &Scatter<Arch>::gap_scatter_add;
    t.gather = &Scatter<Arch>::gather;
    t.scatter_add = &Scatter<Arch>::scatter_add;
    t.scatter_zero = &Scatter<Arch>::scatter_zero;
    t.scatter_sub_div = &Scatter<Arch>::scatter_sub_div;
}

}  // namespace
}  // namespace gw::kern
