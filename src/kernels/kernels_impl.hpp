// Kernel bodies, included only by src/kernels/arch_*.cpp.
//
// Each arch file is compiled with its own -m flags, so nothing defined here
// may be shared between arch files at link time: if the linker merged, say,
// the AVX2 build of a helper into the SSE2 table, older CPUs would die with
// SIGILL. Hence everything of ours lives in an anonymous namespace, and xsimd
// itself is wrapped in a namespace unique to each arch file (see below).
// Do not call non-template inline functions of the standard library (e.g.
// std::fabs(float)) from here: at -O0 they become weak symbols shared by
// every arch file.
//
// Arithmetic follows kernels.hpp exactly (no FMA: the build uses
// -ffp-contract=off; the pragma below covers clang builds without it).
//
// Define GW_KERN_XSIMD (to a namespace name unique to the arch file) before
// including to get the vector kernels (Simd<Arch>); without it only the
// portable scalar kernels (Scalar) are available.
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

// ---------------------------------------------------------------------------
// Scalar element conversions (the vector versions below use the same steps)
// ---------------------------------------------------------------------------
constexpr uint32_t kF16MaxAsF32 = 0x477FE000u;   // 65504.0f
constexpr uint32_t kF16MinNormalF32 = 0x38800000u;  // 2^-14
constexpr uint32_t kBf16MaxAsF32 = 0x7F7F0000u;  // largest finite bfloat16

// float -> IEEE half, round to nearest even, finite values saturate at 65504.
// (F. Giesen's float_to_half_fast3_rtne with a clamp in front: clamping to the
// max finite half first gives the same result as rounding and then saturating.)
inline uint16_t f32_to_f16_1(float x) {
    const uint32_t f = bits_of(x);
    const uint32_t sign = (f >> 16) & 0x8000u;
    uint32_t a = f & 0x7FFFFFFFu;
    if (a > kF16MaxAsF32) a = kF16MaxAsF32;
    uint32_t h;
    if (a < kF16MinNormalF32) {
        // Subnormal half or zero: adding 0.5f aligns the value so the FPU's
        // round-to-nearest-even does the rounding at 2^-24.
        h = bits_of(float_of(a) + 0.5f) - 0x3F000000u;
    } else {
        // Rebias the exponent (-112 << 23) and round to nearest even.
        h = (a + 0xC8000FFFu + ((a >> 13) & 1u)) >> 13;
    }
    return uint16_t(h | sign);
}

// IEEE half -> float (exact). Inf/NaN keep their payload.
inline float f16_to_f32_1(uint16_t h) {
    uint32_t o = uint32_t(h & 0x7FFFu) << 13;
    const uint32_t e = o & 0x0F800000u;
    o += 0x38000000u;
    if (e == 0x0F800000u) {
        o += 0x38000000u;
    } else if (e == 0) {
        o = bits_of(float_of(o + 0x00800000u) - float_of(0x38800000u));
    }
    return float_of(o | (uint32_t(h & 0x8000u) << 16));
}

inline uint16_t f32_to_bf16_1(float x) {
    const uint32_t f = bits_of(x);
    const uint32_t sign = (f >> 16) & 0x8000u;
    uint32_t a = f & 0x7FFFFFFFu;
    if (a > kBf16MaxAsF32) a = kBf16MaxAsF32;
    return uint16_t(((a + 0x7FFFu + ((a >> 16) & 1u)) >> 16) | sign);
}

inline float bf16_to_f32_1(uint16_t h) { return float_of(uint32_t(h) << 16); }

// ---------------------------------------------------------------------------
// CRC32C, software: slicing-by-8
// ---------------------------------------------------------------------------
constexpr uint32_t kCrc32cPoly = 0x82F63B78u;

struct CrcSlice8 {
    uint32_t t[8][256];
};
constexpr CrcSlice8 make_crc_slice8() {
    CrcSlice8 s{};
    for (uint32_t i = 0; i < 256; ++i) {
        uint32_t c = i;
        for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (kCrc32cPoly & (0u - (c & 1u)));
        s.t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i)
        for (int k = 1; k < 8; ++k) s.t[k][i] = (s.t[k - 1][i] >> 8) ^ s.t[0][s.t[k - 1][i] & 0xFF];
    return s;
}
constexpr CrcSlice8 kCrcSlice8 = make_crc_slice8();

