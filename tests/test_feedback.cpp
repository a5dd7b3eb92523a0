// Error-feedback state machines (docs/algorithms.md s.2-3) through the C API:
// bit-exact agreement with the scalar reference on every SIMD target, the
// no-mass-lost invariant over 1,000 steps, identity codec == full-precision
// distributed SGD, sharded servers, majority vote, and error handling.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <memory>
#include <random>
#include <thread>

#include "ref_algorithms.hpp"
#include "test_util.hpp"

using gwtest::bits_equal;
using gwtest::codec;
using gwtest::random_floats;
using ref::Vec;

namespace {

struct Worker {
    gw_worker* h = nullptr;
    std::vector<uint8_t> frame;
    Worker(uint64_t n, const gw_codec_spec* c, gw_momentum m, float mu, int ef, uint32_t tensor = 0) {
        gw_worker_options o = GW_WORKER_OPTIONS_INIT;
        o.n = n;
        o.momentum = m;
        o.mu = m == GW_MOMENTUM_NONE ? 0.0f : mu;  // a decay needs a momentum
        o.error_feedback = ef;
        o.tensor = tensor;
        EXPECT_EQ(gw_worker_create(&h, &o, c), GW_OK);
        size_t bound = 0;
        gw_worker_frame_bound(h, &bound);
        frame.resize(bound);
    }
    ~Worker() { gw_worker_free(h); }
    Worker(const Worker&) = delete;
    Worker& operator=(const Worker&) = delete;
    gw_status step(const Vec& g, float lr) {
        size_t written = 0;
        frame.resize(frame.capacity());
        gw_status st = gw_worker_step(h, g.data(), GW_DTYPE_F32, g.size(), lr, frame.data(),
                                      frame.size(), &written);
        if (st == GW_OK) frame.resize(written);
        return st;
    }
    Vec residual(size_t n) const {
        Vec e(n);
        EXPECT_EQ(gw_worker_residual(h, e.data(), n), GW_OK);
        return e;
    }
    Vec momentum(size_t n) const {
        Vec m(n);
        EXPECT_EQ(gw_worker_momentum(h, m.data(), n), GW_OK);
        return m;
    }
};

using gwtest::Server;

Vec decode(const std::vector<uint8_t>& f, size_t n) {
    Vec out(n);
    uint64_t count = 0;
    EXPECT_EQ(gw_decode(f.data(), f.size(), out.data(), n, &count), GW_OK);
    EXPECT_EQ(count, n);
    return out;
}

// A learning-rate schedule with warm-up and decay, so r = lr_prev/lr != 1.
float lr_at(int t) { return t < 10 ? 0.01f * (t + 1) : 0.1f * std::pow(0.995f, t - 10); }

ref::Momentum ref_kind(gw_momentum m) {
    return m == GW_MOMENTUM_NESTEROV ? ref::Momentum::Nesterov
           : m == GW_MOMENTUM_SIGNUM ? ref::Momentum::Signum
                                     : ref::Momentum::None;
}

}  // namespace

// Worker state machine == reference, bit for bit, every target, momentum kind,
// error-feedback setting and sign-based codec, with a changing learning rate.
TEST(Worker, MatchesReferenceBitForBit) {
    const size_t n = 1000;
    for (gw_momentum mom : {GW_MOMENTUM_NONE, GW_MOMENTUM_NESTEROV, GW_MOMENTUM_SIGNUM})
        for (int ef : {0, 1})
            for (uint32_t block : {0u, 64u, 100u}) {
                SCOPED_TRACE(testing::Message() << "momentum " << mom << " ef " << ef
                                                << " block " << block);
                gwtest::for_each_target([&](gw_simd_target) {
                    Worker w(n, codec(GW_CODEC_SCALED_SIGN, block), mom, 0.9f, ef);
                    ref::Worker r(n, ref_kind(mom), 0.9f, ef == 1);
                    for (int t = 0; t < 40; ++t) {
                        const Vec g = random_floats(n, 1000 + t, 0.5f + t % 3);
                        ASSERT_EQ(w.step(g, lr_at(t)), GW_OK);
                        const Vec want = r.step(g, lr_at(t),
                                                [&](const Vec& p) { return ref::scaled_sign(p, block); });
                        ASSERT_TRUE(bits_equal(decode(w.frame, n), want)) << "step " << t;
                        ASSERT_TRUE(bits_equal(w.residual(n), ef ? r.e : Vec(n))) << "step " << t;
                        if (mom != GW_MOMENTUM_NONE) {
                            ASSERT_TRUE(bits_equal(w.momentum(n), r.m));
                        }
                    }
                });
            }
}

// Tensors of several tiles take the fused scaled-sign path (one block per
// tensor, or blocks that tile it); blocks that do not tile take the codec
// path. Both equal the reference bit for bit, with NaN still refused.
TEST(Worker, FusedScaledSignAcrossTilesMatchesReference) {
    const size_t n = 40003;  // three 16384-element tiles, a ragged tail
    for (gw_momentum mom : {GW_MOMENTUM_NONE, GW_MOMENTUM_NESTEROV, GW_MOMENTUM_SIGNUM})
        for (uint32_t block : {0u, 48u, 100u, 1024u, 4096u, 16384u, 40003u, 65536u}) {
            SCOPED_TRACE(testing::Message() << "momentum " << mom << " block " << block);
            gwtest::for_each_target([&](gw_simd_target) {
                Worker w(n, codec(GW_CODEC_SCALED_SIGN, block), mom, 0.9f, 1);
                ref::Worker r(n, ref_kind(mom), 0.9f, true);
                for (int t = 0; t < 4; ++t) {
                    const Vec g = random_floats(n, 300 + t, 1.0f + t);
                    ASSERT_EQ(w.step(g, lr_at(t)), GW_OK);
                    const Vec want =
                        r.step(g, lr_at(t), [&](const Vec& p) { return ref::scaled_sign(p, block); });
                    ASSERT_TRUE(bits_equal(decode(w.frame, n), want)) << "step " << t;
                    ASSERT_TRUE(bits_equal(w.residual(n), r.e)) << "step " << t;
                    if (mom != GW_MOMENTUM_NONE) {
                        ASSERT_TRUE(bits_equal(w.momentum(n), r.m));
                    }
                }
                // A NaN in the last tile: refused, nothing changed.
                Vec bad = random_floats(n, 9);
                bad[n - 2] = NAN;
                const Vec e0 = w.residual(n);
                EXPECT_EQ(w.step(bad, 0.1f), GW_ERR_NONFINITE);
                EXPECT_TRUE(bits_equal(w.residual(n), e0));
            });
        }
}

