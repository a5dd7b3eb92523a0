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
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#elif defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
// xsimd 8.1's NEON code defines these identity casts at global scope and
// calls them as ::vreinterpretq_X_X; wrapped in our namespace, its own
// definitions land there, so the global ones are provided here (with
// internal linkage: nothing is shared between arch files).
static inline uint8x16_t vreinterpretq_u8_u8(uint8x16_t a) noexcept { return a; }
static inline int8x16_t vreinterpretq_s8_s8(int8x16_t a) noexcept { return a; }
static inline uint16x8_t vreinterpretq_u16_u16(uint16x8_t a) noexcept { return a; }
static inline int16x8_t vreinterpretq_s16_s16(int16x8_t a) noexcept { return a; }
static inline uint32x4_t vreinterpretq_u32_u32(uint32x4_t a) noexcept { return a; }
static inline int32x4_t vreinterpretq_s32_s32(int32x4_t a) noexcept { return a; }
static inline uint64x2_t vreinterpretq_u64_u64(uint64x2_t a) noexcept { return a; }
static inline int64x2_t vreinterpretq_s64_s64(int64x2_t a) noexcept { return a; }
static inline float32x4_t vreinterpretq_f32_f32(float32x4_t a) noexcept { return a; }
#endif

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
// A little-endian float32 at any alignment (a plain load on little-endian
// hosts; kept here rather than util/bytes.hpp's load_le, which is not in the
// anonymous namespace every kernel helper must live in).
inline float load_f32(const unsigned char* p) {
    uint32_t u;
    std::memcpy(&u, p, sizeof u);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    u = __builtin_bswap32(u);
#endif
    return float_of(u);
}
inline void store_f32(unsigned char* p, float v) {  // load_f32's inverse
    uint32_t u = bits_of(v);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    u = __builtin_bswap32(u);
#endif
    std::memcpy(p, &u, sizeof u);
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
//   load_u8(p)          W bytes at p, zero-extended to I (reads W bytes)
//   store_u16x2(a, b,p) the low 16 bits of a's then b's lanes (each 0..0xFFFF)
//   load_h(p)           H::size u16 at p
//   blend(m, t, f)      m ? t : f on I lanes (xsimd's integer select does not
//                       compile at -O0 with GCC on AVX-512)
//   mulhilo(x, a, h, l) the 64-bit products x_j * a: high halves to h, low to l
//   div(a, b)           a / b, one correctly rounded IEEE division per lane
//                       (xsimd 8.1's NEON division is a reciprocal estimate)
//   floor(v)            floor, exact
//   fold(d)             the lanes of d summed by halves: the upper half added
//                       to the lower until one lane is left (Norms::fold16's
//                       last steps, in registers)
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
    static F div(const F& a, const F& b) { return a / b; }
    static F floor(const F& v) { return xsimd::floor(v); }
    static double fold(const D& d) {
        const __m128d v = d;
        return _mm_cvtsd_f64(_mm_add_sd(v, _mm_unpackhi_pd(v, v)));
    }
};

