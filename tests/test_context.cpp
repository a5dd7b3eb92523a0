// Handle backends (options version 2): each handle's kernels and allocator.
// A handle given an allocator takes every byte from it (malloc is counted
// here, by interposing it); handles of different targets and allocators run
// side by side and write the same bytes; version-1 callers are unaffected.
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "../c_api/handles.hpp"  // which kernel table a handle holds
#include "gradwire.h"
#include "test_util.hpp"

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define GW_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GW_SANITIZED 1
#endif

namespace {

std::atomic<bool> g_counting{false};
std::atomic<long> g_malloc_calls{0};

}  // namespace

#if !defined(GW_SANITIZED) && defined(__GLIBC__)
// glibc's own entry points behind malloc: this program's malloc family counts
// the calls made while g_counting is set, then forwards. (Sanitizers bring
// their own malloc, so their builds skip the count.)
#define GW_COUNTS_MALLOC 1
extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void __libc_free(void*);
}
namespace {
void note() {
    if (g_counting.load(std::memory_order_relaxed))
        g_malloc_calls.fetch_add(1, std::memory_order_relaxed);
}
void* raw_aligned(size_t align, size_t size) { return __libc_memalign(align, size); }
void raw_free(void* p) { __libc_free(p); }
}  // namespace
extern "C" {
void* malloc(size_t n) {
    note();
    return __libc_malloc(n);
}
void* calloc(size_t a, size_t b) {
    note();
    return __libc_calloc(a, b);
}
void* realloc(void* p, size_t n) {
    note();
    return __libc_realloc(p, n);
}
void* aligned_alloc(size_t a, size_t n) {
    note();
    return __libc_memalign(a, n);
}
void* memalign(size_t a, size_t n) {
    note();
    return __libc_memalign(a, n);
}
int posix_memalign(void** p, size_t a, size_t n) {
    note();
    *p = __libc_memalign(a, n);
    return *p ? 0 : ENOMEM;
}
void free(void* p) {
    if (p) note();
    __libc_free(p);
}
}
#else
namespace {
void* raw_aligned(size_t align, size_t size) {
    return std::aligned_alloc(align, (size + align - 1) / align * align);
}
void raw_free(void* p) { std::free(p); }
}  // namespace
#endif

namespace {

// The caller's allocator: counts what it hands out and takes back, checks
// the alignment it is asked for, and fails from the `fail_at`-th call on.
struct Pool {
    std::atomic<long> allocs{0}, frees{0}, bad_align{0};
    long fail_at = -1;
    gw_allocator api{&Pool::alloc, &Pool::release, this};