// Fixed blocks run in one pass when max|g| and the bounds carried on m and e
// prove nothing overflows (feedback/fused_sign.hpp, MagnitudeBound). Values
// near that proof's limit (2^100) still match the reference; a step that
// would overflow in its last tile only is refused with nothing written (it
// must take the two-pass path); a reloaded worker goes on as its original.
// One block per tensor (block 0) goes in one pass under the same proof, its
// residual deferred to the next read: saves and residuals are the same.
TEST(Worker, OnePassKeepsTheRejectedStepRule) {
    const size_t n = 40003;  // three tiles
    for (uint32_t block : {4096u, 0u})
    for (gw_momentum mom : {GW_MOMENTUM_NONE, GW_MOMENTUM_NESTEROV, GW_MOMENTUM_SIGNUM}) {
        SCOPED_TRACE(testing::Message() << "momentum " << mom << " block " << block);
        Worker w(n, codec(GW_CODEC_SCALED_SIGN, block), mom, 0.9f, 1);
        ref::Worker r(n, ref_kind(mom), 0.9f, true);
        auto step_both = [&](Worker& wk, ref::Worker& rk, const Vec& g, float lr) {
            ASSERT_EQ(wk.step(g, lr), GW_OK);
            const Vec want = rk.step(g, lr, [&](const Vec& p) { return ref::scaled_sign(p, block); });
            ASSERT_TRUE(bits_equal(decode(wk.frame, n), want));
            ASSERT_TRUE(bits_equal(wk.residual(n), rk.e));
        };
        // Magnitudes up to ~1e29: the carried bounds pass 2^100 within a few
        // steps and are measured again; some steps go in one pass, some not.
        for (int t = 0; t < 8; ++t)
            step_both(w, r, random_floats(n, 700 + t, t < 2 ? 1.0f : 4e28f), 0.1f);

        // One large residual in the last tile, then r = lr_prev / lr = 1e9:
        // r e overflows there only.
        Worker v(n, codec(GW_CODEC_SCALED_SIGN, block), mom, 0.9f, 1);
        ref::Worker rv(n, ref_kind(mom), 0.9f, true);
        step_both(v, rv, random_floats(n, 800), 0.1f);
        Vec g = random_floats(n, 801);
        g[n - 3] = 1e32f;
        step_both(v, rv, g, 0.1f);
        const std::vector<uint8_t> before = gwtest::save(v.h);
        EXPECT_EQ(v.step(random_floats(n, 802), 1e-10f), GW_ERR_OVERFLOW);
        EXPECT_EQ(gwtest::save(v.h), before);
        // A reloaded twin (its bounds unknown until measured) refuses the
        // same step, then stays in step.
        Worker twin(n, codec(GW_CODEC_SCALED_SIGN, block), mom, 0.9f, 1);
        ASSERT_EQ(gw_worker_load(twin.h, before.data(), before.size()), GW_OK);
        EXPECT_EQ(twin.step(random_floats(n, 802), 1e-10f), GW_ERR_OVERFLOW);
        EXPECT_EQ(gwtest::save(twin.h), before);
        for (int t = 0; t < 3; ++t) {
            const Vec gt = random_floats(n, 900 + t, 2.0f);
            step_both(v, rv, gt, 0.05f);
            ASSERT_EQ(twin.step(gt, 0.05f), GW_OK);
            EXPECT_EQ(twin.frame, v.frame);
        }
    }
}

// The one-pass proof under random magnitudes and learning rates: episodes of
// 30 steps whose gradients reach 2^60 .. 2^127 (and single spikes), r up to
// 1e3, so that steps go in one pass, in two (bounds too large), or are
// refused. Every step either equals the reference bit for bit or is refused
// (overflow, NaN/Inf) with the checkpoint unchanged; never GW_ERR_INTERNAL
// (a proof that failed mid-step).
TEST(Worker, OnePassRandomMagnitudesNeverCorruptState) {
    const size_t n = 20011;  // two tiles of 1024-element blocks, a ragged last block
    for (uint32_t block : {1024u, 0u})  // 0: one block, its residual deferred
    for (gw_momentum mom : {GW_MOMENTUM_NONE, GW_MOMENTUM_NESTEROV, GW_MOMENTUM_SIGNUM}) {
        std::mt19937 rng(77 + mom);
        int ok = 0, refused = 0;
        for (int top : {60, 90, 100, 110, 127}) {
            SCOPED_TRACE(testing::Message() << "momentum " << mom << " block " << block
                                            << " top 2^" << top);
            Worker w(n, codec(GW_CODEC_SCALED_SIGN, block), mom, 0.9f, 1);
            ref::Worker r(n, ref_kind(mom), 0.9f, true);
            std::uniform_int_distribution<int> expo(-30, top), coin(0, 7);
            std::uniform_int_distribution<size_t> pos(0, n - 1);
            std::uniform_real_distribution<double> lr_exp(-3.0, 0.0);
            for (int t = 0; t < 30; ++t) {
                Vec g = random_floats(n, 5000 + t);
                const double scale = std::ldexp(1.0, expo(rng) - 2);
                for (float& x : g) x = static_cast<float>(x * scale);
                if (coin(rng) == 0) g[pos(rng)] = std::ldexp(coin(rng) < 4 ? 1.5f : -1.5f, expo(rng));
                const float lr = static_cast<float>(std::pow(10.0, lr_exp(rng)));
                const std::vector<uint8_t> before = gwtest::save(w.h);
                const gw_status st = w.step(g, lr);
                ASSERT_TRUE(st == GW_OK || st == GW_ERR_OVERFLOW || st == GW_ERR_NONFINITE)
                    << "step " << t << ": " << gw_status_name(st);
                if (st != GW_OK) {
                    ++refused;
                    ASSERT_EQ(gwtest::save(w.h), before) << "step " << t;
                    continue;
                }
                ++ok;
                const Vec want =
                    r.step(g, lr, [&](const Vec& p) { return ref::scaled_sign(p, block); });
                ASSERT_TRUE(bits_equal(decode(w.frame, n), want)) << "step " << t;
                ASSERT_TRUE(bits_equal(w.residual(n), r.e)) << "step " << t;
                if (mom != GW_MOMENTUM_NONE) {
                    ASSERT_TRUE(bits_equal(w.momentum(n), r.m)) << "step " << t;
                }
            }
        }
        EXPECT_GT(ok, 60);
        EXPECT_GT(refused, 2);
    }
}

