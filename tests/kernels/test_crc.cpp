// Kernel family "crc" (src/kernels/crc.hpp) on every SIMD target against the
// bitwise definition in ref_crc.hpp and published check values.
#include "fixture.hpp"
#include "ref_crc.hpp"

namespace gw::ktest {
namespace {

// ---- CRC32C ----
TEST_P(KernelTest, Crc32cKnownAnswer) {
    const char* s = "123456789";
    EXPECT_EQ(t_->crc32c(0, s, 9), 0xE3069283u);
    EXPECT_EQ(ref::crc32c(0, s, 9), 0xE3069283u);
    EXPECT_EQ(t_->crc32c(0, s, 0), 0u);
    EXPECT_EQ(t_->crc32c(0x12345678u, s, 0), 0x12345678u);
    // RFC 3720 B.4: 32 bytes of zeros, of 0xFF, and 0..31.
    uint8_t buf[32];
    std::memset(buf, 0, 32);
    EXPECT_EQ(t_->crc32c(0, buf, 32), 0x8A9136AAu);
    std::memset(buf, 0xFF, 32);
    EXPECT_EQ(t_->crc32c(0, buf, 32), 0x62A8AB43u);
    for (int i = 0; i < 32; ++i) buf[i] = uint8_t(i);
    EXPECT_EQ(t_->crc32c(0, buf, 32), 0x46DD794Eu);
}

TEST_P(KernelTest, Crc32cMatchesBitwiseReference) {
    std::vector<size_t> lengths;
    for (size_t n = 0; n <= 72; ++n) lengths.push_back(n);
    for (size_t n : {100, 255, 256, 767, 768, 769, 1000, 3 * 8192 - 1, 3 * 8192, 3 * 8192 + 1,
                     3 * 8192 + 3 * 256 + 13, 6 * 8192 + 777, 100000, 1000003})
        lengths.push_back(n);
    const std::vector<uint8_t> data = random_bytes(1000003 + 8, 12345);
    for (size_t n : lengths) {
        for (size_t mis = 0; mis < 8; ++mis) {
            if (n > 1000 && mis % 5 != 0) continue;
            Exact in(data.data() + mis, n, mis);
            for (uint32_t init : {0u, 0xDEADBEEFu}) {
                EXPECT_EQ(t_->crc32c(init, in.data(), n), ref::crc32c(init, data.data() + mis, n))
                    << "n=" << n << " misalign=" << mis << " init=" << init;
            }
        }
        if (HasFailure()) return;
    }
}

TEST_P(KernelTest, Crc32cSplitsCompose) {
    const std::vector<uint8_t> data = random_bytes(100000, 999);
    const uint32_t whole = t_->crc32c(0, data.data(), data.size());
    EXPECT_EQ(whole, ref::crc32c(0, data.data(), data.size()));
    std::mt19937 rng(7);
    std::vector<size_t> cuts = {0, 1, 7, 8, 9, 255, 256, 24575, 24576, 24577, 50000, 99999, 100000};
    for (int i = 0; i < 30; ++i) cuts.push_back(rng() % data.size());
    for (size_t cut : cuts) {
        const uint32_t a = t_->crc32c(0, data.data(), cut);
        EXPECT_EQ(t_->crc32c(a, data.data() + cut, data.size() - cut), whole) << "cut at " << cut;
    }
    // Byte by byte, and three pieces.
    uint32_t c = 0;
    for (size_t i = 0; i < 300; ++i) c = t_->crc32c(c, data.data() + i, 1);
    EXPECT_EQ(c, t_->crc32c(0, data.data(), 300));
    c = t_->crc32c(0, data.data(), 1000);
    c = t_->crc32c(c, data.data() + 1000, 30000);
    c = t_->crc32c(c, data.data() + 31000, data.size() - 31000);
    EXPECT_EQ(c, whole);
}

}  // namespace
}  // namespace gw::ktest
