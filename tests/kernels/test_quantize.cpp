// Kernel family "quantize" (src/kernels/quantize.hpp) on every SIMD target,
// bit for bit against ref_quantize.hpp: max_abs_key on every input; the
// stochastic rounding for the grids of every bit width (b = 1 pair grid,
// 2..8, 16 and QSGD-like odd level counts) with random words, with and
// without the residual and in place; dequant and dequant_accumulate.
#include <random>

#include "fixture.hpp"
#include "ref_quantize.hpp"
#include "util/rng.hpp"

namespace gw::ktest {
namespace {

struct GridCase {
    int32_t lo, hi;
    bool pair;
};
const GridCase kGrids[] = {{0, 1, true},      {-1, 1, false},   {-3, 3, false},
                           {-7, 7, false},    {-5, 5, false},   {-127, 127, false},
                           {-32767, 32767, false}};

// delta with |x/delta| <= levels for every x (as the codecs choose it), 1 for all-zero x.
float step_of(const std::vector<float>& x, const GridCase& g) {
    float m;
    const uint32_t key = ref::max_abs_key(x.data(), x.size());
    std::memcpy(&m, &key, 4);
    if (m == 0.0f) return 1.0f;
    const int32_t levels = g.pair ? 1 : g.hi;
    float d = m / static_cast<float>(levels);
    while (static_cast<double>(d) * levels < static_cast<double>(m)) d = std::nextafter(d, INFINITY);
    return d;
}

// The vectorized Philox stream equals src/rng.cpp (itself checked against
// the Philox4x32-10 known answers in tests/test_rng.cpp) word for word: every
// start offset mod 4, lengths around the vector widths, a block counter that
// crosses 2^32, and other seeds, steps and tensors.
TEST_P(KernelTest, RngStream) {
    const uint64_t firsts[] = {0, 1, 2, 3, 5, 1000, (uint64_t(1) << 34) - 37, uint64_t(1) << 40};
    const size_t lengths[] = {0, 1, 3, 4, 15, 16, 17, 63, 64, 65, 129, 1000, 4099};
    for (uint64_t seed : {uint64_t(0), uint64_t(0x123456789ABCDEFull)})
        for (uint32_t step : {0u, 7u, 0xFFFFFFFFu})
            for (uint64_t first : firsts)
                for (size_t n : lengths) {
                    std::vector<uint32_t> want(n + 1, 0xDEADBEEFu), got(n + 1, 0xDEADBEEFu);
                    gw::rng_u32(seed, step, 3, first, want.data(), n);
                    t_->rng_u32(seed, step, 3, first, got.data(), n);
                    ASSERT_EQ(got, want) << "seed " << seed << " step " << step << " first "
                                         << first << " n " << n;
                }
}

TEST_P(KernelTest, MaxAbsKey) {
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        const auto& x = input(c.dist, c.n, 0);
        Exact in(x.data(), 4 * c.n, 4 * c.fmis);
        EXPECT_EQ(t_->max_abs_key(in.f(), c.n), ref::max_abs_key(x.data(), c.n));
    }
    std::vector<float> x(100, 1.0f);
    x[77] = NAN;
    EXPECT_GE(t_->max_abs_key(x.data(), x.size()), 0x7F800000u);
    x[77] = -INFINITY;
    EXPECT_EQ(t_->max_abs_key(x.data(), x.size()), 0x7F800000u);
}

TEST_P(KernelTest, StochRound) {
    std::mt19937_64 rng(7);
    for (const Case& c : cases()) {
        const auto& x = input(c.dist, c.n, 0);
        if (!finite_all(x) || c.bmis > 1) continue;
        SCOPED_TRACE(describe(c));
        std::vector<uint32_t> words(c.n);
        for (auto& w : words) w = static_cast<uint32_t>(rng());
        for (const GridCase& g : kGrids) {
            const float delta = step_of(x, g);
            std::vector<uint32_t> want(c.n), got(c.n);
            std::vector<float> want_r(c.n);
            ref::stoch_round(x.data(), c.n, delta, g.lo, g.hi, g.pair, words.data(), want.data(),
                             want_r.data());
            Exact in(x.data(), 4 * c.n, 4 * c.fmis);
            Guarded res(4 * c.n, 4 * c.fmis);
            t_->stoch_round(in.f(), c.n, delta, g.lo, g.hi, g.pair, words.data(), got.data(),
                            res.f());
            ASSERT_TRUE(same_bytes(got.data(), want.data(), 4 * c.n)) << "hi=" << g.hi;
            ASSERT_TRUE(same_floats(res.f(), want_r.data(), c.n)) << "hi=" << g.hi;
            EXPECT_TRUE(res.guards_intact());
            // Without the residual, and in place (residual == x).
            std::fill(got.begin(), got.end(), 0u);
            t_->stoch_round(in.f(), c.n, delta, g.lo, g.hi, g.pair, words.data(), got.data(),
                            nullptr);
            ASSERT_TRUE(same_bytes(got.data(), want.data(), 4 * c.n));
            Guarded io(4 * c.n, 4 * c.fmis);
            io.fill_from(x.data());
            t_->stoch_round(io.f(), c.n, delta, g.lo, g.hi, g.pair, words.data(), got.data(),
                            io.f());
            ASSERT_TRUE(same_floats(io.f(), want_r.data(), c.n));
            for (uint32_t code : got) ASSERT_LE(code, static_cast<uint32_t>(g.hi - g.lo));
        }
    }
}

// Revision 2: random bytes (a tie, byte == floor(r * 256), in 1 of 256) and
// bytes forced to the tie on every third element, so the tie word's draw and
// its stream position (kTieWord + first + i) are checked on every lane.
TEST_P(KernelTest, StochRound8) {
    std::mt19937_64 rng(9);
    const kern::StreamAt ats[] = {{0, 0, 0, 0}, {0x123456789ull, 7, 3, (uint64_t(1) << 33) + 5}};
    for (const Case& c : cases()) {
        const auto& x = input(c.dist, c.n, 0);
        if (!finite_all(x) || c.bmis > 1) continue;
        SCOPED_TRACE(describe(c));
        for (const GridCase& g : kGrids) {
            const float delta = step_of(x, g);
            for (const kern::StreamAt& at : ats) {
                std::vector<uint8_t> bytes(c.n);
                for (size_t i = 0; i < c.n; ++i) {
                    bytes[i] = static_cast<uint8_t>(rng());
                    if (i % 3 == 0) {
                        float t = x[i] / delta;
                        if (g.pair) t = (t + 1.0f) * 0.5f;
                        // q (256 where t - floor(t) rounds to 1: no byte ties there)
                        const float q = std::floor((t - std::floor(t)) * 256.0f);
                        bytes[i] = static_cast<uint8_t>(q < 255.0f ? q : 255.0f);
                    }
                }
                std::vector<uint32_t> want(c.n), got(c.n);
                std::vector<float> want_r(c.n);
                ref::stoch_round8(x.data(), c.n, delta, g.lo, g.hi, g.pair, bytes.data(), at,
                                  want.data(), want_r.data());
                Exact in(x.data(), 4 * c.n, 4 * c.fmis);
                Guarded res(4 * c.n, 4 * c.fmis);
                t_->stoch_round8(in.f(), c.n, delta, g.lo, g.hi, g.pair, bytes.data(), at,
                                 got.data(), res.f());
                ASSERT_TRUE(same_bytes(got.data(), want.data(), 4 * c.n)) << "hi=" << g.hi;
                ASSERT_TRUE(same_floats(res.f(), want_r.data(), c.n)) << "hi=" << g.hi;
                EXPECT_TRUE(res.guards_intact());
                std::fill(got.begin(), got.end(), 0u);
                t_->stoch_round8(in.f(), c.n, delta, g.lo, g.hi, g.pair, bytes.data(), at,
                                 got.data(), nullptr);
                ASSERT_TRUE(same_bytes(got.data(), want.data(), 4 * c.n));
                Guarded io(4 * c.n, 4 * c.fmis);
                io.fill_from(x.data());
                t_->stoch_round8(io.f(), c.n, delta, g.lo, g.hi, g.pair, bytes.data(), at,
                                 got.data(), io.f());
                ASSERT_TRUE(same_bytes(got.data(), want.data(), 4 * c.n));
                ASSERT_TRUE(same_floats(io.f(), want_r.data(), c.n));
            }
        }
    }
}

// Every width at lengths around the vector widths and the byte boundaries,
// packed against the bit-by-bit reference (the last byte's unused bits 0,
// nothing written past it) and unpacked back.
TEST_P(KernelTest, PackCodes) {
    std::mt19937_64 rng(13);
    for (unsigned width = 1; width <= 16; ++width)
        for (size_t c : {size_t(0), size_t(1), size_t(3), size_t(7), size_t(8), size_t(15),
                         size_t(16), size_t(17), size_t(63), size_t(64), size_t(65), size_t(129),
                         size_t(768), size_t(1001), size_t(3072)}) {
            std::vector<uint32_t> codes(c);
            for (auto& v : codes) v = static_cast<uint32_t>(rng() & ((uint64_t(1) << width) - 1));
            const size_t bytes = (c * width + 7) / 8;
            std::vector<uint8_t> want(bytes + 1, 0xA5), got(bytes + 1, 0xA5);
            ref::pack_codes(codes.data(), c, width, want.data());
            t_->pack_codes(codes.data(), c, width, got.data());
            ASSERT_EQ(got, want) << "width " << width << " c " << c;
            std::vector<uint32_t> back(c + 1, 0xDEADBEEFu);
            t_->unpack_codes(got.data(), c, width, back.data());
            ASSERT_EQ(back[c], 0xDEADBEEFu);
            back.resize(c);
            ASSERT_EQ(back, codes) << "width " << width << " c " << c;
        }
}

TEST_P(KernelTest, Dequant) {
    std::mt19937_64 rng(11);
    const float alphas[] = {1.0f, -1.0f, 0.25f, -3.5f};
    for (const Case& c : cases()) {
        if (c.dist != kNormal && c.dist != kMixedScale && c.dist != kLogUniform) continue;
        SCOPED_TRACE(describe(c));
        const auto& acc0 = input(c.dist, c.n, 1);
        for (const GridCase& g : kGrids) {
            std::vector<uint32_t> codes(c.n);
            for (auto& v : codes) v = static_cast<uint32_t>(rng() % uint64_t(g.hi - g.lo + 1));
            const float delta = std::ldexp(1.3f, static_cast<int>(rng() % 40) - 20);
            std::vector<float> want(c.n);
            ref::dequant(codes.data(), c.n, delta, g.lo, g.pair, want.data());
            Guarded out(4 * c.n, 4 * c.fmis);
            t_->dequant(codes.data(), c.n, delta, g.lo, g.pair, out.f());
            ASSERT_TRUE(same_floats(out.f(), want.data(), c.n));
            EXPECT_TRUE(out.guards_intact());
            for (float a : alphas) {
                std::vector<float> wa(acc0);
                ref::dequant_accumulate(codes.data(), c.n, delta, g.lo, g.pair, a, wa.data());
                Guarded acc(4 * c.n, 4 * c.fmis);
                acc.fill_from(acc0.data());
                t_->dequant_accumulate(codes.data(), c.n, delta, g.lo, g.pair, a, acc.f());
                ASSERT_TRUE(same_floats(acc.f(), wa.data(), c.n)) << "alpha=" << a;
                EXPECT_TRUE(acc.guards_intact());
            }
        }
    }
}

}  // namespace
}  // namespace gw::ktest