TEST(Worker, SignCodecIsSignSGDWorker) {
    const size_t n = 257;
    Worker w(n, codec(GW_CODEC_SIGN), GW_MOMENTUM_NONE, 0.0f, 0);
    const Vec g = random_floats(n, 7);
    ASSERT_EQ(w.step(g, 0.1f), GW_OK);
    EXPECT_TRUE(bits_equal(decode(w.frame, n), ref::sign(g)));
}

TEST(Worker, SignumSendsSignOfMomentum) {
    const size_t n = 300;
    Worker w(n, codec(GW_CODEC_SIGN), GW_MOMENTUM_SIGNUM, 0.9f, 0);
    ref::Worker r(n, ref::Momentum::Signum, 0.9f, false);
    for (int t = 0; t < 30; ++t) {
        const Vec g = random_floats(n, 50 + t);
        ASSERT_EQ(w.step(g, 0.01f), GW_OK);
        EXPECT_TRUE(bits_equal(decode(w.frame, n), r.step(g, 0.01f, ref::sign)));
        EXPECT_TRUE(bits_equal(w.momentum(n), r.m));
    }
}

// What was sent plus what is kept equals what came in. With r_t = lr_{t-1}/lr_t
// and e_t = p_t - D_t, p_t = a_t + r_t e_{t-1} (a_t = g_t, or mu m_t + g_t with
// Nesterov momentum), the residual telescopes:
//   sum_t lr_t a_t = sum_t lr_t D_t + lr_T e_T.
// Checked in double over 1,000 steps with a changing learning rate.
TEST(Worker, NoGradientMassLostOver1000Steps) {
    const size_t n = 513;
    const float mu = 0.9f;
    for (gw_momentum mom : {GW_MOMENTUM_NONE, GW_MOMENTUM_NESTEROV})
        for (uint32_t block : {0u, 32u}) {
            Worker w(n, codec(GW_CODEC_SCALED_SIGN, block), mom, mu, 1);
            ref::Worker r(n, ref_kind(mom), mu, true);
            std::vector<double> came_in(n), sent(n);
            float lr = 0;
            for (int t = 0; t < 1000; ++t) {
                lr = lr_at(t);
                const Vec g = random_floats(n, 9000 + t);
                ASSERT_EQ(w.step(g, lr), GW_OK);
                Vec p;
                r.step(g, lr, [&](const Vec& v) { return ref::scaled_sign(v, block); }, &p);
                const Vec d = decode(w.frame, n);
                const Vec e = w.residual(n);
                for (size_t i = 0; i < n; ++i) {
                    const double a = mom == GW_MOMENTUM_NESTEROV ? double(mu) * r.m[i] + g[i] : g[i];
                    came_in[i] += double(lr) * a;
                    sent[i] += double(lr) * d[i];
                    // Per step: D + e == p up to the one rounding of e = p - D.
                    ASSERT_NEAR(double(d[i]) + e[i], p[i], std::fabs(p[i] - d[i]) * 1e-7 + 1e-30);
                }
            }
            const Vec e = w.residual(n);
            double worst = 0, mass = 0;
            for (size_t i = 0; i < n; ++i) {
                worst = std::max(worst, std::fabs(came_in[i] - sent[i] - double(lr) * e[i]));
                mass = std::max(mass, std::fabs(came_in[i]));
            }
            EXPECT_LT(worst, 1e-4 * std::max(mass, 1.0)) << "momentum " << mom << " block " << block;
        }
}

// What the workers pushed (their mean) = what the server sent + lr_T e_s,
// over 1,000 steps for M = 3 and 200 steps for every other M up to 16, with
// the blockwise scaled sign and with exact top-k (SLGS) both ways.
TEST(Server, NoGradientMassLostForEveryWorkerCount) {
    const size_t n = 300;
    gwtest::Spec topk(GW_CODEC_TOPK);
    topk.set(GW_PARAM_K, 10);
    for (const gwtest::Spec& c : {codec(GW_CODEC_SCALED_SIGN, 16), topk})
        for (uint32_t M = 1; M <= 16; ++M) {
            gw_codec_id id;
            gw_codec_spec_codec(c, &id);
            SCOPED_TRACE(testing::Message() << "codec " << id << " M " << M);
            Server s(n, 0, n, M, c, 1);
            std::vector<double> came_in(n), sent(n);
            float lr = 0;
            for (int t = 0; t < (M == 3 ? 1000 : 200); ++t) {
                lr = lr_at(t);
                std::vector<double> mean(n);
                for (uint32_t i = 0; i < M; ++i) {
                    const auto f = gwtest::encode(c, random_floats(n, t * 17 + i));
                    ASSERT_EQ(gw_server_push(s.h, f.data(), f.size()), GW_OK);
                    const Vec d = decode(f, n);
                    for (size_t j = 0; j < n; ++j) mean[j] += double(d[j]) / M;
                }
                ASSERT_EQ(s.step(lr), GW_OK);
                const Vec d = decode(s.frame, n);
                for (size_t j = 0; j < n; ++j) {
                    came_in[j] += lr * mean[j];
                    sent[j] += double(lr) * d[j];
                }
            }
            Vec e(n);
            ASSERT_EQ(gw_server_residual(s.h, e.data(), n), GW_OK);
            for (size_t j = 0; j < n; ++j)
                ASSERT_NEAR(came_in[j], sent[j] + double(lr) * e[j], 1e-4) << j;
        }
}

// Server == reference bit for bit on every target (two-way compression).
TEST(Server, MatchesReferenceBitForBit) {
    const size_t n = 777;
    const uint32_t M = 4;
    for (uint32_t block : {0u, 128u})
        gwtest::for_each_target([&](gw_simd_target) {
            Server s(n, 0, n, M, codec(GW_CODEC_SCALED_SIGN, block), 1);
            ref::Server r(n, true);
            for (int t = 0; t < 20; ++t) {
                std::vector<Vec> pushed;
                for (uint32_t i = 0; i < M; ++i) {
                    const auto f = gwtest::encode(codec(GW_CODEC_SCALED_SIGN), random_floats(n, t * 10 + i));
                    ASSERT_EQ(gw_server_push(s.h, f.data(), f.size()), GW_OK);
                    pushed.push_back(decode(f, n));
                }
                ASSERT_EQ(s.step(lr_at(t)), GW_OK);
                const Vec want =
                    r.step(pushed, lr_at(t), [&](const Vec& q) { return ref::scaled_sign(q, block); });
                ASSERT_TRUE(bits_equal(decode(s.frame, n), want)) << "step " << t;
                Vec e(n);
                gw_server_residual(s.h, e.data(), n);
                ASSERT_TRUE(bits_equal(e, r.e));
            }
        });
}

