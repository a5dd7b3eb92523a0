// Kernel family "accumulate" (src/kernels/accumulate.hpp) on every SIMD
// target, bit for bit against ref_accumulate.hpp: axpy.
#include "fixture.hpp"
#include "ref_accumulate.hpp"

namespace gw::ktest {
namespace {

// ---- axpy ----
TEST_P(KernelTest, Axpy) {
    const float alphas[] = {1.0f, -0.5f, 0.1f, 0.0f, 3.0e3f};
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        const auto& x = input(c.dist, c.n, 0);
        const auto& acc0 = input(c.dist, c.n, 1);
        std::vector<unsigned char> le(4 * c.n);  // the payload's little-endian bytes
        for (size_t i = 0; i < c.n; ++i)
            for (int b = 0; b < 4; ++b) le[4 * i + b] = static_cast<unsigned char>(fbits(x[i]) >> (8 * b));
        Exact in(le.data(), 4 * c.n, c.bmis);  // a float payload at any byte offset
        for (float a : alphas) {
            Guarded acc(4 * c.n, 4 * c.fmis);
            acc.fill_from(acc0.data());
            std::vector<float> want(acc0);
            t_->axpy(a, in.data(), acc.f(), c.n);
            ref::axpy(a, le.data(), want.data(), c.n);
            EXPECT_TRUE(same_floats(acc.f(), want.data(), c.n)) << "alpha=" << a;
            EXPECT_TRUE(acc.guards_intact());
        }
        if (HasFailure()) return;
    }
}

}  // namespace
}  // namespace gw::ktest
