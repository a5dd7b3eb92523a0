// Plain scalar references for docs/algorithms.md sections 1-3, written from the
// equations (with the arithmetic order the docs fix so results are exact).
// No SIMD, no library code: tests compare the library against these.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "reference.hpp"

namespace ref {

using Vec = std::vector<float>;

// Section 1: C_B(v) = [||v_b||_1/d_b * sign(v_b)]_b with sign(0) = +1.
// block = 0 means one block for the whole tensor.
inline Vec scaled_sign(const Vec& v, uint32_t block) {
    Vec out(v.size());
    const size_t bs = block ? block : v.size();
    for (size_t start = 0; start < v.size(); start += bs) {
        const size_t d = std::min(bs, v.size() - start);
        // ||v_b||_1 in double, in the documented fixed order (tests/reference.hpp).
        const double l1 = gw::ref::sum_abs(v.data() + start, d);
        const float s = static_cast<float>(l1 / static_cast<double>(d));
        for (size_t i = 0; i < d; ++i) out[start + i] = v[start + i] < 0.0f ? -s : s;
    }
    return out;
}

// 16-bit casts: round to nearest even, saturating (reference.hpp), then back.
inline Vec fp16(const Vec& v) {
    Vec out(v.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = gw::ref::f16_to_f32(gw::ref::f32_to_f16(v[i]));
    return out;
}
inline Vec bf16(const Vec& v) {
    Vec out(v.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = gw::ref::bf16_to_f32(gw::ref::f32_to_bf16(v[i]));
    return out;
}

// Top-k by magnitude (docs/algorithms.md s.8), from a full stable sort: the
// k largest |v_i|, ties to the lower index, values stored as `dtype` (f32 =
// 1, f16 = 2, bf16 = 3), everything else 0. Decodes what the codec sends.
inline Vec topk(const Vec& v, uint64_t k, int dtype) {
    std::vector<size_t> order(v.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return std::fabs(v[a]) > std::fabs(v[b]); });
    Vec out(v.size(), 0.0f);
    for (uint64_t j = 0; j < k && j < v.size(); ++j) {
        const float x = v[order[j]];
        out[order[j]] = dtype == 2   ? gw::ref::f16_to_f32(gw::ref::f32_to_f16(x))
                        : dtype == 3 ? gw::ref::bf16_to_f32(gw::ref::f32_to_bf16(x))
                                     : x;
        if (out[order[j]] == 0.0f) out[order[j]] = 0.0f;  // -0 is not stored: decodes to +0
    }
    return out;
}

inline Vec sign(const Vec& v) {
    Vec out(v.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = v[i] < 0.0f ? -1.0f : 1.0f;
    return out;
}

enum class Momentum { None, Nesterov, Signum };

// Sections 2-3 worker: m = mu m + g (Nesterov) or mu m + (1-mu) g (signum);
// p = mu m + g + r e (Nesterov), m + r e (signum), g + r e (none);
// D = C(p); e = p - D; r = lr_prev / lr.
struct Worker {
    Momentum kind;
    float mu;
    bool ef;
    Vec m, e;
    float lr_prev = 0.0f;

    Worker(size_t n, Momentum k, float mu_, bool ef_) : kind(k), mu(mu_), ef(ef_), m(n), e(n) {}

    // Returns p for this step; `compress` maps p to D.
    template <class C>
    Vec step(const Vec& g, float lr, C compress, Vec* p_out = nullptr) {
        const float r = ef ? lr_prev / lr : 0.0f;
        Vec p(g.size());
        for (size_t i = 0; i < g.size(); ++i) {
            float ei = ef ? r * e[i] : 0.0f;
            switch (kind) {
                case Momentum::Nesterov: {
                    const float m1 = mu * m[i] + g[i];
                    m[i] = m1;
                    p[i] = (mu * m1 + g[i]) + ei;
                    break;
                }
                case Momentum::Signum: {
                    const float m1 = mu * m[i] + (1.0f - mu) * g[i];
                    m[i] = m1;
                    p[i] = m1 + ei;
                    break;
                }
                case Momentum::None: p[i] = g[i] + ei; break;
            }
        }
        Vec d = compress(p);
        if (ef)
            for (size_t i = 0; i < g.size(); ++i) e[i] = p[i] - d[i];
        lr_prev = lr;
        if (p_out) *p_out = p;
        return d;
    }
};

// Server: q = (1/M) sum_i D_i (summed from +0 in push order) + r e_s;
// D = C(q); e_s = q - D.
struct Server {
    bool ef;
    Vec e;
    float lr_prev = 0.0f;
    Server(size_t n, bool ef_) : ef(ef_), e(n) {}

    template <class C>
    Vec step(const std::vector<Vec>& pushed, float lr, C compress, Vec* q_out = nullptr) {
        const size_t n = e.size();
        const float w = 1.0f / static_cast<float>(pushed.size());
        Vec q(n, 0.0f);
        for (const Vec& d : pushed)
            for (size_t i = 0; i < n; ++i) q[i] = q[i] + w * d[i];
        const float r = ef ? lr_prev / lr : 0.0f;
        for (size_t i = 0; i < n; ++i) q[i] = q[i] + (ef ? r * e[i] : 0.0f);
        Vec d = compress(q);
        if (ef)
            for (size_t i = 0; i < n; ++i) e[i] = q[i] - d[i];
        lr_prev = lr;
        if (q_out) *q_out = q;
        return d;
    }
};

}  // namespace ref
