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

// Entries per chunk of ScaleCom's chunk-wise top-k (docs/algorithms.md s.4),
// chunks of `chunk` elements (0 or > n: one), k <= n, by the definition of
// each rule revision: 1, min(c_j, ceil(k c_j / n)); 2 (exactly k),
// floor(k c_j / n), then one more for the k - sum floor chunks with the
// largest fractional parts (k c_j mod n), ties to the lower chunk.
inline std::vector<uint64_t> chunk_shares(uint64_t k, uint64_t n, uint64_t chunk, int revision) {
    const uint64_t c = chunk == 0 || chunk > n ? n : chunk;
    std::vector<uint64_t> share, frac, order;
    uint64_t given = 0;
    for (uint64_t off = 0; off < n; off += c) {
        const uint64_t cj = std::min(c, n - off);
        share.push_back(revision == 1 ? std::min(cj, (k * cj + n - 1) / n) : k * cj / n);
        frac.push_back(k * cj % n);
        order.push_back(order.size());
        given += share.back();
    }
    if (revision == 1) return share;
    std::stable_sort(order.begin(), order.end(),
                     [&](uint64_t a, uint64_t b) { return frac[a] > frac[b]; });
    for (uint64_t r = 0; r < k - given; ++r) ++share[order[r]];
    return share;
}

// Chunk-wise top-k: ref::topk of each chunk with its share.
inline Vec chunk_topk(const Vec& x, uint64_t k, uint64_t chunk, int revision, int dtype) {
    const uint64_t n = x.size(), c = chunk == 0 || chunk > n ? n : chunk;
    const std::vector<uint64_t> share = chunk_shares(k, n, chunk, revision);
    Vec out(n, 0.0f);
    for (uint64_t off = 0, j = 0; off < n; off += c, ++j) {
        const uint64_t cj = std::min(c, n - off);
        const Vec sel = topk(Vec(x.begin() + off, x.begin() + off + cj), share[j], dtype);
        std::copy(sel.begin(), sel.end(), out.begin() + off);
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
