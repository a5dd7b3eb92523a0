// Kernel family "sign" (src/kernels/sign.hpp) on every SIMD target, bit for
// bit against ref_sign.hpp: sign_pack, sign_pack_residual, sign_unpack,
// sign_unpack_blocks, sign_accumulate, sign_accumulate_n,
// sign_accumulate_blocks.
#include "fixture.hpp"
#include "ref_sign.hpp"

#include <memory>

namespace gw::ktest {
namespace {

// ---- sign bits ----
TEST_P(KernelTest, SignPack) {
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        const auto& x = input(c.dist, c.n, 0);
        const size_t nb = ref::sign_bytes(c.n);
        Exact in(x.data(), 4 * c.n, 4 * c.fmis);
        Guarded bits(nb, c.bmis);
        std::vector<uint8_t> want(nb + 1);
        t_->sign_pack(in.f(), c.n, bits.data());
        ref::sign_pack(x.data(), c.n, want.data());
        EXPECT_TRUE(same_bytes(bits.data(), want.data(), nb));
        EXPECT_TRUE(padding_clear(bits.data(), c.n));
        EXPECT_TRUE(bits.guards_intact());
        if (HasFailure()) return;
    }
}

TEST_P(KernelTest, SignOfZeroIsPlus) {
    const float x[9] = {0.0f, -0.0f, FLT_TRUE_MIN, -FLT_TRUE_MIN, 1.0f, -1.0f, 0.0f, -0.0f, -0.0f};
    uint8_t bits[2] = {0xFF, 0xFF};
    t_->sign_pack(x, 9, bits);
    EXPECT_EQ(bits[0], 0x28);  // only -denormal (bit 3) and -1 (bit 5)
    EXPECT_EQ(bits[1], 0x00);
}

TEST_P(KernelTest, SignPackResidual) {
    const float scales[] = {1.0f, 0.3125f, 1e-30f, 3.0e38f};
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        const auto& x = input(c.dist, c.n, 0);
        const size_t nb = ref::sign_bytes(c.n);
        Exact in(x.data(), 4 * c.n, 4 * c.fmis);
        std::vector<uint8_t> want_bits(nb + 1);
        std::vector<float> want_e(c.n + 1);
        for (float s : scales) {
            SCOPED_TRACE("s=" + std::to_string(s));
            ref::sign_pack_residual(x.data(), c.n, s, want_bits.data(), want_e.data());
            {  // separate residual buffer
                Guarded bits(nb, c.bmis), e(4 * c.n, 4 * c.fmis);
                t_->sign_pack_residual(in.f(), c.n, s, bits.data(), e.f());
                EXPECT_TRUE(same_bytes(bits.data(), want_bits.data(), nb));
                EXPECT_TRUE(padding_clear(bits.data(), c.n));
                EXPECT_TRUE(same_floats(e.f(), want_e.data(), c.n));
                EXPECT_TRUE(bits.guards_intact());
                EXPECT_TRUE(e.guards_intact());
            }
            {  // in place: e == x
                Guarded bits(nb, c.bmis), xe(4 * c.n, 4 * c.fmis);
                xe.fill_from(x.data());
                t_->sign_pack_residual(xe.f(), c.n, s, bits.data(), xe.f());
                EXPECT_TRUE(same_bytes(bits.data(), want_bits.data(), nb)) << "e == x";
                EXPECT_TRUE(same_floats(xe.f(), want_e.data(), c.n)) << "e == x";
                EXPECT_TRUE(bits.guards_intact());
                EXPECT_TRUE(xe.guards_intact());
            }
        }
        EXPECT_TRUE(in.same_as(x.data()));
        if (HasFailure()) return;
    }
}

// Sign bit payloads for a case: packed from the input (zeros -> all clear,
// -0 -> all clear too) or random bytes, with junk in the unused high bits of
// the last byte, which decoding must ignore.
std::vector<uint8_t> bits_for(const Case& c) {
    const size_t nb = ref::sign_bytes(c.n);
    std::vector<uint8_t> b;
    if (c.dist == kUniform || c.dist == kRandomBits || c.dist == kCauchy) {
        b = random_bytes(nb, 77 + c.n * 31 + uint64_t(c.dist));
    } else {
        b.assign(nb + 1, 0);
        ref::sign_pack(input(c.dist, c.n, 0).data(), c.n, b.data());
        b.resize(nb);
    }
    if (c.n % 8 != 0) b[nb - 1] = uint8_t(b[nb - 1] | (0xFF << (c.n % 8)));
    return b;
}

