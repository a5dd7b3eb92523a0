// Kernel family "scatter" (src/kernels/scatter.hpp) on every SIMD target, bit
// for bit against ref_scatter.hpp: gather, scatter_add, scatter_zero and
// scatter_sub_div, at position sets of several densities and at null
// positions (0..k-1), on misaligned buffers with guards around every output.
#include <random>

#include "fixture.hpp"
#include "ref_scatter.hpp"

namespace gw::ktest {
namespace {

// Strictly increasing positions in [0, n): a share `density` of them, and
// always the last element when n > 0 and density is 1.
std::vector<uint32_t> positions(size_t n, double density, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<uint32_t> idx;
    for (size_t i = 0; i < n; ++i)
        if (density >= 1.0 || std::uniform_real_distribution<double>(0, 1)(rng) < density)
            idx.push_back(static_cast<uint32_t>(i));
    return idx;
}

struct Sets {
    std::vector<uint32_t> idx;
    bool null;  // the kernels get nullptr: positions 0..k-1
};

std::vector<Sets> sets_for(size_t n) {
    std::vector<Sets> out;
    for (double d : {0.0, 0.01, 0.3, 1.0}) out.push_back({positions(n, d, n * 7 + 1), false});
    std::vector<uint32_t> all(n / 2);
    out.push_back({all, true});  // the first half, by null positions
    return out;
}

TEST_P(KernelTest, GatherAndScatterAdd) {
    const float alphas[] = {1.0f, -0.25f, 3.0f};
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        const auto& x = input(c.dist, c.n, 0);
        const auto& v0 = input(c.dist, c.n, 1);
        for (const Sets& s : sets_for(c.n)) {
            const size_t k = s.idx.size();
            const uint32_t* idx = s.null ? nullptr : s.idx.data();
            Guarded out(4 * k, 4 * c.fmis);
            std::vector<float> want(k);
            t_->gather(x.data(), idx, k, out.f());
            ref::gather(x.data(), idx, k, want.data());
            EXPECT_TRUE(same_floats(out.f(), want.data(), k)) << "gather, k=" << k;
            EXPECT_TRUE(out.guards_intact());
            for (float a : alphas) {
                Guarded acc(4 * c.n, 4 * c.fmis);
                acc.fill_from(x.data());
                std::vector<float> wacc(x);
                t_->scatter_add(v0.data(), idx, k, a, acc.f());
                ref::scatter_add(v0.data(), idx, k, a, wacc.data());
                EXPECT_TRUE(same_floats(acc.f(), wacc.data(), c.n)) << "scatter_add, k=" << k;
                EXPECT_TRUE(acc.guards_intact());
            }
        }
        if (HasFailure()) return;
    }
}

TEST_P(KernelTest, ScatterZeroAndSubDiv) {
    const float divisors[] = {1.0f, 3.0f, 16.0f, 1e-30f};
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        const auto& x = input(c.dist, c.n, 0);
        const auto& s0 = input(c.dist, c.n, 1);
        for (const Sets& s : sets_for(c.n)) {
            const size_t k = s.idx.size();
            const uint32_t* idx = s.null ? nullptr : s.idx.data();
            Guarded a(4 * c.n, 4 * c.fmis);
            a.fill_from(x.data());
            std::vector<float> wa(x);
            t_->scatter_zero(idx, k, a.f());
            ref::scatter_zero(idx, k, wa.data());
            EXPECT_TRUE(same_floats(a.f(), wa.data(), c.n)) << "scatter_zero, k=" << k;
            EXPECT_TRUE(a.guards_intact());
            for (float d : divisors) {
                Guarded y(4 * c.n, 4 * c.fmis);
                y.fill_from(x.data());
                std::vector<float> wy(x);
                const bool got = t_->scatter_sub_div(y.f(), idx, s0.data(), k, d);
                const bool want = ref::scatter_sub_div(wy.data(), idx, s0.data(), k, d);
                EXPECT_EQ(got, want) << "scatter_sub_div, k=" << k << " d=" << d;
                // Refused: x untouched (the reference left wy as x too).
                EXPECT_TRUE(same_floats(y.f(), wy.data(), c.n)) << "scatter_sub_div, k=" << k;
                EXPECT_TRUE(y.guards_intact());
            }
        }
        if (HasFailure()) return;
    }
}

}  // namespace
}  // namespace gw::ktest
