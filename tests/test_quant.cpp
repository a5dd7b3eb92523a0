// The quantizing codecs (docs/algorithms.md s.5, s.6; QSGD, TernGrad):
// frames byte-identical on every SIMD target and decoded by an independent
// unpacker written here from the wire format; unbiasedness and the variance
// (x - z)(z + delta - x) over many seeds; nothing lost (residual + decoded ==
// input); Sparse-AsyLPG's probabilities; every malformed payload rejected.
#include <algorithm>
#include <cmath>

#include "codecs/grid_quant.hpp"
#include "test_util.hpp"

using namespace gwtest;

namespace {

const int kBits[] = {1, 2, 3, 4, 5, 6, 7, 8, 16};

gw_encode_ctx ctx_of(uint64_t seed, uint64_t step, uint32_t tensor) {
    gw_encode_ctx c = GW_ENCODE_CTX_INIT;
    c.seed = seed;
    c.step = step;
    c.tensor = tensor;
    c.tag = GW_TAG(tensor, step);
    return c;
}

std::vector<uint8_t> encode_ctx(const gw_codec_spec* spec, const std::vector<float>& x,
                                const gw_encode_ctx& c) {
    size_t bound = 0, written = 0;
    EXPECT_EQ(gw_encode_bound(spec, x.size(), &bound), GW_OK);
    std::vector<uint8_t> f(bound);
    EXPECT_EQ(gw_encode(spec, &c, x.data(), GW_DTYPE_F32, x.size(), f.data(), f.size(), &written),
              GW_OK);
    f.resize(written);
    return f;
}

// An independent reader of the grid payload: B deltas, then per block
// ceil(d*w/8) bytes of LSB-first codes; value = (code + lo) * delta (pair
// grid: (2 code - 1) * delta).
std::vector<float> read_grid(const std::vector<uint8_t>& f, uint64_t n, uint64_t block, int lo,
                             bool pair, unsigned width) {
    const uint8_t* p = f.data() + payload_offset(f);
    const uint64_t bs = block ? block : n;
    const uint64_t blocks = n ? (n + bs - 1) / bs : 0;
    std::vector<float> out(n);
    const uint8_t* codes = p + 4 * blocks;
    for (uint64_t b = 0; b < blocks; ++b) {
        float delta;
        std::memcpy(&delta, p + 4 * b, 4);
        const uint64_t d = std::min(bs, n - b * bs);
        for (uint64_t i = 0; i < d; ++i) {
            uint32_t code = 0;
            for (unsigned k = 0; k < width; ++k) {
                const uint64_t bit = i * width + k;
                code |= uint32_t((codes[bit / 8] >> (bit % 8)) & 1) << k;
            }
            const float c = float(int(code) + lo);
            out[b * bs + i] = (pair ? c * 2.0f - 1.0f : c) * delta;
        }
        codes += (d * width + 7) / 8;
    }
    return out;
}

std::vector<float> inputs(size_t n, uint32_t seed) {
    std::vector<float> x = random_floats(n, seed);
    if (n > 10) {
        x[3] = 0.0f;
        x[5] = -0.0f;
        x[7] = 1e-40f;  // a denormal
    }
    return x;
}

TEST(Quant, FramesIdenticalOnEveryTargetAndReadIndependently) {
    for (int rev : {1, 2})
    for (int b : kBits)
        for (uint32_t block : {0u, 1u, 7u, 64u, 1000u})
            for (size_t n : {size_t(0), size_t(1), size_t(9), size_t(255), size_t(257),
                             size_t(5000), size_t(13000)}) {
                SCOPED_TRACE("rev=" + std::to_string(rev) + " b=" + std::to_string(b) +
                             " block=" + std::to_string(block) + " n=" + std::to_string(n));
                Spec s(GW_CODEC_QUANT, block);
                s.set(GW_PARAM_BITS, b);
                s.set(GW_PARAM_REVISION, rev);
                const auto x = inputs(n, 5 + b);
                const auto c = ctx_of(42, 3, 9);
                ASSERT_EQ(gw_simd_set_target(GW_SIMD_SCALAR), GW_OK);
                const auto ref = encode_ctx(s, x, c);
                ASSERT_EQ(gw_simd_set_target(GW_SIMD_AUTO), GW_OK);
                const gw::gq::Grid g = gw::gq::for_bits(unsigned(b));
                const auto want = read_grid(ref, n, block, g.lo, g.pair, g.width);
                for_each_target([&](gw_simd_target) {
                    const auto f = encode_ctx(s, x, c);
                    ASSERT_EQ(f, ref);
                    ASSERT_TRUE(bits_equal(decode(f, n), want));
                });
            }
}

TEST(Quant, ResidualOfTheHandleIsInputMinusDecoded) {
    // Through a worker handle (no momentum): e = g - decode(frame) bit for
    // bit on every target, so what was sent plus what is kept is what came in.
    std::vector<Spec> specs;
    for (int b : kBits) specs.emplace_back(GW_CODEC_QUANT, 100), specs.back().set(GW_PARAM_BITS, b);
    specs.emplace_back(GW_CODEC_QSGD, 64);
    specs.emplace_back(GW_CODEC_TERNGRAD, 0);
    specs.emplace_back(GW_CODEC_SPARSE_QUANT, 0);
    for (const Spec& s : specs) {
        gw_worker_options o;
        gw_worker_options_init(&o, GW_WORKER_OPTIONS_VERSION);
        o.n = 1000;
        o.momentum = GW_MOMENTUM_NONE;
        o.mu = 0.0f;
        o.seed = 77;
        for_each_target([&](gw_simd_target) {
            gw_worker* w = nullptr;
            ASSERT_EQ(gw_worker_create(&w, &o, s), GW_OK);
            const auto g = random_floats(1000, 3);
            size_t bound = 0, written = 0;
            ASSERT_EQ(gw_worker_frame_bound(w, &bound), GW_OK);
            std::vector<uint8_t> f(bound);
            ASSERT_EQ(gw_worker_step(w, g.data(), GW_DTYPE_F32, g.size(), 0.1f, f.data(), f.size(),
                                     &written),
                      GW_OK);
            f.resize(written);
            std::vector<float> e(1000);
            ASSERT_EQ(gw_worker_residual(w, e.data(), e.size()), GW_OK);
            const auto d = decode(f, 1000);
            for (size_t i = 0; i < 1000; ++i) {
                ASSERT_EQ(e[i], g[i] - d[i]) << i;
                ASSERT_NEAR(double(e[i]) + d[i], g[i], 1e-6 * std::fabs(d[i]) + 1e-30);
            }
            gw_worker_free(w);
        });
    }
}

// Mean over many seeds -> x; per-coordinate variance -> (x - z)(z + delta - x).
void check_unbiased(Spec& s, const std::vector<float>& x, int seeds, bool check_variance,
                    const gw::gq::Grid* g) {
    const size_t n = x.size();
    std::vector<double> sum(n, 0.0), sq(n, 0.0);
    for (int k = 0; k < seeds; ++k) {
        const auto d = decode(encode_ctx(s, x, ctx_of(1000 + k, k, 1)), n);
        for (size_t i = 0; i < n; ++i) {
            sum[i] += d[i];
            sq[i] += double(d[i]) * d[i];
        }
    }
    double m = 0;
    for (float v : x) m = std::max(m, double(std::fabs(v)));
    for (size_t i = 0; i < n; ++i) {
        const double mean = sum[i] / seeds, var = sq[i] / seeds - mean * mean;
        // The sample mean's standard error is at most the grid step / 2 / sqrt(seeds).
        EXPECT_NEAR(mean, x[i], 5.0 * m / std::sqrt(double(seeds))) << i;
        if (check_variance && g) {
            const float delta = gw::gq::step_for(float(m), g->pair ? 1 : g->hi);
            const double want = gw::gq::expected_sq_error(*g, &x[i], 1, g->pair ? float(m) : delta);
            // (Q - x)^2 <= spacing^2, so the variance estimate's standard
            // error is at most spacing * sqrt(want / seeds).
            const double spacing = g->pair ? 2.0 * m : double(delta);
            EXPECT_NEAR(var, want, 5.0 * spacing * std::sqrt(want / seeds) + 1e-12) << i;
        }
    }
}

TEST(Quant, UnbiasedWithTheStatedVariance) {
    std::vector<float> x = {0.3f, -0.7f, 1.0f, -1.0f, 0.0f, 0.05f, -0.55f, 0.999f};
    for (int rev : {1, 2}) {
        SCOPED_TRACE("revision " + std::to_string(rev));
        for (int b : {1, 2, 3, 4, 8}) {
            SCOPED_TRACE("b=" + std::to_string(b));
            Spec s(GW_CODEC_QUANT);
            s.set(GW_PARAM_BITS, b);
            s.set(GW_PARAM_REVISION, rev);
            const gw::gq::Grid g = gw::gq::for_bits(unsigned(b));
            check_unbiased(s, x, 20000, true, &g);
        }
        Spec q(GW_CODEC_QSGD, 0);
        q.set(GW_PARAM_LEVELS, 3);
        q.set(GW_PARAM_REVISION, rev);
        check_unbiased(q, x, 20000, false, nullptr);
        Spec t(GW_CODEC_TERNGRAD);
        t.set(GW_PARAM_REVISION, rev);
        check_unbiased(t, x, 20000, false, nullptr);
    }
}

// Revision 2 decides with one byte where it can and with a tie word where
// it cannot, so it rounds up with revision 1's probability ceil(r 2^24) 2^-24
// even where r is finer than a byte: r = 2^-10 (byte alone: never up; tie
// always up: 1/256), 3/256 + 2^-12, 1 - 2^-10 and 1 - 2^-20. 2^20 elements
// at r, one at the grid's top (delta = 1): the count of ups is binomial.
TEST(Quant, Revision2RoundsUpWithRevision1sProbability) {
    const size_t n = size_t(1) << 20;
    for (double r : {0x1.0p-10, 3.0 / 256 + 0x1.0p-12, 1.0 - 0x1.0p-10, 1.0 - 0x1.0p-20})
        for (int rev : {1, 2}) {
            SCOPED_TRACE("r=" + std::to_string(r) + " revision " + std::to_string(rev));
            Spec s(GW_CODEC_QUANT);
            s.set(GW_PARAM_BITS, 4);
            s.set(GW_PARAM_REVISION, rev);
            std::vector<float> x(n + 1, float(2.0 + r));
            x[n] = 7.0f;  // delta = 7 / 7
            const auto d = decode(encode_ctx(s, x, ctx_of(5, 1, 2)), n + 1);
            size_t ups = 0;
            for (size_t i = 0; i < n; ++i) {
                ASSERT_TRUE(d[i] == 2.0f || d[i] == 3.0f) << d[i];
                ups += d[i] == 3.0f;
            }
            const double mean = double(n) * r, sd = std::sqrt(mean * (1.0 - r));
            EXPECT_NEAR(double(ups), mean, 6.0 * sd + 1.0);
        }
}

TEST(Quant, VarianceFormulaAgainstTheDefinition) {
    // (x - z)(z + delta - x) for x on the grid is 0; halfway it is delta^2/4.
    const gw::gq::Grid g = gw::gq::for_bits(4);  // levels 7
    const float delta = 0.25f;
    const float on[] = {0.0f, 0.25f, -1.75f, 1.75f};
    for (float v : on) EXPECT_EQ(gw::gq::expected_sq_error(g, &v, 1, delta), 0.0) << v;
    const float half = 0.125f;
    EXPECT_NEAR(gw::gq::expected_sq_error(g, &half, 1, delta), delta * delta / 4, 1e-9);
    const float third = 1.0f / 3.0f;  // z = 0.25: (1/3 - 1/4)(1/2 - 1/3)
    EXPECT_NEAR(gw::gq::expected_sq_error(g, &third, 1, delta), (1.0 / 12) * (1.0 / 6), 1e-7);
}

TEST(Qsgd, GridAndTernGradAreTheDocumentedOnes) {
    const auto x = inputs(3000, 8);
    for (int s : {1, 2, 7, 127, 32767}) {
        Spec q(GW_CODEC_QSGD, 512);
        q.set(GW_PARAM_LEVELS, s);
        const gw::gq::Grid g = gw::gq::symmetric(s);
        for_each_target([&](gw_simd_target) {
            const auto f = encode_ctx(q, x, ctx_of(5, 6, 7));
            const auto d = decode(f, x.size());
            ASSERT_TRUE(bits_equal(d, read_grid(f, x.size(), 512, g.lo, false, g.width)));
            // delta = ||v_b||_2 / s (raised only if a float rounding would leave the grid).
            float delta;
            std::memcpy(&delta, f.data() + payload_offset(f), 4);
            double l2 = 0;
            for (size_t i = 0; i < 512; ++i) l2 += double(x[i]) * x[i];
            EXPECT_NEAR(delta, std::sqrt(l2) / s, 1e-6 * std::sqrt(l2) / s);
        });
    }
    Spec t(GW_CODEC_TERNGRAD);
    const auto f = encode_ctx(t, x, ctx_of(1, 2, 3));
    const auto d = decode(f, x.size());
    float m = 0;
    for (float v : x) m = std::max(m, std::fabs(v));
    for (size_t i = 0; i < x.size(); ++i)
        ASSERT_TRUE(d[i] == 0.0f || d[i] == m || d[i] == -m) << d[i];
    // TernGrad is Q_(delta,2) under its own id: the same payload.
    Spec q2(GW_CODEC_QUANT);
    q2.set(GW_PARAM_BITS, 2);
    const auto fq = encode_ctx(q2, x, ctx_of(1, 2, 3));
    EXPECT_TRUE(std::equal(f.begin() + payload_offset(f), f.end() - 4,
                           fq.begin() + payload_offset(fq), fq.end() - 4));
}

TEST(Quant, NonFiniteAndOverflow) {
    std::vector<float> x(100, 1.0f);
    x[99] = NAN;
    for (gw_codec_id id : {GW_CODEC_QUANT, GW_CODEC_QSGD, GW_CODEC_TERNGRAD, GW_CODEC_SPARSE_QUANT}) {
        Spec s(id);
        std::vector<uint8_t> f(100000);
        size_t w = 0;
        EXPECT_EQ(gw_encode(s, nullptr, x.data(), GW_DTYPE_F32, x.size(), f.data(), f.size(), &w),
                  GW_ERR_NONFINITE);
    }
    // ||v||_2 beyond float32: QSGD cannot state its step.
    std::vector<float> big(16, 3e38f);
    Spec q(GW_CODEC_QSGD, 0);
    q.set(GW_PARAM_LEVELS, 1);
    std::vector<uint8_t> f(1000);
    size_t w = 0;
    EXPECT_EQ(gw_encode(q, nullptr, big.data(), GW_DTYPE_F32, big.size(), f.data(), f.size(), &w),
              GW_ERR_OVERFLOW);
}

TEST(Quant, BitsParameterRange) {
    Spec s(GW_CODEC_QUANT);
    for (int b = -1; b <= 18; ++b) {
        const bool ok = (b >= 1 && b <= 8) || b == 16;
        EXPECT_EQ(gw_codec_spec_set(s.get(), GW_PARAM_BITS, b), ok ? GW_OK : GW_ERR_INVALID_ARGUMENT)
            << b;
    }
}

// Tamper with one payload byte (or a header param) and expect `want`.
void expect_rejected(std::vector<uint8_t> f, size_t off, uint8_t value, gw_status want,
                     uint64_t n) {
    f[off] = value;
    refresh_crc(f);
    std::vector<float> out(n + 1);
    EXPECT_EQ(gw_decode(f.data(), f.size(), out.data(), n, nullptr), want) << "offset " << off;
}

TEST(Quant, MalformedPayloadsRejected) {
    const auto x = inputs(100, 2);
    for (int b : {1, 2, 3, 4, 5, 8, 16}) {
        SCOPED_TRACE("b=" + std::to_string(b));
        Spec s(GW_CODEC_QUANT, 50);
        s.set(GW_PARAM_BITS, b);
        const auto f = encode_ctx(s, x, ctx_of(1, 1, 1));
        const size_t p = payload_offset(f);
        // bits parameter 0, 9..15, 17, 255: the header's params are checked.
        for (uint8_t bad : {0, 9, 12, 15, 17, 255}) {
            auto g = f;
            g[40] = bad;
            refresh_header_crc(g);
            refresh_crc(g);
            std::vector<float> out(100);
            EXPECT_EQ(gw_decode(g.data(), g.size(), out.data(), 100, nullptr), GW_ERR_FRAME_PARAMS);
        }
        // delta NaN, Inf, negative, -0.
        for (uint32_t w : {0x7FC00000u, 0x7F800000u, 0xBF800000u, 0x80000000u}) {
            auto g = f;
            std::memcpy(&g[p + 4], &w, 4);
            refresh_crc(g);
            std::vector<float> out(100);
            EXPECT_EQ(gw_decode(g.data(), g.size(), out.data(), 100, nullptr), GW_ERR_FRAME_PAYLOAD)
                << std::hex << w;
        }
        // A zero delta with a nonzero code.
        {
            auto g = f;
            std::memset(&g[p], 0, 4);
            g[p + 8] |= 1;
            refresh_crc(g);
            std::vector<float> out(100);
            EXPECT_EQ(gw_decode(g.data(), g.size(), out.data(), 100, nullptr), GW_ERR_FRAME_PAYLOAD);
        }
        // A code above the grid (b >= 2: all ones is 2^b - 1 > 2^b - 2), first
        // in the block and in its middle; a nonzero code in the middle of a zero block.
        const size_t mid = p + 8 + (50 * size_t(b) / 8) / 2;
        if (b >= 2 && b < 16) {
            expect_rejected(f, p + 8, 0xFF, GW_ERR_FRAME_PAYLOAD, 100);
            expect_rejected(f, mid, 0xFF, GW_ERR_FRAME_PAYLOAD, 100);
        }
        {
            auto g = f;
            std::memset(&g[p], 0, 4);
            std::memset(&g[p + 8], 0, 50 * size_t(b) / 8);
            g[mid] = 0x40;
            refresh_crc(g);
            std::vector<float> out(100);
            EXPECT_EQ(gw_decode(g.data(), g.size(), out.data(), 100, nullptr), GW_ERR_FRAME_PAYLOAD);
        }
        if (b == 16) {
            auto g = f;
            g[p + 9] = 0xFF;
            expect_rejected(g, p + 8, 0xFF, GW_ERR_FRAME_PAYLOAD, 100);
        }
        // Padding bits after the last code of a block (50 codes * b bits).
        if ((50 * b) % 8) {
            const size_t last = p + 8 + (50 * size_t(b) + 7) / 8 - 1;
            expect_rejected(f, last, uint8_t(f[last] | 0x80), GW_ERR_FRAME_PAYLOAD, 100);
        }
        // Length and count lies.
        auto shorter = f;
        shorter.erase(shorter.end() - 5);
        const uint64_t len = f.size() - p - 4 - 1;
        std::memcpy(&shorter[24], &len, 8);
        refresh_header_crc(shorter);
        refresh_crc(shorter);
        std::vector<float> out(200);
        EXPECT_EQ(gw_decode(shorter.data(), shorter.size(), out.data(), 100, nullptr),
                  GW_ERR_FRAME_LENGTH);
        auto more = f;
        const uint64_t n2 = 101;
        std::memcpy(&more[16], &n2, 8);
        refresh_header_crc(more);
        refresh_crc(more);
        EXPECT_EQ(gw_decode(more.data(), more.size(), out.data(), 200, nullptr), GW_ERR_FRAME_LENGTH);
    }
}

// ---- Sparse-AsyLPG ----

TEST(SparseQuant, KeepProbabilitiesAndUnbiased) {
    // p_i = min(1, |a_i| phi / ||a||_1): with the default budget every kept
    // value is +-||a||_inf; a coordinate with p_i = 1 is always kept.
    std::vector<float> a = {0.5f, -0.25f, 0.125f, 0.0f, -1.0f, 0.0625f};
    Spec s(GW_CODEC_SPARSE_QUANT);
    s.set(GW_PARAM_BITS, 4);
    std::vector<int> kept(a.size(), 0);
    const int seeds = 20000;
    std::vector<double> sum(a.size(), 0.0);
    for (int k = 0; k < seeds; ++k) {
        const auto d = decode(encode_ctx(s, a, ctx_of(k, 0, 0)), a.size());
        for (size_t i = 0; i < a.size(); ++i) {
            if (d[i] != 0.0f) {
                ++kept[i];
                EXPECT_EQ(std::fabs(d[i]), 1.0f);
            }
            sum[i] += d[i];
        }
    }
    EXPECT_EQ(kept[4], seeds);  // |a_i| = ||a||_inf: p = 1
    EXPECT_EQ(kept[3], 0);
    for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_NEAR(double(kept[i]) / seeds, std::fabs(a[i]), 0.015) << i;  // p_i = |a_i| / 1
        EXPECT_NEAR(sum[i] / seeds, a[i], 0.02) << i;
    }
    // A small budget: p_i = |a_i| phi / ||a||_1 < 1 everywhere, still unbiased.
    float phi = 0.5f;
    uint32_t phib;
    std::memcpy(&phib, &phi, 4);
    s.set(GW_PARAM_BUDGET, phib);
    std::fill(sum.begin(), sum.end(), 0.0);
    std::fill(kept.begin(), kept.end(), 0);
    for (int k = 0; k < seeds; ++k) {
        const auto d = decode(encode_ctx(s, a, ctx_of(k, 1, 0)), a.size());
        for (size_t i = 0; i < a.size(); ++i) {
            kept[i] += d[i] != 0.0f;
            sum[i] += d[i];
        }
    }
    const double l1 = 1.9375;
    for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_NEAR(double(kept[i]) / seeds, std::fabs(a[i]) * 0.5 / l1, 0.01) << i;
        EXPECT_NEAR(sum[i] / seeds, a[i], 0.06) << i;
    }
}