inline uint32_t crc32c_sw(uint32_t crc, const void* data, size_t n) {
    const auto& t = kCrcSlice8.t;
    const unsigned char* p = static_cast<const unsigned char*>(data);
    uint32_t c = ~crc;
    while (n != 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
        c = t[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
        --n;
    }
    while (n >= 8) {
        const uint32_t lo = load_le32(p) ^ c;
        const uint32_t hi = load_le32(p + 4);
        c = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^
            t[3][hi & 0xFF] ^ t[2][(hi >> 8) & 0xFF] ^ t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n != 0) {
        c = t[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
        --n;
    }
    return ~c;
}

// ---------------------------------------------------------------------------
// Scalar kernels: the scalar target, and the tails [i0, n) of the vector ones.
// ---------------------------------------------------------------------------
struct Scalar {
    // Lane order of kernels.hpp: element i -> lane i % 16, then fold.
    static double fold16(double* l) {
        for (size_t s = 8; s >= 1; s /= 2)
            for (size_t j = 0; j < s; ++j) l[j] += l[j + s];
        return l[0];
    }
    // i0 must be a multiple of 16 (lane i0 % 16 == 0).
    static void sum_abs_range(const float* x, size_t i0, size_t n, double* lanes) {
        for (size_t i = i0; i < n; ++i)
            lanes[i & 15] += double(float_of(bits_of(x[i]) & 0x7FFFFFFFu));  // |x|
    }
    static void sum_sq_range(const float* x, size_t i0, size_t n, double* lanes) {
        for (size_t i = i0; i < n; ++i) {
            const double d = double(x[i]);
            lanes[i & 15] += d * d;
        }
    }
    static double sum_abs(const float* x, size_t n) {
        double lanes[16] = {};
        sum_abs_range(x, 0, n, lanes);
        return fold16(lanes);
    }
    static double sum_sq(const float* x, size_t n) {
        double lanes[16] = {};
        sum_sq_range(x, 0, n, lanes);
        return fold16(lanes);
    }

    static bool all_finite_range(const float* x, size_t i0, size_t n) {
        uint32_t bad = 0;
        for (size_t i = i0; i < n; ++i) bad |= ((bits_of(x[i]) & 0x7F800000u) + 0x00800000u);
        return (bad & 0x80000000u) == 0;
    }
    static bool all_finite(const float* x, size_t n) {
        constexpr size_t kChunk = 4096;
        for (size_t i = 0; i < n; i += kChunk)
            if (!all_finite_range(x, i, (n - i > kChunk) ? i + kChunk : n)) return false;
        return true;
    }

    static void ef_combine_range(const float* g, const float* m, const float* e, EfCoef c,
                                 float* p, size_t i0, size_t n) {
        for (size_t i = i0; i < n; ++i) {
            const float gi = g[i], mi = m[i], ei = e[i];
            const float t1 = c.mu * mi;
            const float t2 = c.kg * gi;
            const float m1 = t1 + t2;
            const float t3 = c.nu * m1;
            const float t4 = c.kp * gi;
            const float t5 = t3 + t4;
            const float t6 = c.r * ei;
            p[i] = t5 + t6;
        }
    }
    static void ef_combine(const float* g, const float* m, const float* e, EfCoef c, float* p,
                           size_t n) {
        ef_combine_range(g, m, e, c, p, 0, n);
    }

    static void momentum_update_range(float* m, const float* g, float mu, float kg, size_t i0,
                                      size_t n) {
        for (size_t i = i0; i < n; ++i) {
            const float t1 = mu * m[i];
            const float t2 = kg * g[i];
            m[i] = t1 + t2;
        }
    }
    static void momentum_update(float* m, const float* g, float mu, float kg, size_t n) {
        momentum_update_range(m, g, mu, kg, 0, n);
    }

    // i0 must be a multiple of 8. Writes bytes i0/8 .. ceil(n/8)-1.
    static void sign_pack_range(const float* x, size_t i0, size_t n, uint8_t* bits) {
        for (size_t i = i0; i < n; i += 8) {
            const size_t k_end = (n - i < 8) ? n - i : 8;
            unsigned b = 0;
            for (size_t k = 0; k < k_end; ++k) b |= unsigned(x[i + k] < 0.0f) << k;
            bits[i >> 3] = uint8_t(b);
        }
    }
    static void sign_pack(const float* x, size_t n, uint8_t* bits) {
        sign_pack_range(x, 0, n, bits);
    }

    static void sign_pack_residual_range(const float* x, size_t i0, size_t n, float s,
                                         uint8_t* bits, float* e) {
        const float neg = -s;
        for (size_t i = i0; i < n; i += 8) {
            const size_t k_end = (n - i < 8) ? n - i : 8;
            unsigned b = 0;
            for (size_t k = 0; k < k_end; ++k) {
                const float xi = x[i + k];
                const bool lt = xi < 0.0f;
                b |= unsigned(lt) << k;
                e[i + k] = xi - (lt ? neg : s);
            }
            bits[i >> 3] = uint8_t(b);
        }
    }
    static void sign_pack_residual(const float* x, size_t n, float s, uint8_t* bits, float* e) {
        sign_pack_residual_range(x, 0, n, s, bits, e);
    }

    static void sign_unpack_range(const uint8_t* bits, size_t i0, size_t n, float s, float* out) {
        const float neg = -s;
        size_t i = i0;
        for (; i < n && (i & 7) != 0; ++i) out[i] = ((bits[i >> 3] >> (i & 7)) & 1u) ? neg : s;
        const uint32_t sb = bits_of(s);  // -s is s with the sign bit flipped
        for (; i + 8 <= n; i += 8) {        // a byte at a time (vectorizable)
            const uint32_t b = bits[i >> 3];
            for (unsigned k = 0; k < 8; ++k) out[i + k] = float_of(sb ^ (((b >> k) & 1u) << 31));
        }
        for (; i < n; ++i) out[i] = ((bits[i >> 3] >> (i & 7)) & 1u) ? neg : s;
    }
    static void sign_unpack(const uint8_t* bits, size_t n, float s, float* out) {
        sign_unpack_range(bits, 0, n, s, out);
    }

    static void sign_accumulate_range(const uint8_t* bits, size_t i0, size_t n, float v,
                                      float* acc) {
        const float neg = -v;
        size_t i = i0;
        for (; i < n && (i & 7) != 0; ++i)
            acc[i] = acc[i] + (((bits[i >> 3] >> (i & 7)) & 1u) ? neg : v);
        const uint32_t vb = bits_of(v);
        for (; i + 8 <= n; i += 8) {
            const uint32_t b = bits[i >> 3];
            for (unsigned k = 0; k < 8; ++k)
                acc[i + k] = acc[i + k] + float_of(vb ^ (((b >> k) & 1u) << 31));
        }
        for (; i < n; ++i) acc[i] = acc[i] + (((bits[i >> 3] >> (i & 7)) & 1u) ? neg : v);
    }
    static void sign_accumulate(const uint8_t* bits, size_t n, float v, float* acc) {
        sign_accumulate_range(bits, 0, n, v, acc);
    }

    static void axpy_range(float alpha, const unsigned char* x, float* acc, size_t i0, size_t n) {
        for (size_t i = i0; i < n; ++i) {
            const float t = alpha * load_f32(x + 4 * i);
            acc[i] = acc[i] + t;
        }
    }
    static void axpy(float alpha, const void* x, float* acc, size_t n) {
        axpy_range(alpha, static_cast<const unsigned char*>(x), acc, 0, n);
    }

    static void f32_to_f16_range(const float* x, unsigned char* out, size_t i0, size_t n) {
        for (size_t i = i0; i < n; ++i) store_le16(out + 2 * i, f32_to_f16_1(x[i]));
    }
    static void f16_to_f32_range(const unsigned char* in, float* out, size_t i0, size_t n) {
        for (size_t i = i0; i < n; ++i) out[i] = f16_to_f32_1(load_le16(in + 2 * i));
    }
    static void f16_accumulate_range(const unsigned char* in, float alpha, float* acc, size_t i0,
                                     size_t n) {
        for (size_t i = i0; i < n; ++i) {
            const float t = alpha * f16_to_f32_1(load_le16(in + 2 * i));
            acc[i] = acc[i] + t;
        }
    }
    static bool f16_all_finite_range(const unsigned char* in, size_t i0, size_t n) {
        unsigned bad = 0;
        for (size_t i = i0; i < n; ++i) bad |= (load_le16(in + 2 * i) & 0x7C00u) + 0x0400u;
        return (bad & 0x8000u) == 0;
    }
    static void f32_to_bf16_range(const float* x, unsigned char* out, size_t i0, size_t n) {
        for (size_t i = i0; i < n; ++i) store_le16(out + 2 * i, f32_to_bf16_1(x[i]));
    }
    static void bf16_to_f32_range(const unsigned char* in, float* out, size_t i0, size_t n) {
        for (size_t i = i0; i < n; ++i) out[i] = bf16_to_f32_1(load_le16(in + 2 * i));
    }
    static void bf16_accumulate_range(const unsigned char* in, float alpha, float* acc, size_t i0,
                                      size_t n) {
        for (size_t i = i0; i < n; ++i) {
            const float t = alpha * bf16_to_f32_1(load_le16(in + 2 * i));
            acc[i] = acc[i] + t;
        }
    }
    static bool bf16_all_finite_range(const unsigned char* in, size_t i0, size_t n) {
        unsigned bad = 0;
        for (size_t i = i0; i < n; ++i) bad |= (load_le16(in + 2 * i) & 0x7F80u) + 0x0080u;
        return (bad & 0x8000u) == 0;
    }

    static const unsigned char* cb(const void* p) { return static_cast<const unsigned char*>(p); }
    static unsigned char* ub(void* p) { return static_cast<unsigned char*>(p); }

    static void f32_to_f16(const float* x, void* out, size_t n) {
        f32_to_f16_range(x, ub(out), 0, n);
    }
    static void f16_to_f32(const void* in, float* out, size_t n) {
        f16_to_f32_range(cb(in), out, 0, n);
    }
    static void f16_accumulate(const void* in, float alpha, float* acc, size_t n) {
        f16_accumulate_range(cb(in), alpha, acc, 0, n);
    }
    static bool f16_all_finite(const void* in, size_t n) {
        constexpr size_t kChunk = 4096;
        for (size_t i = 0; i < n; i += kChunk)
            if (!f16_all_finite_range(cb(in), i, (n - i > kChunk) ? i + kChunk : n)) return false;
        return true;
    }
    static void f32_to_bf16(const float* x, void* out, size_t n) {
        f32_to_bf16_range(x, ub(out), 0, n);
    }
    static void bf16_to_f32(const void* in, float* out, size_t n) {
        bf16_to_f32_range(cb(in), out, 0, n);
    }
    static void bf16_accumulate(const void* in, float alpha, float* acc, size_t n) {
        bf16_accumulate_range(cb(in), alpha, acc, 0, n);
    }
    static bool bf16_all_finite(const void* in, size_t n) {
        constexpr size_t kChunk = 4096;
        for (size_t i = 0; i < n; i += kChunk)
            if (!bf16_all_finite_range(cb(in), i, (n - i > kChunk) ? i + kChunk : n)) return false;
        return true;
    }

    static uint32_t crc32c(uint32_t crc, const void* data, size_t n) {
        return crc32c_sw(crc, data, n);
    }
};

template <class K>
constexpr Table make_table(gw_simd_target target) {
    return Table{target,
                 &K::sum_abs,
                 &K::sum_sq,
                 &K::all_finite,
                 &K::ef_combine,
                 &K::momentum_update,
                 &K::sign_pack,
                 &K::sign_pack_residual,
                 &K::sign_unpack,
                 &K::sign_accumulate,
                 &K::axpy,
                 &K::f32_to_f16,
                 &K::f16_to_f32,
                 &K::f16_accumulate,
                 &K::f16_all_finite,
                 &K::f32_to_bf16,
                 &K::bf16_to_f32,
                 &K::bf16_accumulate,
                 &K::bf16_all_finite,
                 &K::crc32c};
}

#if defined(GW_KERN_XSIMD)

// ---------------------------------------------------------------------------
// CRC32C with the SSE4.2 crc32 instruction: three interleaved streams,
// combined with "shift by N zero bytes" tables (after M. Adler's crc32c.c).
// ---------------------------------------------------------------------------
#if defined(__SSE4_2__) && defined(__x86_64__)
constexpr size_t kCrcLong = 8192;
constexpr size_t kCrcShort = 256;

struct CrcShift {
    uint32_t t[4][256];
};
constexpr uint32_t gf2_times(const uint32_t* mat, uint32_t vec) {
    uint32_t sum = 0;
    for (int i = 0; vec != 0; ++i, vec >>= 1)
        if (vec & 1u) sum ^= mat[i];
    return sum;
}
constexpr void gf2_square(uint32_t* sq, const uint32_t* mat) {
    for (int i = 0; i < 32; ++i) sq[i] = gf2_times(mat, mat[i]);
}
// Table applying `len` (a power of two) zero bytes to a raw CRC register.
constexpr CrcShift make_crc_shift(size_t len) {
    uint32_t odd[32] = {};
    uint32_t even[32] = {};
    odd[0] = kCrc32cPoly;  // operator for one zero bit
    for (int i = 1; i < 32; ++i) odd[i] = 1u << (i - 1);
    gf2_square(even, odd);  // 2 bits
    gf2_square(odd, even);  // 4 bits
    const uint32_t* op = nullptr;
    for (;;) {
        gf2_square(even, odd);  // 8, 32, ... bits: 1, 4, ... bytes
        len >>= 1;
        if (len == 0) {
            op = even;
            break;
        }
        gf2_square(odd, even);
        len >>= 1;
        if (len == 0) {
            op = odd;
            break;
        }
    }
    CrcShift s{};
    for (uint32_t i = 0; i < 256; ++i)
        for (int k = 0; k < 4; ++k) s.t[k][i] = gf2_times(op, i << (8 * k));
    return s;
}
constexpr CrcShift kCrcShiftLong = make_crc_shift(kCrcLong);
constexpr CrcShift kCrcShiftShort = make_crc_shift(kCrcShort);

inline uint32_t crc_shift(const CrcShift& s, uint32_t c) {
    return s.t[0][c & 0xFF] ^ s.t[1][(c >> 8) & 0xFF] ^ s.t[2][(c >> 16) & 0xFF] ^ s.t[3][c >> 24];
}

template <size_t Len>
inline const unsigned char* crc_3way(uint64_t& c0, const unsigned char* p, const CrcShift& s) {
    uint64_t c1 = 0, c2 = 0;
    const unsigned char* const end = p + Len;
    do {
        c0 = _mm_crc32_u64(c0, load_le64(p));
        c1 = _mm_crc32_u64(c1, load_le64(p + Len));
        c2 = _mm_crc32_u64(c2, load_le64(p + 2 * Len));
        p += 8;
    } while (p < end);
    c0 = crc_shift(s, uint32_t(c0)) ^ uint32_t(c1);
    c0 = crc_shift(s, uint32_t(c0)) ^ uint32_t(c2);
    return p + 2 * Len;
}

inline uint32_t crc32c_hw(uint32_t crc, const void* data, size_t n) {
    const unsigned char* p = static_cast<const unsigned char*>(data);
    uint64_t c0 = uint32_t(~crc);
    while (n != 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
        c0 = _mm_crc32_u8(uint32_t(c0), *p++);
        --n;
    }
    for (; n >= 3 * kCrcLong; n -= 3 * kCrcLong) p = crc_3way<kCrcLong>(c0, p, kCrcShiftLong);
    for (; n >= 3 * kCrcShort; n -= 3 * kCrcShort) p = crc_3way<kCrcShort>(c0, p, kCrcShiftShort);
    for (; n >= 8; n -= 8, p += 8) c0 = _mm_crc32_u64(c0, load_le64(p));
    for (; n != 0; --n) c0 = _mm_crc32_u8(uint32_t(c0), *p++);
    return ~uint32_t(c0);
}
#endif  // __SSE4_2__ && __x86_64__

// ---------------------------------------------------------------------------
// Per-arch primitives xsimd 8.1 lacks. Ops<A> provides, with F = batch<float, A>
// (W lanes), D = batch<double, A> (W/2 lanes), I = batch<int32_t, A>,
// H = batch<int16_t, A>:
//   widen(v, lo, hi)    float lanes [0, W/2) -> lo, [W/2, W) -> hi (exact)
//   movemask(b)         lane j of a float mask -> bit j
//   expand(bits)        bit j (j < W) -> lane j of a float mask
//   load_u16(p)         W little-endian u16 at p, zero-extended to I
//   store_u16x2(a, b,p) the low 16 bits of a's then b's lanes (each 0..0xFFFF)
//   load_h(p)           H::size u16 at p
//   blend(m, t, f)      m ? t : f on I lanes (xsimd's integer select does not
//                       compile at -O0 with GCC on AVX-512)
//   crc32c              table or hardware CRC
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
    static uint32_t crc32c(uint32_t crc, const void* data, size_t n) {
        return crc32c_sw(crc, data, n);
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
    static uint32_t crc32c(uint32_t crc, const void* data, size_t n) {
        return crc32c_hw(crc, data, n);
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
    static uint32_t crc32c(uint32_t crc, const void* data, size_t n) {
        return crc32c_hw(crc, data, n);
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
    static uint32_t crc32c(uint32_t crc, const void* data, size_t n) {
        return crc32c_hw(crc, data, n);
    }
};
#endif  // AVX-512

// ---------------------------------------------------------------------------
// Vector kernels over an xsimd arch. Every kernel runs its vector part on a
// prefix and hands the rest to the Scalar *_range function, which performs
// the same per-element operations, so results do not depend on the split.
// ---------------------------------------------------------------------------
template <class Arch>
struct Simd {
    using O = Ops<Arch>;
    using F = typename O::F;
    using D = typename O::D;
    using I = typename O::I;
    using H = typename O::H;
    using BF = typename O::BF;
    static constexpr size_t W = F::size;
    static constexpr size_t WH = H::size;
    static_assert(W >= 4 && W <= 16 && 16 % W == 0 && D::size * 2 == W && I::size == W, "lanes");

    static const unsigned char* cb(const void* p) { return static_cast<const unsigned char*>(p); }
    static unsigned char* ub(void* p) { return static_cast<unsigned char*>(p); }
    static F loadf(const float* p) { return F::load_unaligned(p); }
    static F loadf_bytes(const unsigned char* p) {  // any alignment: loadu
        return F::load_unaligned(reinterpret_cast<const float*>(p));
    }

    // ---- reductions: 16 double lanes held in 16 / D::size accumulators ----
    template <bool Square>
    static double sum_impl(const float* x, size_t n) {
        constexpr size_t NA = 16 / D::size;
        D acc[NA];
        for (size_t k = 0; k < NA; ++k) acc[k] = D(0.0);
        auto block = [&](size_t i) {  // elements [i, i+16) -> lanes 0..15
            unroll<16 / W>([&](auto kk) {
                constexpr size_t K = decltype(kk)::value;
                F v = loadf(x + i + K * W);
                if constexpr (!Square) v = xsimd::abs(v);
                D lo, hi;
                O::widen(v, lo, hi);
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
        alignas(64) double lanes[16];
        for (size_t k = 0; k < NA; ++k) acc[k].store_aligned(lanes + k * D::size);
        if constexpr (Square)
            Scalar::sum_sq_range(x, i, n, lanes);
        else
            Scalar::sum_abs_range(x, i, n, lanes);
        return Scalar::fold16(lanes);
    }
    static double sum_abs(const float* x, size_t n) { return sum_impl<false>(x, n); }
    static double sum_sq(const float* x, size_t n) { return sum_impl<true>(x, n); }

    // ---- finiteness: (bits & expmask) + expunit sets the top bit iff exp is all ones ----
    static bool all_finite(const float* x, size_t n) {
        const I expm(0x7F800000), unit(0x00800000), zero(0);
        size_t i = 0;
        while (n - i >= 4 * W) {
            const size_t stop = (n - i > 4096) ? i + 4096 : n;
            I bad(0);
            for (; i + 4 * W <= stop; i += 4 * W) {
                unroll<4>([&](auto kk) {
                    const I b = xsimd::bitwise_cast<I>(loadf(x + i + decltype(kk)::value * W));
                    bad = bad | ((b & expm) + unit);
                });
            }
            if (xsimd::any(bad < zero)) return false;
        }
        return Scalar::all_finite_range(x, i, n);
    }

    template <uint16_t ExpMask>
    static bool half_all_finite(const void* in, size_t n) {
        const unsigned char* p = cb(in);
        const H expm(static_cast<int16_t>(ExpMask));
        const H unit(static_cast<int16_t>(ExpMask & (0u - ExpMask)));  // lowest exponent bit
        const H zero(0);
        size_t i = 0;
        while (n - i >= 4 * WH) {
            const size_t stop = (n - i > 8192) ? i + 8192 : n;
            H bad(0);
            for (; i + 4 * WH <= stop; i += 4 * WH) {
                unroll<4>([&](auto kk) {
                    const H h = O::load_h(p + 2 * (i + decltype(kk)::value * WH));
                    bad = bad | ((h & expm) + unit);
                });
            }
            if (xsimd::any(bad < zero)) return false;
        }
        if constexpr (ExpMask == 0x7C00)
            return Scalar::f16_all_finite_range(p, i, n);
        else
            return Scalar::bf16_all_finite_range(p, i, n);
    }
    static bool f16_all_finite(const void* in, size_t n) { return half_all_finite<0x7C00>(in, n); }
    static bool bf16_all_finite(const void* in, size_t n) { return half_all_finite<0x7F80>(in, n); }

    // ---- element-wise float kernels ----
    template <class Body>
    static size_t elementwise(size_t n, Body&& body) {  // returns where the tail starts
        size_t i = 0;
        for (; i + 4 * W <= n; i += 4 * W)
            unroll<4>([&](auto kk) { body(i + decltype(kk)::value * W); });
        for (; i + W <= n; i += W) body(i);
        return i;
    }

    static void ef_combine(const float* g, const float* m, const float* e, EfCoef c, float* p,
                           size_t n) {
        const F mu(c.mu), kg(c.kg), nu(c.nu), kp(c.kp), r(c.r);
        const size_t i = elementwise(n, [&](size_t j) {
            const F gv = loadf(g + j), mv = loadf(m + j), ev = loadf(e + j);
            const F t1 = mu * mv;
            const F t2 = kg * gv;
            const F m1 = t1 + t2;
            const F t3 = nu * m1;
            const F t4 = kp * gv;
            const F t5 = t3 + t4;
            const F t6 = r * ev;
            (t5 + t6).store_unaligned(p + j);
        });
        Scalar::ef_combine_range(g, m, e, c, p, i, n);
    }

    static void momentum_update(float* m, const float* g, float mu, float kg, size_t n) {
        const F vmu(mu), vkg(kg);
        const size_t i = elementwise(n, [&](size_t j) {
            const F t1 = vmu * loadf(m + j);
            const F t2 = vkg * loadf(g + j);
            (t1 + t2).store_unaligned(m + j);
        });
        Scalar::momentum_update_range(m, g, mu, kg, i, n);
    }

    static void axpy(float alpha, const void* x, float* acc, size_t n) {
        const unsigned char* xb = cb(x);
        const F va(alpha);
        const size_t i = elementwise(n, [&](size_t j) {
            const F t = va * loadf_bytes(xb + 4 * j);
            (loadf(acc + j) + t).store_unaligned(acc + j);
        });
        Scalar::axpy_range(alpha, xb, acc, i, n);
    }

    // ---- sign bits ----
    // Groups of G elements (G/8 whole bytes) after the 64-element main loop.
    static constexpr size_t G = W < 8 ? 8 : W;

    static void sign_pack(const float* x, size_t n, uint8_t* bits) {
        const F zero(0.0f);
        size_t i = 0;
        for (; i + 64 <= n; i += 64) {
            uint64_t word = 0;
            unroll<64 / W>([&](auto kk) {
                constexpr size_t K = decltype(kk)::value;
                word |= uint64_t(O::movemask(loadf(x + i + K * W) < zero)) << (K * W);
            });
            std::memcpy(bits + i / 8, &word, 8);  // x86: little-endian
        }
        for (; i + G <= n; i += G) {
            uint32_t word = 0;
            unroll<G / W>([&](auto kk) {
                constexpr size_t K = decltype(kk)::value;
                word |= O::movemask(loadf(x + i + K * W) < zero) << (K * W);
            });
            std::memcpy(bits + i / 8, &word, G / 8);
        }
        Scalar::sign_pack_range(x, i, n, bits);
    }

    static void sign_pack_residual(const float* x, size_t n, float s, uint8_t* bits, float* e) {
        const F zero(0.0f), pos(s), neg(-s);
        auto step = [&](size_t j) -> uint32_t {  // e may alias x: load, then store
            const F v = loadf(x + j);
            const BF lt = v < zero;
            (v - xsimd::select(lt, neg, pos)).store_unaligned(e + j);
            return O::movemask(lt);
        };
        size_t i = 0;
        for (; i + 64 <= n; i += 64) {
            uint64_t word = 0;
            unroll<64 / W>([&](auto kk) {
                constexpr size_t K = decltype(kk)::value;
                word |= uint64_t(step(i + K * W)) << (K * W);
            });
            std::memcpy(bits + i / 8, &word, 8);
        }
        for (; i + G <= n; i += G) {
            uint32_t word = 0;
            unroll<G / W>([&](auto kk) {
                constexpr size_t K = decltype(kk)::value;
                word |= step(i + K * W) << (K * W);
            });
            std::memcpy(bits + i / 8, &word, G / 8);
        }
        Scalar::sign_pack_residual_range(x, i, n, s, bits, e);
    }

    // out/acc from sign bits; reads only bytes [0, ceil(n/8)).
    template <class Store>
    static size_t unpack_loop(const uint8_t* bits, size_t n, Store&& store) {
        size_t i = 0;
        for (; i + 64 <= n; i += 64) {
            uint64_t word;
            std::memcpy(&word, bits + i / 8, 8);
            unroll<64 / W>([&](auto kk) {
                constexpr size_t K = decltype(kk)::value;
                store(i + K * W, O::expand(uint32_t(word >> (K * W))));
            });
        }
        for (; i + G <= n; i += G) {
            uint32_t word = 0;
            std::memcpy(&word, bits + i / 8, G / 8);
            unroll<G / W>([&](auto kk) {
                constexpr size_t K = decltype(kk)::value;
                store(i + K * W, O::expand(word >> (K * W)));
            });
        }
        return i;
    }

    static void sign_unpack(const uint8_t* bits, size_t n, float s, float* out) {
        const F pos(s), neg(-s);
        const size_t i = unpack_loop(bits, n, [&](size_t j, const BF& m) {
            xsimd::select(m, neg, pos).store_unaligned(out + j);
        });
        Scalar::sign_unpack_range(bits, i, n, s, out);
    }

    static void sign_accumulate(const uint8_t* bits, size_t n, float v, float* acc) {
        const F pos(v), neg(-v);
        const size_t i = unpack_loop(bits, n, [&](size_t j, const BF& m) {
            (loadf(acc + j) + xsimd::select(m, neg, pos)).store_unaligned(acc + j);
        });
        Scalar::sign_accumulate_range(bits, i, n, v, acc);
    }

    // ---- half / bfloat16 (same integer steps as f32_to_f16_1 etc.) ----
    static I enc_f16(const F& x) {
        const I f = xsimd::bitwise_cast<I>(x);
        const I sign = (f >> 16) & I(0x8000);
        I a = f & I(0x7FFFFFFF);
        a = O::blend(a > I(int32_t(kF16MaxAsF32)), I(int32_t(kF16MaxAsF32)), a);
        const I sub = xsimd::bitwise_cast<I>(xsimd::bitwise_cast<F>(a) + F(0.5f)) - I(0x3F000000);
        const I norm = (a + I(int32_t(0xC8000FFFu)) + ((a >> 13) & I(1))) >> 13;
        return O::blend(a < I(int32_t(kF16MinNormalF32)), sub, norm) | sign;
    }
    static F dec_f16(const I& h) {
        const I o0 = (h & I(0x7FFF)) << 13;
        const I e = o0 & I(0x0F800000);
        const I o = o0 + I(0x38000000);
        const I inf = o + I(0x38000000);
        const I den = xsimd::bitwise_cast<I>(xsimd::bitwise_cast<F>(o + I(0x00800000)) -
                                             xsimd::bitwise_cast<F>(I(0x38800000)));
        const I r = O::blend(e == I(0x0F800000), inf, O::blend(e == I(0), den, o));
        return xsimd::bitwise_cast<F>(r | ((h & I(0x8000)) << 16));
    }
    static I enc_bf16(const F& x) {
        const I f = xsimd::bitwise_cast<I>(x);
        const I sign = (f >> 16) & I(0x8000);
        I a = f & I(0x7FFFFFFF);
        a = O::blend(a > I(int32_t(kBf16MaxAsF32)), I(int32_t(kBf16MaxAsF32)), a);
        return ((a + I(0x7FFF) + ((a >> 16) & I(1))) >> 16) | sign;
    }
    static F dec_bf16(const I& h) { return xsimd::bitwise_cast<F>(h << 16); }

    static void f32_to_f16(const float* x, void* out, size_t n) {
        unsigned char* o = ub(out);
        size_t i = 0;
        for (; i + 2 * W <= n; i += 2 * W)
            O::store_u16x2(enc_f16(loadf(x + i)), enc_f16(loadf(x + i + W)), o + 2 * i);
        Scalar::f32_to_f16_range(x, o, i, n);
    }
    static void f32_to_bf16(const float* x, void* out, size_t n) {
        unsigned char* o = ub(out);
        size_t i = 0;
        for (; i + 2 * W <= n; i += 2 * W)
            O::store_u16x2(enc_bf16(loadf(x + i)), enc_bf16(loadf(x + i + W)), o + 2 * i);
        Scalar::f32_to_bf16_range(x, o, i, n);
    }
    static void f16_to_f32(const void* in, float* out, size_t n) {
        const unsigned char* p = cb(in);
        const size_t i = elementwise(n, [&](size_t j) {
            dec_f16(O::load_u16(p + 2 * j)).store_unaligned(out + j);
        });
        Scalar::f16_to_f32_range(p, out, i, n);
    }
    static void bf16_to_f32(const void* in, float* out, size_t n) {
        const unsigned char* p = cb(in);
        const size_t i = elementwise(n, [&](size_t j) {
            dec_bf16(O::load_u16(p + 2 * j)).store_unaligned(out + j);
        });
        Scalar::bf16_to_f32_range(p, out, i, n);
    }
    static void f16_accumulate(const void* in, float alpha, float* acc, size_t n) {
        const unsigned char* p = cb(in);
        const F va(alpha);
        const size_t i = elementwise(n, [&](size_t j) {
            const F t = va * dec_f16(O::load_u16(p + 2 * j));
            (loadf(acc + j) + t).store_unaligned(acc + j);
        });
        Scalar::f16_accumulate_range(p, alpha, acc, i, n);
    }
    static void bf16_accumulate(const void* in, float alpha, float* acc, size_t n) {
        const unsigned char* p = cb(in);
        const F va(alpha);
        const size_t i = elementwise(n, [&](size_t j) {
            const F t = va * dec_bf16(O::load_u16(p + 2 * j));
            (loadf(acc + j) + t).store_unaligned(acc + j);
        });
        Scalar::bf16_accumulate_range(p, alpha, acc, i, n);
    }

    static uint32_t crc32c(uint32_t crc, const void* data, size_t n) {
        return O::crc32c(crc, data, n);
    }
};

#endif  // GW_KERN_XSIMD

}  // namespace
}  // namespace gw::kern
