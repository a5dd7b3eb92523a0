// Exact top-k with sparse frames: the selection matches a sort-based
// reference (ties to the lower index) on every SIMD target, frames are
// byte-identical across targets and canonical, the zstd stage is used when it
// pays and is bounded before decompression, and every malformed sparse
// payload gets its own status code.
#include <zstd.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <map>
#include <numeric>

#include "ref_algorithms.hpp"
#include "test_util.hpp"

using gwtest::bits_equal;
using gwtest::payload_offset;
using gwtest::random_floats;
using gwtest::refresh_crc;
using gwtest::Spec;
using ref::Vec;

namespace {

Spec topk(int64_t k, gw_dtype values = GW_DTYPE_F32, int zstd = 1) {
    Spec s(GW_CODEC_TOPK);
    // k = 0 means "from the density" for the codec: a density of 0 keeps nothing.
    s.set(GW_PARAM_K, k).set(GW_PARAM_VALUE_DTYPE, values).set(GW_PARAM_ZSTD, zstd);
    if (k == 0) s.set(GW_PARAM_DENSITY_PPM, 0);
    return s;
}


}  // namespace

TEST(Topk, MatchesSortReferenceOnEveryTarget) {
    for (size_t n : {size_t(1), size_t(2), size_t(15), size_t(16), size_t(17), size_t(1000),
                     size_t(65537), size_t(300001)}) {
        const std::vector<uint64_t> ks = {0, 1, 2, n / 1000, n / 100, n / 10, n - 1, n, n + 5};
        for (const auto& named : gwtest::selection_inputs(n))
            for (uint64_t k : ks)
                for (gw_dtype vt : {GW_DTYPE_F32, GW_DTYPE_F16, GW_DTYPE_BF16}) {
                    if (vt != GW_DTYPE_F32 && n > 1000) continue;  // value rounding: small n suffices
                    const std::string& name = named.first;
                    const Vec& x = named.second;  // (lambdas cannot capture structured bindings)
                    SCOPED_TRACE(testing::Message() << "n " << n << " input " << name << " k " << k
                                                    << " dtype " << vt);
                    const Spec s = topk(int64_t(k), vt);
                    const Vec want = ref::topk(x, std::min<uint64_t>(k, n), vt);
                    std::vector<uint8_t> first;
                    gwtest::for_each_target([&](gw_simd_target) {
                        const auto f = gwtest::encode(s, x);
                        if (first.empty())
                            first = f;
                        else
                            ASSERT_EQ(f, first) << "frame bytes differ between targets";
                        const Vec d = gwtest::decode(f, n);
                        ASSERT_TRUE(bits_equal(d, want))
                            << "first diff " << gwtest::first_diff(d.data(), want.data(), n);
                        // decode_accumulate == acc + alpha * decoded on the kept entries.
                        Vec acc = random_floats(n, 3), expect = acc;
                        for (size_t i = 0; i < n; ++i)
                            if (d[i] != 0.0f) expect[i] = expect[i] + 0.5f * d[i];
                        ASSERT_EQ(gw_decode_accumulate(f.data(), f.size(), 0.5f, acc.data(), n), GW_OK);
                        ASSERT_TRUE(bits_equal(acc, expect));
                    });
                    // Canonical: decoding and re-encoding gives the same bytes.
                    ASSERT_EQ(gwtest::encode(s, gwtest::decode(first, n)), first);
                }
    }
}

TEST(Topk, DensityParameterAndNanPolicy) {
    const size_t n = 12345;
    Spec s(GW_CODEC_TOPK);
    s.set(GW_PARAM_DENSITY_PPM, 2500).set(GW_PARAM_ZSTD, 0);  // k = ceil(n * 0.25%) = 31
    const Vec x = random_floats(n, 8);
    const auto f = gwtest::encode(s, x);
    uint32_t nnz = 0;
    std::memcpy(&nnz, &f[payload_offset(f)], 4);
    EXPECT_EQ(nnz, 31u);
    EXPECT_TRUE(bits_equal(gwtest::decode(f, n), ref::topk(x, 31, GW_DTYPE_F32)));
    // Encoders refuse NaN/Inf (documented policy: no selection among NaNs).
    for (float bad : {NAN, INFINITY, -INFINITY}) {
        Vec y = x;
        y[77] = bad;
        std::vector<uint8_t> out(f.size() + 1000);
        size_t written = 0;
        EXPECT_EQ(gw_encode(s, nullptr, y.data(), GW_DTYPE_F32, n, out.data(), out.size(), &written),
                  GW_ERR_NONFINITE);
    }
}

