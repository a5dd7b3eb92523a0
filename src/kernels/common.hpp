// What every kernel family header shares: the xsimd wrapper, bit helpers,
// compile-time unrolling, the per-arch primitives xsimd 8.1 lacks (Ops<A>)
// and the vector base (VecBase<A>). Included only through the family headers,
// which are included only by src/kernels/arch_*.cpp (via make_table.hpp).
//
// Each arch file is compiled with its own -m flags, so nothing defined here
// or in a family header may be shared between arch files at link time: if the
// linker merged, say, the AVX2 build of a helper into the SSE2 table, older
// CPUs would die with SIGILL. Hence everything of ours lives in an anonymous
// namespace, and xsimd itself is wrapped in a namespace unique to each arch
// file (see below). Do not call non-template inline functions of the standard
// library (e.g. std::fabs(float)) from the kernels, nor standard templates
// instantiated on standard types (std::min<size_t>, std::sort on uint32_t*):
// at -O0 they become weak symbols shared by every arch file.
//
// Arithmetic follows kernels.hpp exactly (no FMA: the build uses
// -ffp-contract=off; the pragma below covers clang builds without it).
//
// Define GW_KERN_XSIMD (to a namespace name unique to the arch file) before
// including to get the vector kernels (Family<xsimd arch>); without it only
// the portable scalar kernels (Family<ScalarArch>) are available.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "kernels/kernels.hpp"

#if defined(GW_KERN_XSIMD)
// xsimd goes into a namespace unique to the including arch file
// (GW_KERN_XSIMD names it), reached through the alias `xsimd`. Without
// optimisation (-O0) xsimd's inline helpers are emitted as weak symbols, and
// several arch files use the same ones (e.g. simd_register<float, sse2> is
// also used by the AVX2 code); the linker would keep one copy, possibly the
// one compiled with -mavx2, for the SSE2 table. Wrapped, every arch file has
// its own names. The headers xsimd includes are included first so their
// include guards keep them out of the wrapper.
#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <complex>
#include <cstdlib>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <tuple>
#include <type_traits>

// GCC 12's AVX-512 intrinsics trip false -W(maybe-)uninitialized warnings on
// their _mm512_undefined_*() placeholders (GCC PR105593); silence them for the
// intrinsic headers only (diagnostic pragmas apply by source location).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

namespace GW_KERN_XSIMD {
namespace xsimd {}
}  // namespace GW_KERN_XSIMD
namespace xsimd = GW_KERN_XSIMD::xsimd;
namespace GW_KERN_XSIMD {
#include <xsimd/xsimd.hpp>
}  // namespace GW_KERN_XSIMD
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif  // GW_KERN_XSIMD

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

