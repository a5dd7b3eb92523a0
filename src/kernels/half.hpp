// Family "half": IEEE binary16 (fp16) and bfloat16 payloads: encode (round to
// nearest even, finite values saturate at the largest finite value), decode
// (exact), accumulate (acc += alpha * h), all_finite, encode_finite (encode
// and whether x is finite, one read), decode_finite_crc (a payload's check,
// CRC and decode, one read), and ef_cast (encode with error feedback,
// fused: y = e + alpha * x, h = encode(y), e = y - h).
// ONE template over the format: the two differ only in the constants of
// HalfFormat<ExpBits>. fp16 uses x86's F16C where the target has it.
// Scalar code, vector body, table entries.
#pragma once

#include <algorithm>

#include "kernels/common.hpp"
#include "kernels/crc.hpp"

namespace gw::kern {
namespace {

// A 16-bit binary float: 1 sign bit, ExpBits exponent bits, 15 - ExpBits
// stored mantissa bits. All constants are float (binary32) bit patterns or
// 16-bit patterns derived from the layout; the static_asserts below spell
// them out for the two formats we use.
template <int ExpBits>
struct HalfFormat {
    static constexpr int kMant = 15 - ExpBits;              // stored mantissa bits
    static constexpr int kShift = 23 - kMant;               // float mantissa bits dropped
    static constexpr int kBias = (1 << (ExpBits - 1)) - 1;  // exponent bias
    // 16-bit patterns: the exponent field, and its lowest bit.
    static constexpr uint16_t kExpMask = uint16_t(((1u << ExpBits) - 1) << kMant);
    static constexpr uint16_t kExpUnit = uint16_t(1u << kMant);
    // Largest finite value and smallest normal value, as float bits.
    static constexpr uint32_t kMaxAsF32 =
        (uint32_t((1 << ExpBits) - 2 - kBias + 127) << 23) | (((1u << kMant) - 1) << kShift);
    static constexpr uint32_t kMinNormalF32 = uint32_t(1 - kBias + 127) << 23;
    // Encoding a normal value: add the exponent rebias (kBias - 127) << 23
    // (mod 2^32) and half an ulp minus one, plus the kept lsb (ties to even),
    // then drop kShift bits.
    static constexpr uint32_t kRoundAdd =
        (uint32_t(int32_t(kBias - 127)) << 23) + ((1u << (kShift - 1)) - 1);
    // When the format's exponent range is float's (bfloat16), its subnormals
    // are float's subnormals and the normal steps above handle them; decoding
    // is then a plain shift. Otherwise (fp16) subnormals need steps of their own:
    static constexpr bool kOwnSubnormals = kBias != 127;
    // encoding: adding this float (a power of two) to a value below the
    // smallest normal leaves its subnormal mantissa in the low bits, rounded
    // to nearest even by the FPU (F. Giesen's float_to_half_fast3_rtne);
    static constexpr uint32_t kSubMagic = uint32_t(1 - kBias - kMant + 23 + 127) << 23;
    // decoding: the exponent field shifted into float position, the rebias
    // added to every value, and the extra rebias that moves all-ones to 255.
    static constexpr uint32_t kExpAsF32 = uint32_t(kExpMask) << kShift;
    static constexpr uint32_t kUnbias = uint32_t(127 - kBias) << 23;
    static constexpr uint32_t kInfExtra = uint32_t(255 - ((1 << ExpBits) - 1) - (127 - kBias)) << 23;
};
using Fp16Format = HalfFormat<5>;
using Bf16Format = HalfFormat<8>;

static_assert(Fp16Format::kExpMask == 0x7C00 && Fp16Format::kExpUnit == 0x0400, "fp16");
static_assert(Fp16Format::kMaxAsF32 == 0x477FE000u, "65504.0f");
static_assert(Fp16Format::kMinNormalF32 == 0x38800000u, "2^-14");
static_assert(Fp16Format::kRoundAdd == 0xC8000FFFu, "-112 << 23, + 0xFFF");
static_assert(Fp16Format::kSubMagic == 0x3F000000u, "0.5f");
static_assert(Fp16Format::kExpAsF32 == 0x0F800000u && Fp16Format::kUnbias == 0x38000000u &&
                  Fp16Format::kInfExtra == 0x38000000u,
              "fp16 decoding");
static_assert(Bf16Format::kExpMask == 0x7F80 && Bf16Format::kExpUnit == 0x0080, "bf16");
static_assert(Bf16Format::kMaxAsF32 == 0x7F7F0000u, "largest finite bfloat16");
static_assert(Bf16Format::kRoundAdd == 0x7FFFu && !Bf16Format::kOwnSubnormals, "bf16");
static_assert(Bf16Format::kShift == 16 && Bf16Format::kUnbias == 0 && Bf16Format::kInfExtra == 0,
              "bfloat16 decodes by a shift");

template <class Fmt, class Arch>
struct Half;  // vector body below; Half<Fmt, ScalarArch> is the scalar code

// encode_finite_crc tile by tile: each tile's output read by the CRC while it
// is in L1, instead of a second pass over memory.
template <class H, class Arch>
bool encode_finite_crc_tiles(const float* x, unsigned char* o, size_t n, uint32_t* crc) {
    constexpr size_t kTile = 2048;
    uint32_t c = *crc;
    for (size_t i = 0; i < n; i += kTile) {
        const size_t t = std::min(kTile, n - i);
        if (!H::encode_finite(x + i, o + 2 * i, t)) return false;
        c = Crc<Arch>::crc32c(c, o + 2 * i, 2 * t);
    }
    *crc = c;
    return true;
}

// decode_finite_crc tile by tile: each tile of the payload tested and its
// CRC taken, then decoded, while it is in L1: one read of the payload
// instead of a check pass and a decode pass. Outputs the decode streams
// (kStreamBytes and more) are decoded in one call after the tiles instead:
// streaming saves more traffic than the second read costs. No out: no decode.
template <class H, class Arch>
bool decode_finite_crc_tiles(const unsigned char* p, float* out, size_t n, uint32_t* crc) {
    constexpr size_t kTile = 2048;
    const bool whole = 4 * n >= kStreamBytes;
    uint32_t c = *crc;
    bool ok = true;
    for (size_t i = 0; i < n; i += kTile) {
        const size_t t = std::min(kTile, n - i);
        ok = H::all_finite(p + 2 * i, t) && ok;
        c = Crc<Arch>::crc32c(c, p + 2 * i, 2 * t);
        if (!whole && out) H::decode(p + 2 * i, out + i, t);
    }
    if (whole && out) H::decode(p, out, n);
    *crc = c;
    return ok;
}

template <class Fmt>
struct Half<Fmt, ScalarArch> {
    // float -> 16 bits, round to nearest even; finite values saturate at the
    // largest finite value (clamping first gives the same result as rounding
    // and then saturating).
    static uint16_t encode1(float x) {
        const uint32_t f = bits_of(x);
        const uint32_t sign = (f >> 16) & 0x8000u;
        uint32_t a = f & 0x7FFFFFFFu;
        if (a > Fmt::kMaxAsF32) a = Fmt::kMaxAsF32;
        uint32_t h;
        if (Fmt::kOwnSubnormals && a < Fmt::kMinNormalF32) {
            h = bits_of(float_of(a) + float_of(Fmt::kSubMagic)) - Fmt::kSubMagic;
        } else {
            h = (a + Fmt::kRoundAdd + ((a >> Fmt::kShift) & 1u)) >> Fmt::kShift;
        }
        return uint16_t(h | sign);
    }

