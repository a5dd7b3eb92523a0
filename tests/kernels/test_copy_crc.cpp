// Kernel family "copy_crc" (src/kernels/copy_crc.hpp) on every SIMD target
// against ref_copy_crc.hpp: x's little-endian bytes (and back), their CRC32C
// continued from a nonzero start, and whether the floats are all finite.
#include "fixture.hpp"
#include "ref_copy_crc.hpp"

namespace gw::ktest {
namespace {

constexpr uint32_t kCrcStart = 0x9E3779B9u;

struct Copied {
    std::vector<uint8_t> bytes;
    uint32_t crc = kCrcStart;
    bool finite = false;
};
Copied reference(const std::vector<float>& x) {
    Copied c;
    c.bytes.resize(4 * x.size() + 1);
    c.finite = ref::f32_copy_finite_crc(x.data(), c.bytes.data(), x.size(), &c.crc);
    return c;
}

// At every misalignment of x and of the output (outputs at a multiple of 4
// bytes reach 64-byte lines after a head of 0..15 floats and stream beyond
// the caches; the others cannot stream).
void check_copy(const Table& t, const std::vector<float>& x, size_t fmis, size_t bmis,
                const Copied* want = nullptr) {
    const size_t n = x.size();
    Exact in(x.data(), 4 * n, 4 * fmis);
    Guarded out(4 * n, bmis);
    uint32_t crc = kCrcStart;
    const bool finite = t.f32_copy_finite_crc(in.f(), out.data(), n, &crc);
    const Copied own = want ? Copied{} : reference(x);
    if (!want) want = &own;
    EXPECT_EQ(finite, want->finite) << "n=" << n;
    EXPECT_TRUE(out.guards_intact()) << "n=" << n;
    if (!finite) return;  // out and crc are unspecified then
    EXPECT_TRUE(same_bytes(out.data(), want->bytes.data(), 4 * n)) << "n=" << n;
    EXPECT_EQ(crc, want->crc) << "n=" << n << " misalign=" << bmis;
}

TEST_P(KernelTest, F32CopyFiniteCrc) {
    for_each_case([&](const Case& c) { check_copy(*t_, input(c.dist, c.n, 0), c.fmis, c.bmis); });
    // Around the 64-float blocks and the 1024-float tiles.
    for (size_t n : {63, 64, 65, 127, 128, 129, 1023, 1024, 1025, 5003})
        for (size_t bmis = 0; bmis < 4; ++bmis)
            check_copy(*t_, input(kCauchy, n, 3), bmis % 2, bmis * 13);
    constexpr size_t kBigStream = (size_t(4) << 20) + 77;  // 16 MB of output and more
    const auto& big = input(kNormal, kBigStream, 4);
    const Copied want = reference(big);
    for (size_t bmis : {0, 28, 1}) check_copy(*t_, big, 1, bmis, &want);
    for (size_t n : {size_t(65), size_t(1000), kBigStream})
        for (float bad : {INFINITY, -INFINITY, NAN})
            for (size_t at : {size_t(0), n / 2, n - 1}) {
                if (n == kBigStream && (!std::isnan(bad) || at == 0)) continue;
                std::vector<float> x = input(kNormal, n, 2);
                x[at] = bad;
                check_copy(*t_, x, 0, at % 2 == 0 ? 0 : 2);
            }
}

// The decode: the payload's floats at every misalignment of the payload
// and of out, its CRC exact also when a value is not finite (a corrupted
// frame must read as one), out unspecified then.
void check_from_le(const Table& t, const std::vector<uint8_t>& payload, size_t fmis, size_t bmis) {
    const size_t n = payload.size() / 4;
    Exact in(payload.data(), payload.size(), bmis);
    Guarded out(4 * n, 4 * fmis);
    std::vector<float> want(n + 1);
    uint32_t crc = kCrcStart, want_crc = kCrcStart;
    const bool finite = t.le32_copy_finite_crc(in.data(), out.f(), n, &crc);
    const bool want_finite = ref::le32_copy_finite_crc(payload.data(), want.data(), n, &want_crc);
    EXPECT_EQ(finite, want_finite) << "n=" << n;
    EXPECT_EQ(crc, want_crc) << "n=" << n << " misalign=" << bmis;
    EXPECT_TRUE(out.guards_intact()) << "n=" << n;
    if (finite) {
        EXPECT_TRUE(same_floats(out.f(), want.data(), n)) << "n=" << n << " fmis=" << fmis;
    }
}

std::vector<uint8_t> le_payload(const std::vector<float>& x) {
    return ref::f32_le_bytes(x.data(), x.size());
}

TEST_P(KernelTest, Le32CopyFiniteCrc) {
    for_each_case([&](const Case& c) {
        check_from_le(*t_, le_payload(input(c.dist, c.n, 0)), c.fmis, c.bmis);
    });
    for (size_t n : {63, 64, 65, 127, 128, 129, 1023, 1024, 1025, 5003})
        for (size_t mis = 0; mis < 4; ++mis)
            check_from_le(*t_, le_payload(input(kCauchy, n, 3)), mis, mis * 13);
    // Outputs of 16 MB and more: heads of 0..15 floats before the streamed lines.
    const std::vector<uint8_t> big = le_payload(input(kNormal, (size_t(4) << 20) + 77, 4));
    for (size_t fmis : {0, 1, 3, 15}) check_from_le(*t_, big, fmis, fmis % 4);
    for (size_t n : {size_t(65), size_t(1000), size_t(40003)})
        for (uint32_t bad : {0x7F800000u, 0xFF800000u, 0x7FC00001u, 0xFFFFFFFFu})
            for (size_t at : {size_t(0), n / 2, n - 1}) {
                std::vector<uint8_t> p = le_payload(input(kNormal, n, 2));
                for (int k = 0; k < 4; ++k) p[4 * at + k] = uint8_t(bad >> (8 * k));
                check_from_le(*t_, p, at % 2, at % 4);
            }
}

}  // namespace
}  // namespace gw::ktest