    static void* alloc(void* user, size_t size, size_t align) {
        Pool* p = static_cast<Pool*>(user);
        if (align == 0 || (align & (align - 1)) != 0 || align > 64) p->bad_align++;
        if (p->fail_at >= 0 && p->allocs.load() >= p->fail_at) return nullptr;
        p->allocs++;
        return raw_aligned(align < sizeof(void*) ? sizeof(void*) : align, size ? size : 1);
    }
    static void release(void* user, void* q) {
        static_cast<Pool*>(user)->frees++;
        raw_free(q);
    }
    long live() const { return allocs.load() - frees.load(); }
};

gw_codec_spec* spec(gw_codec_id id, std::initializer_list<std::pair<gw_param, int64_t>> ps = {}) {
    gw_codec_spec* s = nullptr;
    EXPECT_EQ(gw_codec_spec_create(&s, id), GW_OK);
    for (auto [k, v] : ps) EXPECT_EQ(gw_codec_spec_set(s, k, v), GW_OK);
    return s;
}

// Half-precision bits of the floats (inputs for the f16 paths).
std::vector<uint16_t> to_f16(const std::vector<float>& x) {
    gw_codec_spec* s = spec(GW_CODEC_FP16);
    size_t bound = 0;
    EXPECT_EQ(gw_encode_bound(s, x.size(), &bound), GW_OK);
    std::vector<uint8_t> frame(bound);
    size_t written = 0;
    EXPECT_EQ(
        gw_encode(s, nullptr, x.data(), GW_DTYPE_F32, x.size(), frame.data(), bound, &written),
        GW_OK);
    // The payload is little-endian; the handles take f16 input in host order.
    const uint8_t* p = frame.data() + written - 4 - 2 * x.size();
    std::vector<uint16_t> h(x.size());
    for (size_t i = 0; i < h.size(); ++i) h[i] = uint16_t(p[2 * i] | p[2 * i + 1] << 8);
    gw_codec_spec_free(s);
    return h;
}

constexpr uint64_t kN = 40000;

// Everything one test round needs, allocated before malloc is watched.
struct Inputs {
    std::vector<float> g = gwtest::random_floats(kN, 1), g2 = gwtest::random_floats(kN, 2);
    std::vector<uint16_t> h = to_f16(g);
    std::vector<uint8_t> f1 = std::vector<uint8_t>(1 << 20), f2 = std::vector<uint8_t>(1 << 20),
                         f3 = std::vector<uint8_t>(1 << 20), blob = std::vector<uint8_t>(1 << 20);
    std::vector<float> vals = std::vector<float>(kN), x = std::vector<float>(kN);
    gw_codec_spec *topk = spec(GW_CODEC_TOPK, {{GW_PARAM_K, 400}, {GW_PARAM_ZSTD, 1}}),
                  *sign = spec(GW_CODEC_SCALED_SIGN, {{GW_PARAM_BLOCK_SIZE, 4096}}),
                  *index = spec(GW_CODEC_INDEX, {{GW_PARAM_K, 400}}),
                  *quant = spec(GW_CODEC_QUANT, {{GW_PARAM_BITS, 4}});
    ~Inputs() {
        for (gw_codec_spec* s : {topk, sign, index, quant}) gw_codec_spec_free(s);
    }
};

// Version-2 options name the handle's backend.
template <class Options>
void use(Options& o, gw_simd_target simd, const gw_allocator* a) {
    o.simd = simd;
    o.allocator = a;
}

// Steps, checkpoints and frees one handle of every kind with the backend
// (target, allocator); every status goes into `st` (no test macro runs while
// malloc is counted).
void exercise(Inputs& in, gw_simd_target simd, const gw_allocator* a, std::vector<gw_status>& st) {
    auto ok = [&](gw_status s) {
        st.push_back(s);
        return s == GW_OK;
    };
    size_t w1 = 0, w2 = 0, w3 = 0, saved = 0, count = 0;
    {  // worker: top-k with the zstd stage, from f16 input; saved and loaded back
        gw_worker_options o = GW_WORKER_OPTIONS_INIT;
        o.n = kN;
        use(o, simd, a);
        gw_worker* w = nullptr;
        if (ok(gw_worker_create(&w, &o, in.topk))) {
            for (int s = 0; s < 3; ++s)
                ok(gw_worker_step(w, in.h.data(), GW_DTYPE_F16, kN, 0.1f, in.f1.data(),
                                  in.f1.size(), &w1));
            ok(gw_worker_save(w, in.blob.data(), in.blob.size(), &saved));
            ok(gw_worker_load(w, in.blob.data(), saved));
            gw_worker_free(w);
        }
    }
    {  // two scaled-sign workers and their server, a whole round
        gw_worker_options o = GW_WORKER_OPTIONS_INIT;
        o.n = kN;
        use(o, simd, a);
        gw_server_options so = GW_SERVER_OPTIONS_INIT;
        so.total = so.length = kN;
        so.num_workers = 2;
        use(so, simd, a);
        gw_worker *wa = nullptr, *wb = nullptr;
        gw_server* sv = nullptr;
        if (ok(gw_worker_create(&wa, &o, in.sign)) && ok(gw_worker_create(&wb, &o, in.sign)) &&
            ok(gw_server_create(&sv, &so, in.sign, in.sign))) {
            ok(gw_worker_step(wa, in.g.data(), GW_DTYPE_F32, kN, 0.1f, in.f1.data(), in.f1.size(),
                              &w1));
            ok(gw_worker_step(wb, in.g2.data(), GW_DTYPE_F32, kN, 0.1f, in.f2.data(), in.f2.size(),
                              &w2));
            const void* frames[2] = {in.f1.data(), in.f2.data()};
            const size_t sizes[2] = {w1, w2};
            ok(gw_server_round(sv, frames, sizes, 2, 0.1f, in.f3.data(), in.f3.size(), &w3,
                               nullptr));
            ok(gw_server_save(sv, in.blob.data(), in.blob.size(), &saved));
            ok(gw_server_load(sv, in.blob.data(), saved));
        }
        gw_server_free(sv);
        gw_worker_free(wa);
        gw_worker_free(wb);
    }
    {  // CLT-k, one worker: warm-up round, then a compressed one
        gw_cltk_options o = GW_CLTK_OPTIONS_INIT;
        o.n = kN;
        o.warmup_steps = 1;
        use(o, simd, a);
        gw_cltk* c = nullptr;
        if (ok(gw_cltk_create(&c, &o, in.index))) {
            ok(gw_cltk_begin(c, in.g.data(), GW_DTYPE_F32, kN, 0.1f));
            ok(gw_cltk_extract(c, nullptr, 0, in.vals.data(), kN, &count));
            ok(gw_cltk_apply(c, in.vals.data(), count, in.x.data(), kN));
            ok(gw_cltk_begin(c, in.h.data(), GW_DTYPE_F16, kN, 0.1f));
            ok(gw_cltk_select(c, in.f1.data(), in.f1.size(), &w1));
            ok(gw_cltk_extract(c, in.f1.data(), w1, in.vals.data(), kN, &count));
            ok(gw_cltk_apply(c, in.vals.data(), count, in.x.data(), kN));
            ok(gw_cltk_save(c, in.blob.data(), in.blob.size(), &saved));
            ok(gw_cltk_load(c, in.blob.data(), saved));
            gw_cltk_free(c);
        }
    }
    {  // a LAGS layer
        gw_lags_layer_options o = GW_LAGS_LAYER_OPTIONS_INIT;
        o.n = kN;
        use(o, simd, a);
        gw_lags_layer* l = nullptr;
        if (ok(gw_lags_layer_create(&l, &o, in.topk))) {
            ok(gw_lags_layer_step(l, in.h.data(), GW_DTYPE_F16, kN, 0.1f, in.f1.data(),
                                  in.f1.size(), &w1));
            gw_lags_layer_free(l);
        }
    }
    {  // a fusion buffer
        gw_fusion_options o = GW_FUSION_OPTIONS_INIT;
        o.layers = 2;
        use(o, simd, a);
        gw_fusion* f = nullptr;
        int flush = 0;
        if (ok(gw_fusion_create(&f, &o))) {
            ok(gw_fusion_add(f, 1, in.f1.data(), w1, &flush));
            ok(gw_fusion_add(f, 0, in.f3.data(), w3, &flush));
            ok(gw_fusion_flush(f, in.f2.data(), in.f2.size(), &w2));
            gw_fusion_free(f);
        }
    }
    {  // AsyLPG: a model message, a worker's quantized gradient, the master's update
        gw_asylpg_master_options mo = GW_ASYLPG_MASTER_OPTIONS_INIT;
        mo.n = kN;
        mo.epoch_length = 4;
        mo.bits_min = 2;
        mo.bits_max = 8;
        use(mo, simd, a);
        gw_asylpg_worker_options wo = GW_ASYLPG_WORKER_OPTIONS_INIT;
        wo.n = kN;
        use(wo, simd, a);
        gw_asylpg_master* m = nullptr;
        gw_asylpg_worker* w = nullptr;
        unsigned bits = 0;
        uint64_t version = 0;
        if (ok(gw_asylpg_master_create(&m, &mo, in.g.data(), kN)) &&
            ok(gw_asylpg_worker_create(&w, &wo, in.quant))) {
            ok(gw_asylpg_master_snapshot(m, in.x.data(), kN));
            ok(gw_asylpg_worker_set_snapshot(w, in.x.data(), kN));
            ok(gw_asylpg_master_begin_epoch(m, in.g2.data(), kN));
            ok(gw_asylpg_master_model(m, in.f1.data(), in.f1.size(), &w1, &bits));
            ok(gw_asylpg_worker_receive(w, in.f1.data(), w1));
            ok(gw_asylpg_worker_model(w, in.x.data(), kN, &version));
            ok(gw_asylpg_worker_step(w, in.g.data(), in.g2.data(), GW_DTYPE_F32, kN, in.f2.data(),
                                     in.f2.size(), &w2));
            ok(gw_asylpg_master_push(m, in.f2.data(), w2));
            ok(gw_asylpg_master_model(m, in.f1.data(), in.f1.size(), &w1, &bits));
            ok(gw_asylpg_master_save(m, in.blob.data(), in.blob.size(), &saved));
            ok(gw_asylpg_master_load(m, in.blob.data(), saved));
        }
        gw_asylpg_worker_free(w);
        gw_asylpg_master_free(m);
    }
}

void expect_all_ok(const std::vector<gw_status>& st) {
    ASSERT_FALSE(st.empty());
    for (size_t i = 0; i < st.size(); ++i)
        EXPECT_EQ(st[i], GW_OK) << "call " << i << ": " << gw_status_name(st[i]);
}

TEST(Context, HandleWithAllocatorNeverCallsMalloc) {
    // Under sanitizers malloc is theirs, not counted here: the handles still
    // run on the pool, which must get every block back (the g++ pass counts).
    Inputs in;
    std::vector<gw_status> st;
    st.reserve(1000);
    Pool pool;
    // A first run with malloc (the default) shows the count sees the library.
    g_malloc_calls = 0;
    g_counting = true;
    exercise(in, GW_SIMD_AUTO, nullptr, st);
    g_counting = false;
    const long with_malloc = g_malloc_calls.load();
    expect_all_ok(st);

    st.clear();
    g_malloc_calls = 0;
    g_counting = true;
    exercise(in, GW_SIMD_AUTO, &pool.api, st);
    g_counting = false;
    expect_all_ok(st);
    EXPECT_GT(pool.allocs.load(), 20);
    EXPECT_EQ(pool.live(), 0) << "blocks not given back";
    EXPECT_EQ(pool.bad_align.load(), 0);
#if defined(GW_COUNTS_MALLOC)
    EXPECT_GT(with_malloc, 20);
    EXPECT_EQ(g_malloc_calls.load(), 0)
        << "calls to the malloc family by handles with an allocator";
#else
    (void)with_malloc;
#endif
}

TEST(Context, AllocatorFailureAtEveryPointIsCleanAndLeaksNothing) {
    // The allocator refuses its k-th request, for every k a worker round
    // reaches: the call that asked gets GW_ERR_OUT_OF_MEMORY, nothing leaks,
    // and a refused step leaves the worker as it was (its next frame equals
    // that of a worker that was never refused).
    Inputs in;
    for (long k = 0;; ++k) {
        SCOPED_TRACE("allocation " + std::to_string(k) + " refused");
        Pool pool;
        pool.fail_at = k;
        gw_worker_options o = GW_WORKER_OPTIONS_INIT;
        o.n = kN;
        o.allocator = &pool.api;
        gw_worker* w = nullptr;
        gw_status s = gw_worker_create(&w, &o, in.topk);
        size_t written = 0;
        if (s == GW_OK)
            s = gw_worker_step(w, in.h.data(), GW_DTYPE_F16, kN, 0.1f, in.f1.data(), in.f1.size(),
                               &written);
        if (s == GW_OK) {
            gw_worker_free(w);
            EXPECT_EQ(pool.live(), 0);
            ASSERT_GT(k, 2);  // create and the first f16 step did allocate
            break;
        }
        EXPECT_EQ(s, GW_ERR_OUT_OF_MEMORY) << gw_status_name(s);
        if (w) {
            pool.fail_at = -1;  // memory again: the refused step left no trace
            uint64_t steps = 1;
            EXPECT_EQ(gw_worker_step_count(w, &steps), GW_OK);
            EXPECT_EQ(steps, 0u);
            gw_worker_free(w);
        }
        EXPECT_EQ(pool.live(), 0);
        ASSERT_LT(k, 100);
    }
}

// The same work on a scalar handle and on one of every other target, each
// with its own allocator, interleaved in one thread: the same frames and
// checkpoints, and the process-wide target is never touched.
TEST(Context, HandlesOfDifferentTargetsSideBySide) {
    Inputs in;
    const gw_simd_target process = gw_simd_active_target();
    for (gw_simd_target t : gwtest::supported_targets()) {
        SCOPED_TRACE(gw_simd_target_name(t));
        Pool pa, pb;
        gw_worker_options oa = GW_WORKER_OPTIONS_INIT, ob = GW_WORKER_OPTIONS_INIT;
        oa.n = ob.n = kN;
        oa.simd = GW_SIMD_SCALAR;
        ob.simd = t;
        oa.allocator = &pa.api;
        ob.allocator = &pb.api;
        for (gw_codec_spec* c : {in.topk, in.sign}) {
            gw_worker *a = nullptr, *b = nullptr;
            ASSERT_EQ(gw_worker_create(&a, &oa, c), GW_OK);
            ASSERT_EQ(gw_worker_create(&b, &ob, c), GW_OK);
            EXPECT_EQ(a->impl.context().k().target, GW_SIMD_SCALAR);
            EXPECT_EQ(b->impl.context().k().target, t);
            for (int s = 0; s < 4; ++s) {
                size_t wa = 0, wb = 0;
                const void* g = s % 2 ? static_cast<const void*>(in.h.data()) : in.g2.data();
                const gw_dtype d = s % 2 ? GW_DTYPE_F16 : GW_DTYPE_F32;
                ASSERT_EQ(gw_worker_step(a, g, d, kN, 0.1f, in.f1.data(), in.f1.size(), &wa),
                          GW_OK);
                ASSERT_EQ(gw_worker_step(b, g, d, kN, 0.1f, in.f2.data(), in.f2.size(), &wb),
                          GW_OK);
                ASSERT_EQ(wa, wb);
                EXPECT_EQ(std::memcmp(in.f1.data(), in.f2.data(), wa), 0) << "step " << s;
            }
            size_t sa = 0, sb = 0;
            ASSERT_EQ(gw_worker_save(a, in.blob.data(), in.blob.size() / 2, &sa), GW_OK);
            ASSERT_EQ(
                gw_worker_save(b, in.blob.data() + in.blob.size() / 2, in.blob.size() / 2, &sb),
                GW_OK);
            ASSERT_EQ(sa, sb);
            EXPECT_EQ(std::memcmp(in.blob.data(), in.blob.data() + in.blob.size() / 2, sa), 0);
            // A checkpoint of one target loads into a handle of the other.
            ASSERT_EQ(gw_worker_load(a, in.blob.data() + in.blob.size() / 2, sb), GW_OK);
            gw_worker_free(a);
            gw_worker_free(b);
        }
        EXPECT_EQ(pa.live(), 0);
        EXPECT_EQ(pb.live(), 0);
        EXPECT_GT(pa.allocs.load(), 0);
        EXPECT_GT(pb.allocs.load(), 0);
        EXPECT_EQ(gw_simd_active_target(), process);
    }
}

// A handle keeps the table it was created with when the process target
// changes later, and GW_SIMD_AUTO means the process's target at create.
TEST(Context, TargetIsFixedAtCreate) {
    Inputs in;
    const std::vector<gw_simd_target> ts = gwtest::supported_targets();
    ASSERT_EQ(gw_simd_set_target(ts.back()), GW_OK);
    gw_worker_options o = GW_WORKER_OPTIONS_INIT;
    o.n = kN;
    gw_worker* w = nullptr;
    ASSERT_EQ(gw_worker_create(&w, &o, in.sign), GW_OK);
    ASSERT_EQ(gw_simd_set_target(GW_SIMD_SCALAR), GW_OK);
    EXPECT_EQ(w->impl.context().k().target, ts.back());
    gw_worker_free(w);
    ASSERT_EQ(gw_simd_set_target(GW_SIMD_AUTO), GW_OK);
}

TEST(Context, BadBackendsAreRefused) {
    Inputs in;
    gw_worker_options o = GW_WORKER_OPTIONS_INIT;
    o.n = kN;
    gw_worker* w = nullptr;
    o.simd = static_cast<gw_simd_target>(9);
    EXPECT_EQ(gw_worker_create(&w, &o, in.sign), GW_ERR_INVALID_ARGUMENT);
    for (gw_simd_target t : {GW_SIMD_SSE2, GW_SIMD_AVX512, GW_SIMD_NEON}) {
        o.simd = t;
        const gw_status s = gw_worker_create(&w, &o, in.sign);
        if (gw_simd_target_supported(t)) {
            ASSERT_EQ(s, GW_OK);
            gw_worker_free(w);
            w = nullptr;
        } else {
            EXPECT_EQ(s, GW_ERR_UNSUPPORTED) << gw_simd_target_name(t);
        }
    }
    o.simd = GW_SIMD_AUTO;
    gw_allocator half = {nullptr, &Pool::release, nullptr};
    o.allocator = &half;
    EXPECT_EQ(gw_worker_create(&w, &o, in.sign), GW_ERR_NULL_POINTER);
    half = {&Pool::alloc, nullptr, nullptr};
    EXPECT_EQ(gw_worker_create(&w, &o, in.sign), GW_ERR_NULL_POINTER);
    EXPECT_EQ(w, nullptr);
    gw_fusion_options fo = GW_FUSION_OPTIONS_INIT;
    fo.layers = 1;
    fo.allocator = &half;
    gw_fusion* f = nullptr;
    EXPECT_EQ(gw_fusion_create(&f, &fo), GW_ERR_NULL_POINTER);
}

// Callers built against version 1 (before simd and allocator) keep working:
// options_init writes no byte past the version-1 fields, and create reads none.
TEST(Context, VersionOneOptionsAreUnchanged) {
    Inputs in;
    union {
        gw_worker_options o;
        unsigned char bytes[sizeof(gw_worker_options)];
    } u;
    std::memset(u.bytes, 0xA5, sizeof u.bytes);
    ASSERT_EQ(gw_worker_options_init(&u.o, 1), GW_OK);
    const size_t v1 = offsetof(gw_worker_options, simd);
    for (size_t i = v1; i < sizeof u.bytes; ++i) ASSERT_EQ(u.bytes[i], 0xA5) << "byte " << i;
    EXPECT_EQ(u.o.version, 1u);
    u.o.n = kN;
    // The version-2 fields hold garbage, which a version-1 create never reads.
    gw_worker* w = nullptr;
    ASSERT_EQ(gw_worker_create(&w, &u.o, in.sign), GW_OK);
    EXPECT_EQ(w->impl.context().k().target, gw_simd_active_target());
    size_t written = 0;
    EXPECT_EQ(gw_worker_step(w, in.g.data(), GW_DTYPE_F32, kN, 0.1f, in.f1.data(), in.f1.size(),
                             &written),
              GW_OK);
    gw_worker_free(w);
    gw_server_options so;
    std::memset(&so, 0xA5, sizeof so);
    ASSERT_EQ(gw_server_options_init(&so, 1), GW_OK);
    const unsigned char* sb = reinterpret_cast<const unsigned char*>(&so);
    for (size_t i = offsetof(gw_server_options, simd); i < sizeof so; ++i) ASSERT_EQ(sb[i], 0xA5);
    EXPECT_EQ(gw_server_options_init(&so, GW_SERVER_OPTIONS_VERSION + 1), GW_ERR_OPTIONS_VERSION);
}

}  // namespace