TEST_P(KernelTest, SignUnpack) {
    const float scales[] = {1.0f, -0.75f, 0.0f, 2.5e-3f};
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        const std::vector<uint8_t> b = bits_for(c);
        Exact in(b.data(), b.size(), c.bmis);
        std::vector<float> want(c.n + 1);
        for (float s : scales) {
            Guarded out(4 * c.n, 4 * c.fmis);
            t_->sign_unpack(in.data(), c.n, s, out.f());
            ref::sign_unpack(b.data(), c.n, s, want.data());
            EXPECT_TRUE(same_floats(out.f(), want.data(), c.n)) << "s=" << s;
            EXPECT_TRUE(out.guards_intact());
        }
        if (HasFailure()) return;
    }
}

TEST_P(KernelTest, SignAccumulate) {
    const float values[] = {1.0f, 0.5f, -3.0f, 1e-20f};
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        const std::vector<uint8_t> b = bits_for(c);
        const auto& acc0 = input(c.dist, c.n, 1);
        Exact in(b.data(), b.size(), c.bmis);
        for (float v : values) {
            Guarded acc(4 * c.n, 4 * c.fmis);
            acc.fill_from(acc0.data());
            std::vector<float> want(acc0);
            t_->sign_accumulate(in.data(), c.n, v, acc.f());
            ref::sign_accumulate(b.data(), c.n, v, want.data());
            EXPECT_TRUE(same_floats(acc.f(), want.data(), c.n)) << "v=" << v;
            EXPECT_TRUE(acc.guards_intact());
        }
        if (HasFailure()) return;
    }
}

// m fields at once == m sign_accumulate calls in turn (each field different:
// the case's bits rotated by j bytes and flipped by a pattern; values of both
// signs, tiny, and zero, whose -v is -0).
// kSignAccumulateMax distinct bit fields of a case, each held at its own
// misalignment (ptr: what the kernels read).
struct Fields {
    std::vector<std::vector<uint8_t>> bits;
    std::vector<std::unique_ptr<Exact>> held;
    std::vector<const uint8_t*> ptr;
    explicit Fields(const Case& c) : bits(kern::kSignAccumulateMax) {
        const std::vector<uint8_t> b = bits_for(c);
        for (size_t j = 0; j < bits.size(); ++j) {
            bits[j] = b;
            for (size_t i = 0; i < b.size(); ++i)
                bits[j][i] = uint8_t(b[(i + j) % b.size()] ^ (0x5A * j));
            if (c.n % 8 != 0) bits[j].back() &= uint8_t(0xFF >> (8 - c.n % 8));
            held.emplace_back(new Exact(bits[j].data(), bits[j].size(), (c.bmis + j) % 8));
            ptr.push_back(held.back()->data());
        }
    }
};

TEST_P(KernelTest, SignAccumulateN) {
    const float values[] = {0.125f, -3.0f, 1e-20f, 0.0f, 7.5f, -0.25f, 2.0f, 1e30f};
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        const auto& acc0 = input(c.dist, c.n, 1);
        const Fields f(c);
        for (size_t m : {size_t(1), size_t(2), size_t(3), kern::kSignAccumulateMax}) {
            Guarded acc(4 * c.n, 4 * c.fmis);
            acc.fill_from(acc0.data());
            std::vector<float> want(acc0);
            t_->sign_accumulate_n(f.ptr.data(), values, m, c.n, acc.f());
            for (size_t j = 0; j < m; ++j)
                ref::sign_accumulate(f.bits[j].data(), c.n, values[j], want.data());
            EXPECT_TRUE(same_floats(acc.f(), want.data(), c.n)) << "m=" << m;
            EXPECT_TRUE(acc.guards_intact());
        }
        if (HasFailure()) return;
    }
}

// Block b's little-endian scale, in the layout the *_blocks kernels read.
float scale_at(const std::vector<uint8_t>& scales, size_t b) {
    const uint8_t* q = scales.data() + 4 * b;
    const uint32_t u = uint32_t(q[0]) | uint32_t(q[1]) << 8 | uint32_t(q[2]) << 16 |
                       uint32_t(q[3]) << 24;
    float s;
    std::memcpy(&s, &u, 4);
    return s;
}

