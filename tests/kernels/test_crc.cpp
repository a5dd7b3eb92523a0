// Kernel family "crc" (src/kernels/crc.hpp) on every SIMD target against the
// bitwise definition in ref_crc.hpp and published check values.
#include "fixture.hpp"
#include "ref_crc.hpp"
#include "util/crc_combine.hpp"

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
    // 511..513, 575..577, 767..769, 1087: the AVX-512 fold's entry and its
    // 64-byte and 256-byte steps with every tail; 543..545, 639..641, 671: the
    // AVX2 fold's 32-byte and 128-byte steps.
    for (size_t n : {100, 255, 256, 511, 512, 513, 543, 544, 545, 575, 576, 577, 639, 640, 641,
                     671, 767, 768, 769, 1000, 1087,
                     3 * 8192 - 1, 3 * 8192, 3 * 8192 + 1,
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

// crc(A || B) from crc(A), crc(B) and |B|, against the CRC of the whole, for
// splits at every length class (empty parts, odd lengths, multi-megabyte B).
TEST(Crc32cCombine, EqualsTheCrcOfTheConcatenation) {
    const std::vector<uint8_t> data = random_bytes(3000017, 777);
    for (size_t total : {0, 1, 9, 64, 1000, 65537, 3000017})
        for (size_t a :
             {size_t(0), size_t(1), total / 3, total / 2, total > 0 ? total - 1 : 0, total}) {
            if (a > total) continue;
            const uint32_t whole = ref::crc32c(0, data.data(), total);
            const uint32_t ca = ref::crc32c(0, data.data(), a);
            const uint32_t cb = ref::crc32c(0, data.data() + a, total - a);
            EXPECT_EQ(gw::crc32c_combine(ca, cb, total - a), whole)
                << "total=" << total << " split=" << a;
        }
    // Lengths beyond 32 bits, where no buffer fits: combining is associative,
    // (A || Z1) || Z2 = A || (Z1 || Z2), for zero runs of 2^k bytes whose CRCs
    // come from doubling (crc(Z || Z) = combine(crc Z, crc Z, |Z|)).
    const uint8_t zero = 0;
    uint32_t z[40];
    z[0] = ref::crc32c(0, &zero, 1);
    for (int k = 1; k < 40; ++k)
        z[k] = gw::crc32c_combine(z[k - 1], z[k - 1], uint64_t(1) << (k - 1));
    EXPECT_EQ(z[10], ref::crc32c(0, std::vector<uint8_t>(1024).data(), 1024));
    for (int i : {3, 31, 32, 33, 38})
        for (int j : {0, 7, 32, 39}) {
            const uint64_t ni = uint64_t(1) << i, nj = uint64_t(1) << j;
            EXPECT_EQ(gw::crc32c_combine(gw::crc32c_combine(0xE3069283u, z[i], ni), z[j], nj),
                      gw::crc32c_combine(0xE3069283u, gw::crc32c_combine(z[i], z[j], nj), ni + nj))
                << i << " " << j;
        }
}

}  // namespace
}  // namespace gw::ktest