namespace gw::kern {
namespace {

// The portable target. Each family is a class template over the arch: the
// explicit specialisation for ScalarArch is the scalar code (the scalar
// target, and the tails of the vector ones); the primary template, defined
// only when GW_KERN_XSIMD is, is the vector code for an xsimd arch.
struct ScalarArch {};

// ---------------------------------------------------------------------------
// Bit helpers
// ---------------------------------------------------------------------------
inline uint32_t bits_of(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}
inline float float_of(uint32_t u) {
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}
inline float load_f32(const unsigned char* p) {
    float f;
    std::memcpy(&f, p, sizeof f);
    return f;
}
// Payloads are little-endian.
inline uint16_t load_le16(const unsigned char* p) { return uint16_t(p[0] | (p[1] << 8)); }
inline void store_le16(unsigned char* p, uint16_t v) {
    p[0] = uint8_t(v);
    p[1] = uint8_t(v >> 8);
}
inline uint32_t load_le32(const unsigned char* p) {
    return uint32_t(p[0]) | (uint32_t(p[1]) << 8) | (uint32_t(p[2]) << 16) | (uint32_t(p[3]) << 24);
}
inline uint64_t load_le64(const unsigned char* p) {
    return uint64_t(load_le32(p)) | (uint64_t(load_le32(p + 4)) << 32);
}
inline const unsigned char* cbytes(const void* p) { return static_cast<const unsigned char*>(p); }
inline unsigned char* ubytes(void* p) { return static_cast<unsigned char*>(p); }

// Compile-time unrolling: f(Idx<0>{}), ..., f(Idx<N-1>{}).
template <size_t K>
struct Idx {
    static constexpr size_t value = K;
};
template <class Fn, size_t... K>
inline void unroll_impl(Fn& f, std::index_sequence<K...>) {
    (f(Idx<K>{}), ...);
}
template <size_t N, class Fn>
inline void unroll(Fn&& f) {
    unroll_impl(f, std::make_index_sequence<N>{});
}

#if defined(GW_KERN_XSIMD)

// ---------------------------------------------------------------------------
// Per-arch primitives xsimd 8.1 lacks. Ops<A> provides, with F = batch<float, A>
// (W lanes), D = batch<double, A> (W/2 lanes), I = batch<int32_t, A>,
// H = batch<int16_t, A>:
//   widen(v, lo, hi)    float lanes [0, W/2) -> lo, [W/2, W) -> hi (exact)
//   movemask(b)         lane j of a float mask -> bit j
//   movemask_i(b)       lane j of an int32 mask -> bit j
//   expand(bits)        bit j (j < W) -> lane j of a float mask
//   load_u16(p)         W little-endian u16 at p, zero-extended to I
//   store_u16x2(a, b,p) the low 16 bits of a's then b's lanes (each 0..0xFFFF)
//   load_h(p)           H::size u16 at p
//   blend(m, t, f)      m ? t : f on I lanes (xsimd's integer select does not
//                       compile at -O0 with GCC on AVX-512)
//   mulhilo(x, a, h, l) the 64-bit products x_j * a: high halves to h, low to l
// ---------------------------------------------------------------------------
template <class A>
struct Ops;

#if defined(__SSE2__)
template <class A>
struct Ops128 {
    using F = xsimd::batch<float, A>;
    using D = xsimd::batch<double, A>;
    using I = xsimd::batch<int32_t, A>;
    using H = xsimd::batch<int16_t, A>;
    using BF = xsimd::batch_bool<float, A>;
    using BI = xsimd::batch_bool<int32_t, A>;

    static void widen(const F& v, D& lo, D& hi) {
        const __m128 r = v;
        lo = D(_mm_cvtps_pd(r));
        hi = D(_mm_cvtps_pd(_mm_movehl_ps(r, r)));
    }
    static uint32_t movemask(const BF& b) { return uint32_t(_mm_movemask_ps(b)); }
    static uint32_t movemask_i(const BI& b) {
        const __m128i m = b;
        return uint32_t(_mm_movemask_ps(_mm_castsi128_ps(m)));
    }
    static BF expand(uint32_t bits) {
        const __m128i sel = _mm_setr_epi32(1, 2, 4, 8);
        const __m128i m = _mm_and_si128(_mm_set1_epi32(int(bits)), sel);
        return BF(_mm_castsi128_ps(_mm_cmpeq_epi32(m, sel)));
    }
    static H load_h(const unsigned char* p) {
        return H(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    }
    static I blend(const BI& m, const I& t, const I& f) {
        const __m128i mm = m;
        return I(_mm_or_si128(_mm_and_si128(mm, t), _mm_andnot_si128(mm, f)));
    }
    // 32x32 -> 64-bit products of every lane with a: high and low halves.
    static void mulhilo(const I& x, uint32_t a, I& hi, I& lo) {
        const __m128i av = _mm_set1_epi32(int(a)), xv = x;
        const __m128i pe = _mm_mul_epu32(xv, av);                     // lanes 0, 2
        const __m128i po = _mm_mul_epu32(_mm_srli_epi64(xv, 32), av);  // lanes 1, 3
        const __m128i low = _mm_set1_epi64x(0xFFFFFFFF);
        lo = I(_mm_or_si128(_mm_and_si128(pe, low), _mm_slli_epi64(po, 32)));
        hi = I(_mm_or_si128(_mm_srli_epi64(pe, 32), _mm_andnot_si128(low, po)));
    }
};

template <>
struct Ops<xsimd::sse2> : Ops128<xsimd::sse2> {
    static I load_u16(const unsigned char* p) {
        const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
        return I(_mm_unpacklo_epi16(v, _mm_setzero_si128()));
    }
    static void store_u16x2(const I& a, const I& b, unsigned char* p) {
        // packs saturates signed: sign-extend the low 16 bits first.
        const __m128i sa = _mm_srai_epi32(_mm_slli_epi32(a, 16), 16);
        const __m128i sb = _mm_srai_epi32(_mm_slli_epi32(b, 16), 16);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm_packs_epi32(sa, sb));
    }
};
#endif  // __SSE2__

#if defined(__SSE4_2__) && defined(__x86_64__)
template <>
struct Ops<xsimd::sse4_2> : Ops128<xsimd::sse4_2> {
    static I load_u16(const unsigned char* p) {
        return I(_mm_cvtepu16_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
    }
    static void store_u16x2(const I& a, const I& b, unsigned char* p) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm_packus_epi32(a, b));
    }
};
#endif  // __SSE4_2__

#if defined(__AVX2__) && defined(__x86_64__)
template <>
struct Ops<xsimd::avx2> {
    using A = xsimd::avx2;
    using F = xsimd::batch<float, A>;
    using D = xsimd::batch<double, A>;
    using I = xsimd::batch<int32_t, A>;
    using H = xsimd::batch<int16_t, A>;
    using BF = xsimd::batch_bool<float, A>;
    using BI = xsimd::batch_bool<int32_t, A>;

