// Kernel family "threshold" (src/kernels/threshold.hpp) on every SIMD target,
// against ref_threshold.hpp: every input distribution and length of the
// fixture, thresholds at 0, at values present in x (ties count), between
// them and above all; caps from 0 to n (the count is exact whatever the cap,
// nothing is written past the cap).
#include <algorithm>

#include "fixture.hpp"
#include "ref_threshold.hpp"

namespace gw::ktest {
namespace {

::testing::AssertionResult check_threshold(const Table& t, const std::vector<float>& x, float thr,
                                           size_t cap, size_t fmis,
                                           const std::vector<uint32_t>& want) {
    const size_t n = x.size();
    Exact in(x.data(), 4 * n, 4 * fmis);
    Guarded out(4 * cap, 0);
    const size_t count =
        t.threshold_select(in.f(), n, thr, reinterpret_cast<uint32_t*>(out.data()), cap);
    if (count != want.size())
        return ::testing::AssertionFailure() << "n=" << n << " t=" << thr << " cap=" << cap
                                             << ": count " << count << ", want " << want.size();
    const size_t w = std::min(cap, count);
    std::vector<uint32_t> got(w);
    if (w) std::memcpy(got.data(), out.data(), 4 * w);
    for (size_t j = 0; j < w; ++j)
        if (got[j] != want[j])
            return ::testing::AssertionFailure() << "n=" << n << " t=" << thr << " cap=" << cap
                                                 << ": idx[" << j << "] = " << got[j] << ", want "
                                                 << want[j];
    ::testing::AssertionResult guards = out.guards_intact();
    if (!guards) return guards << " (n=" << n << " cap=" << cap << ")";
    return ::testing::AssertionSuccess();
}

TEST_P(KernelTest, ThresholdSelect) {
    for_each_case([&](const Case& c) {
        const auto& x = input(c.dist, c.n, 0);
        if (!finite_all(x)) return;  // callers reject NaN/Inf first
        std::vector<float> mags;
        const bool big = c.n == kBig;  // fewer thresholds: time
        for (size_t i = 0; i < x.size(); i += 1 + x.size() / (big ? 1 : 5)) mags.push_back(std::fabs(x[i]));
        std::vector<float> ts = {0.0f, 1.0f, FLT_MAX};
        if (!big) ts.insert(ts.end(), {FLT_TRUE_MIN, 1e-3f});
        for (float m : mags) {
            ts.push_back(m);                            // a value present: ties count
            ts.push_back(std::nextafter(m, FLT_MAX));   // just above it
        }
        for (float thr : ts) {
            const std::vector<uint32_t> want = ref::threshold_select(x.data(), x.size(), thr);
            const size_t count = want.size();
            for (size_t cap : {size_t(0), size_t(1), count / 2, count, c.n})
                EXPECT_TRUE(check_threshold(*t_, x, thr, cap, c.fmis, want));
        }
    });
}

}  // namespace
}  // namespace gw::ktest
