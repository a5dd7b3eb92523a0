// The one instantiation of the kernel test suite over every SIMD target (the
// TEST_Ps live in test_<family>.cpp of the same binary), and the report of
// which targets ran.
#include "fixture.hpp"

namespace gw::ktest {
namespace {

class ReportTargets : public ::testing::Environment {
public:
    void TearDown() override {
        std::string ran, missing;
        for (gw_simd_target t : kTargets) {
            std::string& dst = targets_run().count(t) ? ran : missing;
            dst += std::string(dst.empty() ? "" : " ") + gw::kern::target_name(t);
        }
        std::printf("[ kernels  ] SIMD targets tested: %s\n", ran.empty() ? "(none)" : ran.c_str());
        std::printf("[ kernels  ] not supported here:  %s\n",
                    missing.empty() ? "(none)" : missing.c_str());
    }
};
[[maybe_unused]] ::testing::Environment* const g_report =
    ::testing::AddGlobalTestEnvironment(new ReportTargets);

}  // namespace

INSTANTIATE_TEST_SUITE_P(Targets, KernelTest, ::testing::ValuesIn(kTargets), target_param_name);

}  // namespace gw::ktest
