// Re-sharding checkpoints from M to M' workers (docs/algorithms.md s.9): for
// every M, M' in 1..16 and every state machine, what the new handles hold
// is the mass the old ones held (worker kinds: their mean, to float
// rounding; server slices: bit for bit), the new blobs load into handles of
// M' and step on; M' = M is the identity; bad parts get their status.
#include <memory>

#include "test_util.hpp"

using gwtest::codec;
using gwtest::random_floats;
using gwtest::save;
using gwtest::Spec;
using Vec = std::vector<float>;
using Blob = std::vector<uint8_t>;

namespace {


struct Worker {
    gw_worker* h = nullptr;
    uint64_t n;
    Worker(uint64_t n_, const Spec& s, gw_momentum m = GW_MOMENTUM_NESTEROV) : n(n_) {
        gw_worker_options o = GW_WORKER_OPTIONS_INIT;
        o.n = n;
        o.momentum = m;
        o.mu = m == GW_MOMENTUM_NONE ? 0.0f : 0.9f;
        EXPECT_EQ(gw_worker_create(&h, &o, s), GW_OK);
    }
    ~Worker() { gw_worker_free(h); }
    void step(uint32_t seed, float lr = 0.1f) {
        size_t bound = 0, w = 0;
        gw_worker_frame_bound(h, &bound);
        Blob f(bound);
        const Vec g = random_floats(n, seed);
        ASSERT_EQ(gw_worker_step(h, g.data(), GW_DTYPE_F32, n, lr, f.data(), bound, &w), GW_OK);
    }
    Vec residual() const {
        Vec e(n);
        EXPECT_EQ(gw_worker_residual(h, e.data(), n), GW_OK);
        return e;
    }
    Vec momentum() const {
        Vec m(n);
        EXPECT_EQ(gw_worker_momentum(h, m.data(), n), GW_OK);
        return m;
    }
};

gw_reshard_options target(uint32_t M, uint32_t M2, uint32_t rank, uint64_t off, uint64_t len) {
    gw_reshard_options o = GW_RESHARD_OPTIONS_INIT;
    o.workers_in = M, o.workers_out = M2, o.rank_out = rank, o.offset = off, o.length = len;
    return o;
}

struct Parts {
    std::vector<Blob> blobs;
    std::vector<gw_reshard_part> p;
    void add(Blob b, uint32_t rank, uint64_t offset = 0) {
        blobs.push_back(std::move(b));
        p.clear();
        for (size_t i = 0; i < blobs.size(); ++i) p.push_back({nullptr, 0, 0, 0});
        ranks.push_back(rank), offsets.push_back(offset);
        for (size_t i = 0; i < blobs.size(); ++i)
            p[i] = {blobs[i].data(), blobs[i].size(), ranks[i], offsets[i]};
    }
    std::vector<uint32_t> ranks;
    std::vector<uint64_t> offsets;
};

gw_status reshard(const std::vector<gw_reshard_part>& p, const gw_reshard_options& o, Blob* out) {
    size_t need = 0;
    gw_status st = gw_reshard(p.data(), p.size(), &o, nullptr, 0, &need);
    if (st != GW_ERR_BUFFER_TOO_SMALL) return st;
    out->assign(need, 0);
    size_t written = 0;
    st = gw_reshard(p.data(), p.size(), &o, out->data(), out->size(), &written);
    EXPECT_EQ(written, need);
    return st;
}

// Sum over workers of v_i / M, per element, in double.
std::vector<double> mass(const std::vector<Vec>& v) {
    std::vector<double> s(v[0].size(), 0.0);
    for (const Vec& x : v)
        for (size_t k = 0; k < x.size(); ++k) s[k] += double(x[k]) / double(v.size());
    return s;
}

void expect_same_mass(const std::vector<double>& a, const std::vector<double>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t k = 0; k < a.size(); ++k)  // the mean is rounded to float once
        ASSERT_NEAR(a[k], b[k], 1e-6 * (1.0 + std::fabs(a[k]))) << "element " << k;
}

}  // namespace

