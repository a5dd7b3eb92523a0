// Golden checkpoint vectors of the state machines the worker/server vectors
// (tests/vectors/state/worker_*, server_*, read by the Python and Java tests)
// leave out: NAME.state.hex is a blob written by this release after a fixed
// history, NAME.next.hex what a handle that loaded it writes next. Every
// later release must (1) load the blob into a fresh handle of the documented
// configuration and save it back byte for byte, (2) write exactly the next
// output from it, and (3) write the same blob from the same history (a
// change of format then needs new vectors beside these, never rewritten).
// Missing files are written when GW_WRITE_VECTORS=1 (review the diff).
#include <cstdlib>

#include "test_util.hpp"

using gwtest::codec;
using gwtest::Spec;
using Vec = std::vector<float>;
using Bytes = std::vector<uint8_t>;

namespace {

const std::string kDir = std::string(GW_SOURCE_DIR) + "/tests/vectors/state/";

// Values exact in binary, the same formula as the CLT-k revision-1 vector.
Vec input(uint64_t n, unsigned s) {
    Vec x(n);
    for (unsigned i = 0; i < n; ++i) x[i] = float(int((i * 37u + s * 11u) % 101u) - 50) * 0.03125f;
    return x;
}

void golden(const std::string& name, const Bytes& got, const std::string& about) {
    bool ok = false;
    const Bytes want = gwtest::read_hex(kDir + name, &ok);
    if (!ok && std::getenv("GW_WRITE_VECTORS")) {
        ASSERT_TRUE(gwhex::write(kDir + name, got, about));
        return;
    }
    ASSERT_TRUE(ok) << "missing " << kDir + name;
    EXPECT_EQ(got, want) << name;
}

Bytes file(const std::string& name) {
    bool ok = false;
    const Bytes b = gwtest::read_hex(kDir + name, &ok);
    EXPECT_TRUE(ok) << name;
    return b;
}

template <class H, class F>
Bytes out_of(H* h, gw_status (*bound_fn)(const H*, size_t*), F&& write) {
    size_t bound = 0, written = 0;
    EXPECT_EQ(bound_fn(h, &bound), GW_OK);
    Bytes f(bound);
    EXPECT_EQ(write(f.data(), f.size(), &written), GW_OK);
    f.resize(written);
    return f;
}

// The three checks on one machine: `make` a fresh handle, `history` drives it,
// `next` is its next output; save/load the kind's calls.
template <class H, class Make, class History, class Next>
void check(const std::string& name, const std::string& about, Make make, History history,
           Next next, void (*free_fn)(H*), gw_status (*bound)(const H*, size_t*),
           gw_status (*save)(const H*, void*, size_t, size_t*),
           gw_status (*load)(H*, const void*, size_t)) {
    SCOPED_TRACE(name);
    H* h = make();
    history(h);
    const Bytes blob = gwtest::save_with(h, bound, save);
    golden(name + ".state.hex", blob, about + "\nstate blob, format 2 (docs/wire-format.md)");
    const Bytes next_frame = next(h);
    golden(name + ".next.hex", next_frame, about + "\nwhat the handle writes next");
    free_fn(h);
    const Bytes gold = file(name + ".state.hex");
    H* fresh = make();
    ASSERT_EQ(load(fresh, gold.data(), gold.size()), GW_OK);
    EXPECT_EQ(gwtest::save_with(fresh, bound, save), gold);
    EXPECT_EQ(next(fresh), file(name + ".next.hex"));
    free_fn(fresh);
}

Bytes worker_step(gw_worker* w, uint64_t n, unsigned s, float lr) {
    const Vec g = input(n, s);
    return out_of(w, gw_worker_frame_bound, [&](void* f, size_t cap, size_t* wr) {
        return gw_worker_step(w, g.data(), GW_DTYPE_F32, n, lr, f, cap, wr);
    });
}

}  // namespace

TEST(StateVectors, WorkerWithErrorFeedbackAndNoMomentum) {
    const uint64_t n = 24;
    const Spec s = gwtest::topk_plain(3);
    auto make = [&] {
        gw_worker_options o = GW_WORKER_OPTIONS_INIT;
        o.n = n, o.momentum = GW_MOMENTUM_NONE, o.mu = 0.0f, o.tensor = 3, o.seed = 5;
        gw_worker* w = nullptr;
        EXPECT_EQ(gw_worker_create(&w, &o, s), GW_OK);
        return w;
    };
    check<gw_worker>(
        "worker_topk_k3_plain",
        "worker: n 24, topk k 3 (zstd 0), momentum none, error feedback on, tensor 3, seed 5;\n"
        "steps input(s) = ((37 i + 11 s) mod 101 - 50) / 32 for s = 0, 1, 2 at lr 0.1, 0.05, "
        "0.05;\nnext: step s = 9 at lr 0.05",
        make,
        [&](gw_worker* w) {
            const float lr[3] = {0.1f, 0.05f, 0.05f};
            for (unsigned t = 0; t < 3; ++t) worker_step(w, n, t, lr[t]);
        },
        [&](gw_worker* w) { return worker_step(w, n, 9, 0.05f); }, gw_worker_free,
        gw_worker_save_bound, gw_worker_save, gw_worker_load);
}

