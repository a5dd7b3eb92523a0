// ScaleCom's CLT-k state machine (docs/algorithms.md s.4) through the C API:
// M = 1..16 workers against a plain reference of the equations, bit for bit
// (leader's chunk-wise top-k, values at exactly its indices on every worker,
// rank-order sum, x[I] -= sum/M, low-pass memory); beta = 1 is plain error
// feedback and loses no mass over 1,000 steps; warm-up, leader override,
// phases (GW_ERR_SEQUENCE changes nothing), bad frames, checkpoints.
#include <algorithm>
#include <cmath>
#include <memory>

#include "ref_algorithms.hpp"
#include "test_util.hpp"

using gwtest::bits_equal;
using gwtest::random_floats;
using gwtest::Spec;
using ref::Vec;

namespace {

Spec index_spec(int64_t k, int64_t chunk) {
    Spec s(GW_CODEC_INDEX);
    s.set(GW_PARAM_K, k).set(GW_PARAM_CHUNK_SIZE, chunk);
    if (k == 0) s.set(GW_PARAM_DENSITY_PPM, 0);  // k = 0 takes the density: none
    return s;
}

struct Handle {
    gw_cltk* h = nullptr;
    Handle(uint64_t n, uint32_t M, uint32_t rank, float beta, uint64_t warmup, const Spec& s,
           uint32_t tensor = 0) {
        gw_cltk_options o = GW_CLTK_OPTIONS_INIT;
        o.n = n;
        o.num_workers = M;
        o.rank = rank;
        o.beta = beta;
        o.warmup_steps = warmup;
        o.tensor = tensor;
        EXPECT_EQ(gw_cltk_create(&h, &o, s), GW_OK);
    }
    ~Handle() { gw_cltk_free(h); }
    Vec memory(uint64_t n) const {
        Vec m(n);
        EXPECT_EQ(gw_cltk_memory(h, m.data(), n), GW_OK);
        return m;
    }
    std::vector<uint8_t> save() const {
        return gwtest::save_with(h, gw_cltk_save_bound, gw_cltk_save);
    }
};

// The reference of one worker: the equations with the same float operations.
struct RefWorker {
    Vec m, a;
};

// Indices of the chunk-wise top-k of a (exactly k: ref::chunk_shares,
// revision 2), from a stable sort per chunk; zeros are not selected.
std::vector<uint32_t> ref_select(const Vec& a, uint64_t k, uint64_t chunk) {
    const Vec sel = ref::chunk_topk(a, k, chunk, 2, 1);
    std::vector<uint32_t> out;
    for (size_t i = 0; i < a.size(); ++i)
        if (sel[i] != 0.0f) out.push_back(uint32_t(i));
    return out;
}

// Runs `steps` rounds of M workers through the handles and the reference side
// by side; checks every value buffer, every x, every memory bit for bit.
void run_against_reference(uint64_t n, uint32_t M, uint64_t k, uint64_t chunk, float beta,
                           uint64_t warmup, int steps, uint32_t seed) {
    SCOPED_TRACE(testing::Message() << "n " << n << " M " << M << " k " << k << " chunk " << chunk
                                    << " beta " << beta << " warmup " << warmup);
    const Spec s = index_spec(int64_t(k), int64_t(chunk));
    std::vector<std::unique_ptr<Handle>> hs;
    std::vector<RefWorker> ref(M, RefWorker{Vec(n, 0.0f), Vec(n, 0.0f)});
    for (uint32_t r = 0; r < M; ++r) hs.emplace_back(new Handle(n, M, r, beta, warmup, s, 3));
    size_t fbound = 0, vbound = 0;
    ASSERT_EQ(gw_cltk_index_frame_bound(hs[0]->h, &fbound), GW_OK);
    ASSERT_EQ(gw_cltk_values_bound(hs[0]->h, &vbound), GW_OK);
    std::vector<Vec> x(M, random_floats(n, seed)), vals(M, Vec(vbound));
    Vec xref = x[0];
    for (int t = 0; t < steps; ++t) {
        const float lr = 0.1f / float(1 + t % 3);
        std::vector<Vec> g(M);
        for (uint32_t r = 0; r < M; ++r) g[r] = random_floats(n, seed * 1000 + t * 31 + r, 1.0f + r);
        // begin, and the reference a = m + lr * g.
        for (uint32_t r = 0; r < M; ++r) {
            ASSERT_EQ(gw_cltk_begin(hs[r]->h, g[r].data(), GW_DTYPE_F32, n, lr), GW_OK);
            for (uint64_t i = 0; i < n; ++i) {
                const float tt = lr * g[r][i];
                ref[r].a[i] = ref[r].m[i] + tt;
            }
        }
        uint32_t leader = 0;
        ASSERT_EQ(gw_cltk_leader(hs[0]->h, &leader), GW_OK);
        const bool dense = uint64_t(t) < warmup;
        std::vector<uint32_t> I;
        std::vector<uint8_t> frame;
        if (dense) {
            ASSERT_EQ(leader, GW_CLTK_NO_LEADER);
            for (uint64_t i = 0; i < n; ++i) I.push_back(uint32_t(i));
        } else {
            ASSERT_EQ(leader, uint32_t(t) % M);
            I = ref_select(ref[leader].a, std::min(k, n), chunk);
            frame.resize(fbound);
            size_t w = 0;
            // Another worker may not select.
            if (M > 1) {
                ASSERT_EQ(gw_cltk_select(hs[(leader + 1) % M]->h, frame.data(), frame.size(), &w),
                          GW_ERR_SEQUENCE);
            }
            ASSERT_EQ(gw_cltk_select(hs[leader]->h, frame.data(), frame.size(), &w), GW_OK);
            frame.resize(w);
        }
        // extract: every worker's values at exactly I; the all-reduce in rank order.
        Vec sum(I.size(), 0.0f);
        for (uint32_t r = 0; r < M; ++r) {
            size_t count = 0;
            ASSERT_EQ(gw_cltk_extract(hs[r]->h, dense ? nullptr : frame.data(), frame.size(),
                                      vals[r].data(), vals[r].size(), &count),
                      GW_OK);
            ASSERT_EQ(count, I.size());
            for (size_t j = 0; j < I.size(); ++j) {
                ASSERT_EQ(vals[r][j], ref[r].a[I[j]]) << "worker " << r << " entry " << j;
                sum[j] = r ? sum[j] + vals[r][j] : vals[r][j];
            }
            std::vector<uint32_t> got(n);
            size_t gc = 0;
            ASSERT_EQ(gw_cltk_indices(hs[r]->h, got.data(), got.size(), &gc), GW_OK);
            ASSERT_EQ(std::vector<uint32_t>(got.begin(), got.begin() + gc), I);
        }
        // apply, and the reference update.
        for (uint32_t r = 0; r < M; ++r)
            ASSERT_EQ(gw_cltk_apply(hs[r]->h, sum.data(), sum.size(), x[r].data(), n), GW_OK);
        for (size_t j = 0; j < I.size(); ++j) xref[I[j]] = xref[I[j]] - sum[j] / float(M);
        for (uint32_t r = 0; r < M; ++r) {
            Vec sent(n, 0.0f), masked = ref[r].a;
            for (uint32_t i : I) masked[i] = 0.0f;
            for (uint64_t i = 0; i < n; ++i) {
                const float t1 = (1.0f - beta) * ref[r].m[i], t2 = beta * masked[i];
                ref[r].m[i] = beta == 1.0f ? masked[i] : t1 + t2;
            }
            ASSERT_TRUE(bits_equal(hs[r]->memory(n), ref[r].m)) << "memory of worker " << r;
            ASSERT_TRUE(bits_equal(x[r], xref)) << "replica of worker " << r;
        }
    }
    uint64_t steps_done = 0;
    ASSERT_EQ(gw_cltk_step_count(hs[0]->h, &steps_done), GW_OK);
    EXPECT_EQ(steps_done, uint64_t(steps));
}

}  // namespace

