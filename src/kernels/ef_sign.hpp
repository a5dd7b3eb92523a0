// Family "ef_sign": the error-feedback combine fused with what the scaled-sign
// step does to its result p, so p is never stored, not even to a tile in
// cache: ef_sum_abs_lanes (pass 1: |p| into the 16 sum_abs lanes) and
// ef_sign_step (pass 2: sign bits, residual, momentum). Per element the same
// operations as ef_combine followed by sum_abs_lanes / sign_pack_residual /
// momentum_update (kernels.hpp), so the same bits. Scalar code, vector body,
// table entries.
#pragma once

#include "kernels/ef.hpp"

namespace gw::kern {
namespace {

template <class Arch>
struct EfSign;  // vector body below; EfSign<ScalarArch> is the scalar code

template <>
struct EfSign<ScalarArch> {
    using E = Ef<ScalarArch>;
    // i0 must be a multiple of 16 (lane i0 % 16 == 0).
    static void sum_abs_range(const float* g, const float* m, const float* e, EfCoef c,
                              size_t i0, size_t n, double* lanes) {
        for (size_t i = i0; i < n; ++i) {
            float m1;
            const float p = E::combine(g[i], m[i], e[i], c, &m1);
            lanes[i & 15] += double(float_of(bits_of(p) & 0x7FFFFFFFu));  // |p|
        }
    }
    static void ef_sum_abs_lanes(const float* g, const float* m, const float* e, EfCoef c,
                                 size_t n, double* lanes) {
        sum_abs_range(g, m, e, c, 0, n, lanes);
    }

    // i0 must be a multiple of 8. Writes bytes i0/8 .. ceil(n/8)-1.
    static void sign_step_range(const float* g, const float* m, const float* e, EfCoef c,
                                float s, size_t i0, size_t n, uint8_t* bits, float* e_out,
                                float* m_out) {
        const float neg = -s;
        for (size_t i = i0; i < n; i += 8) {
            const size_t k_end = (n - i < 8) ? n - i : 8;
            unsigned b = 0;
            for (size_t k = 0; k < k_end; ++k) {
                float m1;
                const float p = E::combine(g[i + k], m[i + k], e[i + k], c, &m1);
                const bool lt = p < 0.0f;
                b |= unsigned(lt) << k;
                if (e_out) e_out[i + k] = p - (lt ? neg : s);
                if (m_out) m_out[i + k] = m1;
            }
            bits[i >> 3] = uint8_t(b);
        }
    }
    static void ef_sign_step(const float* g, const float* m, const float* e, EfCoef c, float s,
                             size_t n, uint8_t* bits, float* e_out, float* m_out) {
        sign_step_range(g, m, e, c, s, 0, n, bits, e_out, m_out);
    }
};

#if defined(GW_KERN_XSIMD)
template <class Arch>
struct EfSign : VecBase<Arch> {
    using B = VecBase<Arch>;
    using S = EfSign<ScalarArch>;
    using typename B::BF;
    using typename B::F;
    using typename B::O;
    using B::loadf;
    using B::W;
    using E = Ef<Arch>;
    using Coef = typename E::Coef;

    // Norms::sum_lanes and Sign::sign_pack_residual with p computed in
    // registers.
    static void ef_sum_abs_lanes(const float* g, const float* m, const float* e, EfCoef c,
                                 size_t n, double* lanes) {
        const Coef k(c);
        const size_t i = B::template add_lanes16<false>(n, lanes, [&](size_t j) {
            F m1;
            return F(xsimd::abs(E::combine(loadf(g + j), loadf(m + j), loadf(e + j), k, m1)));
        });
        S::sum_abs_range(g, m, e, c, i, n, lanes);
    }

    // The residual and momentum stores only where asked for (e_out, m_out may
    // equal e, m: every vector is loaded before it is stored).
    template <bool WithE, bool WithM>
    static size_t sign_step_body(const float* g, const float* m, const float* e, EfCoef c,
                                 float s, size_t n, uint8_t* bits, float* e_out, float* m_out) {
        const Coef k(c);
        const F zero(0.0f), pos(s), neg(-s);
        return B::pack_bits(n, bits, [&](size_t j) {
            F m1;
            const F p = E::combine(loadf(g + j), loadf(m + j), loadf(e + j), k, m1);
            const BF lt = p < zero;
            if constexpr (WithE) (p - xsimd::select(lt, neg, pos)).store_unaligned(e_out + j);
            if constexpr (WithM) m1.store_unaligned(m_out + j);
            return O::movemask(lt);
        });
    }
    static void ef_sign_step(const float* g, const float* m, const float* e, EfCoef c, float s,
                             size_t n, uint8_t* bits, float* e_out, float* m_out) {
        size_t i;
        if (e_out && m_out)
            i = sign_step_body<true, true>(g, m, e, c, s, n, bits, e_out, m_out);
        else if (e_out)
            i = sign_step_body<true, false>(g, m, e, c, s, n, bits, e_out, m_out);
        else if (m_out)
            i = sign_step_body<false, true>(g, m, e, c, s, n, bits, e_out, m_out);
        else
            i = sign_step_body<false, false>(g, m, e, c, s, n, bits, e_out, m_out);
        S::sign_step_range(g, m, e, c, s, i, n, bits, e_out, m_out);
    }
};
#endif  // GW_KERN_XSIMD

template <class Arch>
constexpr void ef_sign_entries(Table& t) {
    using K = EfSign<Arch>;
    t.ef_sum_abs_lanes = &K::ef_sum_abs_lanes;
    t.ef_sign_step = &K::ef_sign_step;
}

}  // namespace
}  // namespace gw::kern