    // 16 bits -> float (exact). Inf/NaN keep their payload.
    static float decode1(uint16_t h) {
        if constexpr (!Fmt::kOwnSubnormals) {
            return float_of(uint32_t(h) << 16);  // the steps below, with no-op constants
        } else {
            uint32_t o = uint32_t(h & 0x7FFFu) << Fmt::kShift;
            const uint32_t e = o & Fmt::kExpAsF32;
            o += Fmt::kUnbias;
            if (e == Fmt::kExpAsF32) {
                o += Fmt::kInfExtra;
            } else if (e == 0) {  // subnormal: renormalise through the FPU
                o = bits_of(float_of(o + 0x00800000u) - float_of(Fmt::kMinNormalF32));
            }
            return float_of(o | (uint32_t(h & 0x8000u) << 16));
        }
    }

    static void encode_range(const float* x, unsigned char* out, size_t i0, size_t n) {
        for (size_t i = i0; i < n; ++i) store_le16(out + 2 * i, encode1(x[i]));
    }
    static void decode_range(const unsigned char* in, float* out, size_t i0, size_t n) {
        for (size_t i = i0; i < n; ++i) out[i] = decode1(load_le16(in + 2 * i));
    }
    static void accumulate_range(const unsigned char* in, float alpha, float* acc, size_t i0,
                                 size_t n) {
        for (size_t i = i0; i < n; ++i) {
            const float t = alpha * decode1(load_le16(in + 2 * i));
            acc[i] = acc[i] + t;
        }
    }
    // (h & expmask) + expunit sets bit 15 iff the exponent is all ones.
    static bool all_finite_range(const unsigned char* in, size_t i0, size_t n) {
        unsigned bad = 0;
        for (size_t i = i0; i < n; ++i)
            bad |= (load_le16(in + 2 * i) & unsigned(Fmt::kExpMask)) + unsigned(Fmt::kExpUnit);
        return (bad & 0x8000u) == 0;
    }