    static void widen(const F& v, D& lo, D& hi) {
        const __m256 r = v;
        lo = D(_mm256_cvtps_pd(_mm256_castps256_ps128(r)));
        hi = D(_mm256_cvtps_pd(_mm256_extractf128_ps(r, 1)));
    }
    static uint32_t movemask(const BF& b) { return uint32_t(_mm256_movemask_ps(b)); }
    static uint32_t movemask_i(const BI& b) {
        const __m256i m = b;
        return uint32_t(_mm256_movemask_ps(_mm256_castsi256_ps(m)));
    }
    static BF expand(uint32_t bits) {
        const __m256i sel = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
        const __m256i m = _mm256_and_si256(_mm256_set1_epi32(int(bits)), sel);
        return BF(_mm256_castsi256_ps(_mm256_cmpeq_epi32(m, sel)));
    }
    static I load_u16(const unsigned char* p) {
        return I(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
    }
    static void store_u16x2(const I& a, const I& b, unsigned char* p) {
        // packus works per 128-bit half: [a0-3 b0-3 | a4-7 b4-7] -> reorder quads.
        const __m256i r = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xD8);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), r);
    }
    static H load_h(const unsigned char* p) {
        return H(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    }
    static I blend(const BI& m, const I& t, const I& f) {
        return I(_mm256_blendv_epi8(f, t, m));
    }
    static void mulhilo(const I& x, uint32_t a, I& hi, I& lo) {
        const __m256i av = _mm256_set1_epi32(int(a)), xv = x;
        const __m256i pe = _mm256_mul_epu32(xv, av);
        const __m256i po = _mm256_mul_epu32(_mm256_srli_epi64(xv, 32), av);
        lo = I(_mm256_blend_epi32(pe, _mm256_slli_epi64(po, 32), 0xAA));
        hi = I(_mm256_blend_epi32(_mm256_srli_epi64(pe, 32), po, 0xAA));
    }
};
#endif  // __AVX2__

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__x86_64__)
template <>
struct Ops<xsimd::avx512bw> {
    using A = xsimd::avx512bw;
    using F = xsimd::batch<float, A>;
    using D = xsimd::batch<double, A>;
    using I = xsimd::batch<int32_t, A>;
    using H = xsimd::batch<int16_t, A>;
    using BF = xsimd::batch_bool<float, A>;
    using BI = xsimd::batch_bool<int32_t, A>;

    static void widen(const F& v, D& lo, D& hi) {
        const __m512 r = v;
        lo = D(_mm512_cvtps_pd(_mm512_castps512_ps256(r)));
        hi = D(_mm512_cvtps_pd(_mm512_extractf32x8_ps(r, 1)));
    }
    static uint32_t movemask(const BF& b) { return uint32_t(static_cast<__mmask16>(b.data)); }
    static uint32_t movemask_i(const BI& b) { return uint32_t(static_cast<__mmask16>(b.data)); }
    static BF expand(uint32_t bits) { return BF(static_cast<__mmask16>(bits)); }
    static I load_u16(const unsigned char* p) {
        return I(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))));
    }
    static void store_u16x2(const I& a, const I& b, unsigned char* p) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(a));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(p + 32), _mm512_cvtepi32_epi16(b));
    }
    static H load_h(const unsigned char* p) { return H(_mm512_loadu_si512(p)); }
    static I blend(const BI& m, const I& t, const I& f) {
        return I(_mm512_mask_blend_epi32(static_cast<__mmask16>(m.data), f, t));
    }
    static void mulhilo(const I& x, uint32_t a, I& hi, I& lo) {
        const __m512i av = _mm512_set1_epi32(int(a)), xv = x;
        const __m512i pe = _mm512_mul_epu32(xv, av);
        const __m512i po = _mm512_mul_epu32(_mm512_srli_epi64(xv, 32), av);
        lo = I(_mm512_mask_blend_epi32(0xAAAA, pe, _mm512_slli_epi64(po, 32)));
        hi = I(_mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(pe, 32), po));
    }
};
#endif  // AVX-512