TEST(StateVectors, ServerMidRound) {
    const uint64_t total = 24, off = 8, len = 10;
    auto push = [&](gw_server* sv, unsigned s) {
        const Bytes f = gwtest::encode(codec(GW_CODEC_SCALED_SIGN), input(len, s));
        ASSERT_EQ(gw_server_push(sv, f.data(), f.size()), GW_OK);
    };
    auto step = [&](gw_server* sv, float lr) {
        return out_of(sv, gw_server_frame_bound, [&](void* f, size_t cap, size_t* wr) {
            return gw_server_step(sv, lr, f, cap, wr);
        });
    };
    check<gw_server>(
        "server_scaled_sign_m3_midround",
        "server: total 24, slice [8, 18), M 3, broadcast scaled_sign (one block), error "
        "feedback on, tensor 3, check_tag 0;\npushes scaled_sign(input(s)) s = 0, 1, 2, step "
        "lr 0.1, then pushes s = 3, 4 (saved mid-round, 2 of 3 pushes);\nnext: push s = 5, step "
        "lr 0.1",
        [&] {
            gw_server_options o = GW_SERVER_OPTIONS_INIT;
            o.total = total, o.offset = off, o.length = len, o.num_workers = 3, o.tensor = 3;
            o.check_tag = 0;
            gw_server* sv = nullptr;
            EXPECT_EQ(gw_server_create(&sv, &o, codec(GW_CODEC_SCALED_SIGN), nullptr), GW_OK);
            return sv;
        },
        [&](gw_server* sv) {
            for (unsigned s = 0; s < 3; ++s) push(sv, s);
            step(sv, 0.1f);
            push(sv, 3), push(sv, 4);
        },
        [&](gw_server* sv) {
            push(sv, 5);
            return step(sv, 0.1f);
        },
        gw_server_free, gw_server_save_bound, gw_server_save, gw_server_load);
}

TEST(StateVectors, CltkRevisionTwoWithLeaderOverride) {
    const uint64_t n = 40;
    const uint32_t M = 3;
    Spec s(GW_CODEC_INDEX);
    s.set(GW_PARAM_K, 5).set(GW_PARAM_CHUNK_SIZE, 16);
    auto make_rank = [&](uint32_t r) {
        gw_cltk_options o = GW_CLTK_OPTIONS_INIT;
        o.n = n, o.num_workers = M, o.rank = r, o.beta = 0.5f, o.tensor = 2;
        gw_cltk* h = nullptr;
        EXPECT_EQ(gw_cltk_create(&h, &o, s), GW_OK);
        return h;
    };
    // Ranks 1 and 2 run beside the saved rank 0 for its history.
    gw_cltk* others[2] = {make_rank(1), make_rank(2)};
    auto history = [&](gw_cltk* h0) {
        gw_cltk* hs[3] = {h0, others[0], others[1]};
        for (unsigned t = 0; t < 3; ++t) {
            for (uint32_t r = 0; r < M; ++r) {
                const Vec g = input(n, 10 * t + r);
                ASSERT_EQ(gw_cltk_begin(hs[r], g.data(), GW_DTYPE_F32, n, 0.05f), GW_OK);
            }
            uint32_t leader = 0;
            ASSERT_EQ(gw_cltk_leader(h0, &leader), GW_OK);
            const Bytes idx = out_of(hs[leader], gw_cltk_index_frame_bound,
                                     [&](void* f, size_t cap, size_t* wr) {
                                         return gw_cltk_select(hs[leader], f, cap, wr);
                                     });
            Vec sum(n, 0.0f), v(n);
            size_t cnt = 0;
            for (uint32_t r = 0; r < M; ++r) {
                ASSERT_EQ(gw_cltk_extract(hs[r], idx.data(), idx.size(), v.data(), n, &cnt), GW_OK);
                for (size_t j = 0; j < cnt; ++j) sum[j] += v[j];
            }
            for (uint32_t r = 0; r < M; ++r)
                ASSERT_EQ(gw_cltk_apply(hs[r], sum.data(), cnt, nullptr, 0), GW_OK);
        }
        for (gw_cltk* h : hs) ASSERT_EQ(gw_cltk_set_leader(h, 0), GW_OK);
    };
    check<gw_cltk>(
        "cltk_index_r2_m3",
        "CLT-k rank 0 of M 3: n 40, index k 5 chunk_size 16 (revision 2), beta 0.5, tensor 2;\n"
        "3 rounds, rank r's gradient input(10 t + r) at lr 0.05, then the leader fixed to 0;\n"
        "next: begin with input(99) at lr 0.05, select (rank 0 leads): the index frame",
        [&] { return make_rank(0); }, history,
        [&](gw_cltk* h) {
            const Vec g = input(n, 99);
            EXPECT_EQ(gw_cltk_begin(h, g.data(), GW_DTYPE_F32, n, 0.05f), GW_OK);
            return out_of(h, gw_cltk_index_frame_bound, [&](void* f, size_t cap, size_t* wr) {
                return gw_cltk_select(h, f, cap, wr);
            });
        },
        gw_cltk_free, gw_cltk_save_bound, gw_cltk_save, gw_cltk_load);
    gw_cltk_free(others[0]), gw_cltk_free(others[1]);
}