TEST(Topk, ZstdStageWhenItPays) {
    const size_t n = 1 << 20;
    const Vec x = random_floats(n, 4);
    const Spec with = topk(n / 100, GW_DTYPE_F32, 1), without = topk(n / 100, GW_DTYPE_F32, 0);
    const auto z = gwtest::encode(with, x), raw = gwtest::encode(without, x);
    gw_frame_info info = GW_FRAME_INFO_INIT;
    ASSERT_EQ(gw_frame_inspect(z.data(), z.size(), &info), GW_OK);
    EXPECT_EQ(info.flags, unsigned(GW_FRAME_FLAG_ZSTD));
    EXPECT_LT(z.size(), raw.size());
    EXPECT_TRUE(bits_equal(gwtest::decode(z, n), gwtest::decode(raw, n)));
    // Tiny frames do not shrink: no stage.
    const auto small = gwtest::encode(topk(3), random_floats(50, 1));
    ASSERT_EQ(gw_frame_inspect(small.data(), small.size(), &info), GW_OK);
    EXPECT_EQ(info.flags, 0u);
}

// With the link's speed on the spec, the stage is used only where it pays
// there (slow links), never on fast ones; the frames decode alike, handles
// made from the spec keep the link, and it is not a parameter.
TEST(Topk, ZstdStageFollowsTheLink) {
    const size_t n = 1 << 20;
    const Vec x = random_floats(n, 4);
    Spec s = topk(n / 100);
    const auto flags_of = [&](uint64_t bps, std::vector<uint8_t>* frame) {
        EXPECT_EQ(gw_codec_spec_set_link(s.get(), bps), GW_OK);
        *frame = gwtest::encode(s, x);
        gw_frame_info info = GW_FRAME_INFO_INIT;
        EXPECT_EQ(gw_frame_inspect(frame->data(), frame->size(), &info), GW_OK);
        return info.flags;
    };
    std::vector<uint8_t> unknown, slow, fast;
    EXPECT_EQ(flags_of(0, &unknown), unsigned(GW_FRAME_FLAG_ZSTD));
    EXPECT_EQ(flags_of(100000000, &slow), unsigned(GW_FRAME_FLAG_ZSTD));  // 100 Mbit/s
    EXPECT_EQ(flags_of(10000000000ull, &fast), 0u);                       // 10 Gbit/s
    EXPECT_EQ(slow, unknown);
    EXPECT_GT(fast.size(), slow.size());
    EXPECT_TRUE(bits_equal(gwtest::decode(fast, n), gwtest::decode(slow, n)));
    // Not a parameter: equal specs, and a frame's spec has no link.
    uint64_t bps = 1;
    const Spec plain = topk(n / 100);
    EXPECT_EQ(gw_codec_spec_equal(s, plain), 1);
    gw_codec_spec* from = nullptr;
    ASSERT_EQ(gw_frame_spec(fast.data(), fast.size(), &from), GW_OK);
    EXPECT_EQ(gw_codec_spec_get_link(from, &bps), GW_OK);
    EXPECT_EQ(bps, 0u);
    gw_codec_spec_free(from);
    // Clones and handles keep it: a worker over a 10 Gbit/s link sends raw frames.
    gw_codec_spec* copy = nullptr;
    ASSERT_EQ(gw_codec_spec_clone(&copy, s), GW_OK);
    EXPECT_EQ(gw_codec_spec_get_link(copy, &bps), GW_OK);
    EXPECT_EQ(bps, 10000000000ull);
    gw_codec_spec_free(copy);
    gw_worker* w = nullptr;
    gw_worker_options o;
    ASSERT_EQ(gw_worker_options_init(&o, GW_WORKER_OPTIONS_VERSION), GW_OK);
    o.n = n;
    ASSERT_EQ(gw_worker_create(&w, &o, s), GW_OK);
    size_t bound = 0, written = 0;
    ASSERT_EQ(gw_worker_frame_bound(w, &bound), GW_OK);
    std::vector<uint8_t> f(bound);
    ASSERT_EQ(gw_worker_step(w, x.data(), GW_DTYPE_F32, n, 1.0f, f.data(), f.size(), &written),
              GW_OK);
    gw_frame_info info = GW_FRAME_INFO_INIT;
    ASSERT_EQ(gw_frame_inspect(f.data(), written, &info), GW_OK);
    EXPECT_EQ(info.flags, 0u);
    gw_worker_free(w);
    EXPECT_EQ(gw_codec_spec_set_link(nullptr, 1), GW_ERR_NULL_POINTER);
    EXPECT_EQ(gw_codec_spec_get_link(s, nullptr), GW_ERR_NULL_POINTER);
}

