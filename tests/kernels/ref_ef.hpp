// Plain scalar reference for the "ef" kernel family (src/kernels/ef.hpp):
// ef_combine and momentum_update, in the operation order of kernels.hpp, and
// family "ef_sign" (src/kernels/ef_sign.hpp) as what it fuses: p in full,
// then the norms and sign references on it (scaled_sign_blocks: on x). Simple loops, no tricks,
// deliberately independent of the kernel code.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/kernels.hpp"
#include "ref_norms.hpp"
#include "ref_sign.hpp"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF  // the build also passes -ffp-contract=off
#endif

namespace gw::ref {

// ---- error feedback ----
inline void ef_combine(const float* g, const float* m, const float* e, kern::EfCoef c, float* p,
                       size_t n) {
    for (size_t i = 0; i < n; ++i) {
        const float t1 = c.mu * m[i];
        const float t2 = c.kg * g[i];
        const float m1 = t1 + t2;
        const float t3 = c.nu * m1;
        const float t4 = c.kp * g[i];
        const float t5 = t3 + t4;
        const float t6 = c.r * e[i];
        p[i] = t5 + t6;
    }
}

inline void momentum_update(float* m, const float* g, float mu, float kg, size_t n) {
    for (size_t i = 0; i < n; ++i) {
        const float t1 = mu * m[i];
        const float t2 = kg * g[i];
        m[i] = t1 + t2;
    }
}

// ---- error feedback fused with the scaled sign ----
inline void ef_sum_abs_lanes(const float* g, const float* m, const float* e, kern::EfCoef c,
                             size_t n, double lanes[16]) {
    std::vector<float> p(n);
    ef_combine(g, m, e, c, p.data(), n);
    for (size_t i = 0; i < n; ++i)
        lanes[i % 16] = lanes[i % 16] + std::fabs(static_cast<double>(p[i]));
}

// e_out / m_out: n floats or null; they do not alias the inputs here.
inline void ef_sign_step(const float* g, const float* m, const float* e, kern::EfCoef c, float s,
                         size_t n, uint8_t* bits, float* e_out, float* m_out) {
    std::vector<float> p(n), r(n), m1(m, m + n);
    ef_combine(g, m, e, c, p.data(), n);
    sign_pack_residual(p.data(), n, s, bits, r.data());
    momentum_update(m1.data(), g, c.mu, c.kg, n);
    for (size_t i = 0; i < n; ++i) {
        if (e_out) e_out[i] = r[i];
        if (m_out) m_out[i] = m1[i];
    }
}

// e settled by sp first (sign_pack_residual), then p: its bits, p itself
// into e_out, m1 into m_out (or null), |p| into lanes.
inline void ef_sign_defer(const float* g, const float* m, const float* e, kern::EfCoef c,
                          float sp, size_t n, uint8_t* bits, float* e_out, float* m_out,
                          double lanes[16]) {
    std::vector<float> et(n), p(n), m1(m, m + n);
    std::vector<uint8_t> discard(sign_bytes(n) + 1);
    sign_pack_residual(e, n, sp, discard.data(), et.data());
    ef_combine(g, m, et.data(), c, p.data(), n);
    sign_pack(p.data(), n, bits);
    momentum_update(m1.data(), g, c.mu, c.kg, n);
    for (size_t i = 0; i < n; ++i) {
        e_out[i] = p[i];
        if (m_out) m_out[i] = m1[i];
        lanes[i % 16] = lanes[i % 16] + std::fabs(static_cast<double>(p[i]));
    }
}

// Fixed blocks of d in one pass: each block as ef_sign_defer (sp = 0) with
// lanes from zero, its scale s = fold / len to float, little-endian at
// scales + 4 b, its residual by sign_pack_residual, its bits zero if s == 0.
// False at the first block whose sum is not finite.
inline bool ef_sign_blocks(const float* g, const float* m, const float* e, kern::EfCoef c,
                           size_t d, size_t n, uint8_t* bits, uint8_t* scales, float* e_out,
                           float* m_out) {
    for (size_t i = 0; i < n; i += d) {
        const size_t len = n - i < d ? n - i : d;
        double lanes[16] = {0.0};
        std::vector<float> p(len), m1(len);
        ef_sign_defer(g + i, m + i, e + i, c, 0.0f, len, bits + i / 8, p.data(), m1.data(), lanes);
        const double l1 = fold_lanes(lanes);
        if (!std::isfinite(l1)) return false;
        const float s = static_cast<float>(l1 / static_cast<double>(len));
        uint32_t u;
        std::memcpy(&u, &s, 4);
        for (int b = 0; b < 4; ++b) scales[4 * (i / d) + b] = uint8_t(u >> (8 * b));
        sign_pack_residual(p.data(), len, s, bits + i / 8, e_out + i);
        if (s == 0.0f)
            for (size_t b = 0; b < sign_bytes(len); ++b) bits[i / 8 + b] = 0;
        if (m_out)
            for (size_t k = 0; k < len; ++k) m_out[i + k] = m1[k];
    }
    return true;
}

// The scaled-sign codec's encode of fixed blocks (docs/algorithms.md s.1):
// scale_b = ||x_b||_1 / d_b from sum_abs, little-endian at scales + 4 b, the
// block's sign bits (all clear where the scale is 0) and, if e is not null,
// e_b = x_b - C(x_b). False at the first block whose L1 norm is not finite,
// the blocks before it written.
inline bool scaled_sign_blocks(const float* x, size_t d, size_t n, uint8_t* bits, uint8_t* scales,
                               float* e) {
    for (size_t i = 0, b = 0; i < n; i += d, ++b) {
        const size_t len = n - i < d ? n - i : d;
        const double l1 = sum_abs(x + i, len);
        if (!std::isfinite(l1)) return false;
        const float s = static_cast<float>(l1 / static_cast<double>(len));
        uint32_t u;
        std::memcpy(&u, &s, 4);
        for (int k = 0; k < 4; ++k) scales[4 * b + k] = uint8_t(u >> (8 * k));
        std::vector<float> r(len);
        sign_pack_residual(x + i, len, s, bits + i / 8, r.data());
        if (e) std::memcpy(e + i, r.data(), len * sizeof(float));
        if (s == 0.0f)
            for (size_t k = 0; k < sign_bytes(len); ++k) bits[i / 8 + k] = 0;
    }
    return true;
}

}  // namespace gw::ref
