// Kernel family "ef" (src/kernels/ef.hpp) on every SIMD target, bit for bit
// against ref_ef.hpp: ef_combine, momentum_update.
#include "fixture.hpp"
#include "ref_ef.hpp"

namespace gw::ktest {
namespace {

// ---- error feedback ----
const EfCoef kCoefs[] = {
    {0.9f, 1.0f, 0.9f, 1.0f, 1.0f},      // Nesterov (Alg. 4)
    {0.9f, 0.1f, 1.0f, 0.0f, 0.5f},      // signum-style momentum, lr change
    {0.0f, 0.0f, 0.0f, 1.0f, 0.7f},      // no momentum: p = g + r e (server's q)
    {0.37f, 1.3f, -0.2f, 2.5f, 1e-3f},   // arbitrary
    {0.0f, 0.0f, 0.0f, 1.0f, 0.0f},      // error feedback off
};

TEST_P(KernelTest, EfCombine) {
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        const auto& g = input(c.dist, c.n, 0);
        const auto& m = input(c.dist, c.n, 1);
        const auto& e = input(c.dist, c.n, 2);
        Exact gi(g.data(), 4 * c.n, 4 * c.fmis), mi(m.data(), 4 * c.n, 4 * c.fmis),
            ei(e.data(), 4 * c.n, 4 * c.fmis);
        std::vector<float> want(c.n + 1);
        for (const EfCoef& k : kCoefs) {
            Guarded p(4 * c.n, 4 * c.fmis);
            t_->ef_combine(gi.f(), mi.f(), ei.f(), k, p.f(), c.n);
            ref::ef_combine(g.data(), m.data(), e.data(), k, want.data(), c.n);
            EXPECT_TRUE(same_floats(p.f(), want.data(), c.n)) << "mu=" << k.mu << " r=" << k.r;
            EXPECT_TRUE(p.guards_intact());
            // The server passes one buffer as g, m and e.
            Guarded q(4 * c.n, 4 * c.fmis);
            t_->ef_combine(gi.f(), gi.f(), gi.f(), k, q.f(), c.n);
            ref::ef_combine(g.data(), g.data(), g.data(), k, want.data(), c.n);
            EXPECT_TRUE(same_floats(q.f(), want.data(), c.n)) << "g == m == e";
            EXPECT_TRUE(q.guards_intact());
        }
        EXPECT_TRUE(gi.same_as(g.data()) && mi.same_as(m.data()) && ei.same_as(e.data()))
            << "an input was modified";
        if (HasFailure()) return;
    }
}

TEST_P(KernelTest, MomentumUpdate) {
    const float coefs[][2] = {{0.9f, 1.0f}, {0.9f, 0.1f}, {0.0f, 1.0f}, {0.5f, -2.25f}};
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        const auto& g = input(c.dist, c.n, 0);
        const auto& m0 = input(c.dist, c.n, 1);
        Exact gi(g.data(), 4 * c.n, 4 * c.fmis);
        for (const auto& k : coefs) {
            Guarded m(4 * c.n, 4 * c.fmis);
            m.fill_from(m0.data());
            std::vector<float> want(m0);
            t_->momentum_update(m.f(), gi.f(), k[0], k[1], c.n);
            ref::momentum_update(want.data(), g.data(), k[0], k[1], c.n);
            EXPECT_TRUE(same_floats(m.f(), want.data(), c.n)) << "mu=" << k[0] << " kg=" << k[1];
            EXPECT_TRUE(m.guards_intact());
        }
        EXPECT_TRUE(gi.same_as(g.data()));
        if (HasFailure()) return;
    }
}

}  // namespace
}  // namespace gw::ktest
