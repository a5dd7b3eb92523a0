// Plain scalar reference for the "half" kernel family (src/kernels/half.hpp):
// fp16 / bfloat16 casts, accumulate and all_finite. Deliberately independent
// of the kernels' bit manipulation: the conversions go through double
// arithmetic (frexp/ldexp/nearbyint), so kernel and reference check each other.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF  // the build also passes -ffp-contract=off
#endif

namespace gw::ref {

// ---- half / bfloat16: little-endian 16-bit payloads ----
inline uint16_t get_u16(const void* p, size_t i) {
    const unsigned char* b = static_cast<const unsigned char*>(p) + 2 * i;
    return static_cast<uint16_t>(b[0] | (b[1] << 8));
}
inline void put_u16(void* p, size_t i, uint16_t v) {
    unsigned char* b = static_cast<unsigned char*>(p) + 2 * i;
    b[0] = static_cast<unsigned char>(v & 0xFF);
    b[1] = static_cast<unsigned char>(v >> 8);
}

// Round the finite value a >= 0 to a multiple of the spacing of a binary
// floating-point format with `mant_bits` stored mantissa bits and smallest
// normal exponent `min_exp` (2^min_exp), ties to even. Returns the rounded
// value (exact in double).
inline double round_to_format(double a, int mant_bits, int min_exp) {
    int e = 0;
    (void)std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1)
    int exponent = e - 1;     // 2^exponent <= a < 2^(exponent+1)
    if (a == 0.0 || exponent < min_exp) exponent = min_exp;  // subnormal spacing
    const double spacing = std::ldexp(1.0, exponent - mant_bits);
    // a / spacing is exact (power of two scaling); nearbyint rounds to even.
    return std::nearbyint(a / spacing) * spacing;
}

// Encode the value v (exactly representable, 0 <= v <= max) of a binary
// format with the given exponent bias as its bits without sign.
inline uint32_t encode_exact(double v, int mant_bits, int bias) {
    const int min_exp = 1 - bias;
    if (v < std::ldexp(1.0, min_exp))  // subnormal: biased exponent 0
        return static_cast<uint32_t>(v / std::ldexp(1.0, min_exp - mant_bits));
    int e = 0;
    (void)std::frexp(v, &e);
    const int exponent = e - 1;
    const double mant = v / std::ldexp(1.0, exponent - mant_bits) - std::ldexp(1.0, mant_bits);
    return (static_cast<uint32_t>(exponent + bias) << mant_bits) | static_cast<uint32_t>(mant);
}

constexpr double kF16Max = 65504.0;                          // (2 - 2^-10) * 2^15
constexpr double kBf16Max = 3.3895313892515354759047080e38;  // (2 - 2^-7) * 2^127

// Round to nearest even; a finite value beyond the largest finite half
// (including one that would round up to infinity) becomes +-65504.
inline uint16_t f32_to_f16(float x) {
    const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
    const double a = std::fabs(static_cast<double>(x));
    double r = (a >= kF16Max) ? kF16Max : round_to_format(a, 10, -14);
    if (r > kF16Max) r = kF16Max;
    return static_cast<uint16_t>(sign | encode_exact(r, 10, 15));
}

inline float f16_to_f32(uint16_t h) {
    const bool neg = (h & 0x8000) != 0;
    const int exp = (h >> 10) & 0x1F;
    const int mant = h & 0x3FF;
    if (exp == 0x1F) {  // infinity / NaN: all-ones float exponent, payload kept
        const uint32_t bits = (neg ? 0x80000000u : 0u) | 0x7F800000u | (uint32_t(mant) << 13);
        float f;
        std::memcpy(&f, &bits, 4);
        return f;
    }
    const double v = (exp == 0) ? std::ldexp(static_cast<double>(mant), -24)
                                : std::ldexp(static_cast<double>(1024 + mant), exp - 25);
    return static_cast<float>(neg ? -v : v);
}

inline uint16_t f32_to_bf16(float x) {
    const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
    const double a = std::fabs(static_cast<double>(x));
    double r = (a >= kBf16Max) ? kBf16Max : round_to_format(a, 7, -126);
    if (r > kBf16Max) r = kBf16Max;
    return static_cast<uint16_t>(sign | encode_exact(r, 7, 127));
}

inline float bf16_to_f32(uint16_t h) {
    const bool neg = (h & 0x8000) != 0;
    const int exp = (h >> 7) & 0xFF;
    const int mant = h & 0x7F;
    if (exp == 0xFF) {
        const uint32_t bits = (neg ? 0x80000000u : 0u) | 0x7F800000u | (uint32_t(mant) << 16);
        float f;
        std::memcpy(&f, &bits, 4);
        return f;
    }
    const double v = (exp == 0) ? std::ldexp(static_cast<double>(mant), -133)
                                : std::ldexp(static_cast<double>(128 + mant), exp - 134);
    return static_cast<float>(neg ? -v : v);
}

inline void f32_to_f16(const float* x, void* out, size_t n) {
    for (size_t i = 0; i < n; ++i) put_u16(out, i, f32_to_f16(x[i]));
}
inline void f16_to_f32(const void* in, float* out, size_t n) {
    for (size_t i = 0; i < n; ++i) out[i] = f16_to_f32(get_u16(in, i));
}
inline void f16_accumulate(const void* in, float alpha, float* acc, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        const float t = alpha * f16_to_f32(get_u16(in, i));
        acc[i] = acc[i] + t;
    }
}
inline bool f16_all_finite(const void* in, size_t n) {
    for (size_t i = 0; i < n; ++i)
        if (((get_u16(in, i) >> 10) & 0x1F) == 0x1F) return false;
    return true;
}
// y = e + alpha * x, out = f32_to_f16(y), e = y - out while y is finite;
// the index of the first NaN / Inf y (n if none), nothing written from it.
inline size_t f16_ef_cast(const float* x, float alpha, float* e, void* out, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        const float t = alpha * x[i];
        const float y = e[i] + t;
        if (!std::isfinite(y)) return i;
        put_u16(out, i, f32_to_f16(y));
        e[i] = y - f16_to_f32(get_u16(out, i));
    }
    return n;
}
inline void f32_to_bf16(const float* x, void* out, size_t n) {
    for (size_t i = 0; i < n; ++i) put_u16(out, i, f32_to_bf16(x[i]));
}
inline void bf16_to_f32(const void* in, float* out, size_t n) {
    for (size_t i = 0; i < n; ++i) out[i] = bf16_to_f32(get_u16(in, i));
}
inline size_t bf16_ef_cast(const float* x, float alpha, float* e, void* out, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        const float t = alpha * x[i];
        const float y = e[i] + t;
        if (!std::isfinite(y)) return i;
        put_u16(out, i, f32_to_bf16(y));
        e[i] = y - bf16_to_f32(get_u16(out, i));
    }
    return n;
}
inline void bf16_accumulate(const void* in, float alpha, float* acc, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        const float t = alpha * bf16_to_f32(get_u16(in, i));
        acc[i] = acc[i] + t;
    }
}
inline bool bf16_all_finite(const void* in, size_t n) {
    for (size_t i = 0; i < n; ++i)
        if (((get_u16(in, i) >> 7) & 0xFF) == 0xFF) return false;
    return true;
}

}  // namespace gw::ref
