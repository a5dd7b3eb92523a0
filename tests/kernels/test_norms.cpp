// Kernel family "norms" (src/kernels/norms.hpp) on every SIMD target,
// bit for bit against ref_norms.hpp: sum_abs, sum_sq, all_finite, all_kept.
#include <algorithm>

#include "fixture.hpp"
#include "ref_norms.hpp"

namespace gw::ktest {
namespace {

// ---- reductions ----
TEST_P(KernelTest, SumAbs) {
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        const auto& x = input(c.dist, c.n, 0);
        Exact in(x.data(), 4 * c.n, 4 * c.fmis);
        const double got = t_->sum_abs(in.f(), c.n);
        const double want = ref::sum_abs(x.data(), c.n);
        EXPECT_EQ(dbits(got), dbits(want)) << got << " vs " << want;
        EXPECT_TRUE(std::isfinite(got));
        if (HasFailure()) return;
    }
}

TEST_P(KernelTest, SumSq) {
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        const auto& x = input(c.dist, c.n, 0);
        Exact in(x.data(), 4 * c.n, 4 * c.fmis);
        const double got = t_->sum_sq(in.f(), c.n);
        const double want = ref::sum_sq(x.data(), c.n);
        EXPECT_EQ(dbits(got), dbits(want)) << got << " vs " << want;
        EXPECT_TRUE(std::isfinite(got));  // FLT_MAX^2 * 1e6 fits in a double
        if (HasFailure()) return;
    }
}

TEST_P(KernelTest, SumOfHugeValuesStaysFinite) {
    std::vector<float> x(kBig, FLT_MAX);
    for (size_t i = 0; i < x.size(); i += 3) x[i] = -FLT_MAX;
    EXPECT_EQ(dbits(t_->sum_abs(x.data(), x.size())), dbits(ref::sum_abs(x.data(), x.size())));
    EXPECT_EQ(dbits(t_->sum_sq(x.data(), x.size())), dbits(ref::sum_sq(x.data(), x.size())));
    EXPECT_TRUE(std::isfinite(t_->sum_sq(x.data(), x.size())));
    EXPECT_EQ(t_->sum_abs(x.data(), 16), 16.0 * double(FLT_MAX));
}

TEST_P(KernelTest, AllFinite) {
    const uint32_t bad[] = {0x7F800000u, 0xFF800000u, 0x7FC00000u, 0x7F800001u, 0xFFFFFFFFu,
                            0xFF800001u, 0x7FFFFFFFu};
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        std::vector<float> x = input(c.dist, c.n, 0);
        {
            Exact in(x.data(), 4 * c.n, 4 * c.fmis);
            EXPECT_EQ(t_->all_finite(in.f(), c.n), ref::all_finite(x.data(), c.n));
            EXPECT_TRUE(t_->all_finite(in.f(), c.n));
        }
        // Plant bad values for some of the cases only (it copies the input each time).
        if (c.fmis != 1 || (c.n == kBig && c.dist != kNormal)) continue;
        size_t k = 0;
        for (size_t p : plant_positions(c.n)) {
            const float saved = x[p];
            x[p] = from_bits(bad[k++ % (sizeof bad / sizeof bad[0])]);
            Exact in(x.data(), 4 * c.n, 4 * c.fmis);
            EXPECT_FALSE(t_->all_finite(in.f(), c.n)) << "bad value at " << p;
            EXPECT_FALSE(ref::all_finite(x.data(), c.n));
            x[p] = saved;
        }
        if (HasFailure()) return;
    }
}

// x as the little-endian bytes all_kept reads, on any host.
std::vector<unsigned char> le_bytes(const std::vector<float>& x) {
    std::vector<unsigned char> b(4 * x.size());
    for (size_t i = 0; i < x.size(); ++i)
        for (int k = 0; k < 4; ++k)
            b[4 * i + k] = static_cast<unsigned char>(fbits(x[i]) >> (8 * k));
    return b;
}

// Every case at every byte offset, with no floor, a floor at the input's own
// median magnitude (so some values fall below it) and the smallest subnormal;
// then each value an encoder never stores (zero, -0, Inf, NaN, below the
// floor) planted alone.
TEST_P(KernelTest, AllKept) {
    const uint32_t bad[] = {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u,
                            0x7FC00000u, 0xFF800001u, 0x7FFFFFFFu};
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        std::vector<float> x = input(c.dist, c.n, 0);
        for (float& v : x)
            if (!std::isfinite(v) || v == 0.0f) v = 1.5f;  // start from all kept
        std::vector<float> mags(x.size());
        for (size_t i = 0; i < x.size(); ++i) mags[i] = std::fabs(x[i]);
        const float least = mags.empty() ? 1.0f : *std::min_element(mags.begin(), mags.end());
        std::nth_element(mags.begin(), mags.begin() + mags.size() / 2, mags.end());
        const float median = mags.empty() ? 1.0f : mags[mags.size() / 2];
        for (float floor : {0.0f, median, from_bits(1)}) {
            Exact in(le_bytes(x).data(), 4 * c.n, c.bmis);
            EXPECT_EQ(t_->all_kept(in.data(), c.n, floor), ref::all_kept(x.data(), c.n, floor))
                << "floor " << floor;
        }
        {
            Exact in(le_bytes(x).data(), 4 * c.n, c.bmis);
            EXPECT_TRUE(t_->all_kept(in.data(), c.n, 0.0f));
            EXPECT_TRUE(t_->all_kept(in.data(), c.n, from_bits(1)));
            EXPECT_TRUE(t_->all_kept(in.data(), c.n, least));
        }
        if (c.fmis != 1 || (c.n == kBig && c.dist != kNormal)) continue;
        size_t k = 0;
        for (size_t p : plant_positions(c.n)) {
            const float saved = x[p];
            x[p] = from_bits(bad[k++ % (sizeof bad / sizeof bad[0])]);
            Exact in(le_bytes(x).data(), 4 * c.n, c.bmis);
            EXPECT_FALSE(t_->all_kept(in.data(), c.n, 0.0f)) << "bad value at " << p;
            EXPECT_FALSE(ref::all_kept(x.data(), c.n, 0.0f));
            // Every other value is at least `least`: only this one is below it.
            x[p] = std::nextafter(least, 0.0f);
            Exact low(le_bytes(x).data(), 4 * c.n, c.bmis);
            EXPECT_FALSE(t_->all_kept(low.data(), c.n, least)) << "small value at " << p;
            EXPECT_EQ(t_->all_kept(low.data(), c.n, x[p]), x[p] != 0.0f);
            x[p] = saved;
        }
        if (HasFailure()) return;
    }
}

}  // namespace
}  // namespace gw::ktest