TEST(Cltk, EveryWorkerCountMatchesTheEquations) {
    for (uint32_t M = 1; M <= 16; ++M) run_against_reference(300, M, 12, 64, 1.0f, 0, 2 * M + 3, M);
}

TEST(Cltk, LowPassMemoryAndChunksOnEveryTarget) {
    gwtest::for_each_target([&](gw_simd_target) {
        run_against_reference(1000, 3, 10, 128, 0.1f, 0, 8, 7);
        run_against_reference(1000, 4, 40, 0, 0.3f, 2, 8, 8);   // warm-up rounds first
        run_against_reference(50, 5, 50, 7, 0.5f, 0, 6, 9);     // k = n
        run_against_reference(1, 2, 1, 0, 1.0f, 1, 4, 10);      // n = 1
        run_against_reference(64, 2, 0, 0, 1.0f, 0, 3, 11);     // k = 0: nothing is sent
    });
}

TEST(Cltk, BetaOneIsErrorFeedbackAndLosesNoMass) {
    // One worker, exact top-k (one chunk): m_t + sum of what was sent ==
    // sum of lr * g, the EF identity, per step exactly and over 1,000 steps
    // in double.
    const uint64_t n = 500;
    const Spec s = index_spec(5, 0);
    Handle h(n, 1, 0, 1.0f, 0, s);
    size_t fb = 0;
    ASSERT_EQ(gw_cltk_index_frame_bound(h.h, &fb), GW_OK);
    std::vector<uint8_t> frame(fb);
    Vec vals(n), x(n, 0.0f);
    std::vector<double> in(n, 0.0), out(n, 0.0);
    for (int t = 0; t < 1000; ++t) {
        const float lr = 0.01f * float(1 + t % 4);
        const Vec g = random_floats(n, 500 + t);
        const Vec m_before = h.memory(n);
        ASSERT_EQ(gw_cltk_begin(h.h, g.data(), GW_DTYPE_F32, n, lr), GW_OK);
        size_t w = 0, count = 0;
        ASSERT_EQ(gw_cltk_select(h.h, frame.data(), frame.size(), &w), GW_OK);
        ASSERT_EQ(gw_cltk_extract(h.h, frame.data(), w, vals.data(), n, &count), GW_OK);
        std::vector<uint32_t> I(n);
        ASSERT_EQ(gw_cltk_indices(h.h, I.data(), n, &count), GW_OK);
        ASSERT_EQ(gw_cltk_apply(h.h, vals.data(), count, x.data(), n), GW_OK);
        const Vec m = h.memory(n);
        Vec a = m;  // a == m + scatter(sent), exactly
        for (size_t j = 0; j < count; ++j) {
            ASSERT_EQ(m[I[j]], 0.0f);
            a[I[j]] = vals[j];
            out[I[j]] += double(vals[j]);
        }
        for (uint64_t i = 0; i < n; ++i) {
            const float tt = lr * g[i];
            ASSERT_EQ(a[i], m_before[i] + tt);
            in[i] += double(lr) * double(g[i]);
        }
    }
    const Vec m = h.memory(n);
    double err = 0, mass = 0;
    for (uint64_t i = 0; i < n; ++i) {
        err = std::max(err, std::fabs(out[i] + m[i] - in[i]));
        mass = std::max(mass, std::fabs(in[i]));
    }
    EXPECT_LT(err, 1e-4 * std::max(1.0, mass));
}