// ---------------------------------------------------------------------------
// What every vector family body starts from. Every vector kernel runs its
// vector part on a prefix and hands the rest to the scalar *_range function
// of its family, which performs the same per-element operations, so results
// do not depend on the split.
// ---------------------------------------------------------------------------
template <class Arch>
struct VecBase {
    using O = Ops<Arch>;
    using F = typename O::F;
    using D = typename O::D;
    using I = typename O::I;
    using H = typename O::H;
    using BF = typename O::BF;
    using BI = typename O::BI;
    static constexpr size_t W = F::size;
    static constexpr size_t WH = H::size;
    static_assert(W >= 4 && W <= 16 && 16 % W == 0 && D::size * 2 == W && I::size == W, "lanes");

    static F loadf(const float* p) { return F::load_unaligned(p); }
    static F loadf_bytes(const unsigned char* p) {  // any alignment: loadu
        return F::load_unaligned(reinterpret_cast<const float*>(p));
    }

    // Element-wise loop: body(j) for j = 0, W, 2W, ... while a whole vector
    // fits; returns where the scalar tail starts.
    template <class Body>
    static size_t elementwise(size_t n, Body&& body) {
        size_t i = 0;
        for (; i + 4 * W <= n; i += 4 * W)
            unroll<4>([&](auto kk) { body(i + decltype(kk)::value * W); });
        for (; i + W <= n; i += W) body(i);
        return i;
    }

    // kernels.hpp's 16-lane double sum of the vectors v(j) (W floats of
    // elements [j, j+W)), squared after widening if Square, continuing
    // `lanes`; returns where the scalar tail starts (a multiple of 16).
    template <bool Square, class V>
    static size_t add_lanes16(size_t n, double* lanes, V&& v) {
        constexpr size_t NA = 16 / D::size;
        D acc[NA];
        for (size_t a = 0; a < NA; ++a) acc[a] = D::load_unaligned(lanes + a * D::size);
        auto block = [&](size_t i) {  // elements [i, i+16) -> lanes 0..15
            unroll<16 / W>([&](auto kk) {
                constexpr size_t K = decltype(kk)::value;
                D lo, hi;
                O::widen(v(i + K * W), lo, hi);
                if constexpr (Square) {
                    lo = lo * lo;
                    hi = hi * hi;
                }
                acc[2 * K] = acc[2 * K] + lo;
                acc[2 * K + 1] = acc[2 * K + 1] + hi;
            });
        };
        size_t i = 0;
        for (; i + 32 <= n; i += 32) {
            block(i);
            block(i + 16);
        }
        for (; i + 16 <= n; i += 16) block(i);
        for (size_t a = 0; a < NA; ++a) acc[a].store_unaligned(lanes + a * D::size);
        return i;
    }

    // Sign bits of kernels.hpp from mask(j), the W-bit movemask of elements
    // [j, j+W): 64-element words, then groups of whole bytes; returns where
    // the scalar tail starts (a multiple of 8).
    template <class Mask>
    static size_t pack_bits(size_t n, uint8_t* bits, Mask&& mask) {
        constexpr size_t G = W < 8 ? 8 : W;
        size_t i = 0;
        for (; i + 64 <= n; i += 64) {
            uint64_t word = 0;
            unroll<64 / W>([&](auto kk) {
                constexpr size_t K = decltype(kk)::value;
                word |= uint64_t(mask(i + K * W)) << (K * W);
            });
            std::memcpy(bits + i / 8, &word, 8);  // x86: little-endian
        }
        for (; i + G <= n; i += G) {
            uint32_t word = 0;
            unroll<G / W>([&](auto kk) {
                constexpr size_t K = decltype(kk)::value;
                word |= uint32_t(mask(i + K * W)) << (K * W);
            });
            std::memcpy(bits + i / 8, &word, G / 8);
        }
        return i;
    }
};

#endif  // GW_KERN_XSIMD

}  // namespace
}  // namespace gw::kern