// Fields of fixed blocks, a little-endian scale per block and field (zero,
// tiny, huge among them), times alpha: each block as sign_accumulate calls
// with alpha * scale, field after field. Blocks of 8 (below a vector), 16,
// 64 and 1000 elements, the last one shorter.
TEST_P(KernelTest, SignAccumulateBlocks) {
    const float picks[] = {0.125f, 3.0f, 1e-20f, 0.0f, 7.5f, 2.5e-3f, 2.0f, 1e30f, 0.7f};
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        const auto& acc0 = input(c.dist, c.n, 1);
        const Fields f(c);
        for (size_t d : {size_t(8), size_t(16), size_t(64), size_t(1000)}) {
            const size_t nb = (c.n + d - 1) / d;
            std::vector<std::vector<uint8_t>> scales(kern::kSignAccumulateMax);
            std::vector<std::unique_ptr<Exact>> held;
            std::vector<const unsigned char*> sp;
            for (size_t j = 0; j < scales.size(); ++j) {
                for (size_t b = 0; b < nb; ++b) {
                    const uint32_t u = fbits(picks[(b * 7 + j * 3) % std::size(picks)]);
                    for (int k = 0; k < 4; ++k) scales[j].push_back(uint8_t(u >> (8 * k)));
                }
                held.emplace_back(new Exact(scales[j].data(), scales[j].size(), (c.bmis + j) % 4));
                sp.push_back(held.back()->data());
            }
            for (size_t m : {size_t(1), size_t(3), kern::kSignAccumulateMax})
                for (float alpha : {0.25f, 1.0f}) {
                    if (c.n == kBig && (m == 3 || d == 8)) continue;
                    Guarded acc(4 * c.n, 4 * c.fmis);
                    acc.fill_from(acc0.data());
                    std::vector<float> want(acc0);
                    t_->sign_accumulate_blocks(f.ptr.data(), sp.data(), alpha, m, d, c.n, acc.f());
                    for (size_t i = 0; i < c.n; i += d)
                        for (size_t j = 0; j < m; ++j)
                            ref::sign_accumulate(f.bits[j].data() + i / 8, std::min(d, c.n - i),
                                                 alpha * scale_at(scales[j], i / d),
                                                 want.data() + i);
                    EXPECT_TRUE(same_floats(acc.f(), want.data(), c.n))
                        << "d=" << d << " m=" << m << " alpha=" << alpha;
                    EXPECT_TRUE(acc.guards_intact());
                }
            if (HasFailure()) return;
        }
    }
}

// Fixed blocks decoded in one call: each block as sign_unpack with its own
// scale (zero, tiny and huge among them). Blocks of 8 (below a vector), 16,
// 24 (not a multiple of 16), 64 and 1000 elements, the last one shorter,
// and one block of all n.
TEST_P(KernelTest, SignUnpackBlocks) {
    const float picks[] = {0.125f, 3.0f, 1e-20f, 0.0f, 7.5f, 2.5e-3f, 2.0f, 1e30f, 0.7f};
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        const Fields f(c);
        for (size_t d : {size_t(8), size_t(16), size_t(24), size_t(64), size_t(1000), c.n}) {
            if (d == 0 || (c.n == kBig && d < 64)) continue;
            const size_t nb = (c.n + d - 1) / d;
            std::vector<uint8_t> scales;
            for (size_t b = 0; b < nb; ++b) {
                const uint32_t u = fbits(picks[(b * 7) % std::size(picks)]);
                for (int k = 0; k < 4; ++k) scales.push_back(uint8_t(u >> (8 * k)));
            }
            Exact sc(scales.data(), scales.size(), c.bmis);
            Guarded out(4 * c.n, 4 * c.fmis);
            std::vector<float> want(c.n);
            t_->sign_unpack_blocks(f.ptr[0], sc.data(), d, c.n, out.f());
            for (size_t i = 0, b = 0; i < c.n; i += d, ++b)
                ref::sign_unpack(f.bits[0].data() + i / 8, std::min(d, c.n - i),
                                 scale_at(scales, b), want.data() + i);
            EXPECT_TRUE(same_floats(out.f(), want.data(), c.n)) << "d=" << d;
            EXPECT_TRUE(out.guards_intact()) << "d=" << d;
            if (HasFailure()) return;
        }
    }
}

}  // namespace
}  // namespace gw::ktest
