// Threshold, sampled top-k and random-k (docs/algorithms.md s.7-8), each
// against a plain reference written here from its definition, on random,
// tied, all-equal, zero, denormal and few-distinct inputs, k = 0, k = n,
// n = 1, f32/f16/bf16 values, on every SIMD target; frames canonical,
// residual + decoded == input, NaN refused; the all-reduce path of random-k;
// the contraction and compression-ratio diagnostics.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <map>
#include <numeric>

#include "ref_algorithms.hpp"
#include "util/scratch.hpp"
#include "test_util.hpp"

using gwtest::bits_equal;
using gwtest::payload_offset;
using gwtest::random_floats;
using gwtest::refresh_crc;
using gwtest::Spec;
using ref::Vec;

namespace {


float rounded(float v, int vdt) {
    return vdt == 2 ? gw::ref::f16_to_f32(gw::ref::f32_to_f16(v))
                    : vdt == 3 ? gw::ref::bf16_to_f32(gw::ref::f32_to_bf16(v)) : v;
}

// Residual of an encode through a worker without momentum (p = g): e + D == x.
void expect_mass_kept(const gw_codec_spec* s, const Vec& x) {
    gw_worker_options o = GW_WORKER_OPTIONS_INIT;
    o.n = x.size();
    o.momentum = GW_MOMENTUM_NONE;
    o.mu = 0.0f;
    o.seed = 9;
    gw_worker* w = nullptr;
    ASSERT_EQ(gw_worker_create(&w, &o, s), GW_OK);
    size_t bound = 0, written = 0;
    ASSERT_EQ(gw_worker_frame_bound(w, &bound), GW_OK);
    std::vector<uint8_t> f(bound);
    ASSERT_EQ(gw_worker_step(w, x.data(), GW_DTYPE_F32, x.size(), 1.0f, f.data(), f.size(), &written), GW_OK);
    f.resize(written);
    Vec e(x.size());
    ASSERT_EQ(gw_worker_residual(w, e.data(), x.size()), GW_OK);
    const Vec d = gwtest::decode(f, x.size());
    for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(e[i] + d[i], x[i]) << i;
    gw_worker_free(w);
}

using gwtest::encode_ctx;

void expect_nonfinite_refused(const gw_codec_spec* s, size_t n) {
    for (float bad : {NAN, INFINITY, -INFINITY}) {
        Vec x = random_floats(n, 4);
        x[n / 2] = bad;
        std::vector<uint8_t> out(8 * n + 200, 0xAB);
        size_t written = 5;
        EXPECT_EQ(gw_encode(s, nullptr, x.data(), GW_DTYPE_F32, n, out.data(), out.size(), &written),
                  GW_ERR_NONFINITE);
        EXPECT_EQ(written, 5u);
        EXPECT_EQ(out[0], 0xAB);
    }
}

}  // namespace

// ---------------------------------------------------------------- threshold
TEST(Threshold, MatchesTheDefinitionOnEveryTarget) {
    for (size_t n : {size_t(1), size_t(17), size_t(1000), size_t(70001)})
        for (const auto& named : gwtest::selection_inputs(n))
            for (float t : {0.0f, FLT_TRUE_MIN, 0.5f, 1.25f, 2.0f, 1e30f})
                for (int vdt : {1, 2, 3}) {
                    if (vdt != 1 && n > 1000) continue;
                    const Vec& x = named.second;
                    SCOPED_TRACE(testing::Message() << "n " << n << " " << named.first << " t " << t
                                                    << " dtype " << vdt);
                    Spec s(GW_CODEC_THRESHOLD);
                    ASSERT_EQ(gw_codec_spec_set_f32(s.get(), GW_PARAM_THRESHOLD, t), GW_OK);
                    s.set(GW_PARAM_VALUE_DTYPE, vdt);
                    Vec want(n, 0.0f);
                    for (size_t i = 0; i < n; ++i) {
                        const float v = rounded(x[i], vdt);
                        if (std::fabs(x[i]) >= t && v != 0.0f && std::fabs(v) >= t) want[i] = v;
                    }
                    std::vector<uint8_t> first;
                    gwtest::for_each_target([&](gw_simd_target) {
                        const auto f = gwtest::encode(s, x);
                        if (first.empty()) first = f;
                        ASSERT_EQ(f, first);
                        ASSERT_TRUE(bits_equal(gwtest::decode(f, n), want));
                    });
                    ASSERT_EQ(gwtest::encode(s, gwtest::decode(first, n)), first);  // canonical
                }
    Spec s(GW_CODEC_THRESHOLD);
    ASSERT_EQ(gw_codec_spec_set_f32(s.get(), GW_PARAM_THRESHOLD, 0.3f), GW_OK);
    expect_mass_kept(s, random_floats(5000, 8));
    expect_nonfinite_refused(s, 300);
}

