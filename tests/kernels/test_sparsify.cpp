// Kernel family "sparsify" (src/kernels/sparsify.hpp) on every SIMD target,
// against ref_sparsify.hpp: every finite input distribution, chunks of up to
// kRngChunk elements, scales from 0 to far past 1/max|x| (every element
// kept), random words and words on the boundary p * 2^32 itself (the test is
// strict), nothing written past the kept count.
#include <algorithm>

#include "fixture.hpp"
#include "ref_sparsify.hpp"

namespace gw::ktest {
namespace {

TEST_P(KernelTest, RandomKeep) {
    std::mt19937_64 rng(11);
    for_each_case([&](const Case& c) {
        const auto& x = input(c.dist, c.n, 0);
        if (!finite_all(x)) return;  // the codec refuses NaN/Inf first
        double l1 = 0.0, m = 0.0;
        for (float v : x) {
            l1 += std::fabs(double(v));
            m = std::max(m, std::fabs(double(v)));
        }
        std::vector<double> scales = {0.0, 1.0, 1e300};
        if (m > 0.0) scales.insert(scales.end(), {1.0 / m, 0.5 / m, 1.0 / l1, 1e-3 / m});
        // The big input in a few chunks only: time.
        const size_t end = c.n == kBig ? 4 * gw::kern::kRngChunk + 37 : c.n;
        for (size_t first = 0; first < end; first += gw::kern::kRngChunk) {
            const size_t len = std::min(gw::kern::kRngChunk, end - first);
            Exact in(x.data() + first, 4 * len, 4 * c.fmis);
            for (double scale : scales) {
                std::vector<uint32_t> words(len);
                for (size_t j = 0; j < len; ++j) {
                    words[j] = static_cast<uint32_t>(rng());
                    // Every third word on the boundary (or just below it).
                    const double p = std::min(1.0, std::fabs(double(x[first + j])) * scale);
                    const double edge = std::floor(p * 4294967296.0);
                    if (j % 3 == 0 && edge < 4294967296.0)
                        words[j] = static_cast<uint32_t>(edge) - (j % 2 && edge > 0 ? 1u : 0u);
                }
                const std::vector<uint32_t> want =
                    ref::random_keep(x.data() + first, len, scale, words.data());
                Guarded out(4 * len, 0);
                const size_t count = t_->random_keep(in.f(), len, scale, words.data(),
                                                     reinterpret_cast<uint32_t*>(out.data()));
                ASSERT_EQ(count, want.size()) << "first=" << first << " scale=" << scale;
                ASSERT_TRUE(same_bytes(out.data(), want.data(), 4 * count)) << "scale=" << scale;
                ASSERT_TRUE(out.guards_intact());
            }
        }
    });
}

}  // namespace
}  // namespace gw::ktest