TEST(SparseQuant, SameOnEveryTarget) {
    for (int b : kBits) {
        Spec s(GW_CODEC_SPARSE_QUANT);
        s.set(GW_PARAM_BITS, b);
        const auto x = inputs(3000, 9);
        ASSERT_EQ(gw_simd_set_target(GW_SIMD_SCALAR), GW_OK);
        const auto ref = encode_ctx(s, x, ctx_of(3, 4, 5));
        ASSERT_EQ(gw_simd_set_target(GW_SIMD_AUTO), GW_OK);
        for_each_target([&](gw_simd_target) {
            ASSERT_EQ(encode_ctx(s, x, ctx_of(3, 4, 5)), ref);
        });
    }
    // All zeros: nothing kept, delta 0.
    Spec s(GW_CODEC_SPARSE_QUANT);
    std::vector<float> z(50, 0.0f);
    const auto f = encode_ctx(s, z, ctx_of(1, 1, 1));
    const auto d = decode(f, 50);
    for (float v : d) EXPECT_EQ(v, 0.0f);
}

TEST(SparseQuant, MalformedPayloadsRejected) {
    Spec s(GW_CODEC_SPARSE_QUANT);
    s.set(GW_PARAM_BITS, 3).set(GW_PARAM_ZSTD, 0);
    std::vector<float> x = inputs(64, 4);
    const auto f = encode_ctx(s, x, ctx_of(8, 8, 8));
    const size_t p = payload_offset(f);
    uint32_t nnz;
    std::memcpy(&nnz, &f[p], 4);
    ASSERT_GT(nnz, 2u);
    auto reject = [&](std::vector<uint8_t> g, gw_status want) {
        refresh_crc(g);
        std::vector<float> out(64);
        EXPECT_EQ(gw_decode(g.data(), g.size(), out.data(), 64, nullptr), want);
    };
    {  // count lie
        auto g = f;
        const uint32_t more = nnz + 1;
        std::memcpy(&g[p], &more, 4);
        reject(g, GW_ERR_FRAME_LENGTH);
    }
    for (uint32_t w : {0x7FC00000u, 0xBF800000u, 0x80000000u, 0u}) {  // delta NaN, < 0, -0, 0
        auto g = f;
        std::memcpy(&g[p + 4], &w, 4);
        reject(g, GW_ERR_FRAME_PAYLOAD);
    }
    const size_t cbytes = (nnz * 3 + 7) / 8;
    {  // a zero code (3 bits: zero point is code 3)
        auto g = f;
        g[p + 8] = uint8_t((g[p + 8] & ~7u) | 3u);
        reject(g, GW_ERR_FRAME_PAYLOAD);
    }
    {  // a code above the grid (7 > 6)
        auto g = f;
        g[p + 8] = uint8_t(g[p + 8] | 7u);
        reject(g, GW_ERR_FRAME_PAYLOAD);
    }
    {  // a position past n: the last gap's high byte
        auto g = f;
        g[p + 8 + cbytes + 3 * nnz + nnz - 1] = 1;
        reject(g, GW_ERR_FRAME_INDEX);
    }
}

}  // namespace