TEST(Topk, ResidualKeepsWhatWasNotSent) {
    // Worker with top-k and error feedback over one tensor (SLGS): p = D + e.
    const size_t n = 5000;
    for (gw_dtype vt : {GW_DTYPE_F32, GW_DTYPE_F16, GW_DTYPE_BF16}) {
        gw_worker_options o = GW_WORKER_OPTIONS_INIT;
        o.n = n;
        o.momentum = GW_MOMENTUM_NONE;
        o.mu = 0.0f;
        gw_worker* w = nullptr;
        ASSERT_EQ(gw_worker_create(&w, &o, topk(50, vt)), GW_OK);
        size_t bound = 0, written = 0;
        gw_worker_frame_bound(w, &bound);
        std::vector<uint8_t> f(bound);
        std::vector<double> came_in(n), sent(n);
        Vec e(n);
        for (int t = 0; t < 1000; ++t) {
            const Vec g = random_floats(n, 40 + t);
            f.resize(bound);
            ASSERT_EQ(gw_worker_step(w, g.data(), GW_DTYPE_F32, n, 0.1f, f.data(), f.size(), &written),
                      GW_OK);
            f.resize(written);
            const Vec d = gwtest::decode(f, n);
            for (size_t i = 0; i < n; ++i) {
                came_in[i] += 0.1 * g[i];
                sent[i] += 0.1 * d[i];
            }
        }
        ASSERT_EQ(gw_worker_residual(w, e.data(), n), GW_OK);
        double worst = 0;
        for (size_t i = 0; i < n; ++i)
            worst = std::max(worst, std::fabs(came_in[i] - sent[i] - 0.1 * e[i]));
        EXPECT_LT(worst, 1e-3) << "dtype " << vt;
        gw_worker_free(w);
    }
}

namespace {

// A raw (no zstd) top-k frame for n elements whose payload is replaced by `p`.
std::vector<uint8_t> with_payload(size_t n, int64_t k, gw_dtype vt, const std::vector<uint8_t>& p) {
    auto f = gwtest::encode(topk(k, vt, 0), random_floats(n, 2));
    f.resize(payload_offset(f));
    f.insert(f.end(), p.begin(), p.end());
    const uint64_t len = p.size();
    std::memcpy(&f[24], &len, 8);
    gwtest::refresh_header_crc(f);
    f.resize(f.size() + 4);
    refresh_crc(f);
    return f;
}

std::vector<uint8_t> sparse(std::vector<float> values, std::vector<uint32_t> gaps) {
    std::vector<uint8_t> p(4 + values.size() * 8);
    const uint32_t nnz = uint32_t(values.size());
    std::memcpy(p.data(), &nnz, 4);
    std::memcpy(p.data() + 4, values.data(), values.size() * 4);
    for (size_t i = 0; i < gaps.size(); ++i)
        for (int b = 0; b < 4; ++b) p[4 + nnz * 4 + b * nnz + i] = uint8_t(gaps[i] >> (8 * b));
    return p;
}

gw_status decode_status(const std::vector<uint8_t>& f, size_t n) {
    Vec out(n), acc(n, 1.0f);
    const gw_status a = gw_decode(f.data(), f.size(), out.data(), n, nullptr);
    const gw_status b = gw_decode_accumulate(f.data(), f.size(), 1.0f, acc.data(), n);
    EXPECT_EQ(a, b);
    if (b != GW_OK) {
        EXPECT_TRUE(bits_equal(acc, Vec(n, 1.0f)));
    }
    return a;
}

}  // namespace

