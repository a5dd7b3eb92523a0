// Family "scatter": indexed loads and stores at k positions of an n-element
// vector (sparse exchanges: gw_gather / gw_scatter_add, CLT-k's extract and
// apply). The positions are strictly increasing, so no two writes meet and
// every element is written at most once; null positions mean 0..k-1 (CLT-k's
// dense rounds).
//
// One body for every target: each access is a cache miss of its own, so
// what pays is keeping misses in flight (a prefetch kAhead entries early),
// not vector registers. Only the gap planes' decode and a large decoded
// output's streaming stores use the target's vectors. The family still sits
// in every target's table, so a backend whose memory is elsewhere
// (docs/kernels.md, "the backend seam") replaces it with the rest.
#pragma once

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kernels/common.hpp"
#include "kernels/half.hpp"

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
    // A whole payload's entries in index order, for gap_scatter_add and
    // gap_expand: its planes decoded into a ring kBlock at a time, two blocks
    // ahead of the visit, so that a prefetch can run kAhead entries early
    // across block edges and the decode's shuffles overlap the scatter's
    // misses (a decode, then a scatter, per chunk left 5 of a 1M top-k frame's
    // 15 us outside the scatter). 16-bit values are widened into a second
    // ring in the same blocks; float32 ones are read in place.
    // visit(at, ahead, w, c): entries at[0..c), their values value(w, t), and
    // the positions kAhead entries later, ahead[0..c).
    template <class Visit>
    static void walk(const uint8_t* planes, size_t count, const void* values,
                     gw_dtype value_dtype, Visit&& visit) {
        if (value_dtype == GW_DTYPE_F16)
            walk_as<Half<Fp16Format, Arch>>(planes, count, values, visit);
        else if (value_dtype == GW_DTYPE_BF16)
            walk_as<Half<Bf16Format, Arch>>(planes, count, values, visit);
        else
            walk_as<void>(planes, count, values, visit);
    }
    static float value(const float* w, size_t t) { return w[t]; }
    static float value(const unsigned char* w, size_t t) { return load_f32(w + 4 * t); }
    // H: the 16-bit values' conversion (Half<Format, Arch>), void for float32.
    template <class H, class Visit>
    static void walk_as(const uint8_t* planes, size_t count, const void* values, Visit& visit) {
        constexpr bool kWide = !std::is_void_v<H>;
        constexpr size_t kBlock = 64, kRing = 2 * kBlock, kNear = kBlock - kAhead;
        static_assert(kAhead < kBlock);
        // Zeroed: the prefetches past the last entry read slots never decoded
        // (or decoded earlier), valid positions either way.
        uint32_t ring[kRing] = {};
        float vring[kWide ? kRing : 1];
        const unsigned char* v = cbytes(values);
        uint64_t next = 0;
        size_t decoded = 0;
        const auto fill = [&](size_t upto) {
            for (; decoded < upto && decoded < count; decoded += kBlock) {
                const size_t c = count - decoded < kBlock ? count - decoded : kBlock;
                next = gap_indices(planes + decoded, count, c, next, ring + decoded % kRing);
                if constexpr (kWide) H::decode(v + 2 * decoded, vring + decoded % kRing, c);
            }
        };
        // The values of entries j.. (a block never wraps the ring).
        const auto vals = [&](size_t j) {
            if constexpr (kWide)
                return static_cast<const float*>(vring + j % kRing);
            else
                return v + 4 * j;
        };
        fill(kRing);
        for (size_t j0 = 0; j0 < count; j0 += kBlock) {
            const size_t c = count - j0 < kBlock ? count - j0 : kBlock;
            const uint32_t* at = ring + j0 % kRing;
            const uint32_t* later = ring + (j0 + kBlock) % kRing;
            // Two runs, so that no entry tests where its lookahead slot is.
            visit(at, at + kAhead, vals(j0), c < kNear ? c : kNear);
            if (c > kNear) visit(at + kNear, later, vals(j0 + kNear), c - kNear);
            fill(j0 + kBlock + kRing);  // into the block just visited
        }
    }
    static void gap_scatter_add(const uint8_t* planes, size_t count, const void* values,
                                gw_dtype value_dtype, float alpha, float* acc) {
        // acc and alpha by value: walk_as is a call of its own, and through a
        // reference alpha was loaded again after every store to acc.
        walk(planes, count, values, value_dtype,
             [acc, alpha](const uint32_t* at, const uint32_t* ahead, auto w, size_t c) {
                 for (size_t t = 0; t < c; ++t) {
                     __builtin_prefetch(acc + ahead[t], 1);
                     const float u = alpha * value(w, t);
                     float& a = acc[at[t]];
                     a = a + u;
                 }
             });
    }
    // out[from..to) = 0 in whole vectors (a function, so that the bounds are in
    // registers: through references they were stored and loaded at every
    // vector, since a streaming store may alias anything; that halved the
    // streamed decode's speed).
    static void stream_zeros(float* out, size_t from, size_t to) {
        if constexpr (Stream<Arch>::kOn)
            for (size_t i = from; i < to; i += Stream<Arch>::W) Stream<Arch>::zero(out + i);
    }
    // Large outputs are written once, in index order, with streaming stores:
    // runs of zeros, and each vector holding entries built in a buffer first.
    // (A memset, then the scatter, read every line of out before writing it
    // and then missed on each entry's line again: 2.7x the streamed time at
    // 16M with out cold, on an Intel Xeon.) Smaller ones are filled first and
    // stay in cache for the caller.
    static void expand_begin(float* out, size_t n, ExpandCursor* cur) {
        const uintptr_t addr = reinterpret_cast<uintptr_t>(out);
        *cur = ExpandCursor{n, 0, n, 0, n, false, {}};
        if constexpr (Stream<Arch>::kOn) {
            if (n >= kStreamBytes / 4 && addr % 4 == 0) {
                constexpr size_t W = Stream<Arch>::W;
                // Vectors cover [head, body_end); the rest takes plain stores.
                const size_t h = (4 * W - addr % (4 * W)) % (4 * W) / 4;
                const size_t b = h + (n - h) / W * W;
                std::fill(out, out + h, 0.0f);
                std::fill(out + b, out + n, 0.0f);
                *cur = ExpandCursor{n, h, b, h, b, true, {}};
                return;
            }
        }
        std::fill(out, out + n, 0.0f);
    }
    // k entries, values value(w, t); cur's fields in locals meanwhile (above).
    template <class V>
    static void expand_run(const uint32_t* idx, const uint32_t* ahead, V w, size_t k, float* out,
                           ExpandCursor* cur) {
        if (!cur->stream) {
            for (size_t t = 0; t < k; ++t) {
                __builtin_prefetch(out + ahead[t], 1);
                out[idx[t]] = value(w, t);
            }
            return;
        }
        if constexpr (Stream<Arch>::kOn) {
            constexpr size_t W = Stream<Arch>::W;
            const size_t h = cur->head, b = cur->body_end;
            size_t pos = cur->pos, open = cur->open;
            float* buf = cur->buf;
            for (size_t t = 0; t < k; ++t) {
                const size_t i = idx[t];
                if (i < h || i >= b) {
                    out[i] = value(w, t);
                    continue;
                }
                const size_t vs = i - (i - h) % W;
                if (vs != open) {
                    if (open != b) {
                        Stream<Arch>::store(out + open, buf);
                        pos = open + W;
                    }
                    stream_zeros(out, pos, vs);
                    pos = vs;
                    std::fill(buf, buf + W, 0.0f);
                    open = vs;
                }
                buf[i - vs] = value(w, t);
            }
            cur->pos = pos;
            cur->open = open;
        }
    }
    static void expand_add(const uint32_t* idx, const float* v, size_t k, float* out,
                           ExpandCursor* cur) {
        // The streamed writer stores in index order and prefetches nothing.
        if (cur->stream) {
            expand_run(idx, idx, v, k, out, cur);
            return;
        }
        // The prefetch runs within the call: kAhead entries on, or at the last.
        for (size_t j = 0; j < k; j += kAhead) {
            const size_t c = k - j < kAhead ? k - j : kAhead;
            uint32_t ahead[kAhead];
            for (size_t t = 0; t < c; ++t)
                ahead[t] = idx[j + t + kAhead < k ? j + t + kAhead : k - 1];
            expand_run(idx + j, ahead, v + j, c, out, cur);
        }
    }
    static void expand_end(float* out, ExpandCursor* cur) {
        if constexpr (Stream<Arch>::kOn) {
            if (!cur->stream) return;
            if (cur->open != cur->body_end) {
                Stream<Arch>::store(out + cur->open, cur->buf);
                cur->pos = cur->open + Stream<Arch>::W;
                cur->open = cur->body_end;
            }
            stream_zeros(out, cur->pos, cur->body_end);
            cur->pos = cur->body_end;
            Stream<Arch>::fence();  // streamed lines are ordered before later stores
        }
    }
    static void gap_expand(const uint8_t* planes, size_t count, const void* values,
                           gw_dtype value_dtype, float* out, size_t n) {
        ExpandCursor cur;
        expand_begin(out, n, &cur);
        walk(planes, count, values, value_dtype,
             [&](const uint32_t* at, const uint32_t* ahead, auto w, size_t c) {
                 expand_run(at, ahead, w, c, out, &cur);
             });
        expand_end(out, &cur);
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
    t.gap_expand = &Scatter<Arch>::gap_expand;
    t.expand_begin = &Scatter<Arch>::expand_begin;
    t.expand_add = &Scatter<Arch>::expand_add;
    t.expand_end = &Scatter<Arch>::expand_end;
    t.gather = &Scatter<Arch>::gather;
    t.scatter_add = &Scatter<Arch>::scatter_add;
    t.scatter_zero = &Scatter<Arch>::scatter_zero;
    t.scatter_sub_div = &Scatter<Arch>::scatter_sub_div;
}

}  // namespace
}  // namespace gw::kern