template <>
struct Ops<xsimd::sse2> : Ops128<xsimd::sse2> {
    static I load_u16(const unsigned char* p) {
        const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
        return I(_mm_unpacklo_epi16(v, _mm_setzero_si128()));
    }
    static I load_u8(const unsigned char* p) {
        int32_t w;
        std::memcpy(&w, p, 4);
        const __m128i z = _mm_setzero_si128();
        return I(_mm_unpacklo_epi16(_mm_unpacklo_epi8(_mm_cvtsi32_si128(w), z), z));
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
    static I load_u8(const unsigned char* p) {
        int32_t w;
        std::memcpy(&w, p, 4);
        return I(_mm_cvtepu8_epi32(_mm_cvtsi32_si128(w)));
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
    static I load_u8(const unsigned char* p) {
        return I(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
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
    static F div(const F& a, const F& b) { return a / b; }
    static F floor(const F& v) { return xsimd::floor(v); }
    static double fold(const D& d) {
        const __m256d v = d;
        const __m128d h = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
        return _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
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
    static I load_u8(const unsigned char* p) {
        return I(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
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
    static F div(const F& a, const F& b) { return a / b; }
    static F floor(const F& v) { return xsimd::floor(v); }
    static double fold(const D& d) {
        const __m512d v = d;
        const __m256d q = _mm256_add_pd(_mm512_castpd512_pd256(v), _mm512_extractf64x4_pd(v, 1));
        const __m128d h = _mm_add_pd(_mm256_castpd256_pd128(q), _mm256_extractf128_pd(q, 1));
        return _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
    }
};
#endif  // AVX-512

#if defined(__aarch64__) && defined(__ARM_NEON)
// AArch64 Advanced SIMD (NEON, 128 bits: W = 4). Unaligned loads and stores
// go through byte pointers (LD1/ST1 of bytes have no alignment requirement),
// which on a little-endian host give the same lanes as x86's loadu/storeu.
template <>
struct Ops<xsimd::neon64> {
    using A = xsimd::neon64;
    using F = xsimd::batch<float, A>;
    using D = xsimd::batch<double, A>;
    using I = xsimd::batch<int32_t, A>;
    using H = xsimd::batch<int16_t, A>;
    using BF = xsimd::batch_bool<float, A>;
    using BI = xsimd::batch_bool<int32_t, A>;

    static uint32x4_t lane_bits() {
        alignas(16) static constexpr uint32_t kBits[4] = {1, 2, 4, 8};
        return vld1q_u32(kBits);
    }
    static void widen(const F& v, D& lo, D& hi) {
        const float32x4_t r = v;
        lo = D(vcvt_f64_f32(vget_low_f32(r)));
        hi = D(vcvt_high_f64_f32(r));
    }
    static uint32_t movemask(const BF& b) {
        const uint32x4_t m = b;
        return vaddvq_u32(vandq_u32(m, lane_bits()));
    }
    static uint32_t movemask_i(const BI& b) {
        const uint32x4_t m = b;
        return vaddvq_u32(vandq_u32(m, lane_bits()));
    }
    static BF expand(uint32_t bits) { return BF(vtstq_u32(vdupq_n_u32(bits), lane_bits())); }
    static I load_u16(const unsigned char* p) {
        const uint16x4_t h = vreinterpret_u16_u8(vld1_u8(p));
        return I(vreinterpretq_s32_u32(vmovl_u16(h)));
    }
    static I load_u8(const unsigned char* p) {
        uint32_t w;
        std::memcpy(&w, p, 4);
        const uint16x4_t h = vget_low_u16(vmovl_u8(vreinterpret_u8_u32(vdup_n_u32(w))));
        return I(vreinterpretq_s32_u32(vmovl_u16(h)));
    }
    static void store_u16x2(const I& a, const I& b, unsigned char* p) {
        const int32x4_t ra = a, rb = b;
        const uint16x8_t r = vcombine_u16(vmovn_u32(vreinterpretq_u32_s32(ra)),
                                          vmovn_u32(vreinterpretq_u32_s32(rb)));
        vst1q_u8(p, vreinterpretq_u8_u16(r));
    }
    static H load_h(const unsigned char* p) { return H(vreinterpretq_s16_u8(vld1q_u8(p))); }
    static I blend(const BI& m, const I& t, const I& f) {
        const uint32x4_t mm = m;
        const int32x4_t rt = t, rf = f;
        return I(vbslq_s32(mm, rt, rf));
    }
    static void mulhilo(const I& x, uint32_t a, I& hi, I& lo) {
        const int32x4_t rx = x;
        const uint32x4_t xv = vreinterpretq_u32_s32(rx);
        // [lo0 hi0 lo1 hi1] and [lo2 hi2 lo3 hi3] as 32-bit lanes
        const uint32x4_t p01 = vreinterpretq_u32_u64(vmull_n_u32(vget_low_u32(xv), a));
        const uint32x4_t p23 = vreinterpretq_u32_u64(vmull_high_n_u32(xv, a));
        lo = I(vreinterpretq_s32_u32(vuzp1q_u32(p01, p23)));
        hi = I(vreinterpretq_s32_u32(vuzp2q_u32(p01, p23)));
    }
    static F div(const F& a, const F& b) {
        const float32x4_t ra = a, rb = b;
        return F(vdivq_f32(ra, rb));
    }
    static F floor(const F& v) {
        const float32x4_t r = v;
        return F(vrndmq_f32(r));
    }
    static double fold(const D& d) {
        const float64x2_t v = d;
        return vgetq_lane_f64(v, 0) + vgetq_lane_f64(v, 1);
    }
};
#endif  // __aarch64__ && __ARM_NEON

// ---------------------------------------------------------------------------
// What every vector family body starts from. Every vector kernel runs its
// vector part on a prefix and hands the rest to the scalar *_range function
// of its family, which performs the same per-element operations, so results
// do not depend on the split.
// ---------------------------------------------------------------------------
// The vector bodies load and store payload bytes as lanes (pack_bits, the
// half loads, loadf_bytes): they are built for little-endian hosts only; a
// big-endian host has the scalar target alone.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "vector kernels need a little-endian host");

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

    // Loops that only read memory (their writes stay in cache) also ask for
    // the lines kAheadBytes on: on some cores (an Intel Xeon with AVX-512 FP16
    // here) the hardware prefetcher alone leaves such a pass over memory up to
    // 1.4x slower (docs/performance.md). Loops that stream writes gain nothing
    // and lose a little, so they do not; ef_sign_defer, whose large stores go
    // to the lines it has just read, gains 4-6% at 16M and 64M and does. Nor does
    // max_abs_key, which ran at the read pass's speed without and 0-4% slower
    // with. Addresses past the end are only prefetched, never read (a
    // prefetch does not fault).
    static constexpr size_t kAheadBytes = 8192;
    template <class T>
    static void prefetch_ahead(const T* x, size_t j, size_t count) {
        const uintptr_t a = reinterpret_cast<uintptr_t>(x + j) + kAheadBytes;
        for (size_t b = 0; b < count * sizeof(T); b += 64)
            __builtin_prefetch(reinterpret_cast<const void*>(a + b), 0, 3);
    }

    // The elements before out is vector-aligned (at most n; 0 if out is not
    // float-aligned), for a scalar head, so that the vector stores after it
    // are aligned: numpy's large arrays start 16 bytes into a line, and a
    // store split across two lines made a 256K fp16 decode 1.3x slower.
    static size_t store_head(const float* out, size_t n) {
        constexpr size_t A = sizeof(typename F::register_type);
        const uintptr_t at = reinterpret_cast<uintptr_t>(out);
        return at % 4 ? 0 : std::min((A - at % A) % A / 4, n);
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
    template <bool Square, class V, class... R>
    static size_t add_lanes16(size_t n, double* lanes, V&& v, const R*... reads) {
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
            (prefetch_ahead(reads, i, 32), ...);
            block(i);
            block(i + 16);
        }
        for (; i + 16 <= n; i += 16) block(i);
        for (size_t a = 0; a < NA; ++a) acc[a].store_unaligned(lanes + a * D::size);
        return i;
    }

    // Norms::fold16 of the 16 lanes in add_lanes16's accumulators (lane
    // a D::size + t in acc[a][t]), in registers: each step adds the upper
    // half of the lanes to the lower, the same additions in the same order.
    // acc is consumed.
    static double fold_acc(D* acc) {
        for (size_t h = 16 / D::size / 2; h >= 1; h /= 2)
            for (size_t a = 0; a < h; ++a) acc[a] = acc[a] + acc[a + h];
        return O::fold(acc[0]);
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
            std::memcpy(bits + i / 8, &word, 8);  // little-endian host (above)
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

// Non-temporal stores for decoded outputs of kStreamBytes and more
// (kernels.hpp): the lines go to memory without being read first (a plain
// store reads each line before writing it), which on read-bound cores is much
// of a decode's time.
template <class Arch>
struct Stream {
    static constexpr bool kOn = false;
};
#if defined(GW_KERN_XSIMD) && defined(__AVX2__) && defined(__x86_64__)
template <>
struct Stream<xsimd::avx2> {
    static constexpr bool kOn = true;
    static constexpr size_t W = 8;  // floats per store; p aligned to 4 W bytes
    static void store(float* p, __m256 v) { _mm256_stream_ps(p, v); }
    static void store(float* p, const float* v) { store(p, _mm256_loadu_ps(v)); }
    static void zero(float* p) { store(p, _mm256_setzero_ps()); }
    static void fence() { _mm_sfence(); }
};
#endif
#if defined(GW_KERN_XSIMD) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__x86_64__)
template <>
struct Stream<xsimd::avx512bw> {
    static constexpr bool kOn = true;
    static constexpr size_t W = 16;
    static void store(float* p, __m512 v) { _mm512_stream_ps(p, v); }
    static void store(float* p, const float* v) { store(p, _mm512_loadu_ps(v)); }
    static void zero(float* p) { store(p, _mm512_setzero_ps()); }
    static void fence() { _mm_sfence(); }
};
#endif

}  // namespace
}  // namespace gw::kern
