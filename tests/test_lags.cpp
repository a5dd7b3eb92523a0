// LAGS-SGD (docs/algorithms.md s.7) through the C API: the layer machine
// against the equations, k_l = d_l equals dense SGD bit for bit, no mass lost
// over 1,000 steps, P = 1..16, concurrent layers on threads (run under
// ThreadSanitizer by scripts/test.sh), checkpoints; eq. 19, S_max and delta
// against hand-computed cases.
#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <thread>

#include "ref_algorithms.hpp"
#include "test_util.hpp"

using gwtest::bits_equal;
using gwtest::random_floats;
using gwtest::Spec;
using ref::Vec;

namespace {


struct Layer {
    gw_lags_layer* h = nullptr;
    std::vector<uint8_t> frame;
    size_t bound = 0;
    uint64_t n;
    Layer(uint64_t n_, const Spec& s, uint32_t tensor = 0) : n(n_) {
        gw_lags_layer_options o = GW_LAGS_LAYER_OPTIONS_INIT;
        o.n = n;
        o.tensor = tensor;
        EXPECT_EQ(gw_lags_layer_create(&h, &o, s), GW_OK);
        EXPECT_EQ(gw_lags_layer_frame_bound(h, &bound), GW_OK);
        frame.resize(bound);
    }
    ~Layer() { gw_lags_layer_free(h); }
    // One step; the frame is resized to what was written.
    gw_status step(const Vec& g, float lr) {
        size_t w = 0;
        frame.resize(bound);
        const gw_status st =
            gw_lags_layer_step(h, g.data(), GW_DTYPE_F32, n, lr, frame.data(), frame.size(), &w);
        if (st == GW_OK) frame.resize(w);
        return st;
    }
    Vec residual() const {
        Vec e(n);
        EXPECT_EQ(gw_lags_layer_residual(h, e.data(), n), GW_OK);
        return e;
    }
    std::vector<uint8_t> save() const {
        return gwtest::save_with(h, gw_lags_layer_save_bound, gw_lags_layer_save);
    }
};

}  // namespace

TEST(Lags, LayerStepMatchesTheEquationsForEveryWorkerCount) {
    // P workers, two layers each; v -= (1/P) sum_p decoded_p, reference in
    // plain float with the library's operation order.
    const uint64_t n0 = 300, n1 = 17;
    for (uint32_t P = 1; P <= 16; ++P) {
        SCOPED_TRACE(testing::Message() << "P " << P);
        std::vector<std::unique_ptr<Layer>> l0, l1;
        std::vector<Vec> e0(P, Vec(n0, 0.0f)), e1(P, Vec(n1, 0.0f));
        for (uint32_t p = 0; p < P; ++p) {
            l0.emplace_back(new Layer(n0, gwtest::topk_plain(7), 0));
            l1.emplace_back(new Layer(n1, gwtest::topk_plain(2), 1));
        }
        Vec v0 = random_floats(n0, 1), v1 = random_floats(n1, 2), r0 = v0, r1 = v1;
        for (int t = 0; t < 6; ++t) {
            const float lr = 0.1f / float(1 + t);
            for (uint32_t p = 0; p < P; ++p) {
                // Backward order: layer 1 first.
                const Vec g1 = random_floats(n1, 100 * t + p + 7), g0 = random_floats(n0, 100 * t + p + 50);
                ASSERT_EQ(l1[p]->step(g1, lr), GW_OK);
                ASSERT_EQ(l0[p]->step(g0, lr), GW_OK);
                for (auto [e, g, k] : {std::make_tuple(&e0[p], &g0, uint64_t(7)),
                                       std::make_tuple(&e1[p], &g1, uint64_t(2))}) {
                    Vec acc(e->size());
                    for (size_t i = 0; i < acc.size(); ++i) {
                        const float tt = lr * (*g)[i];
                        acc[i] = (*e)[i] + tt;
                    }
                    const Vec sent = ref::topk(acc, k, 1);
                    for (size_t i = 0; i < acc.size(); ++i) (*e)[i] = acc[i] - sent[i];
                }
                ASSERT_TRUE(bits_equal(l0[p]->residual(), e0[p]));
                ASSERT_TRUE(bits_equal(l1[p]->residual(), e1[p]));
            }
            for (uint32_t p = 0; p < P; ++p) {
                ASSERT_EQ(gw_decode_accumulate(l0[p]->frame.data(), l0[p]->frame.size(), -1.0f / float(P),
                                               v0.data(), n0), GW_OK);
                ASSERT_EQ(gw_decode_accumulate(l1[p]->frame.data(), l1[p]->frame.size(), -1.0f / float(P),
                                               v1.data(), n1), GW_OK);
                const Vec d0 = gwtest::decode(l0[p]->frame, n0), d1 = gwtest::decode(l1[p]->frame, n1);
                for (size_t i = 0; i < n0; ++i)
                    if (d0[i] != 0.0f) r0[i] = r0[i] + (-1.0f / float(P)) * d0[i];
                for (size_t i = 0; i < n1; ++i)
                    if (d1[i] != 0.0f) r1[i] = r1[i] + (-1.0f / float(P)) * d1[i];
            }
            ASSERT_TRUE(bits_equal(v0, r0));
            ASSERT_TRUE(bits_equal(v1, r1));
        }
    }
}