TEST(Reshard, WorkerResidualAndMomentumKeepTheirMassForEveryWorkerCount) {
    const uint64_t n = 41;
    const Spec s = gwtest::topk_plain(3);
    for (uint32_t M = 1; M <= 16; ++M) {
        Parts parts;
        std::vector<Vec> e, m;
        for (uint32_t r = 0; r < M; ++r) {
            Worker w(n, s);
            for (int t = 0; t < 3; ++t) w.step(100 * M + 10 * r + t);
            e.push_back(w.residual()), m.push_back(w.momentum());
            parts.add(save(w.h), r);
        }
        for (uint32_t M2 = 1; M2 <= 16; ++M2) {
            SCOPED_TRACE("M=" + std::to_string(M) + " M'=" + std::to_string(M2));
            std::vector<Vec> e2, m2;
            for (uint32_t r = 0; r < M2; ++r) {
                Blob b;
                ASSERT_EQ(reshard(parts.p, target(M, M2, r, 0, n), &b), GW_OK);
                if (M2 == M) { ASSERT_EQ(b, parts.blobs[r]); }  // M' = M: the identity
                Worker w(n, s);
                ASSERT_EQ(gw_worker_load(w.h, b.data(), b.size()), GW_OK);
                e2.push_back(w.residual()), m2.push_back(w.momentum());
                uint64_t steps = 0;
                ASSERT_EQ(gw_worker_step_count(w.h, &steps), GW_OK);
                EXPECT_EQ(steps, 3u);
                w.step(7);  // and it trains on
            }
            expect_same_mass(mass(e), mass(e2));
            expect_same_mass(mass(m), mass(m2));
        }
    }
}

// DDP's server mode: each worker holds one blob per slice of M; they become
// blobs per slice of M', each the mean over the old workers.
TEST(Reshard, WorkerSlicesAreCutAndJoinedForEveryWorkerCount) {
    const uint64_t n = 29;  // fewer elements than 2 x 16: empty slices too
    const Spec s = gwtest::topk_plain(1);
    for (uint32_t M = 1; M <= 16; ++M) {
        Parts parts;
        std::vector<Vec> full(M, Vec(n));
        for (uint32_t r = 0; r < M; ++r)
            for (uint32_t j = 0; j < M; ++j) {
                uint64_t off = 0, len = 0;
                ASSERT_EQ(gw_shard_range(n, M, j, &off, &len), GW_OK);
                if (len == 0) continue;
                Worker w(len, s);
                w.step(1000 * M + 31 * r + j);
                w.step(2000 * M + 31 * r + j);
                const Vec e = w.residual();
                std::copy(e.begin(), e.end(), full[r].begin() + off);
                parts.add(save(w.h), r, off);
            }
        for (uint32_t M2 = 1; M2 <= 16; ++M2) {
            SCOPED_TRACE("M=" + std::to_string(M) + " M'=" + std::to_string(M2));
            std::vector<Vec> full2(M2, Vec(n));
            for (uint32_t r = 0; r < M2; ++r)
                for (uint32_t j = 0; j < M2; ++j) {
                    uint64_t off = 0, len = 0;
                    ASSERT_EQ(gw_shard_range(n, M2, j, &off, &len), GW_OK);
                    if (len == 0) continue;
                    Blob b;
                    ASSERT_EQ(reshard(parts.p, target(M, M2, r, off, len), &b), GW_OK);
                    Worker w(len, s);
                    ASSERT_EQ(gw_worker_load(w.h, b.data(), b.size()), GW_OK);
                    const Vec e = w.residual();
                    std::copy(e.begin(), e.end(), full2[r].begin() + off);
                }
            expect_same_mass(mass(full), mass(full2));
            if (M2 == M) { ASSERT_EQ(full2, full); }
        }
    }
}