TEST(Topk, MalformedSparsePayloads) {
    const size_t n = 100;
    // Valid: indices 3, 10, 99.
    EXPECT_EQ(decode_status(with_payload(n, 4, GW_DTYPE_F32, sparse({1, -2, 3}, {3, 6, 88})), n), GW_OK);
    // Index past the end (gap sum overruns n), also through a 32-bit wrap.
    EXPECT_EQ(decode_status(with_payload(n, 4, GW_DTYPE_F32, sparse({1, -2, 3}, {3, 6, 89})), n),
              GW_ERR_FRAME_INDEX);
    EXPECT_EQ(decode_status(with_payload(n, 4, GW_DTYPE_F32, sparse({1, 2}, {0, 0xFFFFFFFFu})), n),
              GW_ERR_FRAME_INDEX);
    // More entries than k, or a count that lies about the length.
    EXPECT_EQ(decode_status(with_payload(n, 2, GW_DTYPE_F32, sparse({1, -2, 3}, {3, 6, 8})), n),
              GW_ERR_FRAME_LENGTH);
    auto p = sparse({1, -2, 3}, {3, 6, 8});
    p[0] = 2;
    EXPECT_EQ(decode_status(with_payload(n, 4, GW_DTYPE_F32, p), n), GW_ERR_FRAME_LENGTH);
    p = sparse({1, -2, 3}, {3, 6, 8});
    p.pop_back();
    EXPECT_EQ(decode_status(with_payload(n, 4, GW_DTYPE_F32, p), n), GW_ERR_FRAME_LENGTH);
    EXPECT_EQ(decode_status(with_payload(n, 4, GW_DTYPE_F32, {1, 2}), n), GW_ERR_FRAME_LENGTH);
    // Zero values are never written (no encoder sends one), nor NaN/Inf.
    for (float bad : {0.0f, -0.0f, NAN, INFINITY})
        EXPECT_EQ(decode_status(with_payload(n, 4, GW_DTYPE_F32, sparse({1, bad}, {0, 0})), n),
                  GW_ERR_FRAME_PAYLOAD);
    // Half-precision values: zero and Inf patterns.
    for (uint16_t bad : {uint16_t(0), uint16_t(0x8000), uint16_t(0x7C00)}) {
        std::vector<uint8_t> h = {1, 0, 0, 0, 0x00, 0x3C, 0, 0, 0, 0};
        std::memcpy(&h[4], &bad, 2);
        EXPECT_EQ(decode_status(with_payload(n, 4, GW_DTYPE_F16, h), n), GW_ERR_FRAME_PAYLOAD);
    }
    // Parameters out of range in the frame.
    auto f = with_payload(n, 4, GW_DTYPE_F32, sparse({1}, {0}));
    f[40 + 8 + 4] = 9;  // value_dtype
    gwtest::refresh_header_crc(f);
    refresh_crc(f);
    EXPECT_EQ(decode_status(f, n), GW_ERR_FRAME_PARAMS);
}