TEST(Lags, DenseKEqualsDenseSgdExactly) {
    // k_l = d_l: every entry is sent and eps stays 0, so each worker sends
    // lr * g and v -= (1/P) sum_p lr g_p, exactly as dense SGD computes it.
    const uint64_t n = 257;
    const uint32_t P = 3;
    std::vector<std::unique_ptr<Layer>> ls;
    for (uint32_t p = 0; p < P; ++p) ls.emplace_back(new Layer(n, gwtest::topk_plain(int64_t(n))));
    Vec v = random_floats(n, 3), dense = v;
    for (int t = 0; t < 20; ++t) {
        const float lr = 0.05f;
        for (uint32_t p = 0; p < P; ++p) {
            Vec g = random_floats(n, 1000 + 10 * t + p);
            g[t % n] = 0.0f;  // a zero gradient entry is not on the wire, still exact
            ASSERT_EQ(ls[p]->step(g, lr), GW_OK);
            ASSERT_TRUE(bits_equal(ls[p]->residual(), Vec(n, 0.0f)));
            ASSERT_EQ(gw_decode_accumulate(ls[p]->frame.data(), ls[p]->frame.size(), -1.0f / float(P),
                                           v.data(), n), GW_OK);
            for (size_t i = 0; i < n; ++i) {
                const float step = lr * g[i];
                if (step != 0.0f) dense[i] = dense[i] + (-1.0f / float(P)) * step;
            }
        }
        ASSERT_TRUE(bits_equal(v, dense));
    }
    // step_dense is the same update through a raw buffer.
    Layer d(n, gwtest::topk_plain(5));
    const Vec g = random_floats(n, 9);
    Vec out(n);
    ASSERT_EQ(d.step(g, 0.5f), GW_OK);
    const Vec eps = d.residual();
    ASSERT_EQ(gw_lags_layer_step_dense(d.h, g.data(), GW_DTYPE_F32, n, 0.5f, out.data()), GW_OK);
    for (size_t i = 0; i < n; ++i) {
        const float tt = 0.5f * g[i];
        ASSERT_EQ(out[i], eps[i] + tt);
    }
    EXPECT_TRUE(bits_equal(d.residual(), Vec(n, 0.0f)));
}

TEST(Lags, NoMassLostOver1000StepsWithChangingK) {
    const uint64_t n = 400;
    Layer l(n, gwtest::topk_plain(4));
    std::vector<double> in(n, 0.0), out(n, 0.0);
    for (int t = 0; t < 1000; ++t) {
        if (t % 100 == 0) {
            ASSERT_EQ(gw_lags_layer_set_k(l.h, 1 + uint64_t(t / 100) * 5), GW_OK);
        }
        const float lr = 0.01f * float(1 + t % 7);
        const Vec g = random_floats(n, 77 + t);
        const Vec e_before = l.residual();
        ASSERT_EQ(l.step(g, lr), GW_OK);
        const Vec d = gwtest::decode(l.frame, n), e = l.residual();
        for (size_t i = 0; i < n; ++i) {
            const float tt = lr * g[i];
            ASSERT_EQ(e[i] + d[i], e_before[i] + tt);  // sent + kept == acc, exactly
            in[i] += double(lr) * g[i];
            out[i] += d[i];
        }
    }
    const Vec e = l.residual();
    double err = 0;
    for (size_t i = 0; i < n; ++i) err = std::max(err, std::fabs(out[i] + e[i] - in[i]));
    EXPECT_LT(err, 1e-3);
}

