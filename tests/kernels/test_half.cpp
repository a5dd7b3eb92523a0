// Kernel family "half" (src/kernels/half.hpp) on every SIMD target, bit for
// bit against ref_half.hpp: fp16 and bfloat16 encode, decode, accumulate,
// all_finite, ef_cast, and the fused encode / decode with the CRC.
#include "fixture.hpp"
#include "ref_crc.hpp"
#include "ref_half.hpp"
#include "ref_norms.hpp"

namespace gw::ktest {
namespace {

// ---- fp16 / bf16 ----
enum class Half { F16, Bf16 };

// Half payload (little-endian u16) made from a float input with the reference.
std::vector<uint8_t> f16_payload(const std::vector<float>& x) {
    std::vector<uint8_t> p(2 * x.size() + 1);
    ref::f32_to_f16(x.data(), p.data(), x.size());
    p.resize(2 * x.size());
    return p;
}
std::vector<uint8_t> bf16_payload(const std::vector<float>& x) {
    std::vector<uint8_t> p(2 * x.size() + 1);
    ref::f32_to_bf16(x.data(), p.data(), x.size());
    p.resize(2 * x.size());
    return p;
}

void check_encode(const Table& t, Half kind, const std::vector<float>& x, size_t fmis,
                  size_t bmis) {
    const size_t n = x.size();
    Exact in(x.data(), 4 * n, 4 * fmis);
    Guarded out(2 * n, bmis);
    std::vector<uint8_t> want(2 * n + 1);
    if (kind == Half::F16) {
        t.f32_to_f16(in.f(), out.data(), n);
        ref::f32_to_f16(x.data(), want.data(), n);
    } else {
        t.f32_to_bf16(in.f(), out.data(), n);
        ref::f32_to_bf16(x.data(), want.data(), n);
    }
    ::testing::AssertionResult same = same_bytes(out.data(), want.data(), 2 * n);
    if (!same) {  // name the input element
        for (size_t i = 0; i < n; ++i)
            if (std::memcmp(out.data() + 2 * i, want.data() + 2 * i, 2) != 0) {
                ADD_FAILURE() << "element " << i << ": input " << std::hexfloat << x[i] << " (0x"
                              << std::hex << fbits(x[i]) << ") encodes to 0x"
                              << (out.data()[2 * i] | (out.data()[2 * i + 1] << 8)) << ", want 0x"
                              << (want[2 * i] | (want[2 * i + 1] << 8));
                break;
            }
    }
    EXPECT_TRUE(same);
    EXPECT_TRUE(out.guards_intact());
}

TEST_P(KernelTest, F32ToF16) {
    for_each_case([&](const Case& c) { check_encode(*t_, Half::F16, input(c.dist, c.n, 0), c.fmis, c.bmis); });
}

TEST_P(KernelTest, F32ToBf16) {
    for_each_case([&](const Case& c) { check_encode(*t_, Half::Bf16, input(c.dist, c.n, 0), c.fmis, c.bmis); });
}

// Every finite value of the format, the midpoints to the next value (ties),
// one float ulp either side of each midpoint, both signs.
std::vector<float> rounding_edges(Half kind) {
    std::vector<float> v;
    const uint16_t top = kind == Half::F16 ? 0x7BFF : 0x7F7F;
    auto value = [&](uint32_t h) -> double {
        if (h > top)  // one step beyond the largest finite value
            return kind == Half::F16 ? 65536.0 : std::ldexp(1.0, 128);
        return kind == Half::F16 ? ref::f16_to_f32(uint16_t(h)) : ref::bf16_to_f32(uint16_t(h));
    };
    for (uint32_t h = 0; h <= top; ++h) {
        const float lo = float(value(h));
        const float mid = float((value(h) + value(h + 1)) / 2);
        for (float f : {lo, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, FLT_MAX)}) {
            v.push_back(f);
            v.push_back(-f);
        }
    }
    for (float f : {FLT_MAX, 1e38f, 1e20f, 1e10f, 70000.0f, 65536.0f, FLT_TRUE_MIN, FLT_MIN}) {
        v.push_back(f);
        v.push_back(-f);
    }
    return v;
}

TEST_P(KernelTest, F32ToF16RoundingEdges) {
    static const std::vector<float> x = rounding_edges(Half::F16);
    check_encode(*t_, Half::F16, x, 1, 3);
    // Saturation, spelled out.
    const float sat[] = {65504.0f, 65519.0f, 65520.0f, 1e10f, FLT_MAX, -65520.0f, -FLT_MAX};
    uint8_t h[2 * 7];  // little-endian payload bytes
    t_->f32_to_f16(sat, h, 7);
    for (int i = 0; i < 5; ++i) EXPECT_EQ(h[2 * i] | h[2 * i + 1] << 8, 0x7BFF) << sat[i];
    for (int i = 5; i < 7; ++i) EXPECT_EQ(h[2 * i] | h[2 * i + 1] << 8, 0xFBFF) << sat[i];
}

// A sweep of float bit patterns (every 65521st, and the 2^16 around each
// boundary of the formats' ranges): normals, subnormals of both formats, the
// saturation band and Inf, bit for bit against the reference (NaN is outside
// the encoders' contract: callers check finiteness first).
std::vector<float> bit_pattern_sweep(bool with_inf) {
    std::vector<float> x;
    auto add = [&](uint32_t b) {
        if ((b & 0x7FFFFFFFu) < (with_inf ? 0x7F800001u : 0x7F800000u)) x.push_back(from_bits(b));
    };
    for (uint64_t b = 0; b <= 0xFFFFFFFFull; b += 65521) add(uint32_t(b));
    for (uint32_t centre : {0x33000000u, 0x387FC000u, 0x477FE000u, 0x7F7F0000u, 0x7F800000u})
        for (uint32_t d = 0; d < 65536; ++d) {
            add(centre - 32768 + d);
            add((centre - 32768 + d) | 0x80000000u);
        }
    return x;
}
TEST_P(KernelTest, HalfEncodeBitPatternSweep) {
    const std::vector<float> x = bit_pattern_sweep(true);
    check_encode(*t_, Half::F16, x, 0, 1);
    check_encode(*t_, Half::Bf16, x, 3, 0);
}

// encode_finite writes what the target's encoder writes and says whether x
// is all finite (the reference's all_finite): every case, and one Inf or NaN
// at every position of short arrays (vector lanes, unrolled pairs, tails).
void check_encode_finite(const Table& t, Half kind, const std::vector<float>& x, size_t fmis,
                         size_t bmis) {
    const size_t n = x.size();
    Exact in(x.data(), 4 * n, 4 * fmis);
    Guarded out(2 * n, bmis);
    std::vector<uint8_t> want(2 * n + 1);
    const bool finite = kind == Half::F16 ? t.f16_encode_finite(in.f(), out.data(), n)
                                          : t.bf16_encode_finite(in.f(), out.data(), n);
    (kind == Half::F16 ? t.f32_to_f16 : t.f32_to_bf16)(x.data(), want.data(), n);
    EXPECT_EQ(finite, ref::all_finite(x.data(), n));
    EXPECT_TRUE(same_bytes(out.data(), want.data(), 2 * n));
    EXPECT_TRUE(out.guards_intact());
}

TEST_P(KernelTest, HalfEncodeFinite) {
    for (Half kind : {Half::F16, Half::Bf16}) {
        for_each_case([&](const Case& c) {
            check_encode_finite(*t_, kind, input(c.dist, c.n, 0), c.fmis, c.bmis);
        });
        for (size_t n : {1, 7, 16, 31, 32, 33, 64, 70, 129})
            for (float bad : {INFINITY, -INFINITY, NAN})
                for (size_t at = 0; at < n; ++at) {
                    std::vector<float> x = input(kNormal, n, 2);
                    x[at] = bad;
                    check_encode_finite(*t_, kind, x, at % 2, at % 4);
                    if (::testing::Test::HasFailure()) return;
                }
    }
}

// encode_finite_crc: the reference's bytes and their CRC32C continued from a
// nonzero start, at every misalignment of x and of the output (odd outputs
// cannot stream; even ones reach 64-byte lines after a head of 0..31
// elements), at lengths around its 128-element blocks, and beyond the caches
// (kBigStream: the streaming stores); a planted Inf or NaN is refused.
struct Encoded {
    std::vector<uint8_t> bytes;
    uint32_t crc;
};
constexpr uint32_t kCrcStart = 0x12345678u;
Encoded reference(Half kind, const std::vector<float>& x) {
    Encoded e{std::vector<uint8_t>(2 * x.size() + 1), 0};
    if (kind == Half::F16)
        ref::f32_to_f16(x.data(), e.bytes.data(), x.size());
    else
        ref::f32_to_bf16(x.data(), e.bytes.data(), x.size());
    e.crc = ref::crc32c(kCrcStart, e.bytes.data(), 2 * x.size());
    return e;
}
void check_encode_finite_crc(const Table& t, Half kind, const std::vector<float>& x, size_t fmis,
                             size_t bmis, const Encoded* want = nullptr) {
    const size_t n = x.size();
    Exact in(x.data(), 4 * n, 4 * fmis);
    Guarded out(2 * n, bmis);
    uint32_t crc = kCrcStart;
    const bool finite = kind == Half::F16 ? t.f16_encode_finite_crc(in.f(), out.data(), n, &crc)
                                          : t.bf16_encode_finite_crc(in.f(), out.data(), n, &crc);
    EXPECT_EQ(finite, ref::all_finite(x.data(), n)) << "n=" << n;
    EXPECT_TRUE(out.guards_intact()) << "n=" << n;
    if (!finite) return;  // out and crc are unspecified then
    const Encoded own = want ? Encoded{} : reference(kind, x);
    if (!want) want = &own;
    EXPECT_TRUE(same_bytes(out.data(), want->bytes.data(), 2 * n)) << "n=" << n;
    EXPECT_EQ(crc, want->crc) << "n=" << n << " misalign=" << bmis;
}

TEST_P(KernelTest, HalfEncodeFiniteCrc) {
    constexpr size_t kBigStream = (size_t(8) << 20) + 77;  // 16 MB of output and more
    for (Half kind : {Half::F16, Half::Bf16}) {
        for_each_case([&](const Case& c) {
            check_encode_finite_crc(*t_, kind, input(c.dist, c.n, 0), c.fmis, c.bmis);
        });
        for (size_t n : {127, 128, 129, 255, 256, 300, 1000, 4133})
            for (size_t bmis = 0; bmis < 4; ++bmis)
                check_encode_finite_crc(*t_, kind, input(kCauchy, n, 3), bmis % 2, bmis * 13);
        // The formats' edges in whole blocks: rounding ties, saturation, subnormals, signs.
        check_encode_finite_crc(*t_, kind, rounding_edges(kind), 0, 0);
        check_encode_finite_crc(*t_, kind, bit_pattern_sweep(false), 1, 2);
        const auto& big = input(kNormal, kBigStream, 4);
        const Encoded want = reference(kind, big);
        for (size_t bmis : {0, 30, 1}) check_encode_finite_crc(*t_, kind, big, 1, bmis, &want);
        for (size_t n : {size_t(129), size_t(1000), kBigStream})
            for (float bad : {INFINITY, NAN})
                for (size_t at : {size_t(0), n / 2, n - 1}) {
                    if (n == kBigStream && (bad == INFINITY || at == 0)) continue;
                    std::vector<float> x = input(kNormal, n, 2);
                    x[at] = bad;
                    check_encode_finite_crc(*t_, kind, x, 0, 2);
                }
        if (::testing::Test::HasFailure()) return;
    }
}

TEST_P(KernelTest, F32ToBf16RoundingEdges) {
    static const std::vector<float> x = rounding_edges(Half::Bf16);
    check_encode(*t_, Half::Bf16, x, 0, 1);
    const float sat[] = {from_bits(0x7F7F8000), FLT_MAX, -FLT_MAX};
    uint8_t h[2 * 3];  // little-endian payload bytes
    t_->f32_to_bf16(sat, h, 3);
    EXPECT_EQ(h[0] | h[1] << 8, 0x7F7F);
    EXPECT_EQ(h[2] | h[3] << 8, 0x7F7F);
    EXPECT_EQ(h[4] | h[5] << 8, 0xFF7F);
}

void check_decode(const Table& t, Half kind, const std::vector<uint8_t>& payload, size_t fmis,
                  size_t bmis) {
    const size_t n = payload.size() / 2;
    Exact in(payload.data(), payload.size(), bmis);
    Guarded out(4 * n, 4 * fmis);
    std::vector<float> want(n + 1);
    if (kind == Half::F16) {
        t.f16_to_f32(in.data(), out.f(), n);
        ref::f16_to_f32(payload.data(), want.data(), n);
    } else {
        t.bf16_to_f32(in.data(), out.f(), n);
        ref::bf16_to_f32(payload.data(), want.data(), n);
    }
    EXPECT_TRUE(same_floats(out.f(), want.data(), n));
    EXPECT_TRUE(out.guards_intact());
}

// Outputs of 16 MiB and more are written with streaming stores from the
// first vector-aligned element on: heads of every length before alignment.
TEST_P(KernelTest, HalfDecodeLargeOutputs) {
    const std::vector<float> x = input(kNormal, (size_t(16) << 20) / 4 + 37, 3);
    for (Half kind : {Half::F16, Half::Bf16})
        for (size_t fmis : {0, 1, 3, 15})
            check_decode(*t_, kind, kind == Half::F16 ? f16_payload(x) : bf16_payload(x), fmis,
                         fmis % 4);
}

// decode_finite_crc: the reference's floats, the CRC32C of the payload
// continued from a nonzero start, and the reference's finiteness, at every
// misalignment of the payload and of out (odd outputs cannot stream; the
// others reach 64-byte lines after heads of 0..15 elements), at lengths
// around its 128-element blocks, and beyond the caches (streamed). A planted
// Inf or NaN makes it false with the CRC still exact (a corrupted frame must
// read as such); out is unspecified then. Without out, the same verdict and
// CRC.
void check_decode_finite_crc(const Table& t, Half kind, const std::vector<uint8_t>& payload,
                             size_t fmis, size_t bmis) {
    const size_t n = payload.size() / 2;
    Exact in(payload.data(), payload.size(), bmis);
    Guarded out(4 * n, 4 * fmis);
    std::vector<float> want(n + 1);
    uint32_t crc = kCrcStart;
    bool finite, want_finite;
    if (kind == Half::F16) {
        finite = t.f16_decode_finite_crc(in.data(), out.f(), n, &crc);
        ref::f16_to_f32(payload.data(), want.data(), n);
        want_finite = ref::f16_all_finite(payload.data(), n);
    } else {
        finite = t.bf16_decode_finite_crc(in.data(), out.f(), n, &crc);
        ref::bf16_to_f32(payload.data(), want.data(), n);
        want_finite = ref::bf16_all_finite(payload.data(), n);
    }
    EXPECT_EQ(finite, want_finite) << "n=" << n;
    EXPECT_EQ(crc, ref::crc32c(kCrcStart, payload.data(), payload.size()))
        << "n=" << n << " misalign=" << bmis;
    EXPECT_TRUE(out.guards_intact()) << "n=" << n;
    if (finite) {
        EXPECT_TRUE(same_floats(out.f(), want.data(), n)) << "n=" << n << " fmis=" << fmis;
    }
    // Without out: the check and the CRC alone, the same verdict and CRC.
    uint32_t check_crc = kCrcStart;
    const bool check_finite = kind == Half::F16
                                  ? t.f16_decode_finite_crc(in.data(), nullptr, n, &check_crc)
                                  : t.bf16_decode_finite_crc(in.data(), nullptr, n, &check_crc);
    EXPECT_EQ(check_finite, want_finite) << "no out, n=" << n;
    EXPECT_EQ(check_crc, crc) << "no out, n=" << n << " misalign=" << bmis;
}

TEST_P(KernelTest, HalfDecodeFiniteCrc) {
    for (Half kind : {Half::F16, Half::Bf16}) {
        const auto payload = [&](const std::vector<float>& x) {
            return kind == Half::F16 ? f16_payload(x) : bf16_payload(x);
        };
        for_each_case([&](const Case& c) {
            check_decode_finite_crc(*t_, kind, payload(input(c.dist, c.n, 0)), c.fmis, c.bmis);
        });
        for (size_t n : {127, 128, 129, 255, 256, 300, 1000, 4133})
            for (size_t mis = 0; mis < 4; ++mis)
                check_decode_finite_crc(*t_, kind, payload(input(kCauchy, n, 3)), mis, mis * 13);
        // Every finite pattern (subnormals, signed zeros, the largest values)
        // in whole blocks, then every pattern: the non-finite ones refused.
        std::vector<uint8_t> all, finite_only;
        for (uint32_t h = 0; h < 65536; ++h) {
            const bool special =
                kind == Half::F16 ? ((h >> 10) & 0x1F) == 0x1F : ((h >> 7) & 0xFF) == 0xFF;
            for (auto* v : {&all, special ? nullptr : &finite_only})
                if (v) v->insert(v->end(), {uint8_t(h), uint8_t(h >> 8)});
        }
        check_decode_finite_crc(*t_, kind, finite_only, 0, 0);
        check_decode_finite_crc(*t_, kind, finite_only, 1, 2);
        check_decode_finite_crc(*t_, kind, all, 0, 0);
        // Outputs of 16 MiB and more: heads before the first streamed line.
        const std::vector<uint8_t> big = payload(input(kNormal, (size_t(16) << 20) / 4 + 37, 4));
        for (size_t fmis : {0, 1, 3, 15}) check_decode_finite_crc(*t_, kind, big, fmis, fmis % 4);
        for (size_t n : {size_t(129), size_t(1000), size_t(40003)})
            for (uint16_t bad : {uint16_t(0x7F80), uint16_t(0xFC00), uint16_t(0x7FFF)})
                for (size_t at : {size_t(0), n / 2, n - 1}) {
                    std::vector<uint8_t> p = payload(input(kNormal, n, 2));
                    p[2 * at] = uint8_t(bad);
                    p[2 * at + 1] = uint8_t(bad >> 8);
                    check_decode_finite_crc(*t_, kind, p, at % 2, at % 4);
                }
        if (::testing::Test::HasFailure()) return;
    }
}

TEST_P(KernelTest, F16ToF32) {
    for_each_case([&](const Case& c) { check_decode(*t_, Half::F16, f16_payload(input(c.dist, c.n, 0)), c.fmis, c.bmis); });
}

TEST_P(KernelTest, Bf16ToF32) {
    for_each_case([&](const Case& c) { check_decode(*t_, Half::Bf16, bf16_payload(input(c.dist, c.n, 0)), c.fmis, c.bmis); });
}

// All 65536 bit patterns. Finite values and infinities must match the
// reference; NaNs must stay NaN and be bit-identical to the scalar target.
void check_decode_all_patterns(const Table& t, Half kind) {
    std::vector<uint8_t> payload(2 * 65536);
    for (uint32_t h = 0; h < 65536; ++h) {
        payload[2 * h] = uint8_t(h);
        payload[2 * h + 1] = uint8_t(h >> 8);
    }
    const Table& scalar = *gw::kern::table_for(GW_SIMD_SCALAR);
    std::vector<float> got(65536), sc(65536);
    auto run = [&](const Table& tb, float* out) {
        if (kind == Half::F16)
            tb.f16_to_f32(payload.data() + 0, out, 65536);
        else
            tb.bf16_to_f32(payload.data() + 0, out, 65536);
    };
    run(t, got.data());
    run(scalar, sc.data());
    for (uint32_t h = 0; h < 65536; ++h) {
        const float want =
            kind == Half::F16 ? ref::f16_to_f32(uint16_t(h)) : ref::bf16_to_f32(uint16_t(h));
        if (std::isnan(want)) {
            EXPECT_TRUE(std::isnan(got[h])) << "pattern 0x" << std::hex << h;
            EXPECT_EQ(fbits(got[h]), fbits(sc[h])) << "pattern 0x" << std::hex << h;
        } else {
            EXPECT_EQ(fbits(got[h]), fbits(want)) << "pattern 0x" << std::hex << h;
        }
        if (::testing::Test::HasFailure()) return;
    }
}

TEST_P(KernelTest, F16ToF32AllPatterns) { check_decode_all_patterns(*t_, Half::F16); }
TEST_P(KernelTest, Bf16ToF32AllPatterns) { check_decode_all_patterns(*t_, Half::Bf16); }

TEST_P(KernelTest, HalfRoundTrip) {
    // Every finite half / bfloat16 decodes and re-encodes to itself.
    for (Half kind : {Half::F16, Half::Bf16}) {
        std::vector<uint8_t> h;  // little-endian payload bytes
        for (uint32_t v = 0; v < 65536; ++v) {
            const bool special =
                kind == Half::F16 ? ((v >> 10) & 0x1F) == 0x1F : ((v >> 7) & 0xFF) == 0xFF;
            if (special) continue;
            h.push_back(uint8_t(v));
            h.push_back(uint8_t(v >> 8));
        }
        const size_t n = h.size() / 2;
        std::vector<float> f(n);
        std::vector<uint8_t> back(h.size());
        if (kind == Half::F16) {
            t_->f16_to_f32(h.data(), f.data(), n);
            t_->f32_to_f16(f.data(), back.data(), n);
        } else {
            t_->bf16_to_f32(h.data(), f.data(), n);
            t_->f32_to_bf16(f.data(), back.data(), n);
        }
        EXPECT_TRUE(same_bytes(back.data(), h.data(), h.size()));
    }
}

void check_half_accumulate(const Table& t, Half kind, const Case& c) {
    const auto& x = input(c.dist, c.n, 0);
    const std::vector<uint8_t> payload = kind == Half::F16 ? f16_payload(x) : bf16_payload(x);
    const auto& acc0 = input(c.dist, c.n, 1);
    Exact in(payload.data(), payload.size(), c.bmis);
    for (float alpha : {1.0f, -0.25f, 0.3f}) {
        Guarded acc(4 * c.n, 4 * c.fmis);
        acc.fill_from(acc0.data());
        std::vector<float> want(acc0);
        if (kind == Half::F16) {
            t.f16_accumulate(in.data(), alpha, acc.f(), c.n);
            ref::f16_accumulate(payload.data(), alpha, want.data(), c.n);
        } else {
            t.bf16_accumulate(in.data(), alpha, acc.f(), c.n);
            ref::bf16_accumulate(payload.data(), alpha, want.data(), c.n);
        }
        EXPECT_TRUE(same_floats(acc.f(), want.data(), c.n)) << "alpha=" << alpha;
        EXPECT_TRUE(acc.guards_intact());
    }
}

// ef_cast against the reference from every stop on (gw_ef_cast resumes past a
// NaN / Inf y): the same stops, residuals and payload; nothing else written.
void check_ef_cast(const Table& t, Half kind, const Case& c) {
    const auto& x = input(c.dist, c.n, 0);
    const auto& e0 = input(c.dist, c.n, 1);
    Exact in(x.data(), 4 * c.n, 4 * c.fmis);
    const auto kernel = kind == Half::F16 ? t.f16_ef_cast : t.bf16_ef_cast;
    const auto reference = kind == Half::F16 ? ref::f16_ef_cast : ref::bf16_ef_cast;
    for (float alpha : {1.0f, 0.25f, 1.0f / 3}) {
        Guarded e(4 * c.n, 4 * c.fmis), out(2 * c.n, c.bmis);
        e.fill_from(e0.data());
        std::vector<float> want_e(e0);
        std::vector<uint8_t> want_out(2 * c.n + 1, Guarded::kFill);
        for (size_t i = 0; i < c.n;) {
            const size_t a = i + kernel(in.f() + i, alpha, e.f() + i, out.data() + 2 * i, c.n - i);
            const size_t b =
                i + reference(x.data() + i, alpha, want_e.data() + i, want_out.data() + 2 * i, c.n - i);
            ASSERT_EQ(a, b) << "alpha=" << alpha;
            i = a + 1;
        }
        EXPECT_TRUE(same_floats(e.f(), want_e.data(), c.n)) << "alpha=" << alpha;
        EXPECT_TRUE(same_bytes(out.data(), want_out.data(), 2 * c.n)) << "alpha=" << alpha;
        EXPECT_TRUE(e.guards_intact());
        EXPECT_TRUE(out.guards_intact());
    }
}

TEST_P(KernelTest, F16EfCast) {
    for_each_case([&](const Case& c) { check_ef_cast(*t_, Half::F16, c); });
}

TEST_P(KernelTest, Bf16EfCast) {
    for_each_case([&](const Case& c) { check_ef_cast(*t_, Half::Bf16, c); });
}

TEST_P(KernelTest, F16Accumulate) {
    for_each_case([&](const Case& c) { check_half_accumulate(*t_, Half::F16, c); });
}

TEST_P(KernelTest, Bf16Accumulate) {
    for_each_case([&](const Case& c) { check_half_accumulate(*t_, Half::Bf16, c); });
}

void check_half_all_finite(const Table& t, Half kind, const Case& c) {
    const auto& x = input(c.dist, c.n, 0);
    std::vector<uint8_t> payload = kind == Half::F16 ? f16_payload(x) : bf16_payload(x);
    auto kernel = [&](const void* p) {
        return kind == Half::F16 ? t.f16_all_finite(p, c.n) : t.bf16_all_finite(p, c.n);
    };
    auto reference = [&](const void* p) {
        return kind == Half::F16 ? ref::f16_all_finite(p, c.n) : ref::bf16_all_finite(p, c.n);
    };
    {
        Exact in(payload.data(), payload.size(), c.bmis);
        EXPECT_TRUE(kernel(in.data()));
        EXPECT_TRUE(reference(payload.data()));
    }
    if (c.fmis != 1 || (c.n == kBig && c.dist != kNormal)) return;  // plant once per (n, dist)
    const uint16_t bad16[] = {0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFFFF, 0x7FFF};
    const uint16_t badbf[] = {0x7F80, 0xFF80, 0x7FC0, 0x7F81, 0xFFFF, 0x7FFF};
    const uint16_t near16[] = {0x7BFF, 0xFBFF, 0x3C00, 0x0400};  // finite, exponent almost all ones
    const uint16_t nearbf[] = {0x7F7F, 0xFF7F, 0x3F80, 0x0080};
    const uint16_t* bad = kind == Half::F16 ? bad16 : badbf;
    const uint16_t* near = kind == Half::F16 ? near16 : nearbf;
    size_t k = 0;
    for (size_t p : plant_positions(c.n)) {
        const uint8_t b0 = payload[2 * p], b1 = payload[2 * p + 1];
        ref::put_u16(payload.data(), p, bad[k % 6]);
        {
            Exact in(payload.data(), payload.size(), c.bmis);
            EXPECT_FALSE(kernel(in.data()))
                << "bad value 0x" << std::hex << bad[k % 6] << " at " << std::dec << p;
            EXPECT_FALSE(reference(payload.data()));
        }
        ref::put_u16(payload.data(), p, near[k % 4]);
        {
            Exact in(payload.data(), payload.size(), c.bmis);
            EXPECT_TRUE(kernel(in.data()))
                << "finite 0x" << std::hex << near[k % 4] << " at " << std::dec << p;
        }
        payload[2 * p] = b0;
        payload[2 * p + 1] = b1;
        ++k;
    }
}

TEST_P(KernelTest, F16AllFinite) {
    for_each_case([&](const Case& c) { check_half_all_finite(*t_, Half::F16, c); });
}

TEST_P(KernelTest, Bf16AllFinite) {
    for_each_case([&](const Case& c) { check_half_all_finite(*t_, Half::Bf16, c); });
}

}  // namespace
}  // namespace gw::ktest