TEST(StateVectors, LagsLayerWithChangedK) {
    const uint64_t n = 30;
    const Spec s = gwtest::topk_plain(4);
    auto step = [&](gw_lags_layer* h, unsigned t, float lr) {
        const Vec g = input(n, t);
        return out_of(h, gw_lags_layer_frame_bound, [&](void* f, size_t cap, size_t* wr) {
            return gw_lags_layer_step(h, g.data(), GW_DTYPE_F32, n, lr, f, cap, wr);
        });
    };
    check<gw_lags_layer>(
        "lags_topk_k4_setk6",
        "LAGS layer: n 30, topk k 4 (zstd 0), tensor 6, seed 2;\nsteps input(0), input(1), "
        "input(2) at lr 0.1, then k_l set to 6;\nnext: step input(9) at lr 0.1",
        [&] {
            gw_lags_layer_options o = GW_LAGS_LAYER_OPTIONS_INIT;
            o.n = n, o.tensor = 6, o.seed = 2;
            gw_lags_layer* h = nullptr;
            EXPECT_EQ(gw_lags_layer_create(&h, &o, s), GW_OK);
            return h;
        },
        [&](gw_lags_layer* h) {
            for (unsigned t = 0; t < 3; ++t) step(h, t, 0.1f);
            ASSERT_EQ(gw_lags_layer_set_k(h, 6), GW_OK);
        },
        [&](gw_lags_layer* h) { return step(h, 9, 0.1f); }, gw_lags_layer_free,
        gw_lags_layer_save_bound, gw_lags_layer_save, gw_lags_layer_load);
}

namespace {

const uint64_t kN = 16;

gw_asylpg_master* make_master(gw_asylpg_variant variant) {
    gw_asylpg_master_options o;
    EXPECT_EQ(gw_asylpg_master_options_init(&o, GW_ASYLPG_MASTER_OPTIONS_VERSION), GW_OK);
    o.n = kN, o.variant = variant, o.lr = 0.05f, o.l1 = 1e-3f, o.l2 = 1e-2f;
    o.epoch_length = 5, o.tau = 2, o.bits_min = 2, o.bits_max = 8, o.tensor = 5, o.seed = 99;
    const Vec x0 = input(kN, 1);
    gw_asylpg_master* m = nullptr;
    EXPECT_EQ(gw_asylpg_master_create(&m, &o, x0.data(), kN), GW_OK);
    return m;
}

gw_asylpg_worker* make_aworker() {
    gw_asylpg_worker_options o;
    EXPECT_EQ(gw_asylpg_worker_options_init(&o, GW_ASYLPG_WORKER_OPTIONS_VERSION), GW_OK);
    o.n = kN, o.tensor = 5, o.seed = 7;
    Spec q(GW_CODEC_QUANT);
    q.set(GW_PARAM_BITS, 4);
    q.set(GW_PARAM_REVISION, 1);  // the rounding rule these vectors were written with
    gw_asylpg_worker* w = nullptr;
    EXPECT_EQ(gw_asylpg_worker_create(&w, &o, q), GW_OK);
    return w;
}

Bytes model(gw_asylpg_master* m) {
    unsigned bits = 0;
    return out_of(m, gw_asylpg_master_frame_bound, [&](void* f, size_t cap, size_t* wr) {
        return gw_asylpg_master_model(m, f, cap, wr, &bits);
    });
}

Bytes aworker_step(gw_asylpg_worker* w, unsigned s) {
    const Vec gm = input(kN, s), gs = input(kN, s + 50);
    return out_of(w, gw_asylpg_worker_frame_bound, [&](void* f, size_t cap, size_t* wr) {
        return gw_asylpg_worker_step(w, gm.data(), gs.data(), GW_DTYPE_F32, kN, f, cap, wr);
    });
}

// Epoch 1 begun with the full gradient input(2); `updates` rounds of: model
// frame to the worker, its step on input(3 + t) / input(53 + t), pushed.
void asylpg_history(gw_asylpg_master* m, gw_asylpg_worker* w, unsigned updates) {
    Vec snap(kN);
    ASSERT_EQ(gw_asylpg_master_snapshot(m, snap.data(), kN), GW_OK);
    ASSERT_EQ(gw_asylpg_worker_set_snapshot(w, snap.data(), kN), GW_OK);
    const Vec full = input(kN, 2);
    ASSERT_EQ(gw_asylpg_master_begin_epoch(m, full.data(), kN), GW_OK);
    for (unsigned t = 0; t < updates; ++t) {
        const Bytes f = model(m);
        ASSERT_EQ(gw_asylpg_worker_receive(w, f.data(), f.size()), GW_OK);
        const Bytes g = aworker_step(w, 3 + t);
        ASSERT_EQ(gw_asylpg_master_push(m, g.data(), g.size()), GW_OK);
    }
}

}  // namespace