namespace {

// A top-k frame (zstd allowed) whose payload is the stage's form: u64 raw | z.
std::vector<uint8_t> staged(size_t n, int64_t k, uint64_t raw_len, const std::vector<uint8_t>& z) {
    std::vector<uint8_t> p(8);
    std::memcpy(p.data(), &raw_len, 8);
    p.insert(p.end(), z.begin(), z.end());
    auto f = gwtest::encode(topk(k, GW_DTYPE_F32, 1), Vec(n, 0.0f));  // raw: no entries, no stage
    f.resize(payload_offset(f));
    f.insert(f.end(), p.begin(), p.end());
    const uint64_t len = p.size();
    std::memcpy(&f[24], &len, 8);
    f[6] = GW_FRAME_FLAG_ZSTD;
    gwtest::refresh_header_crc(f);
    f.resize(f.size() + 4);
    refresh_crc(f);
    return f;
}

std::vector<uint8_t> zstd(const std::vector<uint8_t>& raw, int level = 1) {
    std::vector<uint8_t> z(ZSTD_compressBound(raw.size()));
    z.resize(ZSTD_compress(z.data(), z.size(), raw.data(), raw.size(), level));
    return z;
}

}  // namespace

TEST(Topk, ZstdStageIsBoundedAndCanonical) {
    const size_t n = 100000;
    const int64_t k = 2000;
    // A valid staged payload: 2000 entries 1.0 at every 50th index.
    std::vector<float> vals(k, 1.0f);
    std::vector<uint32_t> gaps(k, 49);
    const auto raw = sparse(vals, gaps);
    const auto good = staged(n, k, raw.size(), zstd(raw));
    EXPECT_EQ(decode_status(good, n), GW_OK);
    // A bomb: the raw size claims more than the codec could ever need.
    const std::vector<uint8_t> big(16 << 20, 0);
    EXPECT_EQ(decode_status(staged(n, k, big.size(), zstd(big)), n), GW_ERR_FRAME_ZSTD);
    // The claimed raw size disagrees with the zstd frame's content size.
    EXPECT_EQ(decode_status(staged(n, k, raw.size() - 8, zstd(raw)), n), GW_ERR_FRAME_ZSTD);
    // Not smaller than the raw payload: an encoder would not have staged it.
    const auto incompressible = random_floats(64, 9);
    std::vector<uint8_t> noise(incompressible.size() * 4);
    std::memcpy(noise.data(), incompressible.data(), noise.size());
    EXPECT_EQ(decode_status(staged(n, k, 20, noise), n), GW_ERR_FRAME_ZSTD);
    // Bytes after the zstd frame, or a truncated zstd frame.
    auto z = zstd(raw);
    z.push_back(0);
    EXPECT_EQ(decode_status(staged(n, k, raw.size(), z), n), GW_ERR_FRAME_ZSTD);
    z = zstd(raw);
    z.resize(z.size() - 3);
    EXPECT_EQ(decode_status(staged(n, k, raw.size(), z), n), GW_ERR_FRAME_ZSTD);
    EXPECT_EQ(decode_status(staged(n, k, raw.size(), {}), n), GW_ERR_FRAME_ZSTD);
    // A valid zstd stage around an invalid sparse payload: the codec's code.
    auto bad_raw = raw;
    bad_raw[4 + k * 4 + k - 1] = 200;  // last gap overruns n
    EXPECT_EQ(decode_status(staged(n, k, bad_raw.size(), zstd(bad_raw)), n), GW_ERR_FRAME_INDEX);
    // The stage on a codec (or parameters) that never uses it.
    auto f = good;
    f[40 + 8 + 4 + 1] = 0;  // GW_PARAM_ZSTD = 0
    gwtest::refresh_header_crc(f);
    refresh_crc(f);
    EXPECT_EQ(decode_status(f, n), GW_ERR_FRAME_FLAGS);
}

TEST(Topk, TruncationAndCorruptionNeverCrash) {
    const size_t n = 4096;
    const auto f = gwtest::encode(topk(400), random_floats(n, 6));
    for (size_t len = 0; len < f.size(); ++len) {
        std::vector<uint8_t> p(f.begin(), f.begin() + len);
        EXPECT_EQ(decode_status(p, n), GW_ERR_FRAME_TRUNCATED) << len;
    }
    for (size_t i = 40; i < f.size(); i += 7) {
        auto g = f;
        g[i] ^= 0x5A;
        refresh_crc(g);
        // Any outcome but a crash or an over-read (the sanitizer build checks those).
        EXPECT_LE(decode_status(g, n), GW_OK) << i;
    }
}