TEST(Cltk, PhasesAreEnforcedAndErrorsChangeNothing) {
    const uint64_t n = 100;
    const Spec s = index_spec(10, 0);
    Handle a(n, 2, 0, 0.5f, 0, s, 9), b(n, 2, 1, 0.5f, 0, s, 9);
    const Vec g = random_floats(n, 1);
    size_t fb = 0, w = 0, count = 0;
    ASSERT_EQ(gw_cltk_index_frame_bound(a.h, &fb), GW_OK);
    std::vector<uint8_t> frame(fb);
    Vec vals(n), x(n, 1.0f);
    // Nothing before begin.
    EXPECT_EQ(gw_cltk_select(a.h, frame.data(), fb, &w), GW_ERR_SEQUENCE);
    EXPECT_EQ(gw_cltk_extract(a.h, frame.data(), fb, vals.data(), n, &count), GW_ERR_SEQUENCE);
    EXPECT_EQ(gw_cltk_apply(a.h, vals.data(), 1, x.data(), n), GW_ERR_SEQUENCE);
    // Bad gradients and learning rates change nothing.
    Vec bad = g;
    bad[3] = NAN;
    EXPECT_EQ(gw_cltk_begin(a.h, bad.data(), GW_DTYPE_F32, n, 0.1f), GW_ERR_NONFINITE);
    EXPECT_EQ(gw_cltk_begin(a.h, g.data(), GW_DTYPE_F32, n, 0.0f), GW_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(gw_cltk_begin(a.h, g.data(), GW_DTYPE_F32, n - 1, 0.1f), GW_ERR_COUNT_MISMATCH);
    EXPECT_EQ(gw_cltk_begin(a.h, g.data(), GW_DTYPE_F32, n, 0.1f), GW_OK);
    EXPECT_EQ(gw_cltk_begin(a.h, g.data(), GW_DTYPE_F32, n, 0.1f), GW_ERR_SEQUENCE);
    EXPECT_EQ(gw_cltk_set_leader(a.h, 1), GW_ERR_SEQUENCE);
    size_t blob = 0;
    ASSERT_EQ(gw_cltk_save_bound(a.h, &blob), GW_OK);
    std::vector<uint8_t> bl(blob);
    EXPECT_EQ(gw_cltk_save(a.h, bl.data(), bl.size(), &w), GW_ERR_SEQUENCE);
    ASSERT_EQ(gw_cltk_begin(b.h, g.data(), GW_DTYPE_F32, n, 0.1f), GW_OK);
    EXPECT_EQ(gw_cltk_select(b.h, frame.data(), fb, &w), GW_ERR_SEQUENCE);  // not b's turn
    EXPECT_EQ(gw_cltk_select(a.h, frame.data(), fb - 1, &w), GW_ERR_BUFFER_TOO_SMALL);
    ASSERT_EQ(gw_cltk_select(a.h, frame.data(), fb, &w), GW_OK);
    frame.resize(w);
    // Frames of another round, tensor or codec; a frame on a dense round's call.
    Handle other(n, 2, 0, 0.5f, 0, s, 8);
    ASSERT_EQ(gw_cltk_begin(other.h, g.data(), GW_DTYPE_F32, n, 0.1f), GW_OK);
    std::vector<uint8_t> wrong_tensor(fb);
    ASSERT_EQ(gw_cltk_select(other.h, wrong_tensor.data(), fb, &w), GW_OK);
    wrong_tensor.resize(w);
    EXPECT_EQ(gw_cltk_extract(b.h, wrong_tensor.data(), wrong_tensor.size(), vals.data(), n, &count),
              GW_ERR_TAG_MISMATCH);
    gw_encode_ctx ctx = GW_ENCODE_CTX_INIT;
    ctx.tag = GW_TAG(9, 0);
    const Spec s5 = index_spec(5, 0);
    std::vector<uint8_t> f5(fb);
    ASSERT_EQ(gw_encode(s5, &ctx, g.data(), GW_DTYPE_F32, n, f5.data(), f5.size(), &w), GW_OK);
    f5.resize(w);
    EXPECT_EQ(gw_cltk_extract(b.h, f5.data(), f5.size(), vals.data(), n, &count), GW_ERR_CODEC_MISMATCH);
    EXPECT_EQ(gw_cltk_extract(b.h, frame.data(), frame.size() - 1, vals.data(), n, &count),
              GW_ERR_FRAME_TRUNCATED);
    EXPECT_EQ(gw_cltk_extract(b.h, frame.data(), frame.size(), vals.data(), 9, &count),
              GW_ERR_BUFFER_TOO_SMALL);
    EXPECT_EQ(gw_cltk_extract(b.h, nullptr, 0, vals.data(), n, &count), GW_ERR_NULL_POINTER);
    EXPECT_EQ(gw_cltk_extract(b.h, frame.data(), frame.size(),
                              reinterpret_cast<float*>(frame.data()), 4, &count),
              GW_ERR_OVERLAP);
    ASSERT_EQ(gw_cltk_extract(b.h, frame.data(), frame.size(), vals.data(), n, &count), GW_OK);
    ASSERT_EQ(count, 10u);
    EXPECT_EQ(gw_cltk_extract(b.h, frame.data(), frame.size(), vals.data(), n, &count), GW_ERR_SEQUENCE);
    // apply: wrong count, non-finite sums, overflowing x: nothing moves.
    const Vec m0 = b.memory(n), x0 = x;
    Vec sum(vals.begin(), vals.begin() + 10);
    EXPECT_EQ(gw_cltk_apply(b.h, sum.data(), 9, x.data(), n), GW_ERR_COUNT_MISMATCH);
    sum[2] = INFINITY;
    EXPECT_EQ(gw_cltk_apply(b.h, sum.data(), 10, x.data(), n), GW_ERR_NONFINITE);
    sum[2] = -3e38f;
    Vec xbig(n, 3e38f);
    EXPECT_EQ(gw_cltk_apply(b.h, sum.data(), 10, xbig.data(), n), GW_ERR_OVERFLOW);
    EXPECT_TRUE(bits_equal(xbig, Vec(n, 3e38f)));
    EXPECT_EQ(gw_cltk_apply(b.h, sum.data(), 10, x.data(), n - 1), GW_ERR_COUNT_MISMATCH);
    EXPECT_TRUE(bits_equal(b.memory(n), m0));
    EXPECT_TRUE(bits_equal(x, x0));
    // reset_round abandons the round: the next begin is the same round again.
    ASSERT_EQ(gw_cltk_reset_round(b.h), GW_OK);
    uint64_t steps = 9;
    ASSERT_EQ(gw_cltk_step_count(b.h, &steps), GW_OK);
    EXPECT_EQ(steps, 0u);
    EXPECT_TRUE(bits_equal(b.memory(n), m0));
    ASSERT_EQ(gw_cltk_begin(b.h, g.data(), GW_DTYPE_F32, n, 0.1f), GW_OK);
    ASSERT_EQ(gw_cltk_extract(b.h, frame.data(), frame.size(), vals.data(), n, &count), GW_OK);
    ASSERT_EQ(gw_cltk_apply(b.h, vals.data(), count, nullptr, 0), GW_OK);  // memory only
}

TEST(Cltk, LeaderOverrideWarmupAndOptions) {
    const uint64_t n = 64;
    const Spec s = index_spec(4, 0);
    Handle h(n, 4, 2, 1.0f, 1, s);
    uint32_t leader = 0;
    ASSERT_EQ(gw_cltk_leader(h.h, &leader), GW_OK);
    EXPECT_EQ(leader, GW_CLTK_NO_LEADER);  // a dense warm-up round
    EXPECT_EQ(gw_cltk_set_leader(h.h, 4), GW_ERR_INVALID_ARGUMENT);
    ASSERT_EQ(gw_cltk_set_leader(h.h, 3), GW_OK);
    const Vec g = random_floats(n, 2);
    Vec vals(n);
    size_t count = 0;
    ASSERT_EQ(gw_cltk_begin(h.h, g.data(), GW_DTYPE_F32, n, 1.0f), GW_OK);
    uint8_t junk[64] = {0};
    EXPECT_EQ(gw_cltk_extract(h.h, junk, sizeof junk, vals.data(), n, &count), GW_ERR_SEQUENCE);
    ASSERT_EQ(gw_cltk_extract(h.h, nullptr, 0, vals.data(), n, &count), GW_OK);
    EXPECT_EQ(count, n);
    EXPECT_TRUE(bits_equal(vals, g));  // a = 0 + 1 * g
    ASSERT_EQ(gw_cltk_apply(h.h, vals.data(), count, nullptr, 0), GW_OK);
    EXPECT_TRUE(bits_equal(h.memory(n), Vec(n, 0.0f)));  // everything was sent
    for (int t = 1; t < 6; ++t) {
        ASSERT_EQ(gw_cltk_leader(h.h, &leader), GW_OK);
        if (t <= 3) {
            EXPECT_EQ(leader, 3u);  // the override, every round
        }
        ASSERT_EQ(gw_cltk_begin(h.h, g.data(), GW_DTYPE_F32, n, 1.0f), GW_OK);
        ASSERT_EQ(gw_cltk_reset_round(h.h), GW_OK);
        if (t == 3) {
            ASSERT_EQ(gw_cltk_set_leader(h.h, GW_CLTK_CYCLIC), GW_OK);
        }
        if (t > 3) {
            ASSERT_EQ(gw_cltk_leader(h.h, &leader), GW_OK);
            EXPECT_EQ(leader, 1u);  // step 1 mod 4 (resets do not advance the round)
        }
    }
    // f16/bf16 gradients are widened first.
    std::vector<uint16_t> half(n, 0x3C00);  // 1.0 in f16
    ASSERT_EQ(gw_cltk_begin(h.h, half.data(), GW_DTYPE_F16, n, 0.5f), GW_OK);
    ASSERT_EQ(gw_cltk_reset_round(h.h), GW_OK);
    // Options.
    gw_cltk_options o;
    EXPECT_EQ(gw_cltk_options_init(&o, GW_CLTK_OPTIONS_VERSION + 1), GW_ERR_OPTIONS_VERSION);
    ASSERT_EQ(gw_cltk_options_init(&o, GW_CLTK_OPTIONS_VERSION), GW_OK);
    gw_cltk* bad = nullptr;
    o.n = n;
    o.beta = 0.0f;
    EXPECT_EQ(gw_cltk_create(&bad, &o, s), GW_ERR_INVALID_ARGUMENT);
    o.beta = NAN;
    EXPECT_EQ(gw_cltk_create(&bad, &o, s), GW_ERR_INVALID_ARGUMENT);
    o.beta = 1.0f;
    o.rank = 1;
    EXPECT_EQ(gw_cltk_create(&bad, &o, s), GW_ERR_INVALID_ARGUMENT);  // rank >= M
    o.rank = 0;
    Spec topk(GW_CODEC_TOPK);
    EXPECT_EQ(gw_cltk_create(&bad, &o, topk), GW_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(bad, nullptr);
    gw_cltk_free(nullptr);
    uint32_t rate = 0;
    EXPECT_EQ(gw_scalecom_rate(64.0, &rate), GW_OK);
    EXPECT_EQ(rate, 400u);
    EXPECT_EQ(gw_scalecom_rate(128.0, &rate), GW_OK);
    EXPECT_EQ(rate, 400u);
    EXPECT_EQ(gw_scalecom_rate(150.0, &rate), GW_OK);
    EXPECT_EQ(rate, 50u);
    EXPECT_EQ(gw_scalecom_rate(196.0, &rate), GW_OK);
    EXPECT_EQ(rate, 25u);
    EXPECT_EQ(gw_scalecom_rate(0.0, &rate), GW_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(gw_scalecom_rate(NAN, &rate), GW_ERR_INVALID_ARGUMENT);
}

TEST(Cltk, CheckpointsRestoreBitIdentically) {
    const uint64_t n = 777;
    const Spec s = index_spec(20, 100);
    const uint32_t M = 3;
    // Run M workers for some rounds, save all, continue the originals and
    // restored copies side by side: identical memories and values.
    auto round = [&](std::vector<std::unique_ptr<Handle>>& hs, int t, std::vector<Vec>& out) {
        size_t fb = 0, w = 0;
        ASSERT_EQ(gw_cltk_index_frame_bound(hs[0]->h, &fb), GW_OK);
        std::vector<uint8_t> frame(fb);
        uint32_t leader = 0;
        for (uint32_t r = 0; r < M; ++r) {
            const Vec g = random_floats(n, 90 + t * 7 + r);
            ASSERT_EQ(gw_cltk_begin(hs[r]->h, g.data(), GW_DTYPE_F32, n, 0.05f), GW_OK);
        }
        ASSERT_EQ(gw_cltk_leader(hs[0]->h, &leader), GW_OK);
        ASSERT_EQ(gw_cltk_select(hs[leader]->h, frame.data(), fb, &w), GW_OK);
        out.assign(M, Vec(n));
        Vec sum;
        for (uint32_t r = 0; r < M; ++r) {
            size_t count = 0;
            ASSERT_EQ(gw_cltk_extract(hs[r]->h, frame.data(), w, out[r].data(), n, &count), GW_OK);
            out[r].resize(count);
            if (r == 0) sum = out[r];
            else for (size_t j = 0; j < count; ++j) sum[j] += out[r][j];
        }
        for (uint32_t r = 0; r < M; ++r)
            ASSERT_EQ(gw_cltk_apply(hs[r]->h, sum.data(), sum.size(), nullptr, 0), GW_OK);
    };
    std::vector<std::unique_ptr<Handle>> a, b;
    for (uint32_t r = 0; r < M; ++r) {
        a.emplace_back(new Handle(n, M, r, 0.2f, 0, s));
        b.emplace_back(new Handle(n, M, r, 0.2f, 0, s));
    }
    std::vector<Vec> va, vb;
    for (int t = 0; t < 4; ++t) round(a, t, va);
    ASSERT_EQ(gw_cltk_set_leader(a[0]->h, 2), GW_OK);  // the override is state too
    ASSERT_EQ(gw_cltk_set_leader(a[1]->h, 2), GW_OK);
    ASSERT_EQ(gw_cltk_set_leader(a[2]->h, 2), GW_OK);
    for (uint32_t r = 0; r < M; ++r) {
        const auto blob = a[r]->save();
        // A blob of another rank or configuration does not load.
        if (r > 0) {
            EXPECT_EQ(gw_cltk_load(b[r - 1]->h, blob.data(), blob.size()), GW_ERR_STATE_MISMATCH);
        }
        auto bad = blob;
        bad[bad.size() / 2] ^= 1;
        EXPECT_EQ(gw_cltk_load(b[r]->h, bad.data(), bad.size()), GW_ERR_STATE_CHECKSUM);
        EXPECT_TRUE(bits_equal(b[r]->memory(n), Vec(n, 0.0f)));
    }
    for (uint32_t r = 0; r < M; ++r) {
        const auto blob = a[r]->save();
        // Loading ends a round in progress.
        const Vec g = random_floats(n, 5);
        ASSERT_EQ(gw_cltk_begin(b[r]->h, g.data(), GW_DTYPE_F32, n, 0.05f), GW_OK);
        ASSERT_EQ(gw_cltk_load(b[r]->h, blob.data(), blob.size()), GW_OK);
        EXPECT_EQ(b[r]->save(), blob);
    }
    for (int t = 4; t < 10; ++t) {
        round(a, t, va);
        round(b, t, vb);
        for (uint32_t r = 0; r < M; ++r) {
            ASSERT_TRUE(bits_equal(va[r], vb[r]));
            ASSERT_TRUE(bits_equal(a[r]->memory(n), b[r]->memory(n)));
        }
    }
}

// Issue 20: the leader's index frame holds exactly k entries (it held 143
// for n = 1000, k = 10, chunks of 7), so every worker extracts k values.
// Handles of the first rule (revision 1) keep its frames and checkpoints:
// their blobs load into revision 1 handles only.
TEST(Cltk, ExactlyKValuesAndRevisionOneCheckpoints) {
    const uint64_t n = 1000;
    Spec rev1 = index_spec(10, 7);
    rev1.set(GW_PARAM_REVISION, 1);
    for (int rev : {2, 1}) {
        SCOPED_TRACE(rev);
        const Spec s = rev == 2 ? index_spec(10, 7) : rev1;
        Handle h(n, 1, 0, 1.0f, 0, s), fresh(n, 1, 0, 1.0f, 0, s), other(n, 1, 0, 1.0f, 0,
                                                                          rev == 2 ? rev1 : index_spec(10, 7));
        const Vec g = random_floats(n, 42);
        size_t fb = 0, w = 0, count = 0;
        ASSERT_EQ(gw_cltk_index_frame_bound(h.h, &fb), GW_OK);
        std::vector<uint8_t> frame(fb);
        Vec vals(n);
        ASSERT_EQ(gw_cltk_begin(h.h, g.data(), GW_DTYPE_F32, n, 0.1f), GW_OK);
        ASSERT_EQ(gw_cltk_select(h.h, frame.data(), frame.size(), &w), GW_OK);
        ASSERT_EQ(gw_cltk_extract(h.h, frame.data(), w, vals.data(), n, &count), GW_OK);
        EXPECT_EQ(count, rev == 2 ? 10u : 143u);
        ASSERT_EQ(gw_cltk_apply(h.h, vals.data(), count, nullptr, 0), GW_OK);
        const auto blob = h.save();
        EXPECT_EQ(gw_cltk_load(other.h, blob.data(), blob.size()), GW_ERR_STATE_MISMATCH);
        ASSERT_EQ(gw_cltk_load(fresh.h, blob.data(), blob.size()), GW_OK);
        EXPECT_EQ(fresh.save(), blob);
    }
}

// Issue 20 item 7: a call out of order is GW_ERR_SEQUENCE before any check of
// its arguments (only NULL pointers come earlier), and changes nothing: the
// handle then runs the round exactly as a twin that never saw those calls.
TEST(Cltk, SequenceIsCheckedFirstAndChangesNothing) {
    const uint64_t n = 100;
    const Spec s = index_spec(10, 30);
    Handle a(n, 2, 0, 0.5f, 0, s), twin(n, 2, 0, 0.5f, 0, s), b(n, 2, 1, 0.5f, 0, s);
    const Vec g = random_floats(n, 3);
    size_t fb = 0, w = 0, w2 = 0, count = 0;
    ASSERT_EQ(gw_cltk_index_frame_bound(a.h, &fb), GW_OK);
    std::vector<uint8_t> frame(fb), frame2(fb);
    Vec vals(n), x(n, 1.0f);
    // Idle: wrong arguments to later calls still say SEQUENCE.
    EXPECT_EQ(gw_cltk_extract(a.h, frame.data(), fb, reinterpret_cast<float*>(frame.data()), 4,
                              &count),
              GW_ERR_SEQUENCE);  // overlapping buffers
    EXPECT_EQ(gw_cltk_apply(a.h, vals.data(), 1, x.data(), n - 1), GW_ERR_SEQUENCE);  // wrong n
    EXPECT_EQ(gw_cltk_select(a.h, frame.data(), 1, &w), GW_ERR_SEQUENCE);  // capacity too small
    ASSERT_EQ(gw_cltk_begin(a.h, g.data(), GW_DTYPE_F32, n, 0.1f), GW_OK);
    ASSERT_EQ(gw_cltk_begin(twin.h, g.data(), GW_DTYPE_F32, n, 0.1f), GW_OK);
    ASSERT_EQ(gw_cltk_begin(b.h, g.data(), GW_DTYPE_F32, n, 0.1f), GW_OK);
    // Begun: a second begin with a wrong n or dtype, a leader change with a
    // rank out of range, the leader extracting before it selected.
    EXPECT_EQ(gw_cltk_begin(a.h, g.data(), GW_DTYPE_F32, n - 1, 0.1f), GW_ERR_SEQUENCE);
    EXPECT_EQ(gw_cltk_begin(a.h, g.data(), gw_dtype(77), n, 0.1f), GW_ERR_SEQUENCE);
    EXPECT_EQ(gw_cltk_set_leader(a.h, 5), GW_ERR_SEQUENCE);
    EXPECT_EQ(gw_cltk_extract(a.h, frame.data(), fb, vals.data(), n, &count), GW_ERR_SEQUENCE);
    ASSERT_EQ(gw_cltk_select(a.h, frame.data(), fb, &w), GW_OK);
    ASSERT_EQ(gw_cltk_select(twin.h, frame2.data(), fb, &w2), GW_OK);
    // Selected: a second select, with room or without.
    EXPECT_EQ(gw_cltk_select(a.h, frame.data(), fb, &w), GW_ERR_SEQUENCE);
    EXPECT_EQ(gw_cltk_select(a.h, frame.data(), fb - 1, &w), GW_ERR_SEQUENCE);
    EXPECT_EQ(gw_cltk_apply(a.h, vals.data(), 10, x.data(), n), GW_ERR_SEQUENCE);
    // Not the leader: select is out of order whatever the capacity.
    EXPECT_EQ(gw_cltk_select(b.h, frame.data(), 1, &w), GW_ERR_SEQUENCE);
    frame.resize(w);
    frame2.resize(w2);
    ASSERT_EQ(frame, frame2);
    Vec va(n), vt(n), xa(n, 1.0f), xt(n, 1.0f);
    ASSERT_EQ(gw_cltk_extract(a.h, frame.data(), w, va.data(), n, &count), GW_OK);
    ASSERT_EQ(count, 10u);
    ASSERT_EQ(gw_cltk_extract(twin.h, frame2.data(), w2, vt.data(), n, &count), GW_OK);
    // Extracted: extract again, begin, select.
    EXPECT_EQ(gw_cltk_extract(a.h, frame.data(), w, va.data(), n, &count), GW_ERR_SEQUENCE);
    EXPECT_EQ(gw_cltk_begin(a.h, g.data(), GW_DTYPE_F32, n - 1, 0.1f), GW_ERR_SEQUENCE);
    EXPECT_EQ(gw_cltk_select(a.h, frame.data(), 1, &w), GW_ERR_SEQUENCE);
    ASSERT_EQ(gw_cltk_apply(a.h, va.data(), count, xa.data(), n), GW_OK);
    ASSERT_EQ(gw_cltk_apply(twin.h, vt.data(), count, xt.data(), n), GW_OK);
    EXPECT_TRUE(bits_equal(va, vt));
    EXPECT_TRUE(bits_equal(xa, xt));
    EXPECT_EQ(a.save(), twin.save());
}

// Issue 20 item 6: begin refuses a = m + lr g that is not finite: NONFINITE
// for a non-finite gradient, OVERFLOW for finite inputs (lr g alone, or m
// plus a finite lr g), and changes nothing.
TEST(Cltk, BeginRefusesAnOverflowingAccumulator) {
    const uint64_t n = 8;
    const Spec s = index_spec(0, 0);  // k = 0: nothing is sent, m keeps a
    Handle h(n, 1, 0, 1.0f, 0, s);
    Vec g(n, 1.0f), vals(n);
    g[5] = 3e38f;
    size_t fb = 0, w = 0, count = 0;
    ASSERT_EQ(gw_cltk_index_frame_bound(h.h, &fb), GW_OK);
    std::vector<uint8_t> frame(fb);
    const auto before = h.save();
    EXPECT_EQ(gw_cltk_begin(h.h, g.data(), GW_DTYPE_F32, n, 10.0f), GW_ERR_OVERFLOW);  // lr g
    EXPECT_EQ(h.save(), before);
    // One round leaves m[5] = 3e38; then m + lr g (lr g finite) overflows.
    ASSERT_EQ(gw_cltk_begin(h.h, g.data(), GW_DTYPE_F32, n, 1.0f), GW_OK);
    ASSERT_EQ(gw_cltk_select(h.h, frame.data(), fb, &w), GW_OK);
    ASSERT_EQ(gw_cltk_extract(h.h, frame.data(), w, vals.data(), n, &count), GW_OK);
    ASSERT_EQ(count, 0u);
    ASSERT_EQ(gw_cltk_apply(h.h, vals.data(), 0, nullptr, 0), GW_OK);
    EXPECT_EQ(h.memory(n)[5], 3e38f);
    const auto mid = h.save();
    EXPECT_EQ(gw_cltk_begin(h.h, g.data(), GW_DTYPE_F32, n, 1.0f), GW_ERR_OVERFLOW);
    Vec bad = g;
    bad[0] = INFINITY;
    EXPECT_EQ(gw_cltk_begin(h.h, bad.data(), GW_DTYPE_F32, n, 1.0f), GW_ERR_NONFINITE);
    std::vector<uint16_t> half(n, 0x7C00);  // +Inf in f16
    EXPECT_EQ(gw_cltk_begin(h.h, half.data(), GW_DTYPE_F16, n, 1.0f), GW_ERR_NONFINITE);
    EXPECT_EQ(h.save(), mid);
    // Still idle: a round with a smaller gradient goes through.
    Vec small(n, 1.0f);
    small[5] = -3e38f;
    EXPECT_EQ(gw_cltk_begin(h.h, small.data(), GW_DTYPE_F32, n, 1.0f), GW_OK);
}

// Old checkpoints still load: tests/vectors/state/cltk_index_r1_m2.state.hex
// was written by the code before GW_PARAM_REVISION existed (be937d1). The
// same history on revision 1 handles writes it byte for byte, it loads into
// a fresh revision 1 handle and continues as the original; a handle of the
// default revision refuses it (another configuration).
TEST(Cltk, RevisionOneBlobOfTheOldCodeLoads) {
    const uint64_t n = 50;
    bool ok = false;
    const auto gold = gwtest::read_hex(std::string(GW_SOURCE_DIR) +
                                       "/tests/vectors/state/cltk_index_r1_m2.state.hex", &ok);
    ASSERT_TRUE(ok);
    Spec rev1 = index_spec(6, 7);
    rev1.set(GW_PARAM_REVISION, 1);
    auto val = [](unsigned i, unsigned s) {
        return float(int((i * 37u + s * 11u) % 101u) - 50) * 0.03125f;
    };
    Handle h0(n, 2, 0, 0.5f, 0, rev1, 4), h1(n, 2, 1, 0.5f, 0, rev1, 4);
    Handle* hs[2] = {&h0, &h1};
    std::vector<uint8_t> frame(4096);
    for (unsigned t = 0; t < 3; ++t) {
        Vec x(n), vals[2] = {Vec(n), Vec(n)}, sum(n);
        for (unsigned r = 0; r < 2; ++r) {
            for (unsigned i = 0; i < n; ++i) x[i] = val(i, 10 + t * 2 + r);
            ASSERT_EQ(gw_cltk_begin(hs[r]->h, x.data(), GW_DTYPE_F32, n, 0.1f), GW_OK);
        }
        uint32_t leader = 0;
        size_t w = 0, cnt = 0;
        ASSERT_EQ(gw_cltk_leader(h0.h, &leader), GW_OK);
        ASSERT_EQ(gw_cltk_select(hs[leader]->h, frame.data(), frame.size(), &w), GW_OK);
        for (unsigned r = 0; r < 2; ++r)
            ASSERT_EQ(gw_cltk_extract(hs[r]->h, frame.data(), w, vals[r].data(), n, &cnt), GW_OK);
        for (size_t j = 0; j < cnt; ++j) sum[j] = vals[0][j] + vals[1][j];
        for (unsigned r = 0; r < 2; ++r)
            ASSERT_EQ(gw_cltk_apply(hs[r]->h, sum.data(), cnt, nullptr, 0), GW_OK);
    }
    EXPECT_EQ(h0.save(), gold);
    Handle fresh(n, 2, 0, 0.5f, 0, rev1, 4), current(n, 2, 0, 0.5f, 0, index_spec(6, 7), 4);
    ASSERT_EQ(gw_cltk_load(fresh.h, gold.data(), gold.size()), GW_OK);
    EXPECT_TRUE(bits_equal(fresh.memory(n), h0.memory(n)));
    EXPECT_EQ(gw_cltk_load(current.h, gold.data(), gold.size()), GW_ERR_STATE_MISMATCH);
}