TEST(StateVectors, AsylpgMastersMidEpoch) {
    for (gw_asylpg_variant v : {GW_ASYLPG_PLAIN, GW_ASYLPG_ACC}) {
        const std::string name = v == GW_ASYLPG_PLAIN ? "asylpg_master_plain" : "asylpg_master_acc";
        check<gw_asylpg_master>(
            name,
            std::string("AsyLPG master (") + (v == GW_ASYLPG_PLAIN ? "plain" : "Acc") +
                "): n 16, lr 0.05, l1 1e-3, l2 1e-2, epoch_length 5, tau 2, bits 2..8, tensor "
                "5, seed 99, x0 input(1);\nepoch 1 with full gradient input(2), 2 updates from "
                "a worker (quant 4 bits, seed 7) on input(3 + t), input(53 + t);\nnext: the model "
                "frame",
            [&] { return make_master(v); },
            [&](gw_asylpg_master* m) {
                gw_asylpg_worker* w = make_aworker();
                asylpg_history(m, w, 2);
                gw_asylpg_worker_free(w);
            },
            [&](gw_asylpg_master* m) { return model(m); }, gw_asylpg_master_free,
            gw_asylpg_master_save_bound, gw_asylpg_master_save, gw_asylpg_master_load);
    }
}

TEST(StateVectors, AsylpgWorkerWithAModel) {
    check<gw_asylpg_worker>(
        "asylpg_worker_quant_b4",
        "AsyLPG worker: n 16, quant 4 bits, tensor 5, seed 7, beside the plain master of "
        "asylpg_master_plain: 2 updates, then the third model frame received (state 2);\n"
        "next: its step on input(9), input(59)",
        make_aworker,
        [&](gw_asylpg_worker* w) {
            gw_asylpg_master* m = make_master(GW_ASYLPG_PLAIN);
            asylpg_history(m, w, 2);
            const Bytes f = model(m);
            ASSERT_EQ(gw_asylpg_worker_receive(w, f.data(), f.size()), GW_OK);
            gw_asylpg_master_free(m);
        },
        [&](gw_asylpg_worker* w) { return aworker_step(w, 9); }, gw_asylpg_worker_free,
        gw_asylpg_worker_save_bound, gw_asylpg_worker_save, gw_asylpg_worker_load);
}

// The quant codec's rounding revision 2 came after this vector: a worker of
// the default revision is another configuration and refuses it, leaving
// itself untouched (its save is what it was).
TEST(StateVectors, AsylpgWorkerOfTheDefaultRevisionRefusesARevisionOneBlob) {
    const Bytes blob = file("asylpg_worker_quant_b4.state.hex");
    gw_asylpg_worker_options o;
    ASSERT_EQ(gw_asylpg_worker_options_init(&o, GW_ASYLPG_WORKER_OPTIONS_VERSION), GW_OK);
    o.n = kN, o.tensor = 5, o.seed = 7;
    Spec q(GW_CODEC_QUANT);
    q.set(GW_PARAM_BITS, 4);
    gw_asylpg_worker* w = nullptr;
    ASSERT_EQ(gw_asylpg_worker_create(&w, &o, q), GW_OK);
    auto save = [&] {
        return out_of(w, gw_asylpg_worker_save_bound, [&](void* f, size_t cap, size_t* wr) {
            return gw_asylpg_worker_save(w, f, cap, wr);
        });
    };
    const Bytes before = save();
    EXPECT_EQ(gw_asylpg_worker_load(w, blob.data(), blob.size()), GW_ERR_STATE_MISMATCH);
    EXPECT_EQ(save(), before);
    gw_asylpg_worker_free(w);
}
