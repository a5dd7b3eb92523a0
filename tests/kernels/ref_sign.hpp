// Plain scalar reference for the "sign" kernel family (src/kernels/sign.hpp),
// from the semantics in src/kernels/kernels.hpp and docs/algorithms.md section 1
// (sign(0) = sign(-0) = +1). Simple loops, deliberately independent of the
// kernel code.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF  // the build also passes -ffp-contract=off
#endif

namespace gw::ref {

// ---- sign bits: bit (i & 7) of byte (i >> 3) is 1 iff x[i] < 0 ----
inline size_t sign_bytes(size_t n) { return (n + 7) / 8; }

inline bool get_bit(const uint8_t* bits, size_t i) { return ((bits[i / 8] >> (i % 8)) & 1) != 0; }

inline void sign_pack(const float* x, size_t n, uint8_t* bits) {
    for (size_t b = 0; b < sign_bytes(n); ++b) bits[b] = 0;
    for (size_t i = 0; i < n; ++i)
        if (x[i] < 0.0f) bits[i / 8] = static_cast<uint8_t>(bits[i / 8] | (1u << (i % 8)));
}

// e may equal x: the bits are taken first, and e[i] is written after x[i] is read.
inline void sign_pack_residual(const float* x, size_t n, float s, uint8_t* bits, float* e) {
    sign_pack(x, n, bits);
    for (size_t i = 0; i < n; ++i) {
        const float xi = x[i];
        const float q = (xi < 0.0f) ? -s : s;
        e[i] = xi - q;
    }
}

inline void sign_unpack(const uint8_t* bits, size_t n, float s, float* out) {
    for (size_t i = 0; i < n; ++i) out[i] = get_bit(bits, i) ? -s : s;
}

inline void sign_accumulate(const uint8_t* bits, size_t n, float v, float* acc) {
    for (size_t i = 0; i < n; ++i) {
        const float q = get_bit(bits, i) ? -v : v;
        acc[i] = acc[i] + q;
    }
}

}  // namespace gw::ref