TEST(Reshard, ServerSlicesMoveBitForBit) {
    const uint64_t n = 53;
    for (uint32_t M = 1; M <= 16; ++M) {
        Parts parts;
        Vec whole(n);
        for (uint32_t j = 0; j < M; ++j) {
            uint64_t off = 0, len = 0;
            ASSERT_EQ(gw_shard_range(n, M, j, &off, &len), GW_OK);
            gw_server_options o = GW_SERVER_OPTIONS_INIT;
            o.total = n, o.offset = off, o.length = len, o.num_workers = M, o.check_tag = 0;
            gw_server* sv = nullptr;
            ASSERT_EQ(gw_server_create(&sv, &o, codec(GW_CODEC_SCALED_SIGN), nullptr), GW_OK);
            if (len) {
                for (uint32_t r = 0; r < M; ++r) {
                    const Blob f = gwtest::encode(codec(GW_CODEC_SCALED_SIGN),
                                                  random_floats(len, 70 * M + 5 * j + r));
                    ASSERT_EQ(gw_server_push(sv, f.data(), f.size()), GW_OK);
                }
                size_t bound = 0, w = 0;
                gw_server_frame_bound(sv, &bound);
                Blob f(bound);
                ASSERT_EQ(gw_server_step(sv, 0.1f, f.data(), bound, &w), GW_OK);
                ASSERT_EQ(gw_server_residual(sv, whole.data() + off, len), GW_OK);
            }
            parts.add(save(sv), 0);
            gw_server_free(sv);
        }
        for (uint32_t M2 = 1; M2 <= 16; ++M2) {
            SCOPED_TRACE("M=" + std::to_string(M) + " M'=" + std::to_string(M2));
            Vec whole2(n, -1.0f);
            for (uint32_t j = 0; j < M2; ++j) {
                uint64_t off = 0, len = 0;
                ASSERT_EQ(gw_shard_range(n, M2, j, &off, &len), GW_OK);
                Blob b;
                ASSERT_EQ(reshard(parts.p, target(M, M2, j, off, len), &b), GW_OK);
                if (M2 == M) { ASSERT_EQ(b, parts.blobs[j]); }
                gw_server_options o = GW_SERVER_OPTIONS_INIT;
                o.total = n, o.offset = off, o.length = len, o.num_workers = M2;
                gw_server* sv = nullptr;
                ASSERT_EQ(gw_server_create(&sv, &o, codec(GW_CODEC_SCALED_SIGN), nullptr), GW_OK);
                ASSERT_EQ(gw_server_load(sv, b.data(), b.size()), GW_OK);
                if (len) { ASSERT_EQ(gw_server_residual(sv, whole2.data() + off, len), GW_OK); }
                gw_server_free(sv);
                // Only the slices overlapping the new one are needed.
                std::vector<gw_reshard_part> some;
                for (uint32_t i = 0; i < M; ++i) {
                    uint64_t o2 = 0, l2 = 0;
                    gw_shard_range(n, M, i, &o2, &l2);
                    if (l2 && o2 < off + len && off < o2 + l2) some.push_back(parts.p[i]);
                }
                Blob b2;
                ASSERT_EQ(reshard(some, target(M, M2, j, off, len), &b2), len ? GW_OK
                                                                             : GW_ERR_STATE_MISSING);
                if (len) { ASSERT_EQ(b2, b); }
            }
            ASSERT_EQ(whole2, whole);
        }
    }
}

