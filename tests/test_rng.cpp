// Counter-based RNG (Philox4x32-10): known answers, reproducibility, random
// access, stream independence and uniformity.
#include <cmath>

#include "util/rng.hpp"
#include "test_util.hpp"

TEST(Rng, PhiloxKnownAnswers) {
    // Known-answer vectors of Random123's philox4x32_10.
    using A4 = std::array<uint32_t, 4>;
    EXPECT_EQ(gw::philox4x32_10({0, 0, 0, 0}, {0, 0}),
              (A4{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
    EXPECT_EQ(gw::philox4x32_10({~0u, ~0u, ~0u, ~0u}, {~0u, ~0u}),
              (A4{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
    EXPECT_EQ(gw::philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                                {0xa4093822, 0x299f31d0}),
              (A4{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Rng, ReproducibleAndRandomAccess) {
    std::vector<uint32_t> a(1000), b(1000), part(500);
    ASSERT_EQ(gw_rng_u32(42, 7, 3, 0, a.data(), a.size()), GW_OK);
    ASSERT_EQ(gw_rng_u32(42, 7, 3, 0, b.data(), b.size()), GW_OK);
    EXPECT_EQ(a, b);
    // Any element can be generated on its own: start at an unaligned index.
    ASSERT_EQ(gw_rng_u32(42, 7, 3, 437, part.data(), part.size()), GW_OK);
    EXPECT_TRUE(std::equal(part.begin(), part.end(), a.begin() + 437));
    // Element i is word i%4 of block i/4.
    const auto blk = gw::philox4x32_10({109, 0, 7, 3}, {42, 0});
    EXPECT_EQ(a[437], blk[1]);
    // Index above 2^32 uses the counter's high word.
    uint32_t hi = 0;
    ASSERT_EQ(gw_rng_u32(42, 7, 3, (uint64_t(5) << 34) + 2, &hi, 1), GW_OK);
    EXPECT_EQ(hi, (gw::philox4x32_10({0, 5, 7, 3}, {42, 0})[2]));  // block 5<<32, lane 2
}

TEST(Rng, StreamsDiffer) {
    std::vector<uint32_t> base(256), other(256);
    gw_rng_u32(1, 2, 3, 0, base.data(), 256);
    for (auto [seed, step, tensor] : {std::tuple<uint64_t, uint32_t, uint32_t>{2, 2, 3},
                                      {1ull << 40 | 1, 2, 3}, {1, 3, 3}, {1, 2, 4}}) {
        gw_rng_u32(seed, step, tensor, 0, other.data(), 256);
        size_t same = 0;
        for (size_t i = 0; i < 256; ++i) same += base[i] == other[i];
        EXPECT_LE(same, 2u);
    }
}

TEST(Rng, UniformFloatsPassChiSquareAndMoments) {
    const size_t n = 1 << 20, bins = 256;
    std::vector<float> u(n);
    ASSERT_EQ(gw_rng_uniform(2026, 1, 9, 0, u.data(), n), GW_OK);
    std::vector<double> count(bins);
    double sum = 0, sq = 0;
    for (float x : u) {
        ASSERT_GE(x, 0.0f);
        ASSERT_LT(x, 1.0f);
        count[static_cast<size_t>(x * bins)] += 1;
        sum += x;
        sq += double(x) * x;
    }
    double chi2 = 0;
    const double expect = double(n) / bins;
    for (double c : count) chi2 += (c - expect) * (c - expect) / expect;
    // 255 degrees of freedom: mean 255, sd ~22.6; 99.99% quantile ~ 346.
    EXPECT_LT(chi2, 346.0);
    EXPECT_GT(chi2, 170.0);  // suspiciously even is wrong too
    EXPECT_NEAR(sum / n, 0.5, 0.002);
    EXPECT_NEAR(sq / n - (sum / n) * (sum / n), 1.0 / 12, 0.001);
    // Lag-1 correlation near 0.
    double c = 0;
    for (size_t i = 1; i < n; ++i) c += (u[i] - 0.5) * (u[i - 1] - 0.5);
    EXPECT_NEAR(c / (n - 1) * 12, 0.0, 0.01);
}

// The public calls run on the active target's vector kernel: every target
// gives the reference stream (gw::rng_u32) word for word, at any offset and
// length, and gw_rng_uniform is u32_to_unit_float of it.
TEST(Rng, PublicCallsMatchTheReferenceOnEveryTarget) {
    const size_t n = 3 * 768 + 37;
    std::vector<uint32_t> ref(n), got(n);
    std::vector<float> uni(n);
    for (gw_simd_target target : gwtest::supported_targets()) {
        ASSERT_EQ(gw_simd_set_target(target), GW_OK);
        for (uint64_t first : {uint64_t(0), uint64_t(3), uint64_t(1) << 33}) {
            gw::rng_u32(77, 5, 2, first, ref.data(), n);
            ASSERT_EQ(gw_rng_u32(77, 5, 2, first, got.data(), n), GW_OK);
            EXPECT_EQ(got, ref) << gw_simd_target_name(target) << " first " << first;
            ASSERT_EQ(gw_rng_uniform(77, 5, 2, first, uni.data(), n), GW_OK);
            for (size_t i = 0; i < n; ++i)
                ASSERT_EQ(uni[i], gw::u32_to_unit_float(ref[i])) << gw_simd_target_name(target) << " " << i;
        }
    }
    ASSERT_EQ(gw_simd_set_target(GW_SIMD_AUTO), GW_OK);
}
