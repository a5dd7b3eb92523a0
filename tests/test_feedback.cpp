// Error-feedback state machines (ALGORITHMS.md s.2-3) through the C API:
// bit-exact agreement with the scalar reference on every SIMD target, the
// no-mass-lost invariant over 1,000 steps, identity codec == full-precision
// distributed SGD, sharded servers, majority vote, and error handling.
#include <cmath>
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
    Worker(uint64_t n, gw_codec_options c, gw_momentum m, float mu, int ef) {
        gw_worker_options o;
        gw_worker_options_init(&o, GW_WORKER_OPTIONS_VERSION);
        o.n = n;
        o.codec = c;
        o.momentum = m;
        o.mu = mu;
        o.error_feedback = ef;
        EXPECT_EQ(gw_worker_create(&h, &o), GW_OK);
        size_t bound = 0;
        gw_worker_frame_bound(h, &bound);
        frame.resize(bound);
    }
    ~Worker() { gw_worker_free(h); }
    Worker(const Worker&) = delete;
    Worker& operator=(const Worker&) = delete;
    gw_status step(const Vec& g, float lr) {
        size_t written = 0;
        gw_status st = gw_worker_step(h, g.data(), lr, frame.data(), frame.size(), &written);
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

struct Server {
    gw_server* h = nullptr;
    std::vector<uint8_t> frame;
    Server(uint64_t total, uint64_t offset, uint64_t length, uint32_t m, gw_codec_options c, int ef) {
        gw_server_options o;
        gw_server_options_init(&o, GW_SERVER_OPTIONS_VERSION);
        o.total = total;
        o.offset = offset;
        o.length = length;
        o.num_workers = m;
        o.codec = c;
        o.error_feedback = ef;
        EXPECT_EQ(gw_server_create(&h, &o), GW_OK);
        size_t bound = 0;
        gw_server_frame_bound(h, &bound);
        frame.resize(bound);
    }
    ~Server() { gw_server_free(h); }
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;
    gw_status step(float lr) {
        size_t written = 0;
        frame.resize(frame.capacity());
        gw_status st = gw_server_step(h, lr, frame.data(), frame.size(), &written);
        if (st == GW_OK) frame.resize(written);
        return st;
    }
};

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

TEST(Server, NoGradientMassLostOver1000Steps) {
    const size_t n = 300;
    const uint32_t M = 3;
    Server s(n, 0, n, M, codec(GW_CODEC_SCALED_SIGN), 1);
    std::vector<double> came_in(n), sent(n);
    float lr = 0;
    for (int t = 0; t < 1000; ++t) {
        lr = lr_at(t);
        std::vector<double> mean(n);
        for (uint32_t i = 0; i < M; ++i) {
            const auto f = gwtest::encode(codec(GW_CODEC_SCALED_SIGN, 16), random_floats(n, t * 7 + i));
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
        EXPECT_NEAR(came_in[j], sent[j] + double(lr) * e[j], 1e-4) << j;
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
// with Nesterov momentum (ALGORITHMS.md s.2). M = 4 so 1/M is exact and the
// server's weighted sum equals the plain average; x is compared bit for bit.
// The gradients depend on x, so any divergence would compound.
TEST(TwoWay, IdentityCodecEqualsFullPrecisionSGD) {
    const size_t n = 200;
    const uint32_t M = 4;
    const float mu = 0.9f;
    gwtest::for_each_target([&](gw_simd_target) {
        std::vector<std::unique_ptr<Worker>> workers;
        for (uint32_t i = 0; i < M; ++i)
            workers.emplace_back(new Worker(n, codec(GW_CODEC_IDENTITY), GW_MOMENTUM_NESTEROV, mu, 1));
        // Two-way: two slices, each with its own server (sharded layout).
        std::vector<std::unique_ptr<Server>> servers;
        for (uint32_t j = 0; j < 2; ++j) {
            uint64_t off, len;
            ASSERT_EQ(gw_shard_range(n, 2, j, &off, &len), GW_OK);
            servers.emplace_back(new Server(n, off, len, M, codec(GW_CODEC_IDENTITY), 1));
        }
        // ... so each worker runs one handle per slice.
        std::vector<std::unique_ptr<Worker>> slice_workers;
        for (uint32_t i = 0; i < M; ++i)
            for (uint32_t j = 0; j < 2; ++j) {
                uint64_t off, len;
                gw_shard_range(n, 2, j, &off, &len);
                slice_workers.emplace_back(
                    new Worker(len, codec(GW_CODEC_IDENTITY), GW_MOMENTUM_NESTEROV, mu, 1));
            }
        Vec x = random_floats(n, 1), x_ref = x;
        std::vector<Vec> m_ref(M, Vec(n));
        const Vec target = random_floats(n, 2);
        for (int t = 0; t < 100; ++t) {
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
            for (uint32_t j = 0; j < 2; ++j) {
                uint64_t off, len;
                gw_shard_range(n, 2, j, &off, &len);
                for (uint32_t i = 0; i < M; ++i) {
                    Worker& w = *slice_workers[i * 2 + j];
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
    });
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
    for (uint64_t total : {1ull, 7ull, 64ull, 1000003ull})
        for (uint32_t parts : {1u, 2u, 3u, 8u}) {
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
// broadcast sign(sum_i sign(g_i)), ties (M even) -> +1.
TEST(Server, MajorityVote) {
    const size_t n = 4;
    for (uint32_t M : {3u, 4u}) {
        Server s(n, 0, n, M, codec(GW_CODEC_SIGN), 0);
        // votes per element (rows = workers)
        const float votes[4][4] = {{1, -1, -1, 1}, {1, -1, 1, -1}, {-1, -1, 1, -1}, {1, 1, -1, 1}};
        for (uint32_t i = 0; i < M; ++i) {
            const auto f = gwtest::encode(codec(GW_CODEC_SIGN), Vec(votes[i], votes[i] + 4));
            ASSERT_EQ(gw_server_push(s.h, f.data(), f.size()), GW_OK);
        }
        ASSERT_EQ(s.step(1.0f), GW_OK);
        const Vec d = decode(s.frame, n);
        for (size_t k = 0; k < n; ++k) {
            float sum = 0;
            for (uint32_t i = 0; i < M; ++i) sum += votes[i][k];
            EXPECT_EQ(d[k], sum < 0 ? -1.0f : 1.0f) << "M " << M << " element " << k;
        }
    }
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
    // Finite inputs whose combination overflows float are refused too.
    Vec huge(n, 3.0e38f);
    EXPECT_EQ(a.step(huge, 0.1f), GW_ERR_NONFINITE);
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
    EXPECT_EQ(gw_worker_step(w.h, g.data(), 0.1f, w.frame.data(), w.frame.size() - 1, &written),
              GW_ERR_BUFFER_TOO_SMALL);
    EXPECT_EQ(gw_worker_step(w.h, nullptr, 0.1f, w.frame.data(), w.frame.size(), &written),
              GW_ERR_NULL_POINTER);
    Vec out(n + 1);
    EXPECT_EQ(gw_worker_residual(w.h, out.data(), n + 1), GW_ERR_COUNT_MISMATCH);

    gw_worker_options o;
    EXPECT_EQ(gw_worker_options_init(&o, 99), GW_ERR_OPTIONS_VERSION);
    gw_worker_options_init(&o, GW_WORKER_OPTIONS_VERSION);
    gw_worker* h = nullptr;
    o.n = 0;
    EXPECT_EQ(gw_worker_create(&h, &o), GW_ERR_INVALID_ARGUMENT);
    o.n = 10;
    o.mu = 1.0f;
    EXPECT_EQ(gw_worker_create(&h, &o), GW_ERR_INVALID_ARGUMENT);
    o.mu = NAN;
    EXPECT_EQ(gw_worker_create(&h, &o), GW_ERR_INVALID_ARGUMENT);
    o.mu = 0.5f;
    o.momentum = static_cast<gw_momentum>(7);
    EXPECT_EQ(gw_worker_create(&h, &o), GW_ERR_INVALID_ARGUMENT);
    o.momentum = GW_MOMENTUM_NONE;
    o.codec.codec = static_cast<gw_codec_id>(42);
    EXPECT_EQ(gw_worker_create(&h, &o), GW_ERR_INVALID_ARGUMENT);
    o.codec.codec = GW_CODEC_SIGN;
    o.codec.block_size = 8;  // block size means nothing to the sign codec
    EXPECT_EQ(gw_worker_create(&h, &o), GW_ERR_INVALID_ARGUMENT);
    o.codec.block_size = 0;
    o.version = 2;
    EXPECT_EQ(gw_worker_create(&h, &o), GW_ERR_OPTIONS_VERSION);
    EXPECT_EQ(h, nullptr);
    gw_worker_free(nullptr);
    gw_server_free(nullptr);
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

    gw_server_options o;
    gw_server_options_init(&o, GW_SERVER_OPTIONS_VERSION);
    gw_server* h = nullptr;
    o.total = 10, o.offset = 5, o.length = 6;
    EXPECT_EQ(gw_server_create(&h, &o), GW_ERR_INVALID_ARGUMENT);
    o.length = 0;
    EXPECT_EQ(gw_server_create(&h, &o), GW_ERR_INVALID_ARGUMENT);
    o.length = 5, o.num_workers = 0;
    EXPECT_EQ(gw_server_create(&h, &o), GW_ERR_INVALID_ARGUMENT);
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