TEST(Reshard, CltkMemoryKeepsItsMass) {
    const uint64_t n = 64;
    Spec s(GW_CODEC_INDEX);
    s.set(GW_PARAM_K, 5).set(GW_PARAM_CHUNK_SIZE, 16);
    for (uint32_t M = 1; M <= 16; ++M) {
        std::vector<gw_cltk*> hs(M);
        for (uint32_t r = 0; r < M; ++r) {
            gw_cltk_options o = GW_CLTK_OPTIONS_INIT;
            o.n = n, o.num_workers = M, o.rank = r, o.beta = 0.5f;
            ASSERT_EQ(gw_cltk_create(&hs[r], &o, s), GW_OK);
        }
        size_t fb = 0;
        ASSERT_EQ(gw_cltk_index_frame_bound(hs[0], &fb), GW_OK);
        for (int t = 0; t < 3; ++t) {  // rounds of the protocol
            Blob frame(fb);
            size_t w = 0, count = 0;
            for (uint32_t r = 0; r < M; ++r) {
                const Vec g = random_floats(n, 300 * M + 7 * t + r);
                ASSERT_EQ(gw_cltk_begin(hs[r], g.data(), GW_DTYPE_F32, n, 0.05f), GW_OK);
            }
            uint32_t leader = 0;
            ASSERT_EQ(gw_cltk_leader(hs[0], &leader), GW_OK);
            ASSERT_EQ(gw_cltk_select(hs[leader], frame.data(), fb, &w), GW_OK);
            Vec sum(n, 0.0f), v(n);
            for (uint32_t r = 0; r < M; ++r) {
                ASSERT_EQ(gw_cltk_extract(hs[r], frame.data(), w, v.data(), n, &count), GW_OK);
                for (size_t k = 0; k < count; ++k) sum[k] += v[k];
            }
            for (uint32_t r = 0; r < M; ++r)
                ASSERT_EQ(gw_cltk_apply(hs[r], sum.data(), count, nullptr, 0), GW_OK);
        }
        if (M > 2) {  // every worker makes the same call
            for (gw_cltk* h : hs) ASSERT_EQ(gw_cltk_set_leader(h, M - 1), GW_OK);
        }
        Parts parts;
        std::vector<Vec> mem;
        for (uint32_t r = 0; r < M; ++r) {
            Vec m(n);
            ASSERT_EQ(gw_cltk_memory(hs[r], m.data(), n), GW_OK);
            mem.push_back(m);
            parts.add(gwtest::save_with(hs[r], gw_cltk_save_bound, gw_cltk_save), r);
            gw_cltk_free(hs[r]);
        }
        for (uint32_t M2 = 1; M2 <= 16; ++M2) {
            SCOPED_TRACE("M=" + std::to_string(M) + " M'=" + std::to_string(M2));
            std::vector<Vec> mem2;
            for (uint32_t r = 0; r < M2; ++r) {
                Blob b;
                ASSERT_EQ(reshard(parts.p, target(M, M2, r, 0, n), &b), GW_OK);
                if (M2 == M) { ASSERT_EQ(b, parts.blobs[r]); }
                gw_cltk_options o = GW_CLTK_OPTIONS_INIT;
                o.n = n, o.num_workers = M2, o.rank = r, o.beta = 0.5f;
                gw_cltk* h = nullptr;
                ASSERT_EQ(gw_cltk_create(&h, &o, s), GW_OK);
                ASSERT_EQ(gw_cltk_load(h, b.data(), b.size()), GW_OK);
                Vec m(n);
                ASSERT_EQ(gw_cltk_memory(h, m.data(), n), GW_OK);
                mem2.push_back(m);
                uint32_t leader = 0;  // the override survives where it still names a worker
                ASSERT_EQ(gw_cltk_leader(h, &leader), GW_OK);
                if (M > 2 && M - 1 < M2) EXPECT_EQ(leader, M - 1);
                else EXPECT_EQ(leader, 3 % M2);  // cyclic: step 3
                gw_cltk_free(h);
            }
            expect_same_mass(mass(mem), mass(mem2));
        }
    }
}

