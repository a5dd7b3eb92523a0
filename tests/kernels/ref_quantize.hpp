// Plain scalar reference for the "quantize" kernel family
// (src/kernels/quantize.hpp), written from kernels.hpp's statement of the
// stochastic grid rounding: t = x/delta (pair: (t+1)*0.5), f = floor(t),
// r = t - f, u = (w >> 8) 2^-24, c = f + [u < r] clamped to [lo, hi].
// Revision 2 as the integer comparison it stands for: U = 2^16 b + (w & 0xFFFF)
// (b the element's byte, w its tie word) is uniform on [0, 2^24), and the
// element rounds up iff U < ceil(r * 2^24).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/kernels.hpp"
#include "util/rng.hpp"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF  // the build also passes -ffp-contract=off
#endif

namespace gw::ref {

inline uint32_t max_abs_key(const float* x, size_t n) {
    uint32_t m = 0;
    for (size_t i = 0; i < n; ++i) {
        uint32_t b;
        std::memcpy(&b, &x[i], 4);
        b &= 0x7FFFFFFFu;
        if (b > m) m = b;
    }
    return m;
}

inline float grid_value(int32_t c, float delta, bool pair) {
    const float fc = static_cast<float>(c);
    if (pair) return (fc * 2.0f - 1.0f) * delta;
    return fc * delta;
}

inline void stoch_round(const float* x, size_t n, float delta, int32_t lo, int32_t hi, bool pair,
                        const uint32_t* words, uint32_t* codes, float* residual) {
    for (size_t i = 0; i < n; ++i) {
        float t = x[i] / delta;
        if (pair) t = (t + 1.0f) * 0.5f;
        const float f = std::floor(t);
        const float r = t - f;
        const float u = static_cast<float>(words[i] >> 8) / 16777216.0f;
        int32_t c = static_cast<int32_t>(f) + (u < r ? 1 : 0);
        if (c < lo) c = lo;
        if (c > hi) c = hi;
        codes[i] = static_cast<uint32_t>(c - lo);
        if (residual) residual[i] = x[i] - grid_value(c, delta, pair);
    }
}

inline int32_t grid_index8(float x, float delta, int32_t lo, int32_t hi, bool pair, uint8_t b,
                           const kern::StreamAt& at, uint64_t i) {
    float t = x / delta;
    if (pair) t = (t + 1.0f) * 0.5f;
    const float f = std::floor(t);
    const double ceil_r = std::ceil(static_cast<double>(t - f) * 16777216.0);
    uint32_t w;
    gw::rng_u32(at.seed, at.step, at.tensor, kern::kTieWord + at.first + i, &w, 1);
    const double u = static_cast<double>(b) * 65536.0 + static_cast<double>(w & 0xFFFFu);
    int32_t c = static_cast<int32_t>(f) + (u < ceil_r ? 1 : 0);
    return c < lo ? lo : (c > hi ? hi : c);
}

inline void stoch_round8(const float* x, size_t n, float delta, int32_t lo, int32_t hi, bool pair,
                         const uint8_t* bytes, const kern::StreamAt& at, uint32_t* codes,
                         float* residual) {
    for (size_t i = 0; i < n; ++i) {
        const int32_t c = grid_index8(x[i], delta, lo, hi, pair, bytes[i], at, i);
        codes[i] = static_cast<uint32_t>(c - lo);
        if (residual) residual[i] = x[i] - grid_value(c, delta, pair);
    }
}

// Codes of `width` bits, LSB first: bit b of code i is bit i*width + b of the stream.
inline void pack_codes(const uint32_t* codes, size_t c, unsigned width, uint8_t* out) {
    const size_t bytes = (c * width + 7) / 8;
    std::memset(out, 0, bytes);
    for (size_t i = 0; i < c; ++i)
        for (unsigned b = 0; b < width; ++b)
            if ((codes[i] >> b) & 1u) {
                const size_t bit = i * width + b;
                out[bit / 8] = static_cast<uint8_t>(out[bit / 8] | (1u << (bit % 8)));
            }
}

inline void dequant(const uint32_t* codes, size_t n, float delta, int32_t lo, bool pair,
                    float* out) {
    for (size_t i = 0; i < n; ++i)
        out[i] = grid_value(static_cast<int32_t>(codes[i]) + lo, delta, pair);
}

inline void dequant_accumulate(const uint32_t* codes, size_t n, float delta, int32_t lo,
                               bool pair, float alpha, float* acc) {
    for (size_t i = 0; i < n; ++i) {
        const float t = alpha * grid_value(static_cast<int32_t>(codes[i]) + lo, delta, pair);
        acc[i] = acc[i] + t;
    }
}

}  // namespace gw::ref