// With C = identity, dist-EF-SGDM is exactly full-precision distributed SGD
// with Nesterov momentum (docs/algorithms.md s.2): the server's sum of
// (1/M)-weighted frames in push order is the same arithmetic as the plain
// average, so x is compared bit for bit, for every worker count 1..16, with
// the sharded layout (M servers, each owning 1/M of the tensor) and tags
// checked. The gradients depend on x, so any divergence would compound.
TEST(TwoWay, IdentityCodecEqualsFullPrecisionSGDForEveryWorkerCount) {
    const size_t n = 200;
    const float mu = 0.9f;
    for (uint32_t M = 1; M <= 16; ++M) {
        SCOPED_TRACE(testing::Message() << "M " << M);
        std::vector<std::unique_ptr<Server>> servers;
        std::vector<std::unique_ptr<Worker>> slice_workers;  // worker i, slice j at i*M + j
        for (uint32_t j = 0; j < M; ++j) {
            uint64_t off, len;
            ASSERT_EQ(gw_shard_range(n, M, j, &off, &len), GW_OK);
            servers.emplace_back(new Server(n, off, len, M, codec(GW_CODEC_IDENTITY), 1, 1));
        }
        for (uint32_t i = 0; i < M; ++i)
            for (uint32_t j = 0; j < M; ++j) {
                uint64_t off, len;
                gw_shard_range(n, M, j, &off, &len);
                slice_workers.emplace_back(
                    new Worker(len, codec(GW_CODEC_IDENTITY), GW_MOMENTUM_NESTEROV, mu, 1));
            }
        Vec x = random_floats(n, 1), x_ref = x;
        std::vector<Vec> m_ref(M, Vec(n));
        const Vec target = random_floats(n, 2);
        for (int t = 0; t < 30; ++t) {
            const float lr = lr_at(t);
            // Worker i's gradient of 0.5*||x - target_i||^2 + noise.
            std::vector<Vec> g(M, Vec(n)), g_ref(M, Vec(n));
            for (uint32_t i = 0; i < M; ++i) {
                const Vec noise = random_floats(n, 100 * t + i, 0.1f);
                for (size_t k = 0; k < n; ++k) {
                    g[i][k] = (x[k] - target[k]) * (1.0f + 0.1f * i) + noise[k];
                    g_ref[i][k] = (x_ref[k] - target[k]) * (1.0f + 0.1f * i) + noise[k];
                }
            }
            for (uint32_t j = 0; j < M; ++j) {
                uint64_t off, len;
                gw_shard_range(n, M, j, &off, &len);
                for (uint32_t i = 0; i < M; ++i) {
                    Worker& w = *slice_workers[i * M + j];
                    Vec gs(g[i].begin() + off, g[i].begin() + off + len);
                    ASSERT_EQ(w.step(gs, lr), GW_OK);
                    ASSERT_EQ(gw_server_push(servers[j]->h, w.frame.data(), w.frame.size()), GW_OK);
                }
                ASSERT_EQ(servers[j]->step(lr), GW_OK);
                ASSERT_EQ(gw_decode_accumulate(servers[j]->frame.data(), servers[j]->frame.size(),
                                               -lr, x.data() + off, len),
                          GW_OK);
            }
            // Full precision: m_i = mu m_i + g_i; avg = sum_i (1/M)(mu m_i + g_i); x -= lr avg.
            Vec avg(n, 0.0f);
            for (uint32_t i = 0; i < M; ++i)
                for (size_t k = 0; k < n; ++k) {
                    m_ref[i][k] = mu * m_ref[i][k] + g_ref[i][k];
                    avg[k] = avg[k] + (1.0f / M) * (mu * m_ref[i][k] + g_ref[i][k]);
                }
            for (size_t k = 0; k < n; ++k) x_ref[k] = x_ref[k] + (-lr) * avg[k];
            ASSERT_TRUE(bits_equal(x, x_ref)) << "step " << t << " first diff at "
                                              << gwtest::first_diff(x.data(), x_ref.data(), n);
        }
    }
}

// M servers each owning 1/M of the tensor == the reference run per slice.
TEST(Server, ShardedSlicesMatchPerSliceReference) {
    const size_t n = 1001;
    const uint32_t M = 3;
    for (uint32_t j = 0; j < M; ++j) {
        uint64_t off, len;
        ASSERT_EQ(gw_shard_range(n, M, j, &off, &len), GW_OK);
        Server s(n, off, len, M, codec(GW_CODEC_SCALED_SIGN), 1);
        ref::Server r(len, true);
        for (int t = 0; t < 5; ++t) {
            std::vector<Vec> pushed;
            for (uint32_t i = 0; i < M; ++i) {
                Vec full = random_floats(n, 77 * t + i);
                Vec slice(full.begin() + off, full.begin() + off + len);
                const auto f = gwtest::encode(codec(GW_CODEC_SCALED_SIGN), slice);
                ASSERT_EQ(gw_server_push(s.h, f.data(), f.size()), GW_OK);
                pushed.push_back(decode(f, len));
            }
            ASSERT_EQ(s.step(0.1f), GW_OK);
            EXPECT_TRUE(bits_equal(decode(s.frame, len),
                                   r.step(pushed, 0.1f, [](const Vec& q) { return ref::scaled_sign(q, 0); })));
        }
    }
}