TEST(Threshold, FloatParameterAndStrictDecoder) {
    Spec s(GW_CODEC_THRESHOLD);
    float t = -1;
    ASSERT_EQ(gw_codec_spec_get_f32(s, GW_PARAM_THRESHOLD, &t), GW_OK);
    EXPECT_EQ(t, 1e-3f);  // the default
    for (float bad : {-1.0f, NAN, INFINITY})
        EXPECT_EQ(gw_codec_spec_set_f32(s.get(), GW_PARAM_THRESHOLD, bad), GW_ERR_INVALID_ARGUMENT);
    ASSERT_EQ(gw_codec_spec_set_f32(s.get(), GW_PARAM_THRESHOLD, -0.0f), GW_OK);
    ASSERT_EQ(gw_codec_spec_get_f32(s, GW_PARAM_THRESHOLD, &t), GW_OK);
    EXPECT_FALSE(std::signbit(t));
    Spec topk(GW_CODEC_TOPK);
    EXPECT_EQ(gw_codec_spec_set_f32(topk.get(), GW_PARAM_K, 1.0f), GW_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(gw_codec_spec_set_f32(topk.get(), GW_PARAM_THRESHOLD, 1.0f), GW_ERR_INVALID_ARGUMENT);
    // A stored value below the threshold is refused (no encoder writes one).
    ASSERT_EQ(gw_codec_spec_set_f32(s.get(), GW_PARAM_THRESHOLD, 1.0f), GW_OK);
    s.set(GW_PARAM_ZSTD, 0);
    Vec x(10, 0.0f);
    x[2] = 1.5f;
    x[7] = -1.0f;
    auto f = gwtest::encode(s, x);
    ASSERT_TRUE(bits_equal(gwtest::decode(f, 10), x));
    const size_t po = payload_offset(f);
    const float low = 0.75f;
    std::memcpy(&f[po + 4], &low, 4);  // first value 1.5 -> 0.75
    refresh_crc(f);
    Vec out(10);
    EXPECT_EQ(gw_decode(f.data(), f.size(), out.data(), 10, nullptr), GW_ERR_FRAME_PAYLOAD);
}

// ------------------------------------------------------------- sampled top-k
namespace {

// The definition (codec_sampled_topk.cpp) with the public RNG and sorts.
Vec sampled_ref(const Vec& x, uint64_t k, uint64_t ppm, uint64_t seed, uint32_t step, uint32_t tensor) {
    const uint64_t n = x.size();
    Vec out(n, 0.0f);
    if (k == 0) return out;
    uint64_t s = std::max<uint64_t>((n * ppm + 999999) / 1000000, std::min<uint64_t>(n, 1024));
    s = std::min(s, n);
    std::vector<float> mags;
    if (s == n) {
        for (float v : x) mags.push_back(std::fabs(v));
    } else {
        std::vector<uint32_t> w(s);
        gw_rng_u32(seed, step, tensor, 0, w.data(), s);
        for (uint32_t r : w) mags.push_back(std::fabs(x[(uint64_t(r) * n) >> 32]));
    }
    const uint64_t ks = std::min(s, (k * s + n - 1) / n);
    std::sort(mags.begin(), mags.end(), std::greater<float>());
    const float thr = mags[ks - 1];
    std::vector<uint32_t> pass;
    for (uint64_t i = 0; i < n; ++i)
        if (std::fabs(x[i]) >= thr) pass.push_back(uint32_t(i));
    if (pass.size() > k) {
        std::vector<uint32_t> order = pass;  // exact top k among those that passed
        std::stable_sort(order.begin(), order.end(),
                         [&](uint32_t a, uint32_t b) { return std::fabs(x[a]) > std::fabs(x[b]); });
        order.resize(k);
        std::sort(order.begin(), order.end());
        pass = order;
    } else if (pass.size() < k) {
        std::vector<uint32_t> nz;
        for (uint64_t i = 0; i < n; ++i)
            if (x[i] != 0.0f) nz.push_back(uint32_t(i));
        if (nz.size() <= k) pass = nz;
    }
    for (uint32_t i : pass) out[i] = x[i] == 0.0f ? 0.0f : x[i];
    return out;
}

}  // namespace

TEST(SampledTopk, MatchesTheDefinitionOnEveryTarget) {
    for (size_t n : {size_t(1), size_t(17), size_t(1000), size_t(70001), size_t(300000)})
        for (const auto& named : gwtest::selection_inputs(n))
            for (uint64_t k : {uint64_t(0), uint64_t(1), uint64_t(n / 100), uint64_t(n / 10), uint64_t(n)})
                for (uint64_t ppm : {uint64_t(1000), uint64_t(20000), uint64_t(1000000)}) {
                    const Vec& x = named.second;
                    SCOPED_TRACE(testing::Message() << "n " << n << " " << named.first << " k " << k
                                                    << " ppm " << ppm);
                    Spec s(GW_CODEC_SAMPLED_TOPK);
                    s.set(GW_PARAM_K, int64_t(k)).set(GW_PARAM_SAMPLE_PPM, int64_t(ppm));
                    if (k == 0) s.set(GW_PARAM_DENSITY_PPM, 0);
                    const Vec want = sampled_ref(x, k, ppm, 77, 5, 2);
                    std::vector<uint8_t> first;
                    gwtest::for_each_target([&](gw_simd_target) {
                        const auto f = encode_ctx(s, x, 77, 5, 2);
                        if (first.empty()) first = f;
                        ASSERT_EQ(f, first);
                        ASSERT_TRUE(bits_equal(gwtest::decode(f, n), want))
                            << gwtest::first_diff(gwtest::decode(f, n).data(), want.data(), n);
                    });
                    // A whole sample is exact top-k.
                    if (ppm == 1000000) {
                        ASSERT_TRUE(bits_equal(want, ref::topk(x, k, 1)));
                    }
                    // Canonical: a decoded frame (at most k nonzeros) re-encodes to itself.
                    ASSERT_TRUE(bits_equal(gwtest::decode(encode_ctx(s, gwtest::decode(first, n), 1, 2, 3), n),
                                           gwtest::decode(first, n)));
                }
    Spec s(GW_CODEC_SAMPLED_TOPK);
    s.set(GW_PARAM_K, 50);
    expect_mass_kept(s, random_floats(20000, 3));
    expect_nonfinite_refused(s, 3000);
    // No pass of its own finds them: one anywhere passes the threshold, many
    // fill the sample, and with k = 0 nothing is selected at all.
    for (size_t bad : {size_t(1), size_t(7), size_t(2999)})
        for (int64_t k : {int64_t(0), int64_t(1), int64_t(50)}) {
            Spec sk(GW_CODEC_SAMPLED_TOPK);
            sk.set(GW_PARAM_K, k);
            if (k == 0) sk.set(GW_PARAM_DENSITY_PPM, 0);
            for (size_t first : {size_t(0), size_t(1234), size_t(2999)}) {
                Vec x = random_floats(3000, 5);
                for (size_t j = 0; j < bad; ++j)
                    x[(first + j * 7919) % x.size()] = j % 2 ? -INFINITY : NAN;
                std::vector<uint8_t> out(8 * x.size() + 200, 0xAB);
                size_t written = 5;
                EXPECT_EQ(gw_encode(sk, nullptr, x.data(), GW_DTYPE_F32, x.size(), out.data(),
                                    out.size(), &written),
                          GW_ERR_NONFINITE)
                    << bad << " bad from " << first << ", k " << k;
                EXPECT_EQ(written, 5u);
            }
        }
}

TEST(SampledTopk, CloseToExactTopk) {
    // With a 1% sample the selection is at most k and mostly the true top k.
    const size_t n = 200000, k = 2000;
    const Vec x = random_floats(n, 12);
    Spec s(GW_CODEC_SAMPLED_TOPK);
    s.set(GW_PARAM_K, int64_t(k));
    const Vec got = gwtest::decode(encode_ctx(s, x, 1, 1, 1), n), exact = ref::topk(x, k, 1);
    size_t nnz = 0, common = 0;
    for (size_t i = 0; i < n; ++i) {
        nnz += got[i] != 0.0f;
        common += got[i] != 0.0f && exact[i] != 0.0f;
    }
    EXPECT_LE(nnz, k);
    EXPECT_GT(nnz, k * 8 / 10);
    EXPECT_EQ(common, nnz);  // whatever passed a threshold is among the largest
}

// ------------------------------------------------------------------ random-k
namespace {

// Knuth's Algorithm S over the public RNG stream.
std::vector<uint32_t> randk_ref(uint64_t seed, uint32_t step, uint32_t tensor, uint64_t n, uint64_t k) {
    std::vector<uint32_t> w(n), out;
    if (n) gw_rng_u32(seed, step, tensor, 0, w.data(), n);
    for (uint64_t i = 0; i < n && out.size() < k; ++i)
        if (uint64_t(w[i]) * (n - i) < (k - out.size()) << 32) out.push_back(uint32_t(i));
    return out;
}

// Revision 2: one position per stratum [floor(j n/k), floor((j+1) n/k)),
// word j of the stream times the stratum's size, Lemire's rejection taking
// retry words from element k on (written with divisions, as the rule reads).
std::vector<uint32_t> randk_ref2(uint64_t seed, uint32_t step, uint32_t tensor, uint64_t n,
                                 uint64_t k) {
    std::vector<uint32_t> w(k), out;
    if (k) gw_rng_u32(seed, step, tensor, 0, w.data(), k);
    uint64_t retry = k;
    for (uint64_t j = 0; j < k; ++j) {
        const uint64_t lo = j * n / k, size = (j + 1) * n / k - lo;
        uint64_t m = uint64_t(w[j]) * size;
        while ((m & 0xFFFFFFFFu) < (uint64_t(1) << 32) % size) {
            uint32_t again = 0;
            gw_rng_u32(seed, step, tensor, retry++, &again, 1);
            m = uint64_t(again) * size;
        }
        out.push_back(uint32_t(lo + (m >> 32)));
    }
    return out;
}

}  // namespace

TEST(Randomk, PositionsFromTheSharedSeedOnEveryTarget) {
    for (int rev : {1, 2})
    for (size_t n : {size_t(1), size_t(17), size_t(1000), size_t(70001)})
        for (uint64_t k : {uint64_t(0), uint64_t(1), uint64_t(n / 100), uint64_t(n / 2), uint64_t(n)})
            for (int vdt : {1, 2, 3}) {
                SCOPED_TRACE(testing::Message() << "revision " << rev << " n " << n << " k " << k
                                                << " dtype " << vdt);
                const Vec x = random_floats(n, 40 + n);
                Spec s(GW_CODEC_RANDOMK);
                s.set(GW_PARAM_K, int64_t(k)).set(GW_PARAM_VALUE_DTYPE, vdt);
                if (rev == 1) s.set(GW_PARAM_REVISION, 1);
                if (k == 0) s.set(GW_PARAM_DENSITY_PPM, 0);
                const auto pos = rev == 1 ? randk_ref(99, 7, 3, n, k) : randk_ref2(99, 7, 3, n, k);
                ASSERT_EQ(pos.size(), k);
                for (size_t j = 1; j < pos.size(); ++j) ASSERT_LT(pos[j - 1], pos[j]);
                std::vector<uint32_t> got(k + 1);
                ASSERT_EQ(gw_randk_positions(rev, 99, 7, 3, n, k, got.data()), GW_OK);
                ASSERT_EQ(std::vector<uint32_t>(got.begin(), got.begin() + k), pos);
                if (rev == 1) {
                    ASSERT_EQ(gw_randk_indices(99, 7, 3, n, k, got.data()), GW_OK);
                    ASSERT_EQ(std::vector<uint32_t>(got.begin(), got.begin() + k), pos);
                }
                Vec want(n, 0.0f);
                for (uint32_t i : pos) want[i] = rounded(x[i], vdt);
                std::vector<uint8_t> first;
                gwtest::for_each_target([&](gw_simd_target) {
                    const auto f = encode_ctx(s, x, 99, 7, 3);
                    if (first.empty()) first = f;
                    ASSERT_EQ(f, first);
                    ASSERT_TRUE(bits_equal(gwtest::decode(f, n), want));
                    // no indices; revision 2's parameter is on the wire, 1's is not
                    ASSERT_EQ(f.size(), 44 + 13 + (rev == 2) + 16 + k * (vdt == 1 ? 4 : 2));
                });
                ASSERT_EQ(encode_ctx(s, gwtest::decode(first, n), 99, 7, 3), first);  // canonical
            }
    // Other steps draw other positions; a worker with the same seed the same.
    EXPECT_NE(randk_ref(99, 7, 3, 1000, 10), randk_ref(99, 8, 3, 1000, 10));
    EXPECT_NE(randk_ref(99, 7, 3, 1000, 10), randk_ref(99, 7, 4, 1000, 10));
    Spec s(GW_CODEC_RANDOMK);
    s.set(GW_PARAM_K, 100);
    expect_mass_kept(s, random_floats(3000, 2));
}

// gw_encode reads only the k values it sends: a NaN or Inf there is refused,
// one elsewhere reaches nothing (the frame is that of any finite value in
// its place). A worker, whose momentum takes all of x, refuses it anywhere.
TEST(Randomk, NonFiniteRefusedWhereRead) {
    const size_t n = 300;
    const uint64_t k = 30;
    for (int rev : {1, 2}) {
        Spec s(GW_CODEC_RANDOMK);
        s.set(GW_PARAM_K, int64_t(k));
        if (rev == 1) s.set(GW_PARAM_REVISION, 1);
        const auto pos = rev == 1 ? randk_ref(5, 6, 7, n, k) : randk_ref2(5, 6, 7, n, k);
        std::vector<bool> sent(n, false);
        for (uint32_t i : pos) sent[i] = true;
        const Vec x = random_floats(n, 8);
        const auto good = encode_ctx(s, x, 5, 6, 7);
        size_t checked_sent = 0, checked_unsent = 0;
        for (size_t at = 0; at < n; at += 7)
            for (float bad : {NAN, INFINITY, -INFINITY}) {
                SCOPED_TRACE(testing::Message() << "revision " << rev << " at " << at);
                Vec y = x;
                y[at] = bad;
                gw_encode_ctx c = GW_ENCODE_CTX_INIT;
                c.seed = 5, c.step = 6, c.tensor = 7;
                std::vector<uint8_t> out(good.size() + 64, 0xAB);
                size_t written = 5;
                const gw_status st = gw_encode(s, &c, y.data(), GW_DTYPE_F32, n, out.data(),
                                               out.size(), &written);
                if (sent[at]) {
                    EXPECT_EQ(st, GW_ERR_NONFINITE);
                    EXPECT_EQ(written, 5u);
                    ++checked_sent;
                } else {
                    ASSERT_EQ(st, GW_OK);
                    EXPECT_EQ(std::vector<uint8_t>(out.begin(), out.begin() + written), good);
                    ++checked_unsent;
                }
            }
        EXPECT_GT(checked_sent, 0u);
        EXPECT_GT(checked_unsent, 0u);
        // The state machine: no residual kept, momentum on; an unsent NaN is
        // refused and the step changes nothing.
        gw_worker_options o = GW_WORKER_OPTIONS_INIT;
        o.n = n;
        o.error_feedback = 0;
        o.seed = 5;
        gw_worker* w = nullptr;
        ASSERT_EQ(gw_worker_create(&w, &o, s), GW_OK);
        size_t bound = 0, written = 0;
        ASSERT_EQ(gw_worker_frame_bound(w, &bound), GW_OK);
        std::vector<uint8_t> f(bound);
        Vec y = x;
        const auto drawn = rev == 1 ? randk_ref(5, 0, 0, n, k) : randk_ref2(5, 0, 0, n, k);
        size_t unsent = 0;
        while (std::find(drawn.begin(), drawn.end(), uint32_t(unsent)) != drawn.end()) ++unsent;
        y[unsent] = NAN;
        const std::vector<uint8_t> before = gwtest::save(w);
        EXPECT_EQ(gw_worker_step(w, y.data(), GW_DTYPE_F32, n, 0.1f, f.data(), f.size(), &written),
                  GW_ERR_NONFINITE);
        EXPECT_EQ(gwtest::save(w), before);
        gw_worker_free(w);
    }
}

TEST(Randomk, UniformOverSteps) {
    const uint64_t n = 100, k = 10, steps = 4000;
    std::vector<int> hits(n, 0);
    for (uint32_t t = 0; t < steps; ++t)
        for (uint32_t i : randk_ref(5, t, 0, n, k)) hits[i]++;
    for (uint64_t i = 0; i < n; ++i) {
        const double p = double(hits[i]) / steps;  // expectation k/n = 0.1, sd ~0.005
        EXPECT_GT(p, 0.08) << i;
        EXPECT_LT(p, 0.12) << i;
    }
}

// Revision 2 takes every element with probability 1 / (its stratum's size):
// n = 103, k = 10 gives strata of 10 and 11 elements.
TEST(Randomk, StratifiedMarginalsOverSteps) {
    const uint64_t n = 103, k = 10, steps = 20000;
    std::vector<int> hits(n, 0);
    std::vector<uint32_t> idx(k);
    for (uint32_t t = 0; t < steps; ++t) {
        ASSERT_EQ(gw_randk_positions(2, 5, t, 0, n, k, idx.data()), GW_OK);
        for (uint32_t i : idx) hits[i]++;
    }
    for (uint64_t j = 0; j < k; ++j) {
        const uint64_t lo = j * n / k, hi = (j + 1) * n / k;
        int total = 0;
        for (uint64_t i = lo; i < hi; ++i) {
            const double p = double(hits[i]) / steps, want = 1.0 / double(hi - lo);
            EXPECT_NEAR(p, want, 5 * std::sqrt(want * (1 - want) / steps)) << i;
            total += hits[i];
        }
        EXPECT_EQ(total, int(steps));  // one per stratum, every step
    }
    // A stratum of 2^31 + 1 elements rejects about half of its words: the
    // retry words give the same positions as the reference.
    const uint64_t big = (uint64_t(1) << 31) + 1;
    for (uint32_t t = 0; t < 64; ++t) {
        ASSERT_EQ(gw_randk_positions(2, 9, t, 1, big, 1, idx.data()), GW_OK);
        ASSERT_EQ(idx[0], randk_ref2(9, t, 1, big, 1)[0]) << t;
    }
    EXPECT_EQ(gw_randk_positions(3, 1, 1, 1, 10, 1, idx.data()), GW_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(gw_randk_positions(0, 1, 1, 1, 10, 1, idx.data()), GW_ERR_INVALID_ARGUMENT);
}

TEST(Randomk, AllReducePathEqualsFrames) {
    // M workers: the gathered values summed like any float buffer, scattered
    // with alpha = -1/M, give exactly what decode_accumulate of every frame gives.
    const uint64_t n = 5000, k = 50;
    const uint32_t M = 5;
    std::vector<uint32_t> idx(k);
    ASSERT_EQ(gw_randk_positions(2, 11, 2, 6, n, k, idx.data()), GW_OK);
    Vec sum(k, 0.0f), vals(k), via_frames(n, 1.0f), via_reduce(n, 1.0f), mean(n, 0.0f);
    Spec s(GW_CODEC_RANDOMK);
    s.set(GW_PARAM_K, int64_t(k));
    for (uint32_t p = 0; p < M; ++p) {
        const Vec x = random_floats(n, 100 + p);
        ASSERT_EQ(gw_gather(x.data(), n, idx.data(), k, vals.data()), GW_OK);
        for (uint64_t j = 0; j < k; ++j) sum[j] = p ? sum[j] + vals[j] : vals[j];
        const auto f = encode_ctx(s, x, 11, 2, 6);
        ASSERT_EQ(gw_decode_accumulate(f.data(), f.size(), 1.0f, mean.data(), n), GW_OK);
    }
    ASSERT_EQ(gw_scatter_add(sum.data(), idx.data(), k, -1.0f / M, via_reduce.data(), n), GW_OK);
    for (uint64_t j = 0; j < k; ++j) {
        const float t = (-1.0f / M) * mean[idx[j]];
        via_frames[idx[j]] = via_frames[idx[j]] + t;
    }
    EXPECT_TRUE(bits_equal(via_reduce, via_frames));
    // Bad indices, non-finite values, overlap.
    std::vector<uint32_t> bad = {3, 3};
    EXPECT_EQ(gw_gather(mean.data(), n, bad.data(), 2, vals.data()), GW_ERR_INVALID_ARGUMENT);
    bad = {3, uint32_t(n)};
    EXPECT_EQ(gw_scatter_add(vals.data(), bad.data(), 2, 1.0f, mean.data(), n), GW_ERR_INVALID_ARGUMENT);
    const Vec before = mean;
    vals[1] = NAN;
    EXPECT_EQ(gw_scatter_add(vals.data(), idx.data(), 2, 1.0f, mean.data(), n), GW_ERR_NONFINITE);
    EXPECT_TRUE(bits_equal(mean, before));
    EXPECT_EQ(gw_gather(mean.data(), n, idx.data(), 2, mean.data() + 1), GW_ERR_OVERLAP);
    EXPECT_EQ(gw_randk_indices(1, 1, 1, 10, 11, idx.data()), GW_ERR_INVALID_ARGUMENT);
}

TEST(Randomk, StrictDecoder) {
    Spec s(GW_CODEC_RANDOMK);
    s.set(GW_PARAM_K, 4).set(GW_PARAM_VALUE_DTYPE, GW_DTYPE_F16);
    auto f = encode_ctx(s, random_floats(50, 1), 1, 2, 3);
    Vec out(50);
    ASSERT_EQ(gw_decode(f.data(), f.size(), out.data(), 50, nullptr), GW_OK);
    const size_t po = payload_offset(f);
    auto g = f;
    g[po + 16] = 0x00, g[po + 17] = 0x7C;  // +Inf in f16
    refresh_crc(g);
    EXPECT_EQ(gw_decode(g.data(), g.size(), out.data(), 50, nullptr), GW_ERR_FRAME_PAYLOAD);
}

// --------------------------------------------------------------- diagnostics
TEST(Diagnostics, ContractionAndCompressionRatio) {
    const Vec x = {3, -4, 0, 0};  // ||x||^2 = 25
    double r = -1;
    Spec topk(GW_CODEC_TOPK);
    topk.set(GW_PARAM_K, 1);
    ASSERT_EQ(gw_codec_contraction(topk, nullptr, x.data(), 4, &r), GW_OK);
    EXPECT_DOUBLE_EQ(r, 9.0 / 25.0);  // keeps -4, loses 3
    topk.set(GW_PARAM_K, 4);
    ASSERT_EQ(gw_codec_contraction(topk, nullptr, x.data(), 4, &r), GW_OK);
    EXPECT_EQ(r, 0.0);
    Spec sign(GW_CODEC_SCALED_SIGN);  // one block: scale 7/4, C(x) = (1.75, -1.75, 1.75, 1.75)
    ASSERT_EQ(gw_codec_contraction(sign, nullptr, x.data(), 4, &r), GW_OK);
    EXPECT_DOUBLE_EQ(r, (1.25 * 1.25 + 2.25 * 2.25 + 2 * 1.75 * 1.75) / 25.0);
    const Vec zero(4, 0.0f);
    ASSERT_EQ(gw_codec_contraction(sign, nullptr, zero.data(), 4, &r), GW_OK);
    EXPECT_EQ(r, 0.0);
    Vec nan = x;
    nan[0] = NAN;
    EXPECT_EQ(gw_codec_contraction(sign, nullptr, nan.data(), 4, &r), GW_ERR_NONFINITE);

    Spec id(GW_CODEC_IDENTITY);
    const auto f = gwtest::encode(id, random_floats(1000, 1));
    ASSERT_EQ(gw_frame_compression_ratio(f.data(), f.size(), &r), GW_OK);
    EXPECT_DOUBLE_EQ(r, 4000.0 / 4044.0);
    EXPECT_EQ(gw_frame_compression_ratio(f.data(), f.size() - 1, &r), GW_ERR_FRAME_TRUNCATED);
}

// The sparse encoders carve their arrays with ScratchLayout: disjoint, 64-byte
// aligned, and at different offsets within a 4 KiB page even when every size
// is a multiple of it (where plain back-to-back arrays would all coincide).
TEST(ScratchLayout, DisjointAlignedAndOnDistinctPageOffsets) {
    for (size_t unit : {size_t(0), size_t(4), size_t(100), size_t(4096), size_t(1) << 26}) {
        gw::ScratchLayout at;
        std::vector<std::pair<size_t, size_t>> arrays;
        for (size_t j = 0; j < 6; ++j) {
            const size_t bytes = unit * (j % 2 + 1);
            arrays.push_back({at.add(bytes), bytes});
        }
        std::vector<size_t> page_offsets;
        for (size_t j = 0; j < arrays.size(); ++j) {
            const size_t off = arrays[j].first, end = off + arrays[j].second;
            EXPECT_EQ(off % 64, 0u);
            EXPECT_LE(end + 64, at.bytes());  // the slack after each array is inside the block
            if (j + 1 < arrays.size()) {
                EXPECT_LE(end + 64, arrays[j + 1].first);
            }
            page_offsets.push_back(off % 4096);
        }
        std::sort(page_offsets.begin(), page_offsets.end());
        EXPECT_EQ(std::adjacent_find(page_offsets.begin(), page_offsets.end()), page_offsets.end())
            << "unit " << unit;
    }
}