TEST(Lags, ConcurrentLayersOnThreads) {
    // Layers finish in backward order on different threads; each handle is
    // touched by one thread at a time, different handles at once.
    const int L = 6;
    const uint64_t n = 5000;
    std::vector<std::unique_ptr<Layer>> ls, ref;
    for (int l = 0; l < L; ++l) {
        ls.emplace_back(new Layer(n + l, gwtest::topk_plain(10 + l), uint32_t(l)));
        ref.emplace_back(new Layer(n + l, gwtest::topk_plain(10 + l), uint32_t(l)));
    }
    for (int t = 0; t < 5; ++t) {
        std::vector<std::thread> th;
        for (int l = L - 1; l >= 0; --l)
            th.emplace_back([&, l] {
                const Vec g = random_floats(n + l, 31 * t + l);
                EXPECT_EQ(ls[l]->step(g, 0.1f), GW_OK);
            });
        for (auto& x : th) x.join();
        for (int l = L - 1; l >= 0; --l) {
            ASSERT_EQ(ref[l]->step(random_floats(n + l, 31 * t + l), 0.1f), GW_OK);
            ASSERT_EQ(ls[l]->frame, ref[l]->frame);
        }
    }
}

TEST(Lags, CheckpointsAndErrorsChangeNothing) {
    const uint64_t n = 123;
    Layer a(n, gwtest::topk_plain(5), 4), b(n, gwtest::topk_plain(5), 4);
    for (int t = 0; t < 3; ++t) ASSERT_EQ(a.step(random_floats(n, t), 0.2f), GW_OK);
    ASSERT_EQ(gw_lags_layer_set_k(a.h, 9), GW_OK);
    const auto blob = a.save();
    ASSERT_EQ(gw_lags_layer_load(b.h, blob.data(), blob.size()), GW_OK);
    EXPECT_EQ(b.save(), blob);
    uint64_t k = 0;
    ASSERT_EQ(gw_lags_layer_k(b.h, &k), GW_OK);
    EXPECT_EQ(k, 9u);
    for (int t = 3; t < 8; ++t) {
        const Vec g = random_floats(n, t);
        ASSERT_EQ(a.step(g, 0.1f), GW_OK);
        ASSERT_EQ(b.step(g, 0.1f), GW_OK);
        ASSERT_EQ(a.frame, b.frame);  // same tag (step), same selection
    }
    // Other layers' blobs, corrupt blobs.
    Layer c(n, gwtest::topk_plain(5), 5);
    EXPECT_EQ(gw_lags_layer_load(c.h, blob.data(), blob.size()), GW_ERR_STATE_MISMATCH);
    auto bad = blob;
    bad[20] ^= 1;
    EXPECT_EQ(gw_lags_layer_load(b.h, bad.data(), bad.size()), GW_ERR_STATE_CHECKSUM);
    // Errors leave the state as it was.
    const auto before = a.save();
    Vec g = random_floats(n, 1);
    g[5] = NAN;
    EXPECT_EQ(a.step(g, 0.1f), GW_ERR_NONFINITE);
    Vec big(n, 3e38f);
    ASSERT_EQ(a.step(big, 1.0f), GW_OK);  // eps small + 3e38: finite
    const auto mid = a.save();
    EXPECT_EQ(a.step(big, 1.0f), GW_ERR_OVERFLOW);  // residual + 3e38 overflows
    EXPECT_EQ(a.save(), mid);
    EXPECT_EQ(gw_lags_layer_set_k(a.h, 0), GW_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(gw_lags_layer_set_k(a.h, n + 1), GW_ERR_INVALID_ARGUMENT);
    size_t w = 0;
    EXPECT_EQ(gw_lags_layer_step(a.h, g.data(), GW_DTYPE_F32, n, 0.1f, a.frame.data(), 10, &w),
              GW_ERR_BUFFER_TOO_SMALL);
    EXPECT_EQ(gw_lags_layer_step(a.h, g.data(), GW_DTYPE_F32, n - 1, 0.1f, a.frame.data(),
                                 a.bound, &w), GW_ERR_COUNT_MISMATCH);
    EXPECT_EQ(a.save(), mid);
    (void)before;
    // A codec without k.
    gw_lags_layer* h = nullptr;
    gw_lags_layer_options o = GW_LAGS_LAYER_OPTIONS_INIT;
    o.n = n;
    Spec sign(GW_CODEC_SIGN);
    EXPECT_EQ(gw_lags_layer_create(&h, &o, sign), GW_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(h, nullptr);
    gw_lags_layer_free(nullptr);
}

TEST(Lags, Eq19HandCases) {
    // 4 workers, f32 values (8 bytes per entry). All-gather: 3 (alpha + 8k beta).
    gw_lags_network net;
    ASSERT_EQ(gw_lags_network_init(&net, GW_LAGS_NETWORK_VERSION), GW_OK);
    net.num_workers = 4;
    net.allgather_alpha = 1e-5;
    net.allgather_beta = 1e-9;  // 1 GB/s
    net.allreduce_alpha = 1e-5;
    net.allreduce_beta = 1e-9;
    net.max_ratio = 1000;
    // Backward order: layers of 1e6, 1e6, 1e6 elements, backward 1 ms each.
    const uint64_t n[3] = {1000000, 1000000, 1000000};
    const double tb[3] = {1e-3, 1e-3, 1e-3};
    double ratio[3], t_plan, t_dense;
    uint64_t k[3];
    gw_lags_verdict v[3];
    ASSERT_EQ(gw_lags_plan(&net, 3, n, tb, nullptr, ratio, k, v, &t_plan, &t_dense), GW_OK);
    // Layer 0 hides behind layer 1's 1 ms: 3 (1e-5 + 8k 1e-9) <= 1e-3 ->
    // k <= (1e-3/3 - 1e-5) / 8e-9 = 40416.67 -> k = 40416, c = 24.74.
    EXPECT_EQ(v[0], GW_LAGS_HIDDEN);
    EXPECT_EQ(k[0], 40416u);
    EXPECT_NEAR(ratio[0], 1e6 / 40416.0, 1e-9);
    EXPECT_EQ(v[1], GW_LAGS_HIDDEN);
    // The last layer has nothing to hide behind: the cap, k = 1000.
    EXPECT_EQ(v[2], GW_LAGS_CAPPED);
    EXPECT_EQ(k[2], 1000u);
    EXPECT_DOUBLE_EQ(ratio[2], 1000.0);
    // Dense all-reduce of 4 MB: 6e-5 + 1.5 * 4e6 * 1e-9 = 6.06 ms per layer,
    // back to back from t = 1 ms: ends at 1 + 3 * 6.06 = 19.18 ms.
    EXPECT_NEAR(t_dense, 1e-3 + 3 * (6e-5 + 6e-3), 1e-12);
    EXPECT_LE(t_plan, t_dense);
    // Plan: layer 0 [1 ms, 2 ms), layer 1 [2, 3), layer 2 from 3 ms:
    // 3 (1e-5 + 8000e-9) = 54 us.
    EXPECT_NEAR(t_plan, 3e-3 + 3 * (1e-5 + 8e-6), 1e-12);

    // A fast network: dense all-reduce hides behind the next layer too, so
    // nothing is compressed (never slower than not compressing).
    net.allreduce_beta = net.allgather_beta = 1e-13;
    ASSERT_EQ(gw_lags_plan(&net, 3, n, tb, nullptr, ratio, k, v, &t_plan, &t_dense), GW_OK);
    EXPECT_EQ(v[0], GW_LAGS_DENSE);
    EXPECT_EQ(v[1], GW_LAGS_DENSE);
    EXPECT_EQ(k[0], n[0]);
    EXPECT_DOUBLE_EQ(ratio[0], 1.0);
    EXPECT_LE(t_plan, t_dense);

    // Tiny layers on a link whose all-gather latency dwarfs the all-reduce's:
    // the sparse path is slower at every ratio, so the layers stay dense.
    net.allgather_alpha = 1e-2;
    net.allreduce_alpha = 1e-4;
    net.allgather_beta = net.allreduce_beta = 1e-9;
    const uint64_t small[2] = {100, 100};
    const double tb2[2] = {1e-4, 1e-4};
    ASSERT_EQ(gw_lags_plan(&net, 2, small, tb2, nullptr, ratio, k, v, &t_plan, &t_dense), GW_OK);
    EXPECT_EQ(v[0], GW_LAGS_DENSE);
    EXPECT_EQ(v[1], GW_LAGS_DENSE);
    EXPECT_DOUBLE_EQ(t_plan, t_dense);

    // One worker: no communication at all, dense.
    net.num_workers = 1;
    ASSERT_EQ(gw_lags_plan(&net, 2, small, tb2, nullptr, ratio, k, v, &t_plan, &t_dense), GW_OK);
    EXPECT_EQ(v[0], GW_LAGS_DENSE);
    EXPECT_DOUBLE_EQ(t_dense, 2e-4);

    // Sparsification time counts against the budget (eq. 19's t_spar).
    net.num_workers = 4;
    net.allgather_alpha = net.allreduce_alpha = 1e-5;
    const double spar[3] = {5e-4, 0, 0};
    ASSERT_EQ(gw_lags_plan(&net, 3, n, tb, spar, ratio, k, v, &t_plan, &t_dense), GW_OK);
    // 3 (1e-5 + 8k 1e-9) <= 1e-3 - 5e-4 -> k <= 19583.3
    EXPECT_EQ(k[0], 19583u);
    // Bad arguments.
    net.max_ratio = 0.5;
    EXPECT_EQ(gw_lags_plan(&net, 3, n, tb, nullptr, ratio, k, v, &t_plan, &t_dense),
              GW_ERR_INVALID_ARGUMENT);
    net.max_ratio = 1000;
    const double nan_tb[3] = {1e-3, NAN, 1e-3};
    EXPECT_EQ(gw_lags_plan(&net, 3, n, nan_tb, nullptr, ratio, k, v, &t_plan, &t_dense),
              GW_ERR_INVALID_ARGUMENT);
}

// The pipeline of docs/algorithms.md s.7, written from the text: layer j is
// ready after the backward of layers 0..j, collectives back to back on one link.
double pipeline(const std::vector<double>& tb, const std::vector<double>& comm) {
    double ready = 0, link = 0;
    for (size_t j = 0; j < tb.size(); ++j) {
        ready += tb[j];
        link = std::max(link, ready) + comm[j];
    }
    return link;
}

struct Model {
    gw_lags_network net;
    std::vector<uint64_t> n;
    std::vector<double> tb, spar;  // spar empty: none
};

double allgather(const gw_lags_network& net, uint64_t k) {
    return (net.num_workers - 1.0) *
           (net.allgather_alpha + double(k) * (net.value_bytes + 4.0) * net.allgather_beta);
}
double allreduce(const gw_lags_network& net, uint64_t n) {
    const double p = net.num_workers;
    return 2 * (p - 1) * net.allreduce_alpha + 2 * (p - 1) / p * 4.0 * double(n) * net.allreduce_beta;
}

// Eq. 19 (the cap reading) on every layer, from its definition: the least
// ratio c = n / k <= c_u whose all-gather plus sparsification fits in the
// next layer's backward (the largest such k), else c_u (k = ceil(n / c_u)).
double eq19_everywhere(const Model& m) {
    std::vector<double> comm;
    for (size_t j = 0; j < m.n.size(); ++j) {
        const double spar = m.spar.empty() ? 0.0 : m.spar[j];
        const double budget = j + 1 < m.n.size() ? m.tb[j + 1] : 0.0;
        uint64_t k = 0;
        if (m.net.num_workers == 1) {
            k = m.n[j];
        } else if (budget - spar - (m.net.num_workers - 1.0) * m.net.allgather_alpha >= 0) {
            const double per = (m.net.num_workers - 1.0) * (m.net.value_bytes + 4.0) * m.net.allgather_beta;
            const double kk = per > 0 ? std::floor((budget - spar - (m.net.num_workers - 1.0) *
                                                                        m.net.allgather_alpha) / per)
                                      : double(m.n[j]);
            k = kk >= double(m.n[j]) ? m.n[j] : uint64_t(kk);
        }
        if (k == 0 || double(m.n[j]) / double(k) > m.net.max_ratio)
            k = std::max<uint64_t>(1, uint64_t(std::ceil(double(m.n[j]) / m.net.max_ratio)));
        comm.push_back(allgather(m.net, k) + spar);
    }
    return pipeline(m.tb, comm);
}

// Plans m; checks the returned times against the plan's own pipeline and
// returns t_plan, t_dense and the verdicts.
void plan_checked(const Model& m, double* t_plan, double* t_dense,
                  std::vector<gw_lags_verdict>* v) {
    const size_t L = m.n.size();
    std::vector<double> ratio(L);
    std::vector<uint64_t> k(L);
    v->assign(L, GW_LAGS_DENSE);
    ASSERT_EQ(gw_lags_plan(&m.net, L, m.n.data(), m.tb.data(), m.spar.empty() ? nullptr : m.spar.data(),
                           ratio.data(), k.data(), v->data(), t_plan, t_dense),
              GW_OK);
    std::vector<double> comm, dense;
    for (size_t j = 0; j < L; ++j) {
        const double spar = m.spar.empty() ? 0.0 : m.spar[j];
        comm.push_back((*v)[j] == GW_LAGS_DENSE ? allreduce(m.net, m.n[j]) : allgather(m.net, k[j]) + spar);
        dense.push_back(allreduce(m.net, m.n[j]));
        if ((*v)[j] == GW_LAGS_DENSE) {
            EXPECT_EQ(k[j], m.n[j]);
        }
    }
    EXPECT_NEAR(*t_plan, pipeline(m.tb, comm), 1e-12 * pipeline(m.tb, comm));
    EXPECT_NEAR(*t_dense, pipeline(m.tb, dense), 1e-12 * pipeline(m.tb, dense));
}

// The case: a layer whose sparse and dense collectives both hid
// behind the next backward went dense and held the link longer, delaying
// the next layer: [CAPPED, DENSE, CAPPED] ended at 4.990 ms, eq. 19 on
// every layer at 4.582 ms.
TEST(Lags, PlanNeverSlowerThanEq19) {
    Model m;
    ASSERT_EQ(gw_lags_network_init(&m.net, GW_LAGS_NETWORK_VERSION), GW_OK);
    m.net.num_workers = 8;
    m.net.allgather_alpha = 9e-5;
    m.net.allgather_beta = 1.4e-9;
    m.net.allreduce_alpha = 2.1e-4;
    m.net.allreduce_beta = 3.8e-9;
    m.net.value_bytes = 4;
    m.net.max_ratio = 10.0;
    m.n = {304, 1205, 73};
    m.tb = {7.55e-4, 1.665e-4, 3.03e-3};
    double tp = 0, td = 0;
    std::vector<gw_lags_verdict> v;
    plan_checked(m, &tp, &td, &v);
    const double eq19 = eq19_everywhere(m);
    EXPECT_NEAR(eq19, 4.582e-3, 1e-6);
    EXPECT_LE(tp, eq19);
    EXPECT_LE(tp, td);
    EXPECT_NE(v[1], GW_LAGS_DENSE);  // its all-reduce would delay layer 2
}

// Over many random models: the plan ends no later than eq. 19 on every layer
// and no later than all-dense (up to rounding), and its times are its own
// pipeline's.
TEST(Lags, PlanNeverSlowerRandomModels) {
    std::mt19937_64 rng(20);
    auto logu = [&](double lo, double hi) {
        return std::exp(std::uniform_real_distribution<double>(std::log(lo), std::log(hi))(rng));
    };
    int slower = 0;
    for (int trial = 0; trial < 3000; ++trial) {
        Model m;
        ASSERT_EQ(gw_lags_network_init(&m.net, GW_LAGS_NETWORK_VERSION), GW_OK);
        m.net.num_workers = uint32_t(logu(1, 128));
        m.net.allgather_alpha = logu(1e-6, 1e-3);
        m.net.allgather_beta = logu(1e-11, 1e-8);
        m.net.allreduce_alpha = logu(1e-6, 1e-3);
        m.net.allreduce_beta = logu(1e-11, 1e-8);
        m.net.value_bytes = rng() % 2 ? 4 : 2;
        m.net.max_ratio = logu(1, 1000);
        const size_t L = 1 + rng() % 12;
        const bool spar = rng() % 2;
        for (size_t j = 0; j < L; ++j) {
            m.n.push_back(uint64_t(logu(1, 1e7)));
            m.tb.push_back(logu(1e-6, 1e-2));
            if (spar) m.spar.push_back(logu(1e-7, 1e-3));
        }
        double tp = 0, td = 0;
        std::vector<gw_lags_verdict> v;
        plan_checked(m, &tp, &td, &v);
        const double best = std::min(eq19_everywhere(m), td);
        if (tp > best * (1 + 1e-12)) ++slower;
        ASSERT_LE(tp, td) << "trial " << trial;  // exact: the planner's own promise
    }
    EXPECT_EQ(slower, 0) << "of 3000 random models";
}

TEST(Lags, SmaxAndDeltaHandCases) {
    double s = 0;
    // t_f = 1, t_b = 2, t_c = 2: r = 1, S = 1 + 1 / (1/2 + 1) = 5/3.
    ASSERT_EQ(gw_lags_s_max(1.0, 2.0, 2.0, &s), GW_OK);
    EXPECT_DOUBLE_EQ(s, 1.0 + 1.0 / 1.5);
    // t_f = 0, t_c = 4 t_b: r = 4, S = 1 + 1/4.
    ASSERT_EQ(gw_lags_s_max(0.0, 1.0, 4.0, &s), GW_OK);
    EXPECT_DOUBLE_EQ(s, 1.25);
    EXPECT_EQ(gw_lags_s_max(1.0, 0.0, 1.0, &s), GW_ERR_INVALID_ARGUMENT);

    // Two workers, n = 4, k = 1: x1 = (3, 1, 0, 0), x2 = (0, 1, 2, 0).
    // s = (3, 2, 2, 0); TopK: (3,0,0,0) + (0,0,2,0); residual (0, 2, 0, 0): 4.
    // Denominator (1 - 1/4) * 17 = 12.75.
    const float x1[4] = {3, 1, 0, 0}, x2[4] = {0, 1, 2, 0};
    const float* xs[2] = {x1, x2};
    double d = -1;
    ASSERT_EQ(gw_sparsity_delta(xs, 2, 4, 1, &d), GW_OK);
    EXPECT_DOUBLE_EQ(d, 4.0 / 12.75);
    ASSERT_EQ(gw_sparsity_delta(xs, 2, 4, 4, &d), GW_OK);  // k = n: nothing left
    EXPECT_EQ(d, 0.0);
    const float bad[4] = {1, NAN, 0, 0};
    const float* xb[2] = {x1, bad};
    EXPECT_EQ(gw_sparsity_delta(xb, 2, 4, 1, &d), GW_ERR_NONFINITE);
    EXPECT_EQ(gw_sparsity_delta(xs, 2, 4, 5, &d), GW_ERR_INVALID_ARGUMENT);
}

// Issue 20: a layer with the chunk-wise top-k sends exactly k_l entries
// (the first rule sent up to k_l + chunks - 1), whatever k_l the plan sets.
TEST(Lags, ChunkTopkLayerSendsExactlyKl) {
    const uint64_t n = 1000;
    Spec s(GW_CODEC_CHUNK_TOPK);
    s.set(GW_PARAM_K, 10).set(GW_PARAM_CHUNK_SIZE, 7).set(GW_PARAM_ZSTD, 0);
    Layer l(n, s);
    for (uint64_t k : {10u, 1u, 37u, 999u, 1000u}) {
        SCOPED_TRACE(k);
        ASSERT_EQ(gw_lags_layer_set_k(l.h, k), GW_OK);
        Vec g = random_floats(n, uint32_t(k));
        for (float& v : g)
            if (v == 0.0f) v = 1.0f;
        ASSERT_EQ(l.step(g, 0.1f), GW_OK);
        const Vec d = gwtest::decode(l.frame, n);
        EXPECT_EQ(uint64_t(std::count_if(d.begin(), d.end(), [](float v) { return v != 0.0f; })), k);
    }
}