TEST(Server, ShardRangePartitionsExactly) {
    for (uint64_t total : {0ull, 1ull, 7ull, 10ull, 64ull, 1000003ull})
        for (uint32_t parts = 1; parts <= 16; ++parts) {
            uint64_t next = 0;
            for (uint32_t j = 0; j < parts; ++j) {
                uint64_t off, len;
                ASSERT_EQ(gw_shard_range(total, parts, j, &off, &len), GW_OK);
                EXPECT_EQ(off, next);
                EXPECT_LE(len, total / parts + 1);
                EXPECT_GE(len, total / parts);
                next = off + len;
            }
            EXPECT_EQ(next, total);
        }
    uint64_t off, len;
    EXPECT_EQ(gw_shard_range(10, 0, 0, &off, &len), GW_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(gw_shard_range(10, 2, 2, &off, &len), GW_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(gw_shard_range(10, 2, 0, nullptr, &len), GW_ERR_NULL_POINTER);
}

// signSGD with majority vote: server without error feedback, sign codec:
// broadcast sign(sum_i sign(g_i)), ties -> +1, for every M from 1 to 16 and
// whatever the push order. (Defect: adding (1/M)*D in float broke ties to -1
// for M = 6, 10, 12 and depended on push order.)
TEST(Server, MajorityVoteIsExactForEveryWorkerCountAndPushOrder) {
    for (uint32_t M = 1; M <= 16; ++M) {
        // Column k has k negative votes (k = 0..M): every tie and near-tie.
        const size_t n = M + 1;
        std::vector<Vec> votes(M, Vec(n));
        for (uint32_t i = 0; i < M; ++i)
            for (size_t k = 0; k < n; ++k) votes[i][k] = i < k ? -1.0f : 1.0f;
        for (int order = 0; order < 4; ++order) {
            std::vector<uint32_t> perm(M);
            for (uint32_t i = 0; i < M; ++i) perm[i] = i;
            std::mt19937 rng(order);
            if (order == 1) std::reverse(perm.begin(), perm.end());
            if (order > 1) std::shuffle(perm.begin(), perm.end(), rng);
            Server s(n, 0, n, M, codec(GW_CODEC_SIGN), 0);
            for (uint32_t i : perm) {
                const auto f = gwtest::encode(codec(GW_CODEC_SIGN), votes[i]);
                ASSERT_EQ(gw_server_push(s.h, f.data(), f.size()), GW_OK);
            }
            ASSERT_EQ(s.step(1.0f), GW_OK);
            const Vec d = decode(s.frame, n);
            for (size_t k = 0; k < n; ++k) {
                const int sum = int(M) - 2 * int(k);
                EXPECT_EQ(d[k], sum < 0 ? -1.0f : 1.0f) << "M " << M << " negatives " << k
                                                         << " order " << order;
            }
        }
    }
    // The vote counts sign frames only.
    Server s(4, 0, 4, 2, codec(GW_CODEC_SIGN), 0);
    const auto f = gwtest::encode(codec(GW_CODEC_IDENTITY), Vec(4, 1.0f));
    EXPECT_EQ(gw_server_push(s.h, f.data(), f.size()), GW_ERR_CODEC_MISMATCH);
}

// A NaN/Inf gradient is refused and changes nothing: the worker continues
// exactly like a twin that never saw it.
TEST(Worker, NonFiniteGradientLeavesStateUntouched) {
    const size_t n = 100;
    Worker a(n, codec(GW_CODEC_SCALED_SIGN), GW_MOMENTUM_NESTEROV, 0.9f, 1);
    Worker b(n, codec(GW_CODEC_SCALED_SIGN), GW_MOMENTUM_NESTEROV, 0.9f, 1);
    for (int t = 0; t < 5; ++t) {
        const Vec g = random_floats(n, t);
        ASSERT_EQ(a.step(g, 0.1f), GW_OK);
        ASSERT_EQ(b.step(g, 0.1f), GW_OK);
    }
    for (float bad : {NAN, INFINITY, -INFINITY}) {
        Vec g = random_floats(n, 99);
        g[37] = bad;
        EXPECT_EQ(a.step(g, 0.05f), GW_ERR_NONFINITE);
    }
    // Finite inputs whose combination overflows float are refused too, and
    // said to be an overflow, not NaN/Inf input.
    Vec huge(n, 3.0e38f);
    EXPECT_EQ(a.step(huge, 0.1f), GW_ERR_OVERFLOW);
    // lr_prev / lr not representable (defect: reported as NaN/Inf input).
    EXPECT_EQ(a.step(random_floats(n, 98), 1e-45f), GW_ERR_OVERFLOW);
    EXPECT_TRUE(bits_equal(a.residual(n), b.residual(n)));
    EXPECT_TRUE(bits_equal(a.momentum(n), b.momentum(n)));
    const Vec g = random_floats(n, 5);
    ASSERT_EQ(a.step(g, 0.07f), GW_OK);
    ASSERT_EQ(b.step(g, 0.07f), GW_OK);
    EXPECT_EQ(a.frame, b.frame);
}

TEST(Worker, RejectsBadArguments) {
    const size_t n = 10;
    Worker w(n, codec(GW_CODEC_SCALED_SIGN), GW_MOMENTUM_NESTEROV, 0.9f, 1);
    const Vec g(n, 1.0f);
    for (float lr : {0.0f, -0.1f, NAN, INFINITY}) EXPECT_EQ(w.step(g, lr), GW_ERR_INVALID_ARGUMENT);
    size_t written = 0;
    EXPECT_EQ(gw_worker_step(w.h, g.data(), GW_DTYPE_F32, n, 0.1f, w.frame.data(),
                             w.frame.size() - 1, &written),
              GW_ERR_BUFFER_TOO_SMALL);
    EXPECT_EQ(gw_worker_step(w.h, nullptr, GW_DTYPE_F32, n, 0.1f, w.frame.data(), w.frame.size(),
                             &written),
              GW_ERR_NULL_POINTER);
    // Every input vector comes with its length.
    EXPECT_EQ(gw_worker_step(w.h, g.data(), GW_DTYPE_F32, n - 1, 0.1f, w.frame.data(),
                             w.frame.size(), &written),
              GW_ERR_COUNT_MISMATCH);
    EXPECT_EQ(gw_worker_step(w.h, g.data(), static_cast<gw_dtype>(0), n, 0.1f, w.frame.data(),
                             w.frame.size(), &written),
              GW_ERR_INVALID_ARGUMENT);
    Vec out(n + 1);
    EXPECT_EQ(gw_worker_residual(w.h, out.data(), n + 1), GW_ERR_COUNT_MISMATCH);

    gw_worker_options o;
    EXPECT_EQ(gw_worker_options_init(&o, 99), GW_ERR_OPTIONS_VERSION);
    EXPECT_EQ(gw_worker_options_init(&o, 0), GW_ERR_OPTIONS_VERSION);
    gw_worker_options_init(&o, GW_WORKER_OPTIONS_VERSION);
    gw_worker* h = nullptr;
    const gwtest::Spec c = codec(GW_CODEC_SCALED_SIGN);
    o.n = 0;
    EXPECT_EQ(gw_worker_create(&h, &o, c), GW_ERR_INVALID_ARGUMENT);
    // Sizes that can never be allocated: invalid, not out of memory.
    o.n = GW_MAX_ELEMENTS + 1;
    EXPECT_EQ(gw_worker_create(&h, &o, c), GW_ERR_INVALID_ARGUMENT);
    o.n = 10;
    o.mu = 1.0f;
    EXPECT_EQ(gw_worker_create(&h, &o, c), GW_ERR_INVALID_ARGUMENT);
    o.mu = NAN;
    EXPECT_EQ(gw_worker_create(&h, &o, c), GW_ERR_INVALID_ARGUMENT);
    o.mu = 0.5f;
    o.momentum = static_cast<gw_momentum>(7);
    EXPECT_EQ(gw_worker_create(&h, &o, c), GW_ERR_INVALID_ARGUMENT);
    // A decay with no momentum is refused, not silently ignored.
    o.momentum = GW_MOMENTUM_NONE;
    EXPECT_EQ(gw_worker_create(&h, &o, c), GW_ERR_INVALID_ARGUMENT);
    o.mu = 0.0f;
    EXPECT_EQ(gw_worker_create(&h, &o, nullptr), GW_ERR_NULL_POINTER);
    o.version = GW_WORKER_OPTIONS_VERSION + 1;
    EXPECT_EQ(gw_worker_create(&h, &o, c), GW_ERR_OPTIONS_VERSION);
    EXPECT_EQ(h, nullptr);
    o.version = GW_WORKER_OPTIONS_VERSION;
    ASSERT_EQ(gw_worker_create(&h, &o, c), GW_OK);
    gw_worker_free(h);
    gw_worker_free(nullptr);
    gw_server_free(nullptr);
}

// The INIT macro and the init function give the same defaults (error
// feedback on: a zero-initialised struct used to turn it off silently).
TEST(Options, InitMacroEqualsInitFunction) {
    gw_worker_options a = GW_WORKER_OPTIONS_INIT, b;
    std::memset(&b, 0xAB, sizeof b);
    ASSERT_EQ(gw_worker_options_init(&b, GW_WORKER_OPTIONS_VERSION), GW_OK);
    EXPECT_TRUE(a.version == b.version && a.n == b.n && a.momentum == b.momentum &&
                a.mu == b.mu && a.error_feedback == b.error_feedback && a.tensor == b.tensor &&
                a.seed == b.seed);
    EXPECT_EQ(a.error_feedback, 1);
    gw_server_options c = GW_SERVER_OPTIONS_INIT, d;
    std::memset(&d, 0xAB, sizeof d);
    ASSERT_EQ(gw_server_options_init(&d, GW_SERVER_OPTIONS_VERSION), GW_OK);
    EXPECT_TRUE(c.version == d.version && c.total == d.total && c.offset == d.offset &&
                c.length == d.length && c.num_workers == d.num_workers &&
                c.error_feedback == d.error_feedback && c.tensor == d.tensor &&
                c.check_tag == d.check_tag);
    EXPECT_EQ(c.error_feedback, 1);
    EXPECT_EQ(c.check_tag, 1);
    gw_frame_info e = GW_FRAME_INFO_INIT, f;
    std::memset(&f, 0xAB, sizeof f);
    ASSERT_EQ(gw_frame_info_init(&f, GW_FRAME_INFO_VERSION), GW_OK);
    EXPECT_TRUE(e.version == f.version && f.count == 0 && f.tag == 0 && f.frame_size == 0);
    gw_encode_ctx g = GW_ENCODE_CTX_INIT, h;
    std::memset(&h, 0xAB, sizeof h);
    ASSERT_EQ(gw_encode_ctx_init(&h, GW_ENCODE_CTX_VERSION), GW_OK);
    EXPECT_TRUE(g.version == h.version && h.seed == 0 && h.step == 0 && h.tensor == 0 &&
                h.tag == 0);
}

TEST(Server, SequenceAndFrameErrorsLeaveRoundUntouched) {
    const size_t n = 50;
    const uint32_t M = 2;
    Server a(n, 0, n, M, codec(GW_CODEC_SCALED_SIGN), 1), b(n, 0, n, M, codec(GW_CODEC_SCALED_SIGN), 1);
    EXPECT_EQ(a.step(0.1f), GW_ERR_SEQUENCE);
    const auto f1 = gwtest::encode(codec(GW_CODEC_SCALED_SIGN), random_floats(n, 1));
    const auto f2 = gwtest::encode(codec(GW_CODEC_FP16), random_floats(n, 2));
    const auto wrong_n = gwtest::encode(codec(GW_CODEC_SCALED_SIGN), random_floats(n + 1, 3));
    auto corrupt = f1;
    corrupt[corrupt.size() - 6] ^= 0x10;  // a payload byte
    ASSERT_EQ(gw_server_push(a.h, f1.data(), f1.size()), GW_OK);
    EXPECT_EQ(gw_server_push(a.h, corrupt.data(), corrupt.size()), GW_ERR_FRAME_CHECKSUM);
    EXPECT_EQ(gw_server_push(a.h, wrong_n.data(), wrong_n.size()), GW_ERR_COUNT_MISMATCH);
    EXPECT_EQ(gw_server_push(a.h, f1.data(), f1.size() - 1), GW_ERR_FRAME_TRUNCATED);
    EXPECT_EQ(a.step(0.1f), GW_ERR_SEQUENCE);
    ASSERT_EQ(gw_server_push(a.h, f2.data(), f2.size()), GW_OK);
    EXPECT_EQ(gw_server_push(a.h, f2.data(), f2.size()), GW_ERR_SEQUENCE);
    // Twin b sees only the good frames, after an abandoned round.
    ASSERT_EQ(gw_server_push(b.h, f2.data(), f2.size()), GW_OK);
    ASSERT_EQ(gw_server_reset_round(b.h), GW_OK);
    ASSERT_EQ(gw_server_push(b.h, f1.data(), f1.size()), GW_OK);
    ASSERT_EQ(gw_server_push(b.h, f2.data(), f2.size()), GW_OK);
    ASSERT_EQ(a.step(0.1f), GW_OK);
    ASSERT_EQ(b.step(0.1f), GW_OK);
    EXPECT_EQ(a.frame, b.frame);

    gw_server_options o = GW_SERVER_OPTIONS_INIT;
    gw_server* h = nullptr;
    const gwtest::Spec c = codec(GW_CODEC_SCALED_SIGN);
    o.total = 10, o.offset = 5, o.length = 6;
    EXPECT_EQ(gw_server_create(&h, &o, c, nullptr), GW_ERR_INVALID_ARGUMENT);
    o.length = 5, o.num_workers = 0;
    EXPECT_EQ(gw_server_create(&h, &o, c, nullptr), GW_ERR_INVALID_ARGUMENT);
    o.num_workers = 2, o.check_tag = 2;
    EXPECT_EQ(gw_server_create(&h, &o, c, nullptr), GW_ERR_INVALID_ARGUMENT);
    o.check_tag = 1;
    EXPECT_EQ(gw_server_create(&h, &o, nullptr, nullptr), GW_ERR_NULL_POINTER);
    EXPECT_EQ(h, nullptr);
}

// Different handles on different threads (one per layer) give the same
// bytes as running them one after another.
TEST(Threads, HandlesRunConcurrently) {
    const size_t n = 20000;
    const int layers = 4, steps = 20;
    auto run = [&](int layer, std::vector<uint8_t>* out) {
        Worker w(n, codec(GW_CODEC_SCALED_SIGN, 256), GW_MOMENTUM_NESTEROV, 0.9f, 1);
        for (int t = 0; t < steps; ++t) {
            ASSERT_EQ(w.step(random_floats(n, layer * 1000 + t), lr_at(t)), GW_OK);
            out->insert(out->end(), w.frame.begin(), w.frame.end());
        }
    };
    std::vector<std::vector<uint8_t>> seq(layers), par(layers);
    for (int l = 0; l < layers; ++l) run(l, &seq[l]);
    std::vector<std::thread> threads;
    for (int l = 0; l < layers; ++l) threads.emplace_back(run, l, &par[l]);
    for (auto& th : threads) th.join();
    for (int l = 0; l < layers; ++l) EXPECT_EQ(seq[l], par[l]) << "layer " << l;
}

namespace {

// Every state the server reaches on the way (after each push and each step,
// failed ones included) saves and loads again, into a twin that then saves
// the same bytes.
void expect_server_state_reloads(gw_server* h, const gw_server_options& o,
                                 const gw_codec_spec* c) {
    const auto blob = gwtest::save(h);
    gw_server* twin = nullptr;
    ASSERT_EQ(gw_server_create(&twin, &o, c, nullptr), GW_OK);
    ASSERT_EQ(gw_server_load(twin, blob.data(), blob.size()), GW_OK);
    EXPECT_EQ(gwtest::save(twin), blob);
    gw_server_free(twin);
}

}  // namespace

// Defect: M = 10 frames of values near FLT_MAX made the accumulator +Inf; the
// step failed, the save succeeded and the blob could not be loaded. Overflow
// is now caught at the push that causes it (GW_ERR_OVERFLOW, round kept) or
// at the step (q = mean + r e_s), and every reachable state reloads.
TEST(Server, OverflowIsCaughtAndEveryStateReloads) {
    const size_t n = 8;
    for (uint32_t M : {2u, 3u, 10u, 16u}) {
        SCOPED_TRACE(testing::Message() << "M " << M);
        gw_server_options o = GW_SERVER_OPTIONS_INIT;
        o.total = o.length = n;
        o.num_workers = M;
        o.check_tag = 0;
        const gwtest::Spec c = codec(GW_CODEC_IDENTITY);
        gw_server* h = nullptr;
        ASSERT_EQ(gw_server_create(&h, &o, c, nullptr), GW_OK);
        const auto big = gwtest::encode(c, Vec(n, FLT_MAX));
        const auto small = gwtest::encode(c, Vec(n, 1.0f));
        int overflows = 0;
        for (int round = 0; round < 3; ++round) {
            uint32_t pushed = 0;
            while (pushed < M) {
                const auto before = gwtest::save(h);
                const gw_status st = gw_server_push(h, big.data(), big.size());
                if (st == GW_ERR_OVERFLOW) {
                    ++overflows;
                    EXPECT_EQ(gwtest::save(h), before);  // the round is as it was
                    ASSERT_EQ(gw_server_push(h, small.data(), small.size()), GW_OK);
                } else {
                    ASSERT_EQ(st, GW_OK);
                }
                ++pushed;
                expect_server_state_reloads(h, o, c);
            }
            std::vector<uint8_t> frame(n * 4 + 64);
            size_t written = 0;
            const auto before = gwtest::save(h);
            gw_status st = gw_server_step(h, 0.5f, frame.data(), frame.size(), &written);
            if (st == GW_ERR_OVERFLOW) {
                ++overflows;
                EXPECT_EQ(gwtest::save(h), before);
                expect_server_state_reloads(h, o, c);
                ASSERT_EQ(gw_server_reset_round(h), GW_OK);
            } else {
                ASSERT_EQ(st, GW_OK);
            }
            expect_server_state_reloads(h, o, c);
        }
        if (M == 10) {
            EXPECT_GT(overflows, 0);  // the reported case does overflow
        }
        gw_server_free(h);
    }
}

TEST(Server, CodecAndTagChecks) {
    const size_t n = 64;
    const gwtest::Spec want = codec(GW_CODEC_SCALED_SIGN, 16);
    Server s(n, 0, n, 2, codec(GW_CODEC_SCALED_SIGN), 1, 1, want);
    const auto x = random_floats(n, 4);
    // Another codec, or the same codec with other parameters.
    for (const auto& f : {gwtest::encode(codec(GW_CODEC_SCALED_SIGN, 8), x, GW_TAG(0, 0)),
                          gwtest::encode(codec(GW_CODEC_FP16), x, GW_TAG(0, 0))})
        EXPECT_EQ(gw_server_push(s.h, f.data(), f.size()), GW_ERR_CODEC_MISMATCH);
    // Another tensor, or another round.
    for (uint64_t tag : {GW_TAG(1, 0), GW_TAG(0, 1), uint64_t(0xFFFFFFFFFFFFFFFFull)}) {
        const auto f = gwtest::encode(want, x, tag);
        EXPECT_EQ(gw_server_push(s.h, f.data(), f.size()), GW_ERR_TAG_MISMATCH);
    }
    const auto ok = gwtest::encode(want, x, GW_TAG(0, 0));
    ASSERT_EQ(gw_server_push(s.h, ok.data(), ok.size()), GW_OK);
    ASSERT_EQ(gw_server_push(s.h, ok.data(), ok.size()), GW_OK);
    ASSERT_EQ(s.step(0.1f), GW_OK);
    gw_frame_info info = GW_FRAME_INFO_INIT;
    ASSERT_EQ(gw_frame_inspect(s.frame.data(), s.frame.size(), &info), GW_OK);
    EXPECT_EQ(info.tag, GW_TAG(0, 0));
    uint64_t steps = 0;
    ASSERT_EQ(gw_server_step_count(s.h, &steps), GW_OK);
    EXPECT_EQ(steps, 1u);
    // Round 0's frames are stale now.
    EXPECT_EQ(gw_server_push(s.h, ok.data(), ok.size()), GW_ERR_TAG_MISMATCH);
}

// Defect: gw_shard_range handed out empty slices that gw_server_create then
// refused. Empty slices now work through whole rounds (tiny tensors, many workers).
TEST(Server, EmptySlicesWorkForEveryWorkerCount) {
    const uint64_t n = 10;
    for (uint32_t M = 1; M <= 16; ++M) {
        std::vector<Vec> got(M);
        Vec x(n, 0.0f);
        for (uint32_t j = 0; j < M; ++j) {
            uint64_t off, len;
            ASSERT_EQ(gw_shard_range(n, M, j, &off, &len), GW_OK);
            EXPECT_EQ(len, n / M + (j < n % M ? 1 : 0)) << "M " << M << " slice " << j;
            Server s(n, off, len, M, codec(GW_CODEC_SCALED_SIGN), 1, 1);
            for (uint32_t i = 0; i < M; ++i) {
                Worker w(len == 0 ? 1 : len, codec(GW_CODEC_SCALED_SIGN), GW_MOMENTUM_NESTEROV,
                         0.9f, 1);
                if (len == 0) {
                    const auto f = gwtest::encode(codec(GW_CODEC_SCALED_SIGN), {}, GW_TAG(0, 0));
                    ASSERT_EQ(gw_server_push(s.h, f.data(), f.size()), GW_OK);
                } else {
                    Vec g = random_floats(n, i);
                    ASSERT_EQ(w.step(Vec(g.begin() + off, g.begin() + off + len), 0.1f), GW_OK);
                    ASSERT_EQ(gw_server_push(s.h, w.frame.data(), w.frame.size()), GW_OK);
                }
            }
            ASSERT_EQ(s.step(0.1f), GW_OK);
            ASSERT_EQ(gw_decode_accumulate(s.frame.data(), s.frame.size(), -0.1f, x.data() + off, len),
                      GW_OK);
        }
    }
}

// Frameworks hand over bf16/fp16 gradients: the step on half input equals the
// step on the same values widened to float.
TEST(Worker, HalfPrecisionGradients) {
    const size_t n = 777;
    for (gw_dtype dt : {GW_DTYPE_F16, GW_DTYPE_BF16}) {
        Worker a(n, codec(GW_CODEC_SCALED_SIGN, 64), GW_MOMENTUM_NESTEROV, 0.9f, 1);
        Worker b(n, codec(GW_CODEC_SCALED_SIGN, 64), GW_MOMENTUM_NESTEROV, 0.9f, 1);
        for (int t = 0; t < 5; ++t) {
            const Vec g = random_floats(n, 300 + t);
            // Half bits via the library's own codec, and their float values.
            const auto hf = gwtest::encode(codec(dt == GW_DTYPE_F16 ? GW_CODEC_FP16 : GW_CODEC_BF16), g);
            const Vec wide = decode(hf, n);
            // A half gradient is host-order 16-bit values; the payload's are little-endian.
            std::vector<uint16_t> half(n);
            for (size_t i = 0; i < n; ++i) half[i] = gwtest::get_le<uint16_t>(hf.data() + 40 + 2 * i);
            size_t written = 0;
            a.frame.resize(a.frame.capacity());
            ASSERT_EQ(gw_worker_step(a.h, half.data(), dt, n, 0.1f, a.frame.data(),
                                     a.frame.size(), &written),
                      GW_OK);
            a.frame.resize(written);
            ASSERT_EQ(b.step(wide, 0.1f), GW_OK);
            EXPECT_EQ(a.frame, b.frame);
            EXPECT_TRUE(bits_equal(a.residual(n), b.residual(n)));
        }
    }
}

// Defect: a gradient lying inside the frame buffer corrupted the momentum.
TEST(Worker, GradientInsideTheFrameBufferIsRejected) {
    const size_t n = 32;
    Worker w(n, codec(GW_CODEC_IDENTITY), GW_MOMENTUM_NESTEROV, 0.9f, 1);
    std::vector<uint8_t> buf(4096);
    size_t written = 0;
    EXPECT_EQ(gw_worker_step(w.h, buf.data() + 100, GW_DTYPE_F32, n, 0.1f, buf.data(), buf.size(),
                             &written),
              GW_ERR_OVERLAP);
    uint64_t steps = 9;
    ASSERT_EQ(gw_worker_step_count(w.h, &steps), GW_OK);
    EXPECT_EQ(steps, 0u);
}

// Issue 20 item 7: the server's phase (from its push count) is checked
// before any argument: a whole round mid-round is SEQUENCE even with a frame
// overlapping the output or a small capacity; a step before M pushes is
// SEQUENCE whatever its lr or capacity. Nothing changes.
TEST(Server, SequenceIsCheckedFirst) {
    const size_t n = 40;
    const uint32_t M = 2;
    Server a(n, 0, n, M, codec(GW_CODEC_SCALED_SIGN), 1), twin(n, 0, n, M, codec(GW_CODEC_SCALED_SIGN), 1);
    const auto f1 = gwtest::encode(codec(GW_CODEC_SCALED_SIGN), random_floats(n, 1));
    const auto f2 = gwtest::encode(codec(GW_CODEC_SCALED_SIGN), random_floats(n, 2));
    ASSERT_EQ(gw_server_push(a.h, f1.data(), f1.size()), GW_OK);
    ASSERT_EQ(gw_server_push(twin.h, f1.data(), f1.size()), GW_OK);
    const auto before = gwtest::save(a.h);
    std::vector<uint8_t> out(a.frame.size() + f1.size());
    std::copy(f1.begin(), f1.end(), out.begin());
    const void* frames[2] = {out.data(), f2.data()};  // frame 0 inside the output
    const size_t sizes[2] = {f1.size(), f2.size()};
    size_t written = 0, bad = 7;
    EXPECT_EQ(gw_server_round(a.h, frames, sizes, 2, 0.1f, out.data(), out.size(), &written, &bad),
              GW_ERR_SEQUENCE);
    EXPECT_EQ(bad, SIZE_MAX);
    EXPECT_EQ(gw_server_round(a.h, frames, sizes, 2, 0.1f, out.data(), 1, &written, &bad),
              GW_ERR_SEQUENCE);
    EXPECT_EQ(gw_server_step(a.h, NAN, out.data(), 1, &written), GW_ERR_SEQUENCE);
    EXPECT_EQ(gwtest::save(a.h), before);
    ASSERT_EQ(gw_server_push(a.h, f2.data(), f2.size()), GW_OK);
    ASSERT_EQ(gw_server_push(twin.h, f2.data(), f2.size()), GW_OK);
    EXPECT_EQ(gw_server_push(a.h, nullptr, 0), GW_ERR_SEQUENCE);  // a full round, an empty frame
    ASSERT_EQ(a.step(0.1f), GW_OK);
    ASSERT_EQ(twin.step(0.1f), GW_OK);
    EXPECT_EQ(a.frame, twin.frame);
    // A fresh round: now the overlap is the frame's fault.
    EXPECT_EQ(gw_server_round(a.h, frames, sizes, 2, 0.1f, out.data(), out.size(), &written, &bad),
              GW_ERR_OVERLAP);
    EXPECT_EQ(bad, 0u);
}