    static void encode(const float* x, void* out, size_t n) { encode_range(x, ubytes(out), 0, n); }
    static bool encode_finite_range(const float* x, unsigned char* out, size_t i0, size_t n) {
        uint32_t bad = 0;
        for (size_t i = i0; i < n; ++i) {
            bad |= ((bits_of(x[i]) & 0x7F800000u) + 0x00800000u) & 0x80000000u;
            store_le16(out + 2 * i, encode1(x[i]));
        }
        return bad == 0;
    }
    static bool encode_finite(const float* x, void* out, size_t n) {
        return encode_finite_range(x, ubytes(out), 0, n);
    }
    static bool encode_finite_crc(const float* x, void* out, size_t n, uint32_t* crc) {
        return encode_finite_crc_tiles<Half, ScalarArch>(x, ubytes(out), n, crc);
    }
    static void decode(const void* in, float* out, size_t n) { decode_range(cbytes(in), out, 0, n); }
    static bool decode_finite_crc(const void* in, float* out, size_t n, uint32_t* crc) {
        return decode_finite_crc_tiles<Half, ScalarArch>(cbytes(in), out, n, crc);
    }
    static void accumulate(const void* in, float alpha, float* acc, size_t n) {
        accumulate_range(cbytes(in), alpha, acc, 0, n);
    }
    // y = e + alpha * x (t = alpha*x; y = e + t), out = encode(y), e = y -
    // decode(out), from i0 while y is finite: returns the index of the first
    // NaN / Inf y (n if none), which and whose successors are not written.
    static size_t ef_cast_range(const float* x, float alpha, float* e, unsigned char* out,
                                size_t i0, size_t n) {
        for (size_t i = i0; i < n; ++i) {
            const float t = alpha * x[i];
            const float y = e[i] + t;
            if ((bits_of(y) & 0x7F800000u) == 0x7F800000u) return i;
            const uint16_t h = encode1(y);
            store_le16(out + 2 * i, h);
            e[i] = y - decode1(h);
        }
        return n;
    }
    static size_t ef_cast(const float* x, float alpha, float* e, void* out, size_t n) {
        return ef_cast_range(x, alpha, e, ubytes(out), 0, n);
    }

