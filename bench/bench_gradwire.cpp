// The benchmark suite (docs/performance.md): every kernel of the active SIMD
// table, every codec's encode / decode / decode_accumulate (every codec in
// gw_codec_list(), so a new one joins by itself) and every state machine's
// step, from 1K to 64M float32 elements, beside STREAM-style baselines run in
// the same binary on the same sizes (one read pass, copy, triad, in-place
// r[i] += g[i]), compiled for the running CPU. Every repetition of every
// operation is followed by an in-place and a read pass on the same n; after
// the table it prints the medians of those paired ratios, and the ratio to
// its own minimal traffic (the bytes its math must move, docs/performance.md)
// at the in-place pass's bandwidth.
//
//   bench_gradwire [--sizes 1024,65536,...] [google benchmark flags]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gradwire.h"
#include "codecs/chunk_select.hpp"
#include "kernels/kernels.hpp"

namespace {

// ---------------------------------------------------------------------------
// Buffers: 64-byte aligned, filled once per size.

struct AlignedFree {
    void operator()(void* p) const { std::free(p); }
};
template <class T>
using Buf = std::unique_ptr<T[], AlignedFree>;

// Zero-filled, so every page is mapped before the timing starts (a first
// touch inside the timed loop would charge page faults to the operation).
template <class T>
Buf<T> alloc(size_t n) {
    const size_t bytes = (n * sizeof(T) + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, bytes ? bytes : 64);
    if (p) std::memset(p, 0, bytes ? bytes : 64);
    return Buf<T>(static_cast<T*>(p));
}

// N(0, scale^2) values: one pool drawn once, each seed a different rotation
// of it (drawing 64M fresh normals per buffer would dominate the run).
Buf<float> normal(size_t n, uint32_t seed, float scale = 1.0f) {
    static std::vector<float> pool;
    if (pool.size() < n) {
        pool.resize(std::max<size_t>(n, 1 << 20));
        std::mt19937 rng(1);
        std::normal_distribution<float> d(0.0f, 1.0f);
        for (float& v : pool) v = d(rng);
    }
    Buf<float> v = alloc<float>(n);
    const size_t shift = (size_t(seed) * 7919) % pool.size();
    for (size_t i = 0; i < n; ++i) v[i] = scale * pool[(i + shift) % pool.size()];
    return v;
}

// ---------------------------------------------------------------------------
// The operations. Each has a name, its minimal traffic in bytes per element,
// and a maker that prepares buffers for n and returns the timed body.

using Body = std::function<void()>;
struct Op {
    std::string name;
    double bytes_per_element;  // minimal traffic
    std::function<Body(size_t n)> make;
};

std::vector<Op>& ops() {
    static std::vector<Op> v;
    return v;
}
std::map<std::string, double>& traffic() {
    static std::map<std::string, double> t;
    return t;
}

void add(const std::string& name, double bpe, std::function<Body(size_t)> make) {
    ops().push_back({name, bpe, std::move(make)});
    traffic()[name] = bpe;
}

const gw::kern::Table& T() { return gw::kern::active(); }

// Baselines: plain loops the compiler vectorizes (-O3), compiled for the
// running CPU (GCC's target_clones: one copy per x86 level, picked at load),
// so a subject using AVX-512 is not held to a baseline compiled for SSE2.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define GW_BENCH_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define GW_BENCH_CLONES
#endif

GW_BENCH_CLONES float read_pass(const float* p, size_t n) {
    // 16 independent lanes: vectorizes without reassociating a sum.
    float acc[16] = {};
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (size_t j = 0; j < 16; ++j) acc[j] += p[i + j];
    for (; i < n; ++i) acc[0] += p[i];
    float s0 = 0;
    for (float a : acc) s0 += a;
    return s0;
}
GW_BENCH_CLONES void triad_pass(float* a, const float* b, const float* c, size_t n) {
    for (size_t i = 0; i < n; ++i) a[i] = b[i] + 0.5f * c[i];
}
GW_BENCH_CLONES void inplace_pass(float* r, const float* g, size_t n) {
    for (size_t i = 0; i < n; ++i) r[i] += g[i];
}

Body make_read(size_t n) {
    auto x = std::make_shared<Buf<float>>(normal(n, 1));
    return [x, n] { benchmark::DoNotOptimize(read_pass(x->get(), n)); };
}
Body make_inplace(size_t n) {
    auto r = std::make_shared<Buf<float>>(normal(n, 1));
    auto g = std::make_shared<Buf<float>>(normal(n, 2, 1e-3f));
    return [r, g, n] {
        inplace_pass(r->get(), g->get(), n);
        benchmark::ClobberMemory();
    };
}

void baselines() {
    add("base/read", 4, make_read);
    add("base/copy", 8, [](size_t n) {
        auto a = std::make_shared<Buf<float>>(normal(n, 1));
        auto b = std::make_shared<Buf<float>>(alloc<float>(n));
        return [a, b, n] {
            std::memcpy(b->get(), a->get(), n * 4);
            benchmark::ClobberMemory();
        };
    });
    add("base/triad", 12, [](size_t n) {
        auto a = std::make_shared<Buf<float>>(alloc<float>(n));
        auto b = std::make_shared<Buf<float>>(normal(n, 1));
        auto c = std::make_shared<Buf<float>>(normal(n, 2));
        return [a, b, c, n] {
            triad_pass(a->get(), b->get(), c->get(), n);
            benchmark::ClobberMemory();
        };
    });
    add("base/inplace", 12, make_inplace);
}

// Kernels of the active table.
void kernels() {
    add("kernel/sum_abs", 4, [](size_t n) {
        auto x = std::make_shared<Buf<float>>(normal(n, 1));
        return [x, n] { benchmark::DoNotOptimize(T().sum_abs(x->get(), n)); };
    });
    add("kernel/all_finite", 4, [](size_t n) {
        auto x = std::make_shared<Buf<float>>(normal(n, 1));
        return [x, n] { benchmark::DoNotOptimize(T().all_finite(x->get(), n)); };
    });
    add("kernel/all_kept", 4, [](size_t n) {
        auto x = std::make_shared<Buf<float>>(normal(n, 1));
        return [x, n] { benchmark::DoNotOptimize(T().all_kept(x->get(), n, 0.0f)); };
    });
    add("kernel/max_abs_key", 4, [](size_t n) {
        auto x = std::make_shared<Buf<float>>(normal(n, 1));
        return [x, n] { benchmark::DoNotOptimize(T().max_abs_key(x->get(), n)); };
    });
    add("kernel/ef_combine", 16, [](size_t n) {
        auto g = std::make_shared<Buf<float>>(normal(n, 1));
        auto m = std::make_shared<Buf<float>>(normal(n, 2));
        auto e = std::make_shared<Buf<float>>(normal(n, 3));
        auto p = std::make_shared<Buf<float>>(alloc<float>(n));
        return [=] {
            T().ef_combine(g->get(), m->get(), e->get(), {0.9f, 1.0f, 0.9f, 1.0f, 1.0f}, p->get(), n);
        };
    });
    // The worker step's two fused passes (feedback/fused_sign.hpp), Nesterov.
    add("kernel/ef_sum_abs_lanes", 12, [](size_t n) {
        auto g = std::make_shared<Buf<float>>(normal(n, 1));
        auto m = std::make_shared<Buf<float>>(normal(n, 2));
        auto e = std::make_shared<Buf<float>>(normal(n, 3));
        return [=] {
            double lanes[16] = {};
            T().ef_sum_abs_lanes(g->get(), m->get(), e->get(), {0.9f, 1.0f, 0.9f, 1.0f, 1.0f}, n,
                                 lanes);
            benchmark::DoNotOptimize(lanes);
        };
    });
    add("kernel/ef_sign_step", 20.125, [](size_t n) {
        auto g = std::make_shared<Buf<float>>(normal(n, 1));
        auto m = std::make_shared<Buf<float>>(normal(n, 2));
        auto e = std::make_shared<Buf<float>>(normal(n, 3));
        auto bits = std::make_shared<Buf<uint8_t>>(alloc<uint8_t>(n / 8 + 1));
        return [=] {
            T().ef_sign_step(g->get(), m->get(), e->get(), {0.9f, 1.0f, 0.9f, 1.0f, 1.0f}, 0.5f, n,
                             bits->get(), e->get(), m->get());
        };
    });
    add("kernel/ef_sign_defer", 20.125, [](size_t n) {  // both in one pass
        auto g = std::make_shared<Buf<float>>(normal(n, 1));
        auto m = std::make_shared<Buf<float>>(normal(n, 2));
        auto e = std::make_shared<Buf<float>>(normal(n, 3));
        auto bits = std::make_shared<Buf<uint8_t>>(alloc<uint8_t>(n / 8 + 1));
        return [=] {
            double lanes[16] = {};
            T().ef_sign_defer(g->get(), m->get(), e->get(), {0.9f, 1.0f, 0.9f, 1.0f, 1.0f}, 0.0f,
                              n, bits->get(), e->get(), m->get(), lanes);
            benchmark::DoNotOptimize(lanes);
        };
    });
    add("kernel/sign_pack_residual", 8.125, [](size_t n) {
        auto x = std::make_shared<Buf<float>>(normal(n, 1));
        auto e = std::make_shared<Buf<float>>(alloc<float>(n));
        auto bits = std::make_shared<Buf<uint8_t>>(alloc<uint8_t>(n / 8 + 1));
        return [=] { T().sign_pack_residual(x->get(), n, 0.5f, bits->get(), e->get()); };
    });
    add("kernel/sign_accumulate", 8.125, [](size_t n) {
        auto acc = std::make_shared<Buf<float>>(normal(n, 1));
        auto bits = std::make_shared<Buf<uint8_t>>(alloc<uint8_t>(n / 8 + 1));
        std::memset(bits->get(), 0x5A, n / 8 + 1);
        return [=] { T().sign_accumulate(bits->get(), n, 1e-3f, acc->get()); };
    });
    add("kernel/f32_to_f16", 6, [](size_t n) {
        auto x = std::make_shared<Buf<float>>(normal(n, 1));
        auto h = std::make_shared<Buf<uint16_t>>(alloc<uint16_t>(n));
        return [=] { T().f32_to_f16(x->get(), h->get(), n); };
    });
    add("kernel/f32_to_bf16", 6, [](size_t n) {
        auto x = std::make_shared<Buf<float>>(normal(n, 1));
        auto h = std::make_shared<Buf<uint16_t>>(alloc<uint16_t>(n));
        return [=] { T().f32_to_bf16(x->get(), h->get(), n); };
    });
    // The quantizers' stream (one Philox word per element, written) and their
    // stochastic rounding (x and the words read, codes written), 4-bit grid.
    add("kernel/rng_u32", 4, [](size_t n) {
        auto w = std::make_shared<Buf<uint32_t>>(alloc<uint32_t>(n));
        return [=] { T().rng_u32(7, 1, 2, 0, w->get(), n); };
    });
    add("kernel/stoch_round", 12, [](size_t n) {
        auto x = std::make_shared<Buf<float>>(normal(n, 1));
        auto w = std::make_shared<Buf<uint32_t>>(alloc<uint32_t>(n));
        auto c = std::make_shared<Buf<uint32_t>>(alloc<uint32_t>(n));
        T().rng_u32(7, 1, 2, 0, w->get(), n);
        return [=] { T().stoch_round(x->get(), n, 0.75f, -7, 7, false, w->get(), c->get(), nullptr); };
    });
    // Revision 2's rounding: a byte per element instead of a word.
    add("kernel/stoch_round8", 9, [](size_t n) {
        auto x = std::make_shared<Buf<float>>(normal(n, 1));
        auto b = std::make_shared<Buf<uint32_t>>(alloc<uint32_t>(n / 4 + 1));
        auto c = std::make_shared<Buf<uint32_t>>(alloc<uint32_t>(n));
        T().rng_u32(7, 1, 2, 0, b->get(), n / 4 + 1);
        return [=] {
            const gw::kern::StreamAt at{7, 1, 2, 0};
            T().stoch_round8(x->get(), n, 0.75f, -7, 7, false,
                             reinterpret_cast<const uint8_t*>(b->get()), at, c->get(), nullptr);
        };
    });
    // 4-bit codes packed (codes read, half a byte written per element).
    add("kernel/pack_codes_4bit", 4.5, [](size_t n) {
        auto c = std::make_shared<Buf<uint32_t>>(alloc<uint32_t>(n));
        auto o = std::make_shared<Buf<uint8_t>>(alloc<uint8_t>(n / 2 + 1));
        for (size_t i = 0; i < n; ++i) (*c)[i] = uint32_t(i * 2654435761u >> 28);
        return [=] { T().pack_codes(c->get(), n, 4, o->get()); };
    });
    add("kernel/crc32c", 4, [](size_t n) {
        auto x = std::make_shared<Buf<float>>(normal(n, 1));
        return [=] { benchmark::DoNotOptimize(T().crc32c(0, x->get(), n * 4)); };
    });
    // Exact top-k on normal values and on adversarial ones: all equal (every
    // element ties with the k-th) and few distinct values (huge tie classes).
    for (const char* dist : {"", "_all_equal", "_few_distinct"})
    for (int ppm : {1000, 10000}) {
        add("kernel/topk_select_" + std::to_string(ppm / 10000.0).substr(0, 4) + "%" + dist, 4,
            [ppm, dist = std::string(dist)](size_t n) {
                auto x = std::make_shared<Buf<float>>(normal(n, 1));
                if (dist == "_all_equal")
                    for (size_t i = 0; i < n; ++i) (*x)[i] = 0.5f;
                if (dist == "_few_distinct")  // five values, by a hash of i
                    for (size_t i = 0; i < n; ++i) (*x)[i] = float(int((i * 2654435761u) >> 29 & 7) % 5 - 2);
                const size_t k = std::max<size_t>(1, size_t(double(n) * ppm / 1e6));
                auto idx = std::make_shared<Buf<uint32_t>>(alloc<uint32_t>(k));
                const size_t bytes = gw::kern::topk_scratch_bytes(n, k);
                auto s = std::make_shared<Buf<uint8_t>>(alloc<uint8_t>(bytes));
                return [=] { T().topk_select(x->get(), n, k, idx->get(), s->get(), bytes); };
            });
    }
}

// The chunk-wise selection alone (ScaleCom's, the chunk_topk and index
// codecs' first stage): k = 1% in chunks of 4096 and 65536 elements.
void selections() {
    for (uint64_t chunk : {4096u, 65536u})
        add("select/chunk_topk_1%_c" + std::to_string(chunk), 4, [chunk](size_t n) {
            auto x = std::make_shared<Buf<float>>(normal(n, 1));
            const uint64_t k = std::max<uint64_t>(1, n / 100);
            const gw::chunks::Shares sh(gw::chunks::kRuleExact, k, n, chunk);
            auto idx = std::make_shared<Buf<uint32_t>>(alloc<uint32_t>(sh.total()));
            auto s = std::make_shared<Buf<uint8_t>>(alloc<uint8_t>(gw::kern::kTopkScratchBytes));
            return [=] {
                benchmark::DoNotOptimize(
                    gw::chunks::select(T(), x->get(), n, sh, idx->get(), s->get()));
            };
        });
}

// Every codec: encode, decode, decode_accumulate through the C API.
void codecs() {
    size_t count = 0;
    gw_codec_list(nullptr, 0, &count);
    std::vector<gw_codec_id> ids(count);
    gw_codec_list(ids.data(), count, &count);
    // Each codec with its default parameters, and scaled sign also with the
    // DDP hook's 64-element blocks (docs/distributed.md).
    std::vector<std::pair<gw_codec_id, uint32_t>> variants;
    for (gw_codec_id id : ids) {
        variants.push_back({id, 0});
        if (id == GW_CODEC_SCALED_SIGN) variants.push_back({id, 64});
    }
    for (const auto& [id, block] : variants) {
        const std::string name =
            std::string(gw_codec_name(id)) + (block ? "_block" + std::to_string(block) : "");
        struct Ctx {
            gw_codec_spec* spec = nullptr;
            Buf<float> x, out;
            std::vector<uint8_t> frame;
            size_t written = 0;
            ~Ctx() { gw_codec_spec_free(spec); }
        };
        auto make_ctx = [id = id, block = block](size_t n) {
            auto c = std::make_shared<Ctx>();
            gw_codec_spec_create(&c->spec, id);
            if (block) gw_codec_spec_set(c->spec, GW_PARAM_BLOCK_SIZE, block);
            if (id == GW_CODEC_INDEX || id == GW_CODEC_CHUNK_TOPK)
                gw_codec_spec_set(c->spec, GW_PARAM_CHUNK_SIZE, 4096);
            // The default threshold (1e-3) keeps 99.9% of these N(0, 1) values;
            // 2.5758 keeps 1%, the top-k codecs' default density.
            if (id == GW_CODEC_THRESHOLD) {
                const float t = 2.5758f;
                uint32_t bits;
                std::memcpy(&bits, &t, 4);
                gw_codec_spec_set(c->spec, GW_PARAM_THRESHOLD, bits);
            }
            c->x = normal(n, 1);
            c->out = normal(n, 2);
            size_t bound = 0;
            gw_encode_bound(c->spec, n, &bound);
            c->frame.resize(bound);
            gw_encode(c->spec, nullptr, c->x.get(), GW_DTYPE_F32, n, c->frame.data(), bound,
                      &c->written);
            return c;
        };
        // Minimal traffic: the floats in or out (and the accumulator read and
        // written) plus the frame's bytes per element, measured on 64K normal values.
        const double fb = double(make_ctx(65536)->written) / 65536.0;
        add("encode/" + name, 4 + fb, [make_ctx](size_t n) {
            auto c = make_ctx(n);
            return [c, n] {
                gw_encode(c->spec, nullptr, c->x.get(), GW_DTYPE_F32, n, c->frame.data(),
                          c->frame.size(), &c->written);
            };
        });
        add("decode/" + name, 4 + fb, [make_ctx](size_t n) {
            auto c = make_ctx(n);
            return [c, n] { gw_decode(c->frame.data(), c->written, c->out.get(), n, nullptr); };
        });
        add("decode_accumulate/" + name, 8 + fb, [make_ctx](size_t n) {
            auto c = make_ctx(n);
            return [c, n] {
                gw_decode_accumulate(c->frame.data(), c->written, 1e-3f, c->out.get(), n);
            };
        });
    }
}

// `count` scaled-sign frames (one block) of n normal values.
std::vector<std::vector<uint8_t>> sign_frames(size_t n, int count, uint32_t seed,
                                              int block = 0) {
    std::vector<std::vector<uint8_t>> frames;
    gw_codec_spec* spec = nullptr;
    gw_codec_spec_create(&spec, GW_CODEC_SCALED_SIGN);
    gw_codec_spec_set(spec, GW_PARAM_BLOCK_SIZE, block);
    for (int w = 0; w < count; ++w) {
        Buf<float> g = normal(n, seed + w);
        size_t bound = 0, written = 0;
        gw_encode_bound(spec, n, &bound);
        frames.emplace_back(bound);
        gw_encode(spec, nullptr, g.get(), GW_DTYPE_F32, n, frames.back().data(), bound, &written);
        frames.back().resize(written);
    }
    gw_codec_spec_free(spec);
    return frames;
}

// State machines.
void machines() {
    struct W {
        gw_worker* h = nullptr;
        gw_codec_spec* spec = nullptr;
        Buf<float> g;
        std::vector<uint8_t> frame;
        ~W() {
            gw_worker_free(h);
            gw_codec_spec_free(spec);
        }
    };
    const struct {
        const char* name;
        gw_momentum mom;
        double bpe;
    } kinds[] = {{"none", GW_MOMENTUM_NONE, 12.125},
                 {"nesterov", GW_MOMENTUM_NESTEROV, 20.125},
                 {"signum", GW_MOMENTUM_SIGNUM, 20.125}};
    for (const auto& k : kinds)
        for (uint32_t block : {0u, 4096u, 64u}) {  // 64: the DDP hook's `ef`
            const std::string nm = std::string("worker_step/") + k.name +
                                   (block ? "_block" + std::to_string(block) : "_tensor");
            const gw_momentum mom = k.mom;
            add(nm, k.bpe, [mom, block](size_t n) {
                auto w = std::make_shared<W>();
                gw_codec_spec_create(&w->spec, GW_CODEC_SCALED_SIGN);
                gw_codec_spec_set(w->spec, GW_PARAM_BLOCK_SIZE, block);
                gw_worker_options o = GW_WORKER_OPTIONS_INIT;
                o.n = n;
                o.momentum = mom;
                o.mu = mom == GW_MOMENTUM_NONE ? 0.0f : 0.9f;
                gw_worker_create(&w->h, &o, w->spec);
                size_t bound = 0, written = 0;
                gw_worker_frame_bound(w->h, &bound);
                w->frame.resize(bound);
                w->g = normal(n, 5);
                gw_worker_step(w->h, w->g.get(), GW_DTYPE_F32, n, 0.1f, w->frame.data(), bound,
                               &written);
                return [w, n] {
                    size_t written = 0;
                    gw_worker_step(w->h, w->g.get(), GW_DTYPE_F32, n, 0.1f, w->frame.data(),
                                   w->frame.size(), &written);
                };
            });
        }
    // A server round: M = 4 scaled-sign frames, then the step; pushed one by
    // one, and in one gw_server_round call; one block per tensor, and (in one
    // call) 4096- and 64-element blocks, which go in one pass. Minimal traffic: 4
    // frames in (n/8 each), the residual read and written, one frame out.
    // 64-element blocks: the DDP hook's `ef`.
    for (int mode : {0, 1, 2, 3}) {
        const bool at_once = mode > 0;
        const int block = mode == 2 ? 4096 : mode == 3 ? 64 : 0;
        add(mode == 0   ? "server_round/M4"
            : mode == 1 ? "server_round_call/M4"
                        : "server_round_call/M4_block" + std::to_string(block),
            8 + 5.0 / 8, [at_once, block](size_t n) {
            struct S {
                gw_server* h = nullptr;
                gw_codec_spec* spec = nullptr;
                std::vector<std::vector<uint8_t>> frames;
                std::vector<const void*> ptr;
                std::vector<size_t> size;
                std::vector<uint8_t> out;
                ~S() {
                    gw_server_free(h);
                    gw_codec_spec_free(spec);
                }
            };
            auto s = std::make_shared<S>();
            gw_codec_spec_create(&s->spec, GW_CODEC_SCALED_SIGN);
            gw_codec_spec_set(s->spec, GW_PARAM_BLOCK_SIZE, block);
            gw_server_options o = GW_SERVER_OPTIONS_INIT;
            o.total = o.length = n;
            o.num_workers = 4;
            o.check_tag = 0;
            gw_server_create(&s->h, &o, s->spec, s->spec);
            s->frames = sign_frames(n, 4, 10, block);
            for (const auto& f : s->frames) {
                s->ptr.push_back(f.data());
                s->size.push_back(f.size());
            }
            size_t bound = 0;
            gw_server_frame_bound(s->h, &bound);
            s->out.resize(bound);
            return [s, at_once] {
                size_t written = 0;
                if (at_once) {
                    gw_server_round(s->h, s->ptr.data(), s->size.data(), 4, 0.1f, s->out.data(),
                                    s->out.size(), &written, nullptr);
                    return;
                }
                for (const auto& f : s->frames) gw_server_push(s->h, f.data(), f.size());
                gw_server_step(s->h, 0.1f, s->out.data(), s->out.size(), &written);
            };
        });
    }
    // Eight scaled-sign frames into one accumulator (a server or an
    // all-gather receiver): minimal traffic is the accumulator once plus the frames.
    add("decode_accumulate_x8/scaled_sign", 8 + 8.0 / 8, [](size_t n) {
        struct D {
            std::vector<std::vector<uint8_t>> frames;
            Buf<float> acc;
        };
        auto d = std::make_shared<D>();
        d->frames = sign_frames(n, 8, 20);
        d->acc = normal(n, 30);
        return [d, n] {
            for (const auto& f : d->frames)
                gw_decode_accumulate(f.data(), f.size(), 0.125f, d->acc.get(), n);
        };
    });
    // The same eight frames in one gw_decode_accumulate_many call (tiled).
    add("decode_accumulate_many_x8/scaled_sign", 8 + 8.0 / 8, [](size_t n) {
        struct D {
            std::vector<std::vector<uint8_t>> frames;
            std::vector<const void*> ptr;
            std::vector<size_t> size;
            Buf<float> acc;
        };
        auto d = std::make_shared<D>();
        d->frames = sign_frames(n, 8, 20);
        for (const auto& f : d->frames) {
            d->ptr.push_back(f.data());
            d->size.push_back(f.size());
        }
        d->acc = normal(n, 30);
        return [d, n] {
            gw_decode_accumulate_many(d->ptr.data(), d->size.data(), 8, 0.125f, d->acc.get(), n,
                                      nullptr);
        };
    });
    // LAGS layer step, top-k 0.1%: acc = eps + lr g, select, eps = acc - sent.
    add("lags_step/topk0.1%", 12, [](size_t n) {
        struct L {
            gw_lags_layer* h = nullptr;
            gw_codec_spec* spec = nullptr;
            Buf<float> g;
            std::vector<uint8_t> frame;
            ~L() {
                gw_lags_layer_free(h);
                gw_codec_spec_free(spec);
            }
        };
        auto l = std::make_shared<L>();
        gw_codec_spec_create(&l->spec, GW_CODEC_TOPK);
        gw_codec_spec_set(l->spec, GW_PARAM_DENSITY_PPM, 1000);
        gw_lags_layer_options o = GW_LAGS_LAYER_OPTIONS_INIT;
        o.n = n;
        gw_lags_layer_create(&l->h, &o, l->spec);
        size_t bound = 0;
        gw_lags_layer_frame_bound(l->h, &bound);
        l->frame.resize(bound);
        l->g = normal(n, 6);
        return [l, n] {
            size_t written = 0;
            gw_lags_layer_step(l->h, l->g.get(), GW_DTYPE_F32, n, 0.1f, l->frame.data(),
                               l->frame.size(), &written);
        };
    });
    // AsyLPG: the worker's quantized gradient difference (4 bits) and the
    // master's model message (8 bits) plus the prox update from it.
    add("asylpg/worker_step_b4", 8.5, [](size_t n) {
        struct A {
            gw_asylpg_worker* w = nullptr;
            gw_asylpg_master* m = nullptr;
            gw_codec_spec* spec = nullptr;
            Buf<float> gm, gs;
            std::vector<uint8_t> frame;
            ~A() {
                gw_asylpg_worker_free(w);
                gw_asylpg_master_free(m);
                gw_codec_spec_free(spec);
            }
        };
        auto a = std::make_shared<A>();
        gw_codec_spec_create(&a->spec, GW_CODEC_QUANT);
        gw_codec_spec_set(a->spec, GW_PARAM_BITS, 4);
        gw_asylpg_worker_options wo = GW_ASYLPG_WORKER_OPTIONS_INIT;
        wo.n = n;
        gw_asylpg_worker_create(&a->w, &wo, a->spec);
        a->gm = normal(n, 7);
        a->gs = normal(n, 8);
        gw_asylpg_worker_set_snapshot(a->w, a->gs.get(), n);
        gw_asylpg_master_options mo = GW_ASYLPG_MASTER_OPTIONS_INIT;
        mo.n = n;
        mo.epoch_length = 1u << 30;
        gw_asylpg_master_create(&a->m, &mo, a->gs.get(), n);
        gw_asylpg_master_begin_epoch(a->m, a->gm.get(), n);
        size_t bound = 0, written = 0;
        unsigned bits = 0;
        gw_asylpg_master_frame_bound(a->m, &bound);
        a->frame.resize(bound);
        gw_asylpg_master_model(a->m, a->frame.data(), bound, &written, &bits);
        gw_asylpg_worker_receive(a->w, a->frame.data(), written);
        return [a, n] {
            size_t written = 0;
            gw_asylpg_worker_step(a->w, a->gm.get(), a->gs.get(), GW_DTYPE_F32, n,
                                  a->frame.data(), a->frame.size(), &written);
        };
    });
}

// The caller's threads splitting a tensor by ranges (the library has none):
// the in-place pass and the Nesterov worker step (one handle per half) on two
// threads; their speed-up over one thread is compared in docs/performance.md.
void two_threads() {
    add("threads2/inplace", 12, [](size_t n) {
        auto r = std::make_shared<Buf<float>>(normal(n, 1));
        auto g = std::make_shared<Buf<float>>(normal(n, 2, 1e-3f));
        return [r, g, n] {
            auto half = [&](size_t a, size_t b) {
                float* rp = r->get();
                const float* gp = g->get();
                for (size_t i = a; i < b; ++i) rp[i] += gp[i];
            };
            std::thread t(half, 0, n / 2);
            half(n / 2, n);
            t.join();
            benchmark::ClobberMemory();
        };
    });
    add("threads2/worker_step_nesterov", 20.125, [](size_t n) {
        struct H {
            gw_worker* h[2] = {nullptr, nullptr};
            gw_codec_spec* spec = nullptr;
            Buf<float> g;
            std::vector<uint8_t> frame[2];
            ~H() {
                gw_worker_free(h[0]);
                gw_worker_free(h[1]);
                gw_codec_spec_free(spec);
            }
        };
        auto w = std::make_shared<H>();
        gw_codec_spec_create(&w->spec, GW_CODEC_SCALED_SIGN);
        const size_t len[2] = {n / 2, n - n / 2};
        for (int k = 0; k < 2; ++k) {
            gw_worker_options o = GW_WORKER_OPTIONS_INIT;
            o.n = len[k];
            gw_worker_create(&w->h[k], &o, w->spec);
            size_t bound = 0;
            gw_worker_frame_bound(w->h[k], &bound);
            w->frame[k].resize(bound);
        }
        w->g = normal(n, 5);
        for (int k = 0; k < 2; ++k) {  // a first step maps the handles' pages
            size_t written = 0;
            gw_worker_step(w->h[k], w->g.get() + (k ? len[0] : 0), GW_DTYPE_F32, len[k], 0.1f,
                           w->frame[k].data(), w->frame[k].size(), &written);
        }
        return [w, n, len0 = len[0], len1 = len[1]] {
            auto step = [&](int k, const float* g, size_t m) {
                size_t written = 0;
                gw_worker_step(w->h[k], g, GW_DTYPE_F32, m, 0.1f, w->frame[k].data(),
                               w->frame[k].size(), &written);
            };
            std::thread t(step, 0, w->g.get(), len0);
            step(1, w->g.get() + len0, len1);
            t.join();
            (void)n;
        };
    });
}

std::vector<int64_t>& sizes() {
    static std::vector<int64_t> s = {1 << 10, 1 << 16, 1 << 20, 1 << 24, 1 << 26};
    return s;
}

double median(std::vector<double> v) {
    if (v.empty()) return NAN;
    std::sort(v.begin(), v.end());
    const size_t h = v.size() / 2;
    return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

// Collects each run's time and paired ratios so they can be printed after the table.
class RatioReporter : public benchmark::ConsoleReporter {
  public:
    RatioReporter() : benchmark::ConsoleReporter(OO_None) {}  // plain text (logs, pipes)
    void ReportRuns(const std::vector<Run>& runs) override {
        for (const Run& r : runs) {
            if (r.run_type == Run::RT_Aggregate && r.aggregate_name != "median") continue;
            std::string name = r.benchmark_name();
            for (const char* tail : {"_median", "/manual_time"}) {
                const size_t at = name.find(tail);
                if (at != std::string::npos) name = name.substr(0, at);
            }
            Row& row = rows_[name];
            row.t = r.GetAdjustedRealTime();  // per iteration, in the run's unit (us)
            const auto in = r.counters.find("x_inplace"), rd = r.counters.find("x_read");
            row.x_in = in == r.counters.end() ? NAN : double(in->second);
            row.x_read = rd == r.counters.end() ? NAN : double(rd->second);
        }
        ConsoleReporter::ReportRuns(runs);
    }
    void Finalize() override {
        ConsoleReporter::Finalize();
        std::printf("\nratios paired in each repetition (median of the ratios): x in-place = time /"
                    " time of r[i] += g[i] on the same n;\nx traffic = time / (minimal bytes / "
                    "in-place bandwidth); x read = time / time of one read pass; GB/s of minimal "
                    "traffic\n");
        std::printf("%-40s %10s %13s %10s %10s %8s %8s\n", "operation", "n", "time", "x in-place",
                    "x traffic", "x read", "GB/s");
        for (const auto& [name, row] : rows_) {
            const size_t slash = name.rfind('/');
            const std::string op = name.substr(0, slash), n_str = name.substr(slash + 1);
            const double n = std::stod(n_str), bpe = traffic()[op];
            // The in-place pass moves 12 bytes per element: at its bandwidth the
            // minimal traffic takes bpe / 12 of its time.
            const double x_traffic = row.x_in * 12.0 / bpe;
            // times are in the benchmark's unit (us): bytes / us = MB/s
            std::printf("%-40s %10.0f %10.3f us %10.2f %10.2f %8.2f %8.2f\n", op.c_str(), n, row.t,
                        row.x_in, x_traffic, row.x_read, bpe * n / row.t / 1e3);
        }
    }

  private:
    struct Row {
        double t = 0, x_in = NAN, x_read = NAN;
    };
    std::map<std::string, Row> rows_;
};

}  // namespace

int main(int argc, char** argv) {
    std::vector<char*> args;
    std::vector<int64_t>& sz = sizes();
    for (int i = 0; i < argc; ++i) {
        if (std::strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
            sz.clear();
            for (char* p = argv[++i]; *p;) {
                sz.push_back(std::strtoll(p, &p, 10));
                if (*p == ',') ++p;
            }
            continue;
        }
        args.push_back(argv[i]);
    }
    int ac = static_cast<int>(args.size());
    baselines();
    kernels();
    selections();
    codecs();
    machines();
    two_threads();
    for (const Op& op : ops()) {
        auto* b = benchmark::RegisterBenchmark(op.name.c_str(), [op](benchmark::State& st) {
            const size_t n = static_cast<size_t>(st.range(0));
            Body body = op.make(n);
            Body inplace = make_inplace(n), read = make_read(n);
            body();  // once untimed: a handle's state buffers get their pages mapped
            inplace();
            read();
            // Each repetition times the subject, then the in-place and the read
            // pass on the same n: bandwidth drift reaches all three alike, and
            // the ratios are the medians of the per-repetition ratios.
            std::vector<double> x_in, x_rd;
            using Clock = std::chrono::steady_clock;
            for (auto _ : st) {
                const auto t0 = Clock::now();
                body();
                const auto t1 = Clock::now();
                inplace();
                const auto t2 = Clock::now();
                read();
                const auto t3 = Clock::now();
                const double ts = std::chrono::duration<double>(t1 - t0).count();
                st.SetIterationTime(ts);
                x_in.push_back(ts / std::chrono::duration<double>(t2 - t1).count());
                x_rd.push_back(ts / std::chrono::duration<double>(t3 - t2).count());
            }
            st.counters["x_inplace"] = median(x_in);
            st.counters["x_read"] = median(x_rd);
            st.SetItemsProcessed(int64_t(st.iterations()) * int64_t(n));
            st.SetBytesProcessed(
                int64_t(double(st.iterations()) * double(n) * op.bytes_per_element));
        });
        for (int64_t n : sz) b->Arg(n);
        b->Unit(benchmark::kMicrosecond)->UseManualTime();
    }
    benchmark::Initialize(&ac, args.data());
    RatioReporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    benchmark::Shutdown();
    return 0;
}