TEST(Reshard, LagsResidualKeepsItsMass) {
    const uint64_t n = 50;
    const Spec s = gwtest::topk_plain(4);
    auto make = [&]() {
        gw_lags_layer_options o = GW_LAGS_LAYER_OPTIONS_INIT;
        o.n = n;
        gw_lags_layer* h = nullptr;
        EXPECT_EQ(gw_lags_layer_create(&h, &o, s), GW_OK);
        return h;
    };
    for (uint32_t M = 1; M <= 16; ++M) {
        Parts parts;
        std::vector<Vec> eps;
        for (uint32_t r = 0; r < M; ++r) {
            gw_lags_layer* h = make();
            size_t bound = 0, w = 0;
            gw_lags_layer_frame_bound(h, &bound);
            Blob f(bound);
            for (int t = 0; t < 3; ++t) {
                const Vec g = random_floats(n, 500 * M + 11 * r + t);
                ASSERT_EQ(gw_lags_layer_step(h, g.data(), GW_DTYPE_F32, n, 0.1f, f.data(), bound, &w),
                          GW_OK);
            }
            ASSERT_EQ(gw_lags_layer_set_k(h, 6), GW_OK);
            Vec e(n);
            ASSERT_EQ(gw_lags_layer_residual(h, e.data(), n), GW_OK);
            eps.push_back(e);
            parts.add(gwtest::save_with(h, gw_lags_layer_save_bound, gw_lags_layer_save), r);
            gw_lags_layer_free(h);
        }
        for (uint32_t M2 = 1; M2 <= 16; ++M2) {
            std::vector<Vec> eps2;
            for (uint32_t r = 0; r < M2; ++r) {
                Blob b;
                ASSERT_EQ(reshard(parts.p, target(M, M2, r, 0, n), &b), GW_OK);
                gw_lags_layer* h = make();
                ASSERT_EQ(gw_lags_layer_load(h, b.data(), b.size()), GW_OK);
                Vec e(n);
                ASSERT_EQ(gw_lags_layer_residual(h, e.data(), n), GW_OK);
                eps2.push_back(e);
                uint64_t k = 0;
                ASSERT_EQ(gw_lags_layer_k(h, &k), GW_OK);
                EXPECT_EQ(k, 6u);
                gw_lags_layer_free(h);
            }
            expect_same_mass(mass(eps), mass(eps2));
        }
    }
}

TEST(Reshard, AsylpgMasterCarriesAndWorkersKeepOrStartFresh) {
    const uint64_t n = 16;
    const Vec x0 = random_floats(n, 3);
    gw_asylpg_master_options mo;
    ASSERT_EQ(gw_asylpg_master_options_init(&mo, GW_ASYLPG_MASTER_OPTIONS_VERSION), GW_OK);
    mo.n = n, mo.lr = 0.1f, mo.epoch_length = 4, mo.tau = 2;
    gw_asylpg_master* master = nullptr;
    ASSERT_EQ(gw_asylpg_master_create(&master, &mo, x0.data(), n), GW_OK);
    const Blob mb = gwtest::save_with(master, gw_asylpg_master_save_bound, gw_asylpg_master_save);
    gw_asylpg_master_free(master);
    Parts mp;
    mp.add(mb, 0);
    Blob out;
    ASSERT_EQ(reshard(mp.p, target(4, 3, 1, 0, 0), &out), GW_OK);
    EXPECT_EQ(out, mb);
    mp.add(mb, 1);
    EXPECT_EQ(reshard(mp.p, target(4, 3, 1, 0, 0), &out), GW_ERR_STATE_DUPLICATE);

    Parts wp;
    for (uint32_t r = 0; r < 3; ++r) {
        gw_asylpg_worker_options wo;
        ASSERT_EQ(gw_asylpg_worker_options_init(&wo, GW_ASYLPG_WORKER_OPTIONS_VERSION), GW_OK);
        wo.n = n, wo.seed = 100 + r;
        gw_asylpg_worker* w = nullptr;
        Spec q(GW_CODEC_QUANT);
        ASSERT_EQ(gw_asylpg_worker_create(&w, &wo, q), GW_OK);
        wp.add(gwtest::save_with(w, gw_asylpg_worker_save_bound, gw_asylpg_worker_save), r);
        gw_asylpg_worker_free(w);
    }
    {  // workers of another configuration (here: length) are not mixed
        gw_asylpg_worker_options wo;
        ASSERT_EQ(gw_asylpg_worker_options_init(&wo, GW_ASYLPG_WORKER_OPTIONS_VERSION), GW_OK);
        wo.n = n + 1;
        gw_asylpg_worker* w = nullptr;
        ASSERT_EQ(gw_asylpg_worker_create(&w, &wo, Spec(GW_CODEC_QUANT)), GW_OK);
        Parts other = wp;
        other.blobs.pop_back(), other.ranks.pop_back(), other.offsets.pop_back();
        other.add(gwtest::save_with(w, gw_asylpg_worker_save_bound, gw_asylpg_worker_save), 2);
        gw_asylpg_worker_free(w);
        EXPECT_EQ(reshard(other.p, target(3, 5, 0, 0, 0), &out), GW_ERR_STATE_MISMATCH);
    }
    for (uint32_t r = 0; r < 5; ++r) {
        size_t written = 99;
        Blob b(4096);
        const gw_reshard_options o = target(3, 5, r, 0, 0);
        ASSERT_EQ(gw_reshard(wp.p.data(), wp.p.size(), &o, b.data(), b.size(), &written), GW_OK);
        if (r < 3) EXPECT_EQ(Blob(b.begin(), b.begin() + written), wp.blobs[r]);
        else EXPECT_EQ(written, 0u);  // a new worker starts from a fresh handle
    }
}