    static bool all_finite(const void* in, size_t n) {
        constexpr size_t kChunk = 4096;
        for (size_t i = 0; i < n; i += kChunk)
            if (!all_finite_range(cbytes(in), i, (n - i > kChunk) ? i + kChunk : n)) return false;
        return true;
    }
};

#if defined(GW_KERN_XSIMD)
// x86's F16C conversions, for fp16 on the AVX2 and AVX-512 targets (their
// arch files are compiled with -mf16c and dispatch requires the CPU bit).
// vcvtps2ph rounds to nearest even as encode1 does once the magnitude is
// clamped to the largest finite value (which also sends NaN / Inf there, as
// encode1 does); vcvtph2ps is exact except that it quiets a signalling NaN,
// so a vector holding any NaN / Inf half decodes by the integer steps.
template <class Arch>
struct F16c {
    static constexpr bool kOn = false;
    static constexpr bool kRaw = false;  // enc_raw, below
};
#if defined(__F16C__) && defined(__AVX2__) && defined(__x86_64__)
template <>
struct F16c<xsimd::avx2> {
    static constexpr bool kOn = true;
    static constexpr size_t kLanes = 8;
    // 8 floats -> 8 halves (encode1's result for every input).
    static __m128i cvt(__m256 x) {
        const __m256i f = _mm256_castps_si256(x);
        const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF);
        const __m256i a = _mm256_and_si256(f, abs_mask);
        const __m256i c = _mm256_min_epi32(a, _mm256_set1_epi32(int(Fp16Format::kMaxAsF32)));
        const __m256 y = _mm256_castsi256_ps(_mm256_or_si256(c, _mm256_andnot_si256(abs_mask, f)));
        return _mm256_cvtps_ph(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    }
    // 8 finite halves -> floats.
    static __m256 back(__m128i h) { return _mm256_cvtph_ps(h); }
    static void enc(const float* x, unsigned char* o) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(o), cvt(_mm256_loadu_ps(x)));
    }
    // n (a multiple of 8) floats -> halves as F16C rounds them, unclamped;
    // true if no output is NaN / Inf, and then each is cvt's (the two differ
    // only for NaN / Inf in and |x| >= 65520, which F16C takes to Inf).
    static constexpr bool kRaw = true;
    static bool enc_raw(const float* x, unsigned char* o, size_t n) {  // n % 16 == 0
        constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
        __m128i top0 = _mm_setzero_si128(), top1 = top0;
        for (size_t i = 0; i < n; i += 16) {
            const __m128i h0 = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), kRound);
            const __m128i h1 = _mm256_cvtps_ph(_mm256_loadu_ps(x + i + 8), kRound);
            _mm_storeu_si128(reinterpret_cast<__m128i*>(o + 2 * i), h0);
            _mm_storeu_si128(reinterpret_cast<__m128i*>(o + 2 * i + 16), h1);
            top0 = _mm_max_epu16(top0, _mm_and_si128(h0, _mm_set1_epi16(0x7FFF)));
            top1 = _mm_max_epu16(top1, _mm_and_si128(h1, _mm_set1_epi16(0x7FFF)));
        }
        const __m128i inf = _mm_cmpgt_epi16(_mm_max_epu16(top0, top1), _mm_set1_epi16(0x7BFF));
        return _mm_testz_si128(inf, inf) != 0;
    }
    // 8 halves at p -> floats; false (nothing written) if any is NaN / Inf.
    static bool dec(const unsigned char* p, __m256& out) {
        const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        const __m128i e = _mm_and_si128(h, _mm_set1_epi16(0x7C00));
        if (!_mm_testz_si128(_mm_cmpeq_epi16(e, _mm_set1_epi16(0x7C00)), _mm_set1_epi16(-1)))
            return false;
        out = _mm256_cvtph_ps(h);
        return true;
    }
};
#endif
#if defined(__F16C__) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__x86_64__)
template <>
struct F16c<xsimd::avx512bw> {
    static constexpr bool kOn = true;
    static constexpr bool kRaw = false;  // its encode folds the CRC from vrangeps' output
    static constexpr size_t kLanes = 16;
    static __m256i cvt(__m512 x) {
        const __m512i f = _mm512_castps_si512(x);
        const __m512i abs_mask = _mm512_set1_epi32(0x7FFFFFFF);
        const __m512i a = _mm512_and_si512(f, abs_mask);
        const __m512i c = _mm512_min_epi32(a, _mm512_set1_epi32(int(Fp16Format::kMaxAsF32)));
        const __m512 y = _mm512_castsi512_ps(_mm512_or_si512(c, _mm512_andnot_si512(abs_mask, f)));
        return _mm512_cvtps_ph(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    }
    static __m512 back(__m256i h) { return _mm512_cvtph_ps(h); }
    static void enc(const float* x, unsigned char* o) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(o), cvt(_mm512_loadu_ps(x)));
    }
    static bool dec(const unsigned char* p, __m512& out) {
        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
        const __m256i e = _mm256_and_si256(h, _mm256_set1_epi16(0x7C00));
        if (_mm256_cmpeq_epi16_mask(e, _mm256_set1_epi16(0x7C00)) != 0) return false;
        out = _mm512_cvtph_ps(h);
        return true;
    }
};
#endif

template <class Fmt, class Arch>
struct Half : VecBase<Arch> {
    using B = VecBase<Arch>;
    using S = Half<Fmt, ScalarArch>;
    using typename B::F;
    using typename B::H;
    using typename B::I;
    using typename B::O;
    using B::elementwise;
    using B::store_head;
    using B::loadf;
    using B::W;
    using B::WH;

    static I c32(uint32_t v) { return I(int32_t(v)); }

