// The AsyLPG family's master and worker (docs/algorithms.md s.6): with
// full-precision messages the pair is SVRG (AsyLPG) or accelerated SVRG
// (Acc-AsyLPG) with the prox step, bit for bit, for 1 to 16 asynchronous
// workers; the mu-condition picks the smallest b_x (brute force); the
// unchanged frame; bounded staleness; out-of-order calls; checkpoints that
// continue bit-identically; prox against its closed form.
#include <algorithm>
#include <cmath>

#include "test_util.hpp"

using namespace gwtest;

namespace {

// A least-squares problem f_i(x) = (a_i . x - b_i)^2 / 2, i < kN.
constexpr size_t kD = 12, kN = 40;
struct Problem {
    std::vector<float> a, b;
    Problem() : a(random_floats(kN * kD, 3)), b(random_floats(kN, 4)) {}
    void grad(size_t i, const float* x, float* g) const {
        float r = 0.0f;
        for (size_t j = 0; j < kD; ++j) r = r + a[i * kD + j] * x[j];
        r = r - b[i];
        for (size_t j = 0; j < kD; ++j) g[j] = r * a[i * kD + j];
    }
    std::vector<float> full(const float* x) const {
        std::vector<float> s(kD, 0.0f), g(kD);
        for (size_t i = 0; i < kN; ++i) {
            grad(i, x, g.data());
            for (size_t j = 0; j < kD; ++j) s[j] = s[j] + g[j];
        }
        for (float& v : s) v = v / float(kN);
        return s;
    }
};

float prox(float v, float c, float l1, float l2) {
    const float cl1 = c * l1, den = 1.0f + c * l2;
    const float a = std::fabs(v) - cl1;
    return a <= 0.0f ? 0.0f : std::copysign(a / den, v);
}

struct Opts {
    gw_asylpg_variant variant = GW_ASYLPG_PLAIN;
    float lr = 0.05f, l1 = 1e-3f, l2 = 1e-2f, mu = 1.0f;
    uint64_t m = 7;
    uint32_t tau = 0;
    unsigned bmin = 0, bmax = 0;
};

gw_asylpg_master* make_master(const Opts& p, const std::vector<float>& x0) {
    gw_asylpg_master_options o;
    EXPECT_EQ(gw_asylpg_master_options_init(&o, GW_ASYLPG_MASTER_OPTIONS_VERSION), GW_OK);
    o.n = x0.size();
    o.variant = p.variant;
    o.lr = p.lr;
    o.l1 = p.l1;
    o.l2 = p.l2;
    o.mu = p.mu;
    o.epoch_length = p.m;
    o.tau = p.tau;
    o.bits_min = p.bmin;
    o.bits_max = p.bmax;
    o.tensor = 5;
    o.seed = 99;
    gw_asylpg_master* h = nullptr;
    EXPECT_EQ(gw_asylpg_master_create(&h, &o, x0.data(), x0.size()), GW_OK);
    return h;
}

gw_asylpg_worker* make_worker(const gw_codec_spec* codec, uint64_t seed) {
    gw_asylpg_worker_options o;
    EXPECT_EQ(gw_asylpg_worker_options_init(&o, GW_ASYLPG_WORKER_OPTIONS_VERSION), GW_OK);
    o.n = kD;
    o.tensor = 5;
    o.seed = seed;
    gw_asylpg_worker* h = nullptr;
    EXPECT_EQ(gw_asylpg_worker_create(&h, &o, codec), GW_OK);
    return h;
}

std::vector<uint8_t> model_frame(gw_asylpg_master* m, unsigned* bits) {
    size_t bound = 0, written = 0;
    EXPECT_EQ(gw_asylpg_master_frame_bound(m, &bound), GW_OK);
    std::vector<uint8_t> f(bound);
    EXPECT_EQ(gw_asylpg_master_model(m, f.data(), f.size(), &written, bits), GW_OK);
    f.resize(written);
    return f;
}

std::vector<uint8_t> worker_step(gw_asylpg_worker* w, const Problem& pr, size_t sample,
                                 const std::vector<float>& snap) {
    std::vector<float> model(kD), gm(kD), gs(kD);
    EXPECT_EQ(gw_asylpg_worker_model(w, model.data(), kD, nullptr), GW_OK);
    pr.grad(sample, model.data(), gm.data());
    pr.grad(sample, snap.data(), gs.data());
    size_t bound = 0, written = 0;
    EXPECT_EQ(gw_asylpg_worker_frame_bound(w, &bound), GW_OK);
    std::vector<uint8_t> f(bound);
    EXPECT_EQ(gw_asylpg_worker_step(w, gm.data(), gs.data(), GW_DTYPE_F32, kD, f.data(), f.size(),
                                    &written),
              GW_OK);
    f.resize(written);
    return f;
}

std::vector<float> params(const gw_asylpg_master* m) {
    std::vector<float> x(kD);
    EXPECT_EQ(gw_asylpg_master_params(m, x.data(), kD), GW_OK);
    return x;
}
std::vector<float> snapshot(const gw_asylpg_master* m) {
    std::vector<float> x(kD);
    EXPECT_EQ(gw_asylpg_master_snapshot(m, x.data(), kD), GW_OK);
    return x;
}

// The reference: SVRG (or its accelerated form) with M workers that each
// read the model at the start of a round and push in order (ages 0..M-1),
// written from the equations with the header's operation order.
struct Reference {
    Opts p;
    std::vector<float> x, snap, full, y, sum;
    uint64_t epoch = 1, inner = 0;
    float theta() const { return 2.0f / (float(epoch) + 2.0f); }
    void begin(const std::vector<float>& g) {
        full = g;
        if (p.variant == GW_ASYLPG_ACC) {
            // x_0 = theta y + (1 - theta) x~, as x~ + theta (y - x~) (the header's order).
            const float th = theta();
            for (size_t j = 0; j < kD; ++j) {
                const float d = y[j] - snap[j];
                const float td = th * d;
                x[j] = snap[j] + td;
            }
        } else {
            x = snap;
        }
        sum.assign(kD, 0.0f);
    }
    void update(const std::vector<float>& alpha) {
        for (size_t j = 0; j < kD; ++j) {
            const float u = alpha[j] + full[j];
            if (p.variant == GW_ASYLPG_ACC) {
                const float th = theta(), lr = p.lr / th;
                const float t = lr * u;
                y[j] = prox(y[j] - t, lr, p.l1, p.l2);
                const float d = y[j] - snap[j];
                const float td = th * d;
                x[j] = snap[j] + td;
                sum[j] = sum[j] + x[j];
            } else {
                const float t = p.lr * u;
                x[j] = prox(x[j] - t, p.lr, p.l1, p.l2);
            }
        }
        if (++inner == p.m) {
            if (p.variant == GW_ASYLPG_ACC)
                for (size_t j = 0; j < kD; ++j) snap[j] = sum[j] / float(p.m);
            else
                snap = x;
            ++epoch;
            inner = 0;
        }
    }
};

// Rounds of M workers: each reads the current model, then all push in
// order (ages 0..M-1, so tau = M-1); m is a multiple of M so epochs end on
// a round. Master and reference must agree bit for bit after every push.
void run_full_precision(const Opts& p, uint32_t workers, int rounds) {
    const Problem pr;
    const std::vector<float> x0 = random_floats(kD, 17, 0.5f);
    gw_asylpg_master* m = make_master(p, x0);
    Spec id(GW_CODEC_IDENTITY);
    std::vector<gw_asylpg_worker*> ws;
    for (uint32_t w = 0; w < workers; ++w) ws.push_back(make_worker(id, 100 + w));
    Reference ref{p, x0, x0, {}, x0, {}};
    size_t sample = 0;
    for (int r = 0; r < rounds; ++r) {
        int running = 0;
        ASSERT_EQ(gw_asylpg_master_progress(m, nullptr, nullptr, nullptr, &running), GW_OK);
        if (!running) {
            const auto snap = snapshot(m);
            ASSERT_TRUE(bits_equal(snap, ref.snap)) << "round " << r;
            const auto g = pr.full(snap.data());
            ASSERT_EQ(gw_asylpg_master_begin_epoch(m, g.data(), kD), GW_OK);
            ref.begin(g);
            for (auto* h : ws) ASSERT_EQ(gw_asylpg_worker_set_snapshot(h, snap.data(), kD), GW_OK);
        }
        std::vector<std::vector<float>> alpha(workers, std::vector<float>(kD));
        std::vector<std::vector<uint8_t>> frames(workers);
        for (uint32_t w = 0; w < workers; ++w, ++sample) {
            unsigned bits = 0;
            const auto mf = model_frame(m, &bits);
            ASSERT_EQ(gw_asylpg_worker_receive(ws[w], mf.data(), mf.size()), GW_OK);
            frames[w] = worker_step(ws[w], pr, sample % kN, ref.snap);
            std::vector<float> gm(kD), gs(kD);
            pr.grad(sample % kN, ref.x.data(), gm.data());
            pr.grad(sample % kN, ref.snap.data(), gs.data());
            for (size_t j = 0; j < kD; ++j) alpha[w][j] = gm[j] - gs[j];
        }
        for (uint32_t w = 0; w < workers; ++w) {
            ASSERT_EQ(gw_asylpg_master_push(m, frames[w].data(), frames[w].size()), GW_OK);
            ref.update(alpha[w]);
            ASSERT_TRUE(bits_equal(params(m), ref.x)) << "round " << r << " worker " << w;
        }
    }
    // One more age than tau is refused.
    if (workers > 1 && p.tau + 1 < p.m) {
        int running = 0;
        ASSERT_EQ(gw_asylpg_master_progress(m, nullptr, nullptr, nullptr, &running), GW_OK);
        if (running) {
            unsigned bits = 0;
            const auto mf = model_frame(m, &bits);
            ASSERT_EQ(gw_asylpg_worker_receive(ws[0], mf.data(), mf.size()), GW_OK);
            const auto old = worker_step(ws[0], pr, 0, ref.snap);
            for (uint32_t k = 0; k <= p.tau; ++k) {
                const auto mk = model_frame(m, &bits);
                ASSERT_EQ(gw_asylpg_worker_receive(ws[1], mk.data(), mk.size()), GW_OK);
                const auto f = worker_step(ws[1], pr, 1, ref.snap);
                ASSERT_EQ(gw_asylpg_master_push(m, f.data(), f.size()), GW_OK);
                ASSERT_EQ(gw_asylpg_master_progress(m, nullptr, nullptr, nullptr, &running), GW_OK);
                if (!running) break;
            }
            if (running) {
                EXPECT_EQ(gw_asylpg_master_push(m, old.data(), old.size()), GW_ERR_STALE);
            }
        }
    }
    for (auto* h : ws) gw_asylpg_worker_free(h);
    gw_asylpg_master_free(m);
}

TEST(Asylpg, FullPrecisionIsSvrgForEveryWorkerCount) {
    for (uint32_t M = 1; M <= 16; ++M) {
        SCOPED_TRACE("workers " + std::to_string(M));
        Opts p;
        p.tau = M - 1;
        p.m = 3 * M;
        run_full_precision(p, M, 8);
        if (HasFatalFailure()) return;
    }
}

TEST(Asylpg, FullPrecisionIsAcceleratedSvrgForEveryWorkerCount) {
    for (uint32_t M = 1; M <= 16; ++M) {
        SCOPED_TRACE("workers " + std::to_string(M));
        Opts p;
        p.variant = GW_ASYLPG_ACC;
        p.tau = M - 1;
        p.m = 2 * M;
        run_full_precision(p, M, 8);
        if (HasFatalFailure()) return;
    }
}

TEST(Asylpg, StaleFramesRejectedWithNothingChanged) {
    const Problem pr;
    Opts p;
    p.tau = 2;
    p.m = 100;
    const std::vector<float> x0 = random_floats(kD, 1);
    gw_asylpg_master* m = make_master(p, x0);
    Spec id(GW_CODEC_IDENTITY);
    gw_asylpg_worker* w = make_worker(id, 1);
    const auto snap = snapshot(m);
    // Out of order: push and model before the epoch starts.
    unsigned bits = 0;
    std::vector<uint8_t> buf(4096);
    size_t written = 0;
    EXPECT_EQ(gw_asylpg_master_model(m, buf.data(), buf.size(), &written, &bits), GW_ERR_SEQUENCE);
    EXPECT_EQ(gw_asylpg_worker_receive(w, buf.data(), 0), GW_ERR_SEQUENCE);
    const auto g = pr.full(snap.data());
    ASSERT_EQ(gw_asylpg_master_begin_epoch(m, g.data(), kD), GW_OK);
    EXPECT_EQ(gw_asylpg_master_begin_epoch(m, g.data(), kD), GW_ERR_SEQUENCE);
    ASSERT_EQ(gw_asylpg_worker_set_snapshot(w, snap.data(), kD), GW_OK);
    std::vector<float> gm(kD, 0.0f);
    EXPECT_EQ(gw_asylpg_worker_step(w, gm.data(), gm.data(), GW_DTYPE_F32, kD, buf.data(),
                                    buf.size(), &written),
              GW_ERR_SEQUENCE);
    // Version 0: x == x~, the unchanged frame (count 0).
    auto mf = model_frame(m, &bits);
    EXPECT_EQ(bits, 0u);
    gw_frame_info info;
    gw_frame_info_init(&info, GW_FRAME_INFO_VERSION);
    ASSERT_EQ(gw_frame_inspect(mf.data(), mf.size(), &info), GW_OK);
    EXPECT_EQ(info.count, 0u);
    EXPECT_EQ(info.tag, GW_TAG(5, 0));
    ASSERT_EQ(gw_asylpg_worker_receive(w, mf.data(), mf.size()), GW_OK);
    std::vector<float> model(kD);
    uint64_t version = 9;
    ASSERT_EQ(gw_asylpg_worker_model(w, model.data(), kD, &version), GW_OK);
    EXPECT_TRUE(bits_equal(model, snap));
    EXPECT_EQ(version, 0u);
    const auto old = worker_step(w, pr, 0, snap);  // computed on version 0
    for (int k = 0; k < 3; ++k) {                   // versions 1, 2, 3
        auto f = model_frame(m, &bits);
        ASSERT_EQ(gw_asylpg_worker_receive(w, f.data(), f.size()), GW_OK);
        const auto gf = worker_step(w, pr, size_t(k + 1), snap);
        ASSERT_EQ(gw_asylpg_master_push(m, gf.data(), gf.size()), GW_OK);
    }
    // Age 3 > tau = 2.
    const auto before = params(m);
    size_t sb = 0;
    ASSERT_EQ(gw_asylpg_master_save_bound(m, &sb), GW_OK);
    std::vector<uint8_t> b0(sb), b1(sb);
    ASSERT_EQ(gw_asylpg_master_save(m, b0.data(), sb, &written), GW_OK);
    EXPECT_EQ(gw_asylpg_master_push(m, old.data(), old.size()), GW_ERR_STALE);
    ASSERT_EQ(gw_asylpg_master_save(m, b1.data(), sb, &written), GW_OK);
    EXPECT_EQ(b0, b1);
    // A version not yet sent, and another tensor.
    for (uint64_t tag : {GW_TAG(5, 10), GW_TAG(6, 3)}) {
        auto f = old;
        gwtest::put_le(&f[8], tag);  // the header's tag, little-endian
        refresh_header_crc(f);
        refresh_crc(f);
        EXPECT_EQ(gw_asylpg_master_push(m, f.data(), f.size()), GW_ERR_TAG_MISMATCH);
    }
    EXPECT_TRUE(bits_equal(params(m), before));
    gw_asylpg_worker_free(w);
    gw_asylpg_master_free(m);
}

// E||Q_b(x) - x||^2 from the definition: sum (x - z)(z + delta - x), z the
// grid point below x, delta = ||x||_inf / (2^(b-1) - 1) (b = 1: the two
// levels +-||x||_inf, spacing 2 ||x||_inf).
double expected_error(const std::vector<float>& x, unsigned b) {
    double m = 0;
    for (float v : x) m = std::max(m, double(std::fabs(v)));
    if (m == 0) return 0;
    double s = 0;
    for (float v : x) {
        if (b == 1) {
            s += (v + m) * (m - v);
            continue;
        }
        const double delta = m / double((1 << (b - 1)) - 1);
        const double z = std::floor(v / delta) * delta;
        s += (v - z) * (z + delta - v);
    }
    return s;
}

// A worker step with a NaN or Inf in either gradient is refused with
// GW_ERR_NONFINITE, one whose finite gradients differ by more than float
// range with GW_ERR_OVERFLOW, and neither changes the worker: its next step
// is the frame of a twin that never saw them. Every codec (the step relies on
// each encoder refusing a non-finite input), float32 and both half types.
TEST(Asylpg, WorkerStepRefusesNonFiniteWithNothingChanged) {
    size_t count = 0;
    ASSERT_EQ(gw_codec_list(nullptr, 0, &count), GW_OK);
    std::vector<gw_codec_id> ids(count);
    ASSERT_EQ(gw_codec_list(ids.data(), ids.size(), &count), GW_OK);
    const Problem pr;
    Opts p;
    const std::vector<float> x0 = random_floats(kD, 1);
    for (gw_codec_id id : ids)
        for (gw_dtype dt : {GW_DTYPE_F32, GW_DTYPE_BF16, GW_DTYPE_F16}) {
            SCOPED_TRACE(std::string(gw_codec_name(id)) + " dtype " + std::to_string(int(dt)));
            gw_asylpg_master* m = make_master(p, x0);
            Spec codec(id);
            gw_asylpg_worker* w = make_worker(codec, 7);
            gw_asylpg_worker* twin = make_worker(codec, 7);
            const auto snap = snapshot(m);
            ASSERT_EQ(gw_asylpg_master_begin_epoch(m, pr.full(snap.data()).data(), kD), GW_OK);
            unsigned bits = 0;
            const auto mf = model_frame(m, &bits);
            for (auto* h : {w, twin}) {
                ASSERT_EQ(gw_asylpg_worker_set_snapshot(h, snap.data(), kD), GW_OK);
                ASSERT_EQ(gw_asylpg_worker_receive(h, mf.data(), mf.size()), GW_OK);
            }
            // Gradients as the dtype's bits: float32, or 16-bit patterns
            // (finite: the exponent is never all ones).
            const size_t es = dt == GW_DTYPE_F32 ? 4 : 2;
            std::vector<uint8_t> gm(kD * es), gs(kD * es);
            const auto gf = random_floats(2 * kD, 11);
            for (size_t i = 0; i < kD; ++i) {
                if (es == 4) {
                    std::memcpy(&gm[4 * i], &gf[i], 4);
                    std::memcpy(&gs[4 * i], &gf[kD + i], 4);
                } else {
                    uint32_t a, b;
                    std::memcpy(&a, &gf[i], 4);
                    std::memcpy(&b, &gf[kD + i], 4);
                    const uint16_t ha = dt == GW_DTYPE_BF16 ? uint16_t(a >> 16) : uint16_t(0x3800 + 3 * i);
                    const uint16_t hb = dt == GW_DTYPE_BF16 ? uint16_t(b >> 16) : uint16_t(0xB400 + 5 * i);
                    std::memcpy(&gm[2 * i], &ha, 2);
                    std::memcpy(&gs[2 * i], &hb, 2);
                }
            }
            // Element i of one gradient set to the dtype's pattern v.
            auto with = [&](const std::vector<uint8_t>& g, size_t i, uint32_t v32, uint16_t v16) {
                auto h = g;
                if (es == 4)
                    std::memcpy(&h[4 * i], &v32, 4);
                else
                    std::memcpy(&h[2 * i], &v16, 2);
                return h;
            };
            const uint16_t nan16 = dt == GW_DTYPE_BF16 ? 0x7FC0 : 0x7E00;
            const uint16_t inf16 = dt == GW_DTYPE_BF16 ? 0x7F80 : 0x7C00;
            size_t bound = 0, written = 0;
            ASSERT_EQ(gw_asylpg_worker_frame_bound(w, &bound), GW_OK);
            std::vector<uint8_t> f(bound), g(bound);
            auto step = [&](gw_asylpg_worker* h, const std::vector<uint8_t>& a,
                            const std::vector<uint8_t>& b, std::vector<uint8_t>& out) {
                return gw_asylpg_worker_step(h, a.data(), b.data(), dt, kD, out.data(), out.size(),
                                             &written);
            };
            EXPECT_EQ(step(w, with(gm, 7, 0x7FC00000u, nan16), gs, f), GW_ERR_NONFINITE);
            EXPECT_EQ(step(w, gm, with(gs, 3, 0x7F800000u, inf16), f), GW_ERR_NONFINITE);
            EXPECT_EQ(step(w, gm, with(gs, 11, 0xFFC00000u, uint16_t(nan16 | 0x8000)), f),
                      GW_ERR_NONFINITE);
            if (dt != GW_DTYPE_F16) {  // f16's range cannot overflow a float32 difference
                EXPECT_EQ(step(w, with(gm, 2, 0x7F7FFFFFu, 0x7F7F), with(gs, 2, 0xFF7FFFFFu, 0xFF7F), f),
                          GW_ERR_OVERFLOW);
            }
            ASSERT_EQ(step(w, gm, gs, f), GW_OK);
            const size_t fw = written;
            ASSERT_EQ(step(twin, gm, gs, g), GW_OK);
            EXPECT_EQ(written, fw);
            EXPECT_TRUE(std::equal(f.begin(), f.begin() + fw, g.begin()));
            gw_asylpg_worker_free(w);
            gw_asylpg_worker_free(twin);
            gw_asylpg_master_free(m);
        }
}

TEST(Asylpg, MuConditionPicksTheSmallestBits) {
    const Problem pr;
    const std::vector<float> x0 = random_floats(kD, 21);
    for (float mu : {1e-4f, 1e-3f, 1e-2f, 0.1f, 1.0f, 10.0f, 1000.0f}) {
        for (gw_asylpg_variant var : {GW_ASYLPG_PLAIN, GW_ASYLPG_ACC}) {
            Opts p;
            p.variant = var;
            p.mu = mu;
            p.bmin = 1;
            p.bmax = 16;
            p.m = 50;
            gw_asylpg_master* m = make_master(p, x0);
            Spec id(GW_CODEC_IDENTITY);
            gw_asylpg_worker* w = make_worker(id, 3);
            const auto snap = snapshot(m);
            const auto g = pr.full(snap.data());
            ASSERT_EQ(gw_asylpg_master_begin_epoch(m, g.data(), kD), GW_OK);
            ASSERT_EQ(gw_asylpg_worker_set_snapshot(w, snap.data(), kD), GW_OK);
            int checked = 0;
            for (int t = 0; t < 20; ++t) {
                unsigned bits = 0;
                const auto mf = model_frame(m, &bits);
                const auto x = params(m);
                double dist = 0;
                for (size_t j = 0; j < kD; ++j) dist += (double(x[j]) - snap[j]) * (double(x[j]) - snap[j]);
                if (dist > 0) {
                    const double bound = (var == GW_ASYLPG_ACC ? 2.0 / 3.0 : 1.0) * mu * dist;
                    unsigned want = 16, nearest = 16;
                    for (unsigned b : {1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u, 16u}) {
                        const double e = expected_error(x, b);
                        if (std::fabs(e - bound) < 1e-5 * bound) nearest = b;  // too close to call
                        if (e <= bound) {
                            want = b;
                            break;
                        }
                    }
                    if (nearest == 16 || nearest > want) {
                        EXPECT_EQ(bits, want) << "mu " << mu << " t " << t;
                        ++checked;
                    }
                    // The frame carries the chosen width.
                    gw_codec_spec* fs = nullptr;
                    ASSERT_EQ(gw_frame_spec(mf.data(), mf.size(), &fs), GW_OK);
                    int64_t fb = 0;
                    ASSERT_EQ(gw_codec_spec_get(fs, GW_PARAM_BITS, &fb), GW_OK);
                    EXPECT_EQ(unsigned(fb), bits);
                    gw_codec_spec_free(fs);
                } else {
                    EXPECT_EQ(bits, 0u);
                }
                ASSERT_EQ(gw_asylpg_worker_receive(w, mf.data(), mf.size()), GW_OK);
                const auto gf = worker_step(w, pr, size_t(t) % kN, snap);
                ASSERT_EQ(gw_asylpg_master_push(m, gf.data(), gf.size()), GW_OK);
            }
            EXPECT_GT(checked, 10);
            gw_asylpg_worker_free(w);
            gw_asylpg_master_free(m);
        }
    }
}

TEST(Asylpg, ProxAgainstItsClosedForm) {
    // One update with alpha = 0: x1 = prox_{lr h}(x0 - lr g), the soft threshold
    // sign(v) max(|v| - lr l1, 0) / (1 + lr l2), here in double.
    const std::vector<float> x0 = {1.0f, -1.0f, 0.001f, -0.002f, 0.0f, 0.5f, -3.0f, 2.0f,
                                   0.01f, -0.01f, 0.0f, 4.0f};
    std::vector<float> g(kD);
    for (size_t j = 0; j < kD; ++j) g[j] = 0.25f * float(int(j) - 6);
    for (float l1 : {0.0f, 0.01f, 0.5f})
        for (float l2 : {0.0f, 0.1f, 2.0f}) {
            Opts p;
            p.l1 = l1;
            p.l2 = l2;
            p.lr = 0.1f;
            gw_asylpg_master* m = make_master(p, x0);
            ASSERT_EQ(gw_asylpg_master_begin_epoch(m, g.data(), kD), GW_OK);
            Spec id(GW_CODEC_IDENTITY);
            std::vector<float> zero(kD, 0.0f);
            std::vector<uint8_t> f(1000);
            size_t w = 0;
            gw_encode_ctx c = GW_ENCODE_CTX_INIT;
            c.tag = GW_TAG(5, 0);
            ASSERT_EQ(gw_encode(id, &c, zero.data(), GW_DTYPE_F32, kD, f.data(), f.size(), &w), GW_OK);
            ASSERT_EQ(gw_asylpg_master_push(m, f.data(), w), GW_OK);
            const auto x1 = params(m);
            for (size_t j = 0; j < kD; ++j) {
                const double v = double(x0[j]) - 0.1 * double(g[j]);
                const double want =
                    std::copysign(std::max(std::fabs(v) - 0.1 * l1, 0.0) / (1.0 + 0.1 * l2), v);
                EXPECT_NEAR(x1[j], want, 4e-7 * std::max(1.0, std::fabs(want))) << l1 << " " << l2;
                if (std::fabs(v) <= 0.1 * l1 * 0.999) {
                    EXPECT_EQ(x1[j], 0.0f);
                }
            }
            gw_asylpg_master_free(m);
        }
}

// Acc-AsyLPG's x_0 when y == x~ (the first epoch: y_0 = x~ = x0) is x~ bit
// for bit, so the epoch's first model message is the "unchanged" empty frame,
// not a full b_max-bit one (theta y + (1 - theta) x~ in float lands an ulp off).
TEST(Asylpg, AccFirstModelOfEpochUnchangedWhenYIsSnapshot) {
    const Problem pr;
    for (uint64_t seed : {8, 9, 10, 11}) {
        Opts p;
        p.variant = GW_ASYLPG_ACC;
        p.bmin = 2;
        p.bmax = 8;
        const std::vector<float> x0 = random_floats(kD, seed);
        gw_asylpg_master* m = make_master(p, x0);
        const auto g = pr.full(x0.data());
        ASSERT_EQ(gw_asylpg_master_begin_epoch(m, g.data(), kD), GW_OK);
        EXPECT_TRUE(bits_equal(params(m), x0)) << "seed " << seed;
        unsigned bits = 99;
        const auto mf = model_frame(m, &bits);
        EXPECT_EQ(bits, 0u) << "seed " << seed;
        gw_frame_info info;
        ASSERT_EQ(gw_frame_info_init(&info, GW_FRAME_INFO_VERSION), GW_OK);
        ASSERT_EQ(gw_frame_inspect(mf.data(), mf.size(), &info), GW_OK);
        EXPECT_EQ(info.count, 0u);
        gw_asylpg_master_free(m);
    }
}

TEST(Asylpg, CheckpointsContinueBitIdentically) {
    const Problem pr;
    for (gw_asylpg_variant var : {GW_ASYLPG_PLAIN, GW_ASYLPG_ACC}) {
        for (gw_codec_id gc : {GW_CODEC_QUANT, GW_CODEC_SPARSE_QUANT}) {
            Opts p;
            p.variant = var;
            p.bmin = 2;
            p.bmax = 8;
            p.m = 6;
            p.tau = 1;
            const std::vector<float> x0 = random_floats(kD, 8);
            Spec codec(gc);
            // Run A: 20 updates straight. Run B: save after `cut`, load into new handles, go on.
            auto run = [&](int cut, std::vector<float>* out) {
                gw_asylpg_master* m = make_master(p, x0);
                gw_asylpg_worker* w = make_worker(codec, 7);
                for (int t = 0; t < 20; ++t) {
                    if (t == cut) {
                        size_t mb = 0, wb = 0, written = 0;
                        ASSERT_EQ(gw_asylpg_master_save_bound(m, &mb), GW_OK);
                        ASSERT_EQ(gw_asylpg_worker_save_bound(w, &wb), GW_OK);
                        std::vector<uint8_t> bm(mb), bw(wb);
                        ASSERT_EQ(gw_asylpg_master_save(m, bm.data(), mb, &written), GW_OK);
                        bm.resize(written);
                        ASSERT_EQ(gw_asylpg_worker_save(w, bw.data(), wb, &written), GW_OK);
                        bw.resize(written);
                        gw_asylpg_master_free(m);
                        gw_asylpg_worker_free(w);
                        m = make_master(p, std::vector<float>(kD, 9.0f));
                        w = make_worker(codec, 7);
                        // Corrupt and truncated blobs are refused and change nothing.
                        auto bad = bm;
                        bad[bad.size() / 2] ^= 1;
                        EXPECT_EQ(gw_asylpg_master_load(m, bad.data(), bad.size()), GW_ERR_STATE_CHECKSUM);
                        EXPECT_NE(gw_asylpg_master_load(m, bm.data(), bm.size() - 1), GW_OK);
                        EXPECT_NE(gw_asylpg_master_load(m, bw.data(), bw.size()), GW_OK);
                        ASSERT_EQ(gw_asylpg_master_load(m, bm.data(), bm.size()), GW_OK);
                        ASSERT_EQ(gw_asylpg_worker_load(w, bw.data(), bw.size()), GW_OK);
                    }
                    int running = 0;
                    ASSERT_EQ(gw_asylpg_master_progress(m, nullptr, nullptr, nullptr, &running), GW_OK);
                    const auto snap = snapshot(m);
                    if (!running) {
                        const auto g = pr.full(snap.data());
                        ASSERT_EQ(gw_asylpg_master_begin_epoch(m, g.data(), kD), GW_OK);
                        ASSERT_EQ(gw_asylpg_worker_set_snapshot(w, snap.data(), kD), GW_OK);
                    }
                    unsigned bits = 0;
                    const auto mf = model_frame(m, &bits);
                    ASSERT_EQ(gw_asylpg_worker_receive(w, mf.data(), mf.size()), GW_OK);
                    const auto gf = worker_step(w, pr, size_t(t * 7) % kN, snap);
                    ASSERT_EQ(gw_asylpg_master_push(m, gf.data(), gf.size()), GW_OK);
                }
                *out = params(m);
                gw_asylpg_worker_free(w);
                gw_asylpg_master_free(m);
            };
            std::vector<float> a, b;
            run(-1, &a);
            for (int cut : {0, 3, 6, 11}) {
                run(cut, &b);
                EXPECT_TRUE(bits_equal(a, b)) << "cut " << cut;
            }
        }
    }
}

TEST(Asylpg, QuantizedTrainingConverges) {
    // Double quantization (b_x 8, b 4) and Sparse-AsyLPG still reach the
    // full-precision optimum's neighbourhood on the least-squares problem.
    const Problem pr;
    auto loss = [&](const std::vector<float>& x) {
        double s = 0;
        for (size_t i = 0; i < kN; ++i) {
            double r = -pr.b[i];
            for (size_t j = 0; j < kD; ++j) r += double(pr.a[i * kD + j]) * x[j];
            s += 0.5 * r * r;
        }
        return s / kN;
    };
    const std::vector<float> x0(kD, 0.0f);
    double full_precision = 0;
    for (int mode = 0; mode < 3; ++mode) {
        Opts p;
        p.l1 = p.l2 = 0.0f;
        p.lr = 0.02f;
        p.m = 80;
        p.bmin = mode == 0 ? 0 : 8;
        p.bmax = mode == 0 ? 0 : 8;
        Spec codec(mode == 0 ? GW_CODEC_IDENTITY : mode == 1 ? GW_CODEC_QUANT : GW_CODEC_SPARSE_QUANT);
        if (mode == 1) codec.set(GW_PARAM_BITS, 4);
        gw_asylpg_master* m = make_master(p, x0);
        gw_asylpg_worker* w = make_worker(codec, 11);
        std::mt19937 rng(5);
        for (int e = 0; e < 25; ++e) {
            const auto snap = snapshot(m);
            const auto g = pr.full(snap.data());
            ASSERT_EQ(gw_asylpg_master_begin_epoch(m, g.data(), kD), GW_OK);
            ASSERT_EQ(gw_asylpg_worker_set_snapshot(w, snap.data(), kD), GW_OK);
            for (uint64_t t = 0; t < p.m; ++t) {
                unsigned bits = 0;
                const auto mf = model_frame(m, &bits);
                ASSERT_EQ(gw_asylpg_worker_receive(w, mf.data(), mf.size()), GW_OK);
                const auto gf = worker_step(w, pr, rng() % kN, snap);
                ASSERT_EQ(gw_asylpg_master_push(m, gf.data(), gf.size()), GW_OK);
            }
        }
        const double l0 = loss(x0), l = loss(params(m));
        EXPECT_LT(l, 0.75 * l0) << "mode " << mode << ": " << l0 << " -> " << l;
        if (mode == 0) full_precision = l;
        // Within 0.1% of the full-precision run's loss (its optimum: 0.2427 vs 0.3500 at x0).
        EXPECT_LT(l, full_precision * 1.001) << "mode " << mode;
        gw_asylpg_worker_free(w);
        gw_asylpg_master_free(m);
    }
}

}  // namespace

