// Family "ef" (error feedback): the fused combine ef_combine and
// momentum_update, in the exact operation order of kernels.hpp.
// Scalar code, vector body, table entries. combine() is the one place the
// combine's arithmetic is written; ef_sign.hpp fuses it with the sign step.
#pragma once

#include "kernels/common.hpp"

namespace gw::kern {
namespace {

template <class Arch>
struct Ef;  // vector body below; Ef<ScalarArch> is the scalar code

template <>
struct Ef<ScalarArch> {
    // ef_combine's p, and m1 (the updated momentum) on the way.
    static float combine(float g, float m, float e, const EfCoef& c, float* m1) {
        const float t1 = c.mu * m;
        const float t2 = c.kg * g;
        *m1 = t1 + t2;
        const float t3 = c.nu * *m1;
        const float t4 = c.kp * g;
        const float t5 = t3 + t4;
        const float t6 = c.r * e;
        return t5 + t6;
    }
    static void ef_combine_range(const float* g, const float* m, const float* e, EfCoef c,
                                 float* p, size_t i0, size_t n) {
        float m1;
        for (size_t i = i0; i < n; ++i) p[i] = combine(g[i], m[i], e[i], c, &m1);
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
};

#if defined(GW_KERN_XSIMD)
template <class Arch>
struct Ef : VecBase<Arch> {
    using B = VecBase<Arch>;
    using S = Ef<ScalarArch>;
    using typename B::F;
    using B::elementwise;
    using B::loadf;

    struct Coef {
        F mu, kg, nu, kp, r;
        explicit Coef(const EfCoef& c) : mu(c.mu), kg(c.kg), nu(c.nu), kp(c.kp), r(c.r) {}
    };
    static F combine(const F& g, const F& m, const F& e, const Coef& c, F& m1) {
        const F t1 = c.mu * m;
        const F t2 = c.kg * g;
        m1 = t1 + t2;
        const F t3 = c.nu * m1;
        const F t4 = c.kp * g;
        const F t5 = t3 + t4;
        const F t6 = c.r * e;
        return t5 + t6;
    }

    static void ef_combine(const float* g, const float* m, const float* e, EfCoef c, float* p,
                           size_t n) {
        const Coef k(c);
        const size_t i = elementwise(n, [&](size_t j) {
            F m1;
            combine(loadf(g + j), loadf(m + j), loadf(e + j), k, m1).store_unaligned(p + j);
        });
        S::ef_combine_range(g, m, e, c, p, i, n);
    }

    static void momentum_update(float* m, const float* g, float mu, float kg, size_t n) {
        const F vmu(mu), vkg(kg);
        const size_t i = elementwise(n, [&](size_t j) {
            const F t1 = vmu * loadf(m + j);
            const F t2 = vkg * loadf(g + j);
            (t1 + t2).store_unaligned(m + j);
        });
        S::momentum_update_range(m, g, mu, kg, i, n);
    }
};
#endif  // GW_KERN_XSIMD

template <class Arch>
constexpr void ef_entries(Table& t) {
    using K = Ef<Arch>;
    t.ef_combine = &K::ef_combine;
    t.momentum_update = &K::momentum_update;
}

}  // namespace
}  // namespace gw::kern