    // The integer steps of S::encode1, lane-wise.
    static I enc(const F& x) {
        const I f = xsimd::bitwise_cast<I>(x);
        const I sign = (f >> 16) & I(0x8000);
        I a = f & I(0x7FFFFFFF);
        a = O::blend(a > c32(Fmt::kMaxAsF32), c32(Fmt::kMaxAsF32), a);
        if constexpr (Fmt::kOwnSubnormals) {
            const I sub = xsimd::bitwise_cast<I>(xsimd::bitwise_cast<F>(a) +
                                                 F(float_of(Fmt::kSubMagic))) -
                          c32(Fmt::kSubMagic);
            const I norm = (a + c32(Fmt::kRoundAdd) + ((a >> Fmt::kShift) & I(1))) >> Fmt::kShift;
            return O::blend(a < c32(Fmt::kMinNormalF32), sub, norm) | sign;
        } else {
            return ((a + c32(Fmt::kRoundAdd) + ((a >> Fmt::kShift) & I(1))) >> Fmt::kShift) | sign;
        }
    }
    // The steps of S::decode1, lane-wise.
    static F dec(const I& h) {
        if constexpr (!Fmt::kOwnSubnormals) {
            return xsimd::bitwise_cast<F>(h << 16);
        } else {
            const I o0 = (h & I(0x7FFF)) << Fmt::kShift;
            const I e = o0 & c32(Fmt::kExpAsF32);
            const I o = o0 + c32(Fmt::kUnbias);
            const I inf = o + c32(Fmt::kInfExtra);
            const I den = xsimd::bitwise_cast<I>(xsimd::bitwise_cast<F>(o + I(0x00800000)) -
                                                 xsimd::bitwise_cast<F>(c32(Fmt::kMinNormalF32)));
            const I r = O::blend(e == c32(Fmt::kExpAsF32), inf, O::blend(e == I(0), den, o));
            return xsimd::bitwise_cast<F>(r | ((h & I(0x8000)) << 16));
        }
    }

    static constexpr bool kHw = F16c<Arch>::kOn && Fmt::kOwnSubnormals;