TEST(Reshard, BadPartsGetTheirStatusAndWriteNothingPast) {
    const uint64_t n = 20;
    const Spec s = gwtest::topk_plain(2);
    Parts parts;
    for (uint32_t r = 0; r < 3; ++r) {
        Worker w(n, s);
        w.step(r + 1);
        parts.add(save(w.h), r);
    }
    Blob out;
    const gw_reshard_options ok = target(3, 2, 0, 0, n);
    ASSERT_EQ(reshard(parts.p, ok, &out), GW_OK);
    size_t written = 0;
    Blob small(out.size() - 1);
    EXPECT_EQ(gw_reshard(parts.p.data(), 3, &ok, small.data(), small.size(), &written),
              GW_ERR_BUFFER_TOO_SMALL);
    EXPECT_EQ(written, out.size());

    auto status = [&](std::vector<gw_reshard_part> p, gw_reshard_options o) {
        Blob b(4096);
        size_t w = 0;
        return gw_reshard(p.data(), p.size(), &o, b.data(), b.size(), &w);
    };
    auto with = [&](size_t i, gw_reshard_part q) {
        auto p = parts.p;
        p[i] = q;
        return p;
    };
    EXPECT_EQ(gw_reshard(parts.p.data(), 3, nullptr, nullptr, 0, &written), GW_ERR_NULL_POINTER);
    EXPECT_EQ(gw_reshard(nullptr, 3, &ok, nullptr, 0, &written), GW_ERR_NULL_POINTER);
    EXPECT_EQ(gw_reshard(parts.p.data(), 3, &ok, nullptr, 0, nullptr), GW_ERR_NULL_POINTER);
    EXPECT_EQ(status({}, ok), GW_ERR_STATE_MISSING);
    gw_reshard_options bad = ok;
    bad.version = 99;
    EXPECT_EQ(status(parts.p, bad), GW_ERR_OPTIONS_VERSION);
    bad = ok, bad.rank_out = 2;
    EXPECT_EQ(status(parts.p, bad), GW_ERR_INVALID_ARGUMENT);
    bad = ok, bad.workers_in = 0;
    EXPECT_EQ(status(parts.p, bad), GW_ERR_INVALID_ARGUMENT);
    bad = ok, bad.length = 0;
    EXPECT_EQ(status(parts.p, bad), GW_ERR_INVALID_ARGUMENT);
    bad = ok, bad.length = n + 1;  // past what the parts hold
    EXPECT_EQ(status(parts.p, bad), GW_ERR_STATE_MISSING);
    bad = ok, bad.workers_in = 4;  // rank 3 is missing
    EXPECT_EQ(status(parts.p, bad), GW_ERR_STATE_MISSING);
    EXPECT_EQ(status(with(2, {parts.p[2].blob, parts.p[2].size, 1, 0}), ok), GW_ERR_STATE_DUPLICATE);
    EXPECT_EQ(status(with(2, {parts.p[2].blob, parts.p[2].size, 3, 0}), ok), GW_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(status(with(1, {parts.p[1].blob, parts.p[1].size, 1, 5}), ok), GW_ERR_STATE_MISSING);
    EXPECT_EQ(status(with(1, {nullptr, 10, 1, 0}), ok), GW_ERR_NULL_POINTER);
    EXPECT_EQ(status(with(1, {nullptr, 0, 1, 0}), ok), GW_ERR_STATE_CORRUPT);

    // Damaged blobs: the loader's statuses.
    Blob crc = parts.blobs[1];
    crc[20] ^= 1;
    EXPECT_EQ(status(with(1, {crc.data(), crc.size(), 1, 0}), ok), GW_ERR_STATE_CHECKSUM);
    Blob magic = parts.blobs[1];
    magic[0] = 'X';
    EXPECT_EQ(status(with(1, {magic.data(), magic.size(), 1, 0}), ok), GW_ERR_STATE_MAGIC);
    EXPECT_EQ(status(with(1, {crc.data(), 7, 1, 0}), ok), GW_ERR_STATE_CORRUPT);
    // Other configurations: another codec, another length, another kind.
    Worker other(n, gwtest::topk_plain(3));
    other.step(1);
    const Blob ob = save(other.h);
    EXPECT_EQ(status(with(1, {ob.data(), ob.size(), 1, 0}), ok), GW_ERR_STATE_MISMATCH);
    Worker shorter(n - 1, s);
    shorter.step(1);
    const Blob sb = save(shorter.h);
    EXPECT_EQ(status(with(1, {sb.data(), sb.size(), 1, 0}), ok), GW_ERR_STATE_MISSING);
    Worker plain(n, s, GW_MOMENTUM_NONE);
    const Blob pb = save(plain.h);
    EXPECT_EQ(status(with(1, {pb.data(), pb.size(), 1, 0}), ok), GW_ERR_STATE_MISMATCH);
    Worker fresh(n, s);  // step 0 beside steps 1
    const Blob fb = save(fresh.h);
    EXPECT_EQ(status(with(1, {fb.data(), fb.size(), 1, 0}), ok), GW_ERR_STATE_MISMATCH);

    // A server mid-round is refused.
    gw_server_options so = GW_SERVER_OPTIONS_INIT;
    so.total = n, so.offset = 0, so.length = n, so.num_workers = 2, so.check_tag = 0;
    gw_server* sv = nullptr;
    ASSERT_EQ(gw_server_create(&sv, &so, codec(GW_CODEC_SCALED_SIGN), nullptr), GW_OK);
    const Blob f = gwtest::encode(codec(GW_CODEC_SCALED_SIGN), random_floats(n, 4));
    ASSERT_EQ(gw_server_push(sv, f.data(), f.size()), GW_OK);
    const Blob mid = save(sv);
    gw_server_free(sv);
    EXPECT_EQ(status({{mid.data(), mid.size(), 0, 0}}, target(2, 1, 0, 0, n)), GW_ERR_SEQUENCE);
    EXPECT_EQ(status({{mid.data(), mid.size(), 0, 0}, parts.p[0]}, target(2, 1, 0, 0, n)),
              GW_ERR_STATE_MISMATCH);
    // Output overlapping an input.
    Blob& in0 = parts.blobs[0];
    EXPECT_EQ(gw_reshard(parts.p.data(), 3, &ok, in0.data(), in0.size(), &written), GW_ERR_OVERLAP);
}
