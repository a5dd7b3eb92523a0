// Dispatch rules of src/kernels/dispatch.cpp (table_for, set_target, the
// GW_SIMD environment variable, concurrent first use), and that every
// target's table is complete.
#include <atomic>
#include <cstdlib>
#include <thread>

#include "fixture.hpp"
#include "kernels/tables.hpp"

namespace gw::ktest {
namespace {

TEST_P(KernelTest, TableIsComplete) {
    EXPECT_EQ(t_->target, GetParam());
    const Table& t = *t_;
    EXPECT_TRUE(t.sum_abs && t.sum_sq && t.all_finite && t.all_kept && t.ef_combine &&
                t.momentum_update && t.ef_sum_abs_lanes && t.ef_sign_step && t.ef_sign_defer &&
                t.ef_sign_blocks && t.scaled_sign_blocks &&
                t.sign_pack && t.sign_pack_residual && t.sign_unpack && t.sign_unpack_blocks &&
                t.sign_accumulate &&
                t.sign_accumulate_n && t.sign_accumulate_blocks && t.axpy && t.f32_to_f16 && t.f16_to_f32 && t.f16_accumulate &&
                t.f16_all_finite && t.f32_to_bf16 && t.bf16_to_f32 && t.bf16_accumulate &&
                t.bf16_all_finite && t.f16_ef_cast && t.bf16_ef_cast && t.f16_encode_finite &&
                t.bf16_encode_finite && t.f16_encode_finite_crc && t.bf16_encode_finite_crc && t.f16_decode_finite_crc && t.bf16_decode_finite_crc && t.f32_copy_finite_crc && t.le32_copy_finite_crc && t.crc32c && t.topk_select && t.gap_indices && t.gap_byte_sum &&
                t.gap_scatter_add && t.gap_expand && t.expand_begin && t.expand_add &&
                t.expand_end);
}

// ---------------------------------------------------------------------------
// Dispatch
// ---------------------------------------------------------------------------
TEST(KernelDispatch, TargetNames) {
    EXPECT_STREQ(gw::kern::target_name(GW_SIMD_AUTO), "auto");
    EXPECT_STREQ(gw::kern::target_name(GW_SIMD_SCALAR), "scalar");
    EXPECT_STREQ(gw::kern::target_name(GW_SIMD_SSE2), "sse2");
    EXPECT_STREQ(gw::kern::target_name(GW_SIMD_SSE4_2), "sse4.2");
    EXPECT_STREQ(gw::kern::target_name(GW_SIMD_AVX2), "avx2");
    EXPECT_STREQ(gw::kern::target_name(GW_SIMD_AVX512), "avx512");
    EXPECT_STREQ(gw::kern::target_name(GW_SIMD_NEON), "neon");
    EXPECT_STREQ(gw::kern::target_name(static_cast<gw_simd_target>(7)), "unknown");
}

// kTargets is in increasing order within each CPU family, and a build has
// one family's targets (x86's or NEON) besides scalar.
gw_simd_target best_supported() {
    gw_simd_target best = GW_SIMD_SCALAR;
    for (gw_simd_target t : kTargets)
        if (gw::kern::table_for(t) != nullptr) best = t;
    return best;
}

TEST(KernelDispatch, TableFor) {
    std::string supported;
    for (gw_simd_target t : kTargets) {
        const Table* tb = gw::kern::table_for(t);
        if (tb != nullptr) {
            EXPECT_EQ(tb->target, t);
            supported += std::string(" ") + gw::kern::target_name(t);
        }
    }
    std::printf("[ kernels  ] supported on this machine:%s\n", supported.c_str());
    ASSERT_NE(gw::kern::table_for(GW_SIMD_SCALAR), nullptr);
    ASSERT_NE(gw::kern::table_for(GW_SIMD_AUTO), nullptr);
    EXPECT_EQ(gw::kern::table_for(GW_SIMD_AUTO)->target, best_supported());
    EXPECT_EQ(gw::kern::table_for(GW_SIMD_AUTO), gw::kern::table_for(best_supported()));
    EXPECT_EQ(gw::kern::table_for(static_cast<gw_simd_target>(7)), nullptr);
#if defined(__x86_64__)
    EXPECT_NE(gw::kern::table_for(GW_SIMD_SSE2), nullptr);  // part of x86-64
#endif
#if defined(__aarch64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    EXPECT_NE(gw::kern::table_for(GW_SIMD_NEON), nullptr);  // part of AArch64
#endif
#if !defined(__aarch64__)
    EXPECT_EQ(gw::kern::table_for(GW_SIMD_NEON), nullptr);
#endif
#if !defined(__x86_64__) && !defined(__i386__)
    for (gw_simd_target t : {GW_SIMD_SSE2, GW_SIMD_SSE4_2, GW_SIMD_AVX2, GW_SIMD_AVX512})
        EXPECT_EQ(gw::kern::table_for(t), nullptr) << gw::kern::target_name(t);
#endif
    // The tables dispatch returns are the ones the arch files define.
    EXPECT_EQ(gw::kern::table_for(GW_SIMD_SCALAR), &gw::kern::table_scalar);
#if defined(GW_KERN_X86_TABLES)
    if (const Table* t = gw::kern::table_for(GW_SIMD_AVX2)) {
        EXPECT_EQ(t, &gw::kern::table_avx2);
    }
#endif
#if defined(GW_KERN_NEON_TABLE)
    if (const Table* t = gw::kern::table_for(GW_SIMD_NEON)) {
        EXPECT_EQ(t, &gw::kern::table_neon);
    }
#endif
}

TEST(KernelDispatch, SetTarget) {
    for (gw_simd_target t : kTargets) {
        SCOPED_TRACE(gw::kern::target_name(t));
        const Table* tb = gw::kern::table_for(t);
        if (tb == nullptr) {
            const gw_simd_target before = gw::kern::active_target();
            EXPECT_EQ(gw::kern::set_target(t), GW_ERR_UNSUPPORTED);
            EXPECT_EQ(gw::kern::active_target(), before);
            continue;
        }
        ASSERT_EQ(gw::kern::set_target(t), GW_OK);
        EXPECT_EQ(gw::kern::active_target(), t);
        EXPECT_EQ(&gw::kern::active(), tb);
        EXPECT_EQ(gw::kern::active().crc32c(0, "123456789", 9), 0xE3069283u);
    }
    // Out-of-range values are not a target this build has.
    ASSERT_EQ(gw::kern::set_target(GW_SIMD_SCALAR), GW_OK);
    EXPECT_EQ(gw::kern::set_target(static_cast<gw_simd_target>(7)), GW_ERR_UNSUPPORTED);
    EXPECT_EQ(gw::kern::active_target(), GW_SIMD_SCALAR);
    // AUTO picks the best and reports it by its real name.
    ASSERT_EQ(gw::kern::set_target(GW_SIMD_AUTO), GW_OK);
    EXPECT_EQ(gw::kern::active_target(), best_supported());
    EXPECT_EQ(&gw::kern::active(), gw::kern::table_for(GW_SIMD_AUTO));
}

// The lazy choice from GW_SIMD, driven from outside: run this test alone (so
// that it makes the process's first kernel call) with GW_SIMD set and
// GW_SIMD_EXPECT naming the target that must result. tests/cross_test.sh does
// that under user-mode QEMU, where the death tests below cannot run (they
// re-execute the test binary, which the host kernel cannot load without
// binfmt_misc). Skipped when GW_SIMD_EXPECT is unset.
TEST(KernelDispatch, EnvironmentAtFirstUse) {
    const char* want = std::getenv("GW_SIMD_EXPECT");
    if (want == nullptr) GTEST_SKIP() << "run alone, with GW_SIMD and GW_SIMD_EXPECT set";
    const char* env = std::getenv("GW_SIMD");
    EXPECT_STREQ(gw::kern::target_name(gw::kern::active_target()), want)
        << "GW_SIMD=" << (env ? env : "(unset)");
}

// The lazy choice from GW_SIMD happens once per process, so each case runs in
// a fresh process: "threadsafe" death tests re-execute the test binary.
TEST(KernelDispatchDeathTest, EnvironmentVariable) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    const gw_simd_target best = best_supported();
    auto supported_or_best = [&](gw_simd_target t) {
        return gw::kern::table_for(t) != nullptr ? t : best;
    };
    struct EnvCase {
        const char* value;  // nullptr: unset
        gw_simd_target want;
    };
    const EnvCase env_cases[] = {
        {nullptr, best},
        {"auto", best},
        {"scalar", GW_SIMD_SCALAR},
        {"sse2", supported_or_best(GW_SIMD_SSE2)},
        {"sse4.2", supported_or_best(GW_SIMD_SSE4_2)},
        {"avx2", supported_or_best(GW_SIMD_AVX2)},
        {"avx512", supported_or_best(GW_SIMD_AVX512)},
        {"neon", supported_or_best(GW_SIMD_NEON)},
        {"NEON", supported_or_best(GW_SIMD_NEON)},
        {"SCALAR", GW_SIMD_SCALAR},
        {"bogus", best},
        {"", best},
        {"avx5120", best},
    };
    for (const EnvCase& c : env_cases) {
        if (c.value != nullptr)
            setenv("GW_SIMD", c.value, 1);
        else
            unsetenv("GW_SIMD");
        EXPECT_EXIT(std::_Exit(gw::kern::active_target() == c.want ? 0 : 1),
                    ::testing::ExitedWithCode(0), "")
            << "GW_SIMD=" << (c.value ? c.value : "(unset)") << " should select "
            << gw::kern::target_name(c.want);
    }
    // set_target overrides the environment, and sticks.
    setenv("GW_SIMD", "avx2", 1);
    EXPECT_EXIT(std::_Exit((gw::kern::set_target(GW_SIMD_SCALAR) == GW_OK &&
                            gw::kern::active_target() == GW_SIMD_SCALAR)
                               ? 0
                               : 1),
                ::testing::ExitedWithCode(0), "");
    unsetenv("GW_SIMD");
}

TEST(KernelDispatchDeathTest, ConcurrentFirstUse) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    unsetenv("GW_SIMD");
    EXPECT_EXIT(
        {
            std::atomic<bool> go{false};
            const Table* seen[8] = {};
            std::vector<std::thread> threads;
            for (int i = 0; i < 8; ++i)
                threads.emplace_back([&, i] {
                    while (!go.load()) {
                    }
                    seen[i] = &gw::kern::active();
                });
            go.store(true);
            for (auto& th : threads) th.join();
            bool ok = true;
            for (const Table* s : seen) ok = ok && s == gw::kern::table_for(GW_SIMD_AUTO);
            std::_Exit(ok ? 0 : 1);
        },
        ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace gw::ktest