    static void encode(const float* x, void* out, size_t n) {
        unsigned char* o = ubytes(out);
        size_t i = 0;
        if constexpr (kHw) {
            constexpr size_t L = F16c<Arch>::kLanes;
            for (; i + 2 * L <= n; i += 2 * L) {
                F16c<Arch>::enc(x + i, o + 2 * i);
                F16c<Arch>::enc(x + i + L, o + 2 * (i + L));
            }
        } else {
            for (; i + 2 * W <= n; i += 2 * W)
                O::store_u16x2(enc(loadf(x + i)), enc(loadf(x + i + W)), o + 2 * i);
        }
        S::encode_range(x, o, i, n);
    }
    static bool encode_finite(const float* x, void* out, size_t n) {
        unsigned char* o = ubytes(out);
        if constexpr (kHw && F16c<Arch>::kRaw) {
            // Plain F16C, run by run; a run that gave a NaN / Inf (rare: one
            // was in x, or |x| >= 65520) is converted again by the exact
            // loop. The clamp and finiteness test per vector took twice as
            // long as the conversion (Zen 1, 64K in L2: 34 us against torch's 10).
            constexpr size_t kRun = 256;
            bool ok = true;
            size_t i = 0;
            for (; i + kRun <= n; i += kRun)
                if (!F16c<Arch>::enc_raw(x + i, o + 2 * i, kRun))
                    ok = encode_finite_exact(x, o, i, i + kRun) && ok;
            return encode_finite_exact(x, o, i, n) && ok;
        }
        return encode_finite_exact(x, o, 0, n);
    }
    // Elements i0..n. (Given x + i0 and a constant count of 256 instead, GCC
    // warned of a tail loop it had itself mis-bounded.)
    static bool encode_finite_exact(const float* x, unsigned char* o, size_t i0, size_t n) {
        // (exponent bits + one exponent unit) sets bit 31 iff they are all ones.
        const I expo(0x7F800000), unit(0x00800000);
        I bad(0);
        size_t i = i0;
        for (; i + 2 * W <= n; i += 2 * W) {
            const F x0 = loadf(x + i), x1 = loadf(x + i + W);
            bad = bad | ((xsimd::bitwise_cast<I>(x0) & expo) + unit) |
                  ((xsimd::bitwise_cast<I>(x1) & expo) + unit);
            if constexpr (kHw) {
                using C = F16c<Arch>;
                const auto h0 = C::cvt(x0), h1 = C::cvt(x1);
                std::memcpy(o + 2 * i, &h0, sizeof h0);
                std::memcpy(o + 2 * (i + W), &h1, sizeof h1);
            } else {
                O::store_u16x2(enc(x0), enc(x1), o + 2 * i);
            }
        }
        const bool tail = S::encode_finite_range(x, o, i, n);
        return !xsimd::any(bad < I(0)) && tail;
    }
    static bool encode_finite_crc(const float* x, void* out, size_t n, uint32_t* crc) {
#if defined(GW_KERN_CRC_FOLD)
        if (cpu_has_vpclmulqdq()) return encode_finite_fold(x, ubytes(out), n, crc);
#endif
        return encode_finite_crc_tiles<Half, Arch>(x, ubytes(out), n, crc);
    }
#if defined(GW_KERN_CRC_FOLD)
    // encode_finite_crc with the CRC folded from the conversion's registers
    // (fold_payload), for any n. Finiteness is one vfpclassps per vector into
    // a mask, and the conversion block64: on a core with half-width vector
    // units (Zen 4) the integer clamp and exponent test made this loop
    // ALU-bound, 1.4x slower at 1M. A NaN or Inf makes the bytes unspecified
    // (the call returns false), so block64 need not give encode1's bytes
    // for them.
    static bool encode_finite_fold(const float* x, unsigned char* o, size_t n, uint32_t* crc) {
        __mmask16 bad = 0;
        const bool ok = fold_payload<2>(
            o, n, crc,
            [&](size_t j, __m512i* z) {
                for (size_t r = 0; r < 4; ++r) {
                    __m512 a = _mm512_loadu_ps(x + j + 32 * r);
                    __m512 b = _mm512_loadu_ps(x + j + 32 * r + 16);
                    in_register(a, b);
                    bad |= _mm512_fpclass_ps_mask(a, kFpclassNanInf) |
                           _mm512_fpclass_ps_mask(b, kFpclassNanInf);
                    z[r] = block64(a, b);
                }
            },
            [&](size_t i0, size_t i1) { return S::encode_finite_range(x, o, i0, i1); });
        return ok && bad == 0;
    }
    // 32 finite floats -> their 64 bytes of output (encode1's), for the CRC's
    // folding registers.
    static __m512i block64(__m512 a, __m512 b) {
        if constexpr (kHw) {
            // The smaller magnitude of v and 65504, with v's sign: F16c::cvt's
            // integer clamp for every finite v. (Under MXCSR.DAZ a float32
            // subnormal becomes a zero of its sign: vcvtps2ph rounds it to that.)
            constexpr int kMinAbsSignOfX = 0x2;  // imm8[1:0] = 10, [3:2] = 00
            const __m512 max = _mm512_castsi512_ps(_mm512_set1_epi32(int(Fmt::kMaxAsF32)));
            const auto cvt = [&](__m512 v) {
                return _mm512_cvtps_ph(_mm512_range_ps(v, max, kMinAbsSignOfX),
                                       _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            };
            return _mm512_inserti64x4(_mm512_castsi256_si512(cvt(a)), cvt(b), 1);
        } else {
            // bf16: S::encode1 on the signed bits (the clamped magnitude plus
            // the rounding cannot carry into the sign), whose result is the
            // lane's high half. Integer steps: vrangeps would follow MXCSR.DAZ
            // and zero the subnormals that bfloat16 keeps.
            static_assert(Fmt::kShift == 16, "bf16's rounding");
            const __m512i abs = _mm512_set1_epi32(0x7FFFFFFF);
            const auto rne = [&](__m512 v) {
                const __m512i f = _mm512_castps_si512(v);
                const __m512i c = _mm512_min_epu32(_mm512_and_si512(f, abs),
                                                   _mm512_set1_epi32(int(Fmt::kMaxAsF32)));
                const __m512i y = _mm512_ternarylogic_epi32(abs, c, f, 0xCA);  // abs ? c : f
                const __m512i lsb =
                    _mm512_and_si512(_mm512_srli_epi32(y, 16), _mm512_set1_epi32(1));
                const __m512i add = _mm512_set1_epi32(int(Fmt::kRoundAdd));
                return _mm512_add_epi32(_mm512_add_epi32(y, add), lsb);
            };
            const __m512i high = _mm512_set_epi16(63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41,
                                                  39, 37, 35, 33, 31, 29, 27, 25, 23, 21, 19, 17,
                                                  15, 13, 11, 9, 7, 5, 3, 1);
            return _mm512_permutex2var_epi16(rne(a), high, rne(b));
        }
    }
#endif
    // W halves at p -> floats.
    static F dec_at(const unsigned char* p) {
        if constexpr (kHw) {
            typename F::register_type r;
            if (F16c<Arch>::dec(p, r)) return F(r);
        }
        return dec(O::load_u16(p));
    }
    static void decode(const void* in, float* out, size_t n) {
        const unsigned char* p = cbytes(in);
        const uintptr_t at = reinterpret_cast<uintptr_t>(out);
        if constexpr (Stream<Arch>::kOn) {
            if (n >= kStreamBytes / 4 && at % 4 == 0) {
                size_t i = store_head(out, n);
                S::decode_range(p, out, 0, i);
                for (; i + W <= n; i += W) Stream<Arch>::store(out + i, dec_at(p + 2 * i));
                S::decode_range(p, out, i, n);
                Stream<Arch>::fence();  // streamed lines are ordered before later stores
                return;
            }
        }
        const size_t h = store_head(out, n);
        S::decode_range(p, out, 0, h);
        const size_t i = h + elementwise(n - h, [&](size_t j) {
            dec_at(p + 2 * (h + j)).store_unaligned(out + h + j);
        });
        S::decode_range(p, out, i, n);
    }
    static bool decode_finite_crc(const void* in, float* out, size_t n, uint32_t* crc) {
#if defined(GW_KERN_CRC_FOLD)
        if (cpu_has_vpclmulqdq())
            return out ? decode_finite_fold<true>(cbytes(in), out, n, crc)
                       : decode_finite_fold<false>(cbytes(in), nullptr, n, crc);
#endif
        return decode_finite_crc_tiles<Half, Arch>(cbytes(in), out, n, crc);
    }
#if defined(GW_KERN_CRC_FOLD)
    // decode_finite_crc 128 elements (256 payload bytes) at a time: each
    // register loaded once for the exponent test, the conversion and the
    // CRC's fold (the same registers crc32c_fold would load). Outputs of
    // kStreamBytes and more are streamed after plain stores up to a line.
    // Without kOut, the check and the CRC alone (the exponent test hides
    // under the fold's multiplies: one read instead of a test and a CRC).
    template <bool kOut>
    static bool decode_finite_fold(const unsigned char* p, float* out, size_t n, uint32_t* crc) {
        const uintptr_t at = reinterpret_cast<uintptr_t>(out);
        const bool stream = kOut && 4 * n >= kStreamBytes && at % 4 == 0;
        const size_t head = stream ? std::min(n, (64 - at % 64) % 64 / 4) : 0;
        bool ok = S::all_finite_range(p, 0, head);
        if constexpr (kOut) S::decode_range(p, out, 0, head);
        const uint32_t c = crc32c_hw(*crc, p, 2 * head);
        const __m512i expm = _mm512_set1_epi16(static_cast<short>(Fmt::kExpMask));
        const auto put = [&](float* q, __m512 v) {
            if (stream)
                _mm512_stream_ps(q, v);
            else
                _mm512_storeu_ps(q, v);
        };
        __mmask32 bad = 0;
        CrcFold f;
        size_t j = head;
        for (; n - j >= 128; j += 128) {
            __m512i z[4];
            for (size_t r = 0; r < 4; ++r) {
                z[r] = _mm512_loadu_si512(p + 2 * j + 64 * r);
                bad |= _mm512_cmpeq_epi16_mask(_mm512_and_si512(z[r], expm), expm);
                if constexpr (kOut) {
                    put(out + j + 32 * r, widen(_mm512_castsi512_si256(z[r])));
                    put(out + j + 32 * r + 16, widen(_mm512_extracti64x4_epi64(z[r], 1)));
                }
            }
            if (j == head)
                f.start(c, z[0], z[1], z[2], z[3]);
            else
                f.step(z[0], z[1], z[2], z[3]);
        }
        if (stream) _mm_sfence();  // streamed lines are ordered before later stores
        ok = S::all_finite_range(p, j, n) && ok;
        if constexpr (kOut) S::decode_range(p, out, j, n);
        *crc = j != head ? f.finish(p + 2 * j, 2 * (n - j)) : crc32c_hw(c, p + 2 * j, 2 * (n - j));
        return ok && bad == 0;
    }
    // 16 finite halves -> decode1's floats (vcvtph2ps is exact for them).
    static __m512 widen(__m256i h) {
        if constexpr (Fmt::kOwnSubnormals)
            return _mm512_cvtph_ps(h);
        else
            return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
#endif
    static void accumulate(const void* in, float alpha, float* acc, size_t n) {
        const unsigned char* p = cbytes(in);
        const F va(alpha);
        const size_t h = store_head(acc, n);
        S::accumulate_range(p, alpha, acc, 0, h);
        const size_t i = h + elementwise(n - h, [&](size_t j) {
            const F t = va * dec_at(p + 2 * (h + j));
            (loadf(acc + h + j) + t).store_unaligned(acc + h + j);
        });
        S::accumulate_range(p, alpha, acc, i, n);
    }
    static size_t ef_cast(const float* x, float alpha, float* e, void* out, size_t n) {
        unsigned char* o = ubytes(out);
        const F va(alpha);
        const I inf(0x7F800000);
        size_t i = 0;
        for (; i + 2 * W <= n; i += 2 * W) {
            const F y0 = loadf(e + i) + va * loadf(x + i);
            const F y1 = loadf(e + i + W) + va * loadf(x + i + W);
            const I b0 = xsimd::bitwise_cast<I>(y0) & inf, b1 = xsimd::bitwise_cast<I>(y1) & inf;
            if (xsimd::any((b0 == inf) || (b1 == inf))) break;  // the scalar code stops there
            if constexpr (kHw) {
                using C = F16c<Arch>;
                const auto h0 = C::cvt(y0), h1 = C::cvt(y1);
                std::memcpy(o + 2 * i, &h0, sizeof h0);
                std::memcpy(o + 2 * (i + W), &h1, sizeof h1);
                (y0 - F(C::back(h0))).store_unaligned(e + i);
                (y1 - F(C::back(h1))).store_unaligned(e + i + W);
            } else {
                const I h0 = enc(y0), h1 = enc(y1);
                O::store_u16x2(h0, h1, o + 2 * i);
                (y0 - dec(h0)).store_unaligned(e + i);
                (y1 - dec(h1)).store_unaligned(e + i + W);
            }
        }
        return S::ef_cast_range(x, alpha, e, o, i, n);
    }
    static bool all_finite(const void* in, size_t n) {
        const unsigned char* p = cbytes(in);
        const H expm(static_cast<int16_t>(Fmt::kExpMask));
        const H unit(static_cast<int16_t>(Fmt::kExpUnit));
        const H zero(0);
        size_t i = 0;
        while (n - i >= 4 * WH) {
            const size_t stop = (n - i > 8192) ? i + 8192 : n;
            H bad(0);
            for (; i + 4 * WH <= stop; i += 4 * WH) {
                B::prefetch_ahead(p, 2 * i, 8 * WH);
                unroll<4>([&](auto kk) {
                    const H h = O::load_h(p + 2 * (i + decltype(kk)::value * WH));
                    bad = bad | ((h & expm) + unit);
                });
            }
            if (xsimd::any(bad < zero)) return false;
        }
        return S::all_finite_range(p, i, n);
    }
};
#endif  // GW_KERN_XSIMD

template <class Arch>
constexpr void half_entries(Table& t) {
    using F16 = Half<Fp16Format, Arch>;
    using Bf16 = Half<Bf16Format, Arch>;
    t.f32_to_f16 = &F16::encode;
    t.f16_to_f32 = &F16::decode;
    t.f16_accumulate = &F16::accumulate;
    t.f16_all_finite = &F16::all_finite;
    t.f16_ef_cast = &F16::ef_cast;
    t.bf16_ef_cast = &Bf16::ef_cast;
    t.f16_encode_finite = &F16::encode_finite;
    t.bf16_encode_finite = &Bf16::encode_finite;
    t.f16_encode_finite_crc = &F16::encode_finite_crc;
    t.bf16_encode_finite_crc = &Bf16::encode_finite_crc;
    t.f16_decode_finite_crc = &F16::decode_finite_crc;
    t.bf16_decode_finite_crc = &Bf16::decode_finite_crc;
    t.f32_to_bf16 = &Bf16::encode;
    t.bf16_to_f32 = &Bf16::decode;
    t.bf16_accumulate = &Bf16::accumulate;
    t.bf16_all_finite = &Bf16::all_finite;
}

}  // namespace
}  // namespace gw::kern