// Issue 20 item 7: out-of-order calls are GW_ERR_SEQUENCE before any check of
// their arguments (only NULL pointers come earlier), and change nothing.
TEST(Asylpg, SequenceIsCheckedFirst) {
    const Problem pr;
    Opts p;
    const std::vector<float> x0 = random_floats(kD, 4);
    gw_asylpg_master* m = make_master(p, x0);
    Spec q(GW_CODEC_QUANT);
    gw_asylpg_worker* w = make_worker(q, 3);
    std::vector<float> out(kD), g(kD, 0.5f);
    size_t mb = 0, wb = 0, written = 0;
    unsigned bits = 0;
    ASSERT_EQ(gw_asylpg_master_frame_bound(m, &mb), GW_OK);
    ASSERT_EQ(gw_asylpg_worker_frame_bound(w, &wb), GW_OK);
    std::vector<uint8_t> mf(mb), wf(wb);
    auto master_blob = [&] { return gwtest::save_with(m, gw_asylpg_master_save_bound, gw_asylpg_master_save); };
    auto worker_blob = [&] { return gwtest::save_with(w, gw_asylpg_worker_save_bound, gw_asylpg_worker_save); };
    // Master between epochs: model and push; capacity or content do not matter.
    EXPECT_EQ(gw_asylpg_master_model(m, mf.data(), 1, &written, &bits), GW_ERR_SEQUENCE);
    EXPECT_EQ(gw_asylpg_master_push(m, wf.data(), 3), GW_ERR_SEQUENCE);
    const auto snap = snapshot(m);
    ASSERT_EQ(gw_asylpg_master_begin_epoch(m, pr.full(snap.data()).data(), kD), GW_OK);
    // In an epoch: begin_epoch again, with a wrong count.
    const auto m_before = master_blob();
    EXPECT_EQ(gw_asylpg_master_begin_epoch(m, g.data(), kD - 1), GW_ERR_SEQUENCE);
    EXPECT_EQ(master_blob(), m_before);
    // Worker without a snapshot, then without a model: wrong counts, dtypes,
    // overlapping buffers and small capacities all say SEQUENCE.
    const auto w_before = worker_blob();
    EXPECT_EQ(gw_asylpg_worker_receive(w, mf.data(), 2), GW_ERR_SEQUENCE);
    EXPECT_EQ(gw_asylpg_worker_model(w, out.data(), kD - 1, nullptr), GW_ERR_SEQUENCE);
    EXPECT_EQ(gw_asylpg_worker_step(w, g.data(), g.data(), GW_DTYPE_F32, kD - 1, wf.data(), wf.size(),
                                    &written),
              GW_ERR_SEQUENCE);
    EXPECT_EQ(worker_blob(), w_before);
    ASSERT_EQ(gw_asylpg_worker_set_snapshot(w, snap.data(), kD), GW_OK);
    EXPECT_EQ(gw_asylpg_worker_model(w, out.data(), kD + 1, nullptr), GW_ERR_SEQUENCE);
    EXPECT_EQ(gw_asylpg_worker_step(w, g.data(), g.data(), gw_dtype(9), kD, wf.data(), wf.size(),
                                    &written),
              GW_ERR_SEQUENCE);
    EXPECT_EQ(gw_asylpg_worker_step(w, g.data(), g.data(), GW_DTYPE_F32, kD, g.data(), kD * 4,
                                    &written),
              GW_ERR_SEQUENCE);  // the frame overlaps the gradients
    EXPECT_EQ(gw_asylpg_worker_step(w, g.data(), g.data(), GW_DTYPE_F32, kD, wf.data(), 1, &written),
              GW_ERR_SEQUENCE);
    // With a model every call goes through, and argument errors are theirs.
    const auto model = model_frame(m, &bits);
    ASSERT_EQ(gw_asylpg_worker_receive(w, model.data(), model.size()), GW_OK);
    EXPECT_EQ(gw_asylpg_worker_model(w, out.data(), kD + 1, nullptr), GW_ERR_COUNT_MISMATCH);
    uint64_t version = 9;
    EXPECT_EQ(gw_asylpg_worker_model(w, out.data(), kD, &version), GW_OK);
    EXPECT_EQ(version, 0u);
    EXPECT_EQ(gw_asylpg_worker_step(w, g.data(), g.data(), GW_DTYPE_F32, kD, wf.data(), 1, &written),
              GW_ERR_BUFFER_TOO_SMALL);
    EXPECT_EQ(gw_asylpg_master_begin_epoch(m, g.data(), kD - 1), GW_ERR_SEQUENCE);
    gw_asylpg_worker_free(w);
    gw_asylpg_master_free(m);
}
