// Fuzz target: gw_reshard, re-sharding the checkpoints of M workers into the
// blob of one of M' workers.
//
// An input is a header of fuzzed options, then a list of mutations:
//   kind  workers_in M (1..16)  workers_out M' (1..16)  rank_out  n (1..64)
//   variant (codec, momentum, ...)  steps  gradient seed and scale  learning
//   rates  target range  extras (per-rank cuts, leader override, mid-round,
//   how server parts name their rank)  mutation count  mutations...
// From the header the target builds a world of real handles of one kind
// (gw_worker over whole tensors or over slices, gw_server slices, gw_cltk,
// gw_lags_layer, gw_asylpg_master, gw_asylpg_worker), steps them with fuzzed
// gradients and saves them: the parts. With no mutation the parts are valid
// and the call must succeed (a server mid-round: GW_ERR_SEQUENCE), and then
// every new rank 0..M'-1 is built: its blob loads into a fresh handle of the
// target configuration (M' workers, the new slice) and saves back to the same
// bytes, the new handles step (CLT-k and servers: one whole round together),
// worker kinds hold the mean of the old workers' vectors (the mass property;
// M' = M: each its own, bit for bit, and the blob of a part covering exactly
// the range comes back unchanged), server residuals move bit for bit.
//
// Mutations flip bits (with or without a fixed CRC), set fields of a blob to
// extreme values, truncate, swap, duplicate, drop and re-rank parts, change
// their offsets and the target options, and add raw fuzzer bytes as blobs.
// Every call, mutated or not, is checked: the status is GW_OK or a
// documented one; capacity 0 gives GW_ERR_BUFFER_TOO_SMALL and the size (or
// GW_OK and 0 for a new AsyLPG worker), capacity size - 1 the same, exactly
// that capacity GW_OK with exactly that many bytes, the same bytes whatever
// the buffer held, a valid state blob no larger than the parts; an error
// writes nothing; the parts are never modified; a success does not depend
// on the order of the parts, nor (servers, AsyLPG master: ignored) on their
// ranks; every part of a success loads as a loader checks it (GW_OK or
// GW_ERR_STATE_MISMATCH in the handle it came from), and so does the output
// in a handle of the target configuration.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "fuzz_check.h"
#include "gradwire.h"

namespace {

using Bytes = std::vector<uint8_t>;
using Vec = std::vector<float>;

constexpr size_t kMaxParts = 40;
constexpr size_t kMaxOps = 8;
constexpr uint64_t kMaxTargetN = 1 << 12;  // target handles are created up to this length
constexpr uint32_t kMaxTargetWorkers = 1024;

enum World : unsigned { kWorkers, kSlices, kServers, kCltk, kLags, kMaster, kAWorkers, kWorlds };
// State blob kinds (docs/wire-format.md, "State blobs").
constexpr uint16_t kBlobServer = 2, kBlobMaster = 6;

// ---------------------------------------------------------------------------
// Input and small helpers

struct Input {
    const uint8_t* d;
    size_t n, pos = 0;
    uint8_t u8() { return pos < n ? d[pos++] : 0; }
    uint16_t u16() { return static_cast<uint16_t>(u8() | (u8() << 8)); }
    Bytes bytes(size_t k) {
        k = k < n - pos ? k : n - pos;
        Bytes b(d + pos, d + pos + k);
        pos += k;
        return b;
    }
};

const uint64_t kU64[] = {0, 1, 2, 3, 4, 7, 8, 16, 31, 32, 63, 64, 65, 0xFFFFFFFFull, 0x100000000ull,
                         (uint64_t(1) << 40) - 1, uint64_t(1) << 40, (uint64_t(1) << 40) + 1,
                         uint64_t(1) << 62, 0x7FFFFFFFFFFFFFFFull, ~uint64_t(0) - 1, ~uint64_t(0)};
const uint32_t kU32[] = {0, 1, 2, 3, 15, 16, 17, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFEu, 0xFFFFFFFFu};
const uint8_t kU8[] = {0, 1, 2, 3, 4, 0x7F, 0x80, 0xFE, 0xFF};
const float kF32[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 1e-45f, -1e-45f, 1e30f, -1e30f,
                      std::numeric_limits<float>::max(), -std::numeric_limits<float>::max(),
                      std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                      std::numeric_limits<float>::quiet_NaN()};
template <class T, size_t N> T pick(const T (&a)[N], unsigned i) { return a[i % N]; }

uint64_t mix(uint64_t x) {  // splitmix64
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// Gradient element k of (worker a, step b): mixed signs, some zeros, |g| < scale.
struct Grads {
    uint64_t seed = 0;
    float scale = 1.0f;
    float at(uint64_t a, uint64_t b, uint64_t k) const {
        const uint64_t h = mix(seed ^ mix(a * 0x100000001B3ull + b * 0x1F3ull + k));
        if ((h & 15) == 0) return 0.0f;
        return scale * (static_cast<float>((h >> 40) & 0xFFFFFF) / 8388608.0f - 1.0f);
    }
    Vec vec(uint64_t a, uint64_t b, uint64_t first, uint64_t n) const {
        Vec v(n);
        for (uint64_t k = 0; k < n; ++k) v[k] = at(a, b, first + k);
        return v;
    }
};

const float kLr[] = {0.1f, 0.05f, 1.0f, 0.001f};

uint32_t crc_of(const uint8_t* p, size_t n) {
    uint32_t c = 0;
    FUZZ_CHECK(gw_crc32c(p, n, &c) == GW_OK);
    return c;
}
void fix_crc(Bytes& b) {
    if (b.size() < 4) return;
    const uint32_t c = crc_of(b.data(), b.size() - 4);
    for (int i = 0; i < 4; ++i) b[b.size() - 4 + i] = static_cast<uint8_t>(c >> (8 * i));
}
uint16_t blob_kind(const Bytes& b) { return b.size() >= 8 ? uint16_t(b[6] | (b[7] << 8)) : 0; }

struct FieldAt {
    size_t header, data;
    uint8_t type;
    uint64_t count;
};

// The fields of a blob as far as they are well-formed.
std::vector<FieldAt> fields_of(const Bytes& b) {
    std::vector<FieldAt> f;
    if (b.size() < 16) return f;
    const size_t end = b.size() - 4;
    size_t pos = 12;
    while (end - pos >= 12 && f.size() < 64) {
        const uint8_t type = b[pos + 2];
        uint64_t count = 0;
        std::memcpy(&count, &b[pos + 4], 8);
        const size_t width = type == 1 || type == 5 ? 1 : type == 2 || type == 4 || type == 6 ? 4 : type == 3 ? 8 : 0;
        if (width == 0 || count > (end - pos - 12) / width) break;
        f.push_back({pos, pos + 12, type, count});
        pos += 12 + count * width;
    }
    return f;
}

// ---------------------------------------------------------------------------
// Handles

template <class H, void (*Free)(H*)> struct Own {
    H* h = nullptr;
    Own() = default;
    explicit Own(H* p) : h(p) {}
    Own(Own&& o) noexcept : h(o.h) { o.h = nullptr; }
    Own& operator=(Own&& o) noexcept {
        std::swap(h, o.h);
        return *this;
    }
    Own(const Own&) = delete;
    ~Own() {
        if (h) Free(h);
    }
};
using Worker = Own<gw_worker, gw_worker_free>;
using Server = Own<gw_server, gw_server_free>;
using Cltk = Own<gw_cltk, gw_cltk_free>;
using Lags = Own<gw_lags_layer, gw_lags_layer_free>;
using Master = Own<gw_asylpg_master, gw_asylpg_master_free>;
using AWorker = Own<gw_asylpg_worker, gw_asylpg_worker_free>;

struct Spec {
    gw_codec_spec* s = nullptr;
    explicit Spec(gw_codec_id id) { FUZZ_CHECK(gw_codec_spec_create(&s, id) == GW_OK); }
    Spec& set(gw_param p, int64_t v) {
        FUZZ_CHECK(gw_codec_spec_set(s, p, v) == GW_OK);
        return *this;
    }
    ~Spec() { gw_codec_spec_free(s); }
    Spec(const Spec&) = delete;
};

template <class H>
Bytes save(const H* h, gw_status (*bound_fn)(const H*, size_t*),
           gw_status (*save_fn)(const H*, void*, size_t, size_t*)) {
    size_t bound = 0, written = 0;
    FUZZ_CHECK(bound_fn(h, &bound) == GW_OK);
    Bytes b(bound);
    FUZZ_CHECK(save_fn(h, b.data(), b.size(), &written) == GW_OK && written == bound);
    return b;
}
Bytes save(const gw_worker* h) { return save(h, gw_worker_save_bound, gw_worker_save); }
Bytes save(const gw_server* h) { return save(h, gw_server_save_bound, gw_server_save); }
Bytes save(const gw_cltk* h) { return save(h, gw_cltk_save_bound, gw_cltk_save); }
Bytes save(const gw_lags_layer* h) { return save(h, gw_lags_layer_save_bound, gw_lags_layer_save); }
Bytes save(const gw_asylpg_master* h) { return save(h, gw_asylpg_master_save_bound, gw_asylpg_master_save); }
Bytes save(const gw_asylpg_worker* h) { return save(h, gw_asylpg_worker_save_bound, gw_asylpg_worker_save); }

Bytes encode(gw_codec_id id, const Vec& x, uint64_t tag) {
    static const float none = 0.0f;
    Spec s(id);
    if (id == GW_CODEC_TOPK) s.set(GW_PARAM_K, 2).set(GW_PARAM_ZSTD, 0);
    gw_encode_ctx ctx = GW_ENCODE_CTX_INIT;
    ctx.tag = tag;
    size_t bound = 0, written = 0;
    FUZZ_CHECK(gw_encode_bound(s.s, x.size(), &bound) == GW_OK);
    Bytes f(bound);
    FUZZ_CHECK(gw_encode(s.s, &ctx, x.empty() ? &none : x.data(), GW_DTYPE_F32, x.size(), f.data(),
                         f.size(), &written) == GW_OK);
    f.resize(written);
    return f;
}

// The configuration of every handle of a world: its variant, tensor length
// and worker count decide the rest.
struct Config {
    unsigned world = 0, variant = 0;
    uint64_t n = 1;
    uint32_t workers = 1;

    // Worker variants: which vectors the blob holds follows from momentum and
    // error feedback (64: momentum, 65: residual).
    bool worker_momentum() const { return variant % 6 == 0 || variant % 6 >= 3; }
    bool worker_ef() const { return variant % 6 != 2 && variant % 6 != 3; }
    Worker worker(uint64_t len) const {
        gw_worker_options o;
        FUZZ_CHECK(gw_worker_options_init(&o, GW_WORKER_OPTIONS_VERSION) == GW_OK);
        o.n = len, o.tensor = 7, o.seed = 11;
        gw_codec_id id = GW_CODEC_SCALED_SIGN;
        switch (variant % 6) {
            case 0: id = GW_CODEC_TOPK, o.momentum = GW_MOMENTUM_NESTEROV, o.mu = 0.9f; break;
            case 1: o.momentum = GW_MOMENTUM_NONE, o.mu = 0.0f; break;
            case 2: o.momentum = GW_MOMENTUM_NONE, o.mu = 0.0f, o.error_feedback = 0; break;
            case 3: id = GW_CODEC_SIGN, o.momentum = GW_MOMENTUM_SIGNUM, o.mu = 0.5f, o.error_feedback = 0; break;
            case 4: id = GW_CODEC_RANDOMK, o.momentum = GW_MOMENTUM_NESTEROV, o.mu = 0.9f; break;
            default: id = GW_CODEC_QUANT, o.momentum = GW_MOMENTUM_SIGNUM, o.mu = 0.9f; break;
        }
        Spec s(id);
        if (id == GW_CODEC_TOPK) s.set(GW_PARAM_K, 2).set(GW_PARAM_ZSTD, 0);
        if (id == GW_CODEC_RANDOMK) s.set(GW_PARAM_K, 2);
        if (id == GW_CODEC_QUANT) s.set(GW_PARAM_BITS, 4);
        if (id == GW_CODEC_SCALED_SIGN) s.set(GW_PARAM_BLOCK_SIZE, variant % 6 == 1 ? 2 : 0);
        Worker w;
        FUZZ_CHECK(gw_worker_create(&w.h, &o, s.s) == GW_OK);
        return w;
    }

    // Server variants: 0 scaled sign with e_s, 1 signSGD's majority vote, 2 top-k with e_s.
    bool server_ef() const { return variant % 3 != 1; }
    gw_codec_id push_codec() const {
        return variant % 3 == 0 ? GW_CODEC_IDENTITY : variant % 3 == 1 ? GW_CODEC_SIGN : GW_CODEC_FP16;
    }
    Server server(uint64_t total, uint64_t off, uint64_t len, uint32_t m) const {
        gw_server_options o;
        FUZZ_CHECK(gw_server_options_init(&o, GW_SERVER_OPTIONS_VERSION) == GW_OK);
        o.total = total, o.offset = off, o.length = len, o.num_workers = m, o.tensor = 3;
        o.error_feedback = server_ef() ? 1 : 0;
        const gw_codec_id id = variant % 3 == 0 ? GW_CODEC_SCALED_SIGN
                               : variant % 3 == 1 ? GW_CODEC_SIGN : GW_CODEC_TOPK;
        Spec s(id);
        if (id == GW_CODEC_TOPK) s.set(GW_PARAM_K, 2).set(GW_PARAM_ZSTD, 0);
        if (id == GW_CODEC_SCALED_SIGN) s.set(GW_PARAM_BLOCK_SIZE, 2);
        Server h;
        FUZZ_CHECK(gw_server_create(&h.h, &o, s.s, nullptr) == GW_OK);
        return h;
    }

    // CLT-k variants: 0 chunks of 2, beta 0.5; 1 exact, beta 1, two dense
    // warm-up rounds; 2 k = 1 of chunks of 4, beta 0.25, one warm-up round.
    Cltk cltk(uint64_t len, uint32_t m, uint32_t rank) const {
        gw_cltk_options o;
        FUZZ_CHECK(gw_cltk_options_init(&o, GW_CLTK_OPTIONS_VERSION) == GW_OK);
        o.n = len, o.num_workers = m, o.rank = rank, o.tensor = 5;
        const unsigned v = variant % 3;
        o.beta = v == 0 ? 0.5f : v == 1 ? 1.0f : 0.25f;
        o.warmup_steps = v;
        Spec s(GW_CODEC_INDEX);
        s.set(GW_PARAM_K, v == 2 ? 1 : 2).set(GW_PARAM_CHUNK_SIZE, v == 0 ? 2 : v == 1 ? 0 : 4);
        Cltk h;
        FUZZ_CHECK(gw_cltk_create(&h.h, &o, s.s) == GW_OK);
        return h;
    }

    // LAGS variants: 0 top-k k = 2; 1 chunk-wise top-k k = 1 of chunks of 2.
    Lags lags(uint64_t len) const {
        gw_lags_layer_options o;
        FUZZ_CHECK(gw_lags_layer_options_init(&o, GW_LAGS_LAYER_OPTIONS_VERSION) == GW_OK);
        o.n = len, o.tensor = 3, o.seed = 9;
        Spec s(variant % 2 == 0 ? GW_CODEC_TOPK : GW_CODEC_CHUNK_TOPK);
        if (variant % 2 == 0) s.set(GW_PARAM_K, 2).set(GW_PARAM_ZSTD, 0);
        else s.set(GW_PARAM_K, 1).set(GW_PARAM_CHUNK_SIZE, 2);
        Lags h;
        FUZZ_CHECK(gw_lags_layer_create(&h.h, &o, s.s) == GW_OK);
        return h;
    }

    // AsyLPG master variants: 0 plain, quantized models, L1 + L2, tau 1,
    // epochs of 3; 1 accelerated, full-precision models, tau 0, epochs of 2.
    Master master(const Grads& g) const {
        gw_asylpg_master_options o;
        FUZZ_CHECK(gw_asylpg_master_options_init(&o, GW_ASYLPG_MASTER_OPTIONS_VERSION) == GW_OK);
        const bool plain = variant % 2 == 0;
        o.n = n, o.variant = plain ? GW_ASYLPG_PLAIN : GW_ASYLPG_ACC, o.lr = 0.1f;
        o.l1 = plain ? 0.01f : 0.0f, o.l2 = plain ? 0.1f : 0.0f;
        o.epoch_length = plain ? 3 : 2, o.tau = plain ? 1 : 0;
        o.bits_min = plain ? 2 : 0, o.bits_max = plain ? 8 : 0;
        o.tensor = 4, o.seed = 3;
        const Vec x0 = g.vec(1000, 0, 0, n);
        Master h;
        FUZZ_CHECK(gw_asylpg_master_create(&h.h, &o, x0.data(), n) == GW_OK);
        return h;
    }

    // AsyLPG worker variants: quant 4 bits, sparse quant 2 bits, identity;
    // each rank its own seed.
    AWorker aworker(uint32_t rank) const {
        gw_asylpg_worker_options o;
        FUZZ_CHECK(gw_asylpg_worker_options_init(&o, GW_ASYLPG_WORKER_OPTIONS_VERSION) == GW_OK);
        o.n = n, o.tensor = 4, o.seed = 5 + uint64_t(rank);
        static const gw_codec_id ids[3] = {GW_CODEC_QUANT, GW_CODEC_SPARSE_QUANT, GW_CODEC_IDENTITY};
        Spec s(ids[variant % 3]);
        if (variant % 3 < 2) s.set(GW_PARAM_BITS, variant % 3 == 0 ? 4 : 2);
        AWorker h;
        FUZZ_CHECK(gw_asylpg_worker_create(&h.h, &o, s.s) == GW_OK);
        return h;
    }
};

// One step of each kind; every call must succeed (gradients are moderate).
void step(gw_worker* h, const Vec& g, float lr) {
    size_t bound = 0, written = 0;
    FUZZ_CHECK(gw_worker_frame_bound(h, &bound) == GW_OK);
    Bytes f(bound);
    FUZZ_CHECK(gw_worker_step(h, g.data(), GW_DTYPE_F32, g.size(), lr, f.data(), f.size(), &written) == GW_OK);
}

void step(gw_lags_layer* h, const Vec& g, float lr, bool dense) {
    if (dense) {
        Vec out(g.size());
        FUZZ_CHECK(gw_lags_layer_step_dense(h, g.data(), GW_DTYPE_F32, g.size(), lr, out.data()) == GW_OK);
        return;
    }
    size_t bound = 0, written = 0;
    FUZZ_CHECK(gw_lags_layer_frame_bound(h, &bound) == GW_OK);
    Bytes f(bound);
    FUZZ_CHECK(gw_lags_layer_step(h, g.data(), GW_DTYPE_F32, g.size(), lr, f.data(), f.size(), &written) == GW_OK);
}

// One whole round of servers holding slices [off, off + len): every worker
// pushes to every server, then every server steps; every call succeeds.
struct Slice {
    uint64_t off, len;
};
void push(gw_server* h, const Config& c, const Grads& g, uint32_t w, const Slice& s) {
    uint64_t steps = 0;
    FUZZ_CHECK(gw_server_step_count(h, &steps) == GW_OK);
    const Bytes f = encode(c.push_codec(), g.vec(w, steps, s.off, s.len), GW_TAG(3, steps));
    FUZZ_CHECK(gw_server_push(h, f.data(), f.size()) == GW_OK);
}
void server_round(std::vector<Server>& hs, const std::vector<Slice>& slices, const Config& c,
                  const Grads& g, uint32_t workers, float lr) {
    for (size_t j = 0; j < hs.size(); ++j) {
        for (uint32_t w = 0; w < workers; ++w) push(hs[j].h, c, g, w, slices[j]);
        size_t bound = 0, written = 0;
        FUZZ_CHECK(gw_server_frame_bound(hs[j].h, &bound) == GW_OK);
        Bytes f(bound);
        FUZZ_CHECK(gw_server_step(hs[j].h, lr, f.data(), f.size(), &written) == GW_OK);
    }
}

// One whole CLT-k round of all the workers: they agree on the leader, it
// selects, all extract, the sum is applied everywhere.
void cltk_round(std::vector<Cltk>& hs, uint64_t n, const Grads& g, uint64_t t, float lr) {
    const uint32_t m = static_cast<uint32_t>(hs.size());
    uint64_t steps = 0;
    FUZZ_CHECK(gw_cltk_step_count(hs[0].h, &steps) == GW_OK);
    for (uint32_t r = 0; r < m; ++r) {
        uint64_t s = 0;
        FUZZ_CHECK(gw_cltk_step_count(hs[r].h, &s) == GW_OK && s == steps);
        const Vec x = g.vec(r, t, 0, n);
        FUZZ_CHECK(gw_cltk_begin(hs[r].h, x.data(), GW_DTYPE_F32, n, lr) == GW_OK);
    }
    uint32_t leader = 0;
    FUZZ_CHECK(gw_cltk_leader(hs[0].h, &leader) == GW_OK);
    for (uint32_t r = 1; r < m; ++r) {
        uint32_t l = 0;
        FUZZ_CHECK(gw_cltk_leader(hs[r].h, &l) == GW_OK && l == leader);
    }
    FUZZ_CHECK(leader == GW_CLTK_NO_LEADER || leader < m);
    Bytes frame;
    size_t fw = 0;
    if (leader != GW_CLTK_NO_LEADER) {
        size_t fb = 0;
        FUZZ_CHECK(gw_cltk_index_frame_bound(hs[leader].h, &fb) == GW_OK);
        frame.resize(fb);
        FUZZ_CHECK(gw_cltk_select(hs[leader].h, frame.data(), frame.size(), &fw) == GW_OK);
    }
    size_t vb = 0;
    FUZZ_CHECK(gw_cltk_values_bound(hs[0].h, &vb) == GW_OK);
    Vec v(vb + 1), sum;
    size_t count0 = 0;
    for (uint32_t r = 0; r < m; ++r) {
        size_t count = 0;
        FUZZ_CHECK(gw_cltk_extract(hs[r].h, fw ? frame.data() : nullptr, fw, v.data(), v.size(), &count) == GW_OK);
        if (r == 0) count0 = count, sum.assign(count, 0.0f);
        FUZZ_CHECK(count == count0);
        for (size_t k = 0; k < count; ++k) sum[k] += v[k];
    }
    for (uint32_t r = 0; r < m; ++r)
        FUZZ_CHECK(gw_cltk_apply(hs[r].h, sum.empty() ? v.data() : sum.data(), count0, nullptr, 0) == GW_OK);
}

// An update of the master: an epoch if none runs, a model, a gradient.
void master_update(gw_asylpg_master* h, uint64_t n, const Grads& g, uint64_t t) {
    uint64_t epoch = 0, inner = 0, version = 0;
    int running = 0;
    FUZZ_CHECK(gw_asylpg_master_progress(h, &epoch, &inner, &version, &running) == GW_OK);
    if (!running) {
        const Vec full = g.vec(2000, t, 0, n);
        FUZZ_CHECK(gw_asylpg_master_begin_epoch(h, full.data(), n) == GW_OK);
    }
    size_t bound = 0, written = 0;
    unsigned bits = 0;
    FUZZ_CHECK(gw_asylpg_master_frame_bound(h, &bound) == GW_OK);
    Bytes f(bound);
    FUZZ_CHECK(gw_asylpg_master_model(h, f.data(), f.size(), &written, &bits) == GW_OK);
    const Bytes d = encode(GW_CODEC_IDENTITY, g.vec(3000, t, 0, n), GW_TAG(4, version));
    FUZZ_CHECK(gw_asylpg_master_push(h, d.data(), d.size()) == GW_OK);
}

// An AsyLPG worker takes a model (after a new snapshot if `snapshot`) and
// steps; a worker without a snapshot refuses the model with SEQUENCE.
void aworker_step(gw_asylpg_worker* h, uint64_t n, const Grads& g, uint64_t t, bool snapshot) {
    if (snapshot) {
        const Vec x = g.vec(4000, t, 0, n);
        FUZZ_CHECK(gw_asylpg_worker_set_snapshot(h, x.data(), n) == GW_OK);
    }
    const Bytes model = encode(GW_CODEC_IDENTITY, g.vec(5000, t, 0, n), GW_TAG(4, t + 1));
    const gw_status st = gw_asylpg_worker_receive(h, model.data(), model.size());
    if (st == GW_ERR_SEQUENCE) return;  // no snapshot yet
    FUZZ_CHECK(st == GW_OK);
    size_t bound = 0, written = 0;
    FUZZ_CHECK(gw_asylpg_worker_frame_bound(h, &bound) == GW_OK);
    Bytes f(bound);
    const Vec a = g.vec(6000, t, 0, n), b = g.vec(7000, t, 0, n);
    FUZZ_CHECK(gw_asylpg_worker_step(h, a.data(), b.data(), GW_DTYPE_F32, n, f.data(), f.size(), &written) == GW_OK);
}

// ---------------------------------------------------------------------------
// The parts

// Where a part came from: the handle configuration it loads into (rank and
// slice), or none for raw fuzzer bytes.
struct Origin {
    bool real = false;
    uint32_t rank = 0;
    Slice slice{0, 0};
};

struct Part {
    Bytes blob;
    uint32_t rank = 0;
    uint64_t offset = 0;
    Origin origin;
};

// What the world knows for its checks: old vectors by id (64, 65), by rank,
// over the whole tensor (worker kinds), the servers' residual over the tensor.
struct Reference {
    std::vector<uint16_t> ids;
    std::vector<std::vector<Vec>> of;  // [id][rank][k]
    Vec server_e;
    bool mid_round = false;
};

// Builds a world of real handles from the header and saves its parts.
struct Builder {
    Config c;
    Grads g;
    unsigned steps = 0, lrs = 0;
    uint8_t extra[4] = {0, 0, 0, 0};
    std::vector<uint8_t> cuts;  // per-rank slice cut (kSlices)

    float lr(unsigned t) const { return kLr[(lrs >> (2 * t)) & 3]; }

    void add(std::vector<Part>& parts, Bytes b, uint32_t rank, uint64_t off, Slice s) {
        Part p;
        p.blob = std::move(b);
        p.rank = rank;
        p.offset = off;
        p.origin.real = true;
        p.origin.rank = rank;
        p.origin.slice = s;
        parts.push_back(std::move(p));
    }

    void build(std::vector<Part>& parts, Reference& ref) {
        const uint64_t n = c.n;
        const uint32_t m = c.workers;
        switch (c.world) {
            case kWorkers:
            case kSlices: {
                if (c.worker_momentum()) ref.ids.push_back(64);
                if (c.worker_ef()) ref.ids.push_back(65);
                ref.of.assign(ref.ids.size(), std::vector<Vec>(m, Vec(n)));
                for (uint32_t r = 0; r < m; ++r) {
                    std::vector<Slice> slices;
                    const uint64_t cut = c.world == kSlices ? cuts[r] % n : 0;
                    if (cut == 0) slices.push_back({0, n});
                    else slices.push_back({0, cut}), slices.push_back({cut, n - cut});
                    for (const Slice& s : slices) {
                        Worker w = c.worker(s.len);
                        for (unsigned t = 0; t < steps; ++t) step(w.h, g.vec(r, t, s.off, s.len), lr(t));
                        for (size_t i = 0; i < ref.ids.size(); ++i) {
                            float* out = ref.of[i][r].data() + s.off;
                            FUZZ_CHECK((ref.ids[i] == 64 ? gw_worker_momentum(w.h, out, s.len)
                                                         : gw_worker_residual(w.h, out, s.len)) == GW_OK);
                        }
                        add(parts, save(w.h), r, s.off, s);
                    }
                }
                break;
            }
            case kServers: {
                std::vector<Server> hs;
                std::vector<Slice> slices;
                for (uint32_t j = 0; j < m; ++j) {
                    Slice s{0, 0};
                    FUZZ_CHECK(gw_shard_range(n, m, j, &s.off, &s.len) == GW_OK);
                    slices.push_back(s);
                    hs.push_back(c.server(n, s.off, s.len, m));
                }
                for (unsigned t = 0; t < steps; ++t) server_round(hs, slices, c, g, m, lr(t));
                if (extra[0] & 1) {  // one server mid-round
                    const uint32_t j = extra[1] % m;
                    push(hs[j].h, c, g, 0, slices[j]);
                    ref.mid_round = true;
                }
                ref.server_e.assign(n, 0.0f);
                for (uint32_t j = 0; j < m; ++j) {
                    if (c.server_ef() && slices[j].len)
                        FUZZ_CHECK(gw_server_residual(hs[j].h, ref.server_e.data() + slices[j].off,
                                                      slices[j].len) == GW_OK);
                    // Servers ignore the rank: give 0, the slice index, or anything.
                    const unsigned style = (extra[0] >> 1) & 3;
                    const uint32_t rank = style == 0 ? 0 : style == 1 ? j : style == 2 ? m - 1 - j
                                                                                  : uint32_t(mix(j + extra[2]));
                    add(parts, save(hs[j].h), rank, 0, slices[j]);
                    parts.back().origin.rank = j;
                }
                break;
            }
            case kCltk: {
                ref.ids.push_back(64);
                ref.of.assign(1, std::vector<Vec>(m, Vec(n)));
                std::vector<Cltk> hs;
                for (uint32_t r = 0; r < m; ++r) hs.push_back(c.cltk(n, m, r));
                for (unsigned t = 0; t < steps; ++t) {
                    cltk_round(hs, n, g, t, lr(t));
                    if (extra[0] & 1) {  // a leader override (every worker), or back to cyclic
                        const uint32_t l = extra[1] % (m + 1);
                        for (auto& h : hs)
                            FUZZ_CHECK(gw_cltk_set_leader(h.h, l < m ? l : GW_CLTK_CYCLIC) == GW_OK);
                    }
                }
                for (uint32_t r = 0; r < m; ++r) {
                    FUZZ_CHECK(gw_cltk_memory(hs[r].h, ref.of[0][r].data(), n) == GW_OK);
                    add(parts, save(hs[r].h), r, 0, Slice{0, n});
                }
                break;
            }
            case kLags: {
                ref.ids.push_back(64);
                ref.of.assign(1, std::vector<Vec>(m, Vec(n)));
                for (uint32_t r = 0; r < m; ++r) {
                    Lags h = c.lags(n);
                    for (unsigned t = 0; t < steps; ++t) {
                        step(h.h, g.vec(r, t, 0, n), lr(t), (extra[2] >> t) & 1);
                        // k_l comes from the plan, the same on every worker.
                        if (extra[0] & 1) FUZZ_CHECK(gw_lags_layer_set_k(h.h, 1 + (extra[1] + t) % n) == GW_OK);
                    }
                    FUZZ_CHECK(gw_lags_layer_residual(h.h, ref.of[0][r].data(), n) == GW_OK);
                    add(parts, save(h.h), r, 0, Slice{0, n});
                }
                break;
            }
            case kMaster: {
                Master h = c.master(g);
                for (unsigned t = 0; t < steps; ++t) master_update(h.h, n, g, t);
                add(parts, save(h.h), extra[1] & 3 ? extra[2] : 0, 0, Slice{0, n});
                break;
            }
            default: {  // kAWorkers: each rank a fuzzed way into its protocol
                for (uint32_t r = 0; r < m; ++r) {
                    AWorker h = c.aworker(r);
                    const unsigned k = (extra[1] >> (r % 4 * 2)) & 3;  // 0: fresh
                    for (unsigned t = 0; t < k; ++t) aworker_step(h.h, n, g, t, t == 0 || (extra[2] & 1));
                    add(parts, save(h.h), r, 0, Slice{0, n});
                }
                break;
            }
        }
    }
};

// ---------------------------------------------------------------------------
// One call of gw_reshard, and what every call must satisfy

struct Result {
    gw_status status;
    Bytes out;  // with GW_OK
};

bool documented(gw_status st) {
    switch (st) {
        case GW_OK:
        case GW_ERR_BUFFER_TOO_SMALL:
        case GW_ERR_INVALID_ARGUMENT:
        case GW_ERR_OPTIONS_VERSION:
        case GW_ERR_SEQUENCE:
        case GW_ERR_STATE_MAGIC:
        case GW_ERR_STATE_VERSION:
        case GW_ERR_STATE_CHECKSUM:
        case GW_ERR_STATE_MISMATCH:
        case GW_ERR_STATE_CORRUPT:
        case GW_ERR_STATE_MISSING:
        case GW_ERR_STATE_DUPLICATE: return true;
        default: return false;
    }
}

Result reshard(const std::vector<Part>& parts, const gw_reshard_options& o) {
    std::vector<gw_reshard_part> p(parts.size());
    std::vector<Bytes> before;
    size_t total = 0;
    for (size_t i = 0; i < parts.size(); ++i) {
        p[i].blob = parts[i].blob.data();
        p[i].size = parts[i].blob.size();
        p[i].rank = parts[i].rank;
        p[i].offset = parts[i].offset;
        before.push_back(parts[i].blob);
        total += parts[i].blob.size();
    }
    const gw_reshard_options o_before = o;
    auto unchanged = [&]() {
        for (size_t i = 0; i < parts.size(); ++i) FUZZ_CHECK(parts[i].blob == before[i]);
        FUZZ_CHECK(std::memcmp(&o, &o_before, sizeof o) == 0);
    };
    size_t written = 12345;
    const gw_status st = gw_reshard(p.data(), p.size(), &o, nullptr, 0, &written);
    unchanged();
    FUZZ_CHECK(documented(st));
    if (st != GW_ERR_BUFFER_TOO_SMALL) {
        // An error, or GW_OK with 0 bytes (a new AsyLPG worker): the same with
        // room, and nothing written.
        if (st == GW_OK) FUZZ_CHECK(written == 0);
        Bytes room(64, 0xC3);
        size_t w2 = 12345;
        FUZZ_CHECK(gw_reshard(p.data(), p.size(), &o, room.data(), room.size(), &w2) == st);
        unchanged();
        if (st == GW_OK) FUZZ_CHECK(w2 == 0);
        FUZZ_CHECK(room == Bytes(64, 0xC3));
        return {st, {}};
    }
    const size_t need = written;
    // A state blob (header, trailer) no larger than the parts it came from.
    FUZZ_CHECK(need >= 16 && need <= total);
    {
        Bytes small(need - 1, 0xC3);
        size_t w2 = 0;
        FUZZ_CHECK(gw_reshard(p.data(), p.size(), &o, small.data(), small.size(), &w2) ==
                   GW_ERR_BUFFER_TOO_SMALL);
        unchanged();
        FUZZ_CHECK(w2 == need && small == Bytes(need - 1, 0xC3));
    }
    Bytes out(need, 0xA5), again(need, 0x5A);
    size_t w1 = 0, w2 = 0;
    FUZZ_CHECK(gw_reshard(p.data(), p.size(), &o, out.data(), out.size(), &w1) == GW_OK);
    unchanged();
    FUZZ_CHECK(gw_reshard(p.data(), p.size(), &o, again.data(), again.size(), &w2) == GW_OK);
    unchanged();
    FUZZ_CHECK(w1 == need && w2 == need && out == again);
    FUZZ_CHECK(std::memcmp(out.data(), "GWST", 4) == 0 && out[4] == 2 && out[5] == 0);
    const uint32_t crc = crc_of(out.data(), need - 4);
    for (int i = 0; i < 4; ++i) FUZZ_CHECK(out[need - 4 + i] == static_cast<uint8_t>(crc >> (8 * i)));
    return {GW_OK, std::move(out)};
}

bool same(const Result& a, const Result& b) { return a.status == b.status && a.out == b.out; }

// Loads a blob into a fresh handle of configuration `c` (rank, slice of
// `workers`); GW_OK leaves the handle saving back to the same bytes. Returns
// the load status, or 1 when no handle of that geometry is made here.
int load_into(const Config& c, uint32_t workers, uint32_t rank, const Slice& s, const Bytes& b) {
    if (workers == 0 || workers > kMaxTargetWorkers) return 1;
    gw_status st = GW_OK;
    Bytes back;
    switch (c.world) {
        case kWorkers:
        case kSlices: {
            if (s.len == 0 || s.len > kMaxTargetN) return 1;
            Worker h = c.worker(s.len);
            if ((st = gw_worker_load(h.h, b.data(), b.size())) == GW_OK) back = save(h.h);
            break;
        }
        case kServers: {
            if (s.off > c.n || s.len > c.n - s.off) return 1;
            Server h = c.server(c.n, s.off, s.len, workers);
            if ((st = gw_server_load(h.h, b.data(), b.size())) == GW_OK) back = save(h.h);
            break;
        }
        case kCltk: {
            if (rank >= workers || s.off != 0 || s.len != c.n) return 1;
            Cltk h = c.cltk(c.n, workers, rank);
            if ((st = gw_cltk_load(h.h, b.data(), b.size())) == GW_OK) back = save(h.h);
            break;
        }
        case kLags: {
            if (s.off != 0 || s.len != c.n) return 1;
            Lags h = c.lags(c.n);
            if ((st = gw_lags_layer_load(h.h, b.data(), b.size())) == GW_OK) back = save(h.h);
            break;
        }
        case kMaster: {
            Master h = c.master(Grads{});
            if ((st = gw_asylpg_master_load(h.h, b.data(), b.size())) == GW_OK) back = save(h.h);
            break;
        }
        default: {
            AWorker h = c.aworker(rank);
            if ((st = gw_asylpg_worker_load(h.h, b.data(), b.size())) == GW_OK) back = save(h.h);
            break;
        }
    }
    if (st == GW_OK) FUZZ_CHECK(back == b);
    return st;
}

// The range the target's blob holds (what a handle of it is created with).
Slice target_slice(const gw_reshard_options& o) { return Slice{o.offset, o.length}; }

// Checks of any call: those of reshard(), then invariance under the order
// of the parts (and, for kinds that ignore it, their ranks); a success means
// every part loads as a loader checks it and so does the output.
Result check(const Config& c, const std::vector<Part>& parts, const gw_reshard_options& o) {
    const Result r = reshard(parts, o);
    bool ignore_rank = !parts.empty();
    for (const Part& p : parts) {
        const uint16_t k = blob_kind(p.blob);
        ignore_rank = ignore_rank && (k == kBlobServer || k == kBlobMaster) && k == blob_kind(parts[0].blob);
    }
    if (ignore_rank) {
        std::vector<Part> zero = parts;
        for (Part& p : zero) p.rank = 0;
        FUZZ_CHECK(same(reshard(zero, o), r));
    }
    if (r.status != GW_OK) return r;
    if (parts.size() > 1) {
        std::vector<Part> rev(parts.rbegin(), parts.rend());
        FUZZ_CHECK(same(reshard(rev, o), r));
    }
    for (const Part& p : parts) {
        if (!p.origin.real) continue;
        const int st = load_into(c, c.workers, p.origin.rank, p.origin.slice, p.blob);
        FUZZ_CHECK(st == 1 || st == GW_OK || st == GW_ERR_STATE_MISMATCH);
    }
    if (!r.out.empty()) {
        const int st = load_into(c, o.workers_out, o.rank_out, target_slice(o), r.out);
        FUZZ_CHECK(st == 1 || st == GW_OK || st == GW_ERR_STATE_MISMATCH);
    }
    return r;
}

// ---------------------------------------------------------------------------
// Valid parts: every new rank is built, loads, steps; the mass is kept.

void check_mean(const Reference& ref, const std::vector<std::vector<Vec>>& now, const Slice& s,
                uint32_t m, uint32_t m2) {
    for (size_t i = 0; i < ref.ids.size(); ++i) {
        for (uint64_t k = 0; k < s.len; ++k) {
            double old = 0.0, mag = 0.0, mean2 = 0.0;
            for (uint32_t r = 0; r < m; ++r) {
                const float v = ref.of[i][r][s.off + k];
                old += v, mag += std::fabs(v);
            }
            old /= m, mag /= m;
            const double tol = 1e-5 * mag + 1e-37;
            for (uint32_t r = 0; r < m2; ++r) {
                const float v = now[i][r][k];
                mean2 += v;
                if (m2 == m) {  // each its own, bit for bit
                    FUZZ_CHECK(std::memcmp(&v, &ref.of[i][r][s.off + k], sizeof v) == 0);
                } else {  // each the mean over the old workers
                    FUZZ_CHECK(std::fabs(v - old) <= tol);
                }
            }
            mean2 /= m2;
            FUZZ_CHECK(std::fabs(mean2 - old) <= tol);  // the mass
        }
    }
}

void check_valid(const Config& c, const Builder& b, const std::vector<Part>& parts,
                 const Reference& ref, const gw_reshard_options& o) {
    const uint32_t m = c.workers, m2 = o.workers_out;
    const Result first = check(c, parts, o);
    if (ref.mid_round) {
        FUZZ_CHECK(first.status == GW_ERR_SEQUENCE);
        return;
    }
    FUZZ_CHECK(first.status == GW_OK);
    const Slice range = target_slice(o);
    std::vector<std::vector<Vec>> now(ref.ids.size(), std::vector<Vec>(m2, Vec(range.len)));
    std::vector<Server> servers;
    std::vector<Slice> slices;
    std::vector<Cltk> cltks;
    for (uint32_t r = 0; r < m2; ++r) {
        gw_reshard_options t = o;
        t.rank_out = r;
        Slice s = range;
        if (c.world == kServers) {  // every new server its own slice
            FUZZ_CHECK(gw_shard_range(c.n, m2, r, &s.off, &s.len) == GW_OK);
            t.offset = s.off, t.length = s.len;
        }
        const Result res = r == o.rank_out && c.world != kServers ? first : reshard(parts, t);
        FUZZ_CHECK(res.status == GW_OK);
        const Bytes& out = res.out;
        // A part of rank r holding exactly the range comes back as it was at M' = M.
        if (m2 == m && c.world != kMaster && c.world != kAWorkers) {
            for (const Part& p : parts)
                if (p.origin.rank == r && p.origin.slice.off == s.off && p.origin.slice.len == s.len)
                    FUZZ_CHECK(out == p.blob);
        }
        if (out.empty()) FUZZ_CHECK(c.world == kAWorkers && r >= m);
        else if (c.world != kServers && c.world != kCltk) FUZZ_CHECK(load_into(c, m2, r, s, out) == GW_OK);
        const Vec grad = b.g.vec(100 + r, 99, s.off, s.len);
        switch (c.world) {
            case kWorkers:
            case kSlices: {
                Worker h = c.worker(s.len);
                FUZZ_CHECK(gw_worker_load(h.h, out.data(), out.size()) == GW_OK);
                for (size_t i = 0; i < ref.ids.size(); ++i) {
                    float* v = now[i][r].data();
                    FUZZ_CHECK((ref.ids[i] == 64 ? gw_worker_momentum(h.h, v, s.len)
                                                 : gw_worker_residual(h.h, v, s.len)) == GW_OK);
                }
                uint64_t steps = 0;
                FUZZ_CHECK(gw_worker_step_count(h.h, &steps) == GW_OK && steps == b.steps);
                step(h.h, grad, 0.1f);
                break;
            }
            case kServers: {
                servers.push_back(c.server(c.n, s.off, s.len, m2));
                FUZZ_CHECK(gw_server_load(servers.back().h, out.data(), out.size()) == GW_OK);
                FUZZ_CHECK(save(servers.back().h) == out);
                slices.push_back(s);
                if (c.server_ef() && s.len) {
                    Vec e(s.len);
                    FUZZ_CHECK(gw_server_residual(servers.back().h, e.data(), s.len) == GW_OK);
                    FUZZ_CHECK(std::memcmp(e.data(), ref.server_e.data() + s.off, 4 * s.len) == 0);
                }
                break;
            }
            case kCltk: {
                cltks.push_back(c.cltk(c.n, m2, r));
                FUZZ_CHECK(gw_cltk_load(cltks.back().h, out.data(), out.size()) == GW_OK);
                FUZZ_CHECK(save(cltks.back().h) == out);
                FUZZ_CHECK(gw_cltk_memory(cltks.back().h, now[0][r].data(), c.n) == GW_OK);
                break;
            }
            case kLags: {
                Lags h = c.lags(c.n);
                FUZZ_CHECK(gw_lags_layer_load(h.h, out.data(), out.size()) == GW_OK);
                FUZZ_CHECK(gw_lags_layer_residual(h.h, now[0][r].data(), c.n) == GW_OK);
                step(h.h, grad, 0.1f, false);
                break;
            }
            case kMaster: {
                FUZZ_CHECK(out == parts[0].blob);  // carried as it is
                Master h = c.master(Grads{});
                FUZZ_CHECK(gw_asylpg_master_load(h.h, out.data(), out.size()) == GW_OK);
                master_update(h.h, c.n, b.g, 77);
                break;
            }
            default: {
                AWorker h = c.aworker(r);
                if (r < m) {  // its own blob
                    FUZZ_CHECK(out == parts[r].blob);
                    FUZZ_CHECK(gw_asylpg_worker_load(h.h, out.data(), out.size()) == GW_OK);
                } else {  // a new worker starts fresh
                    FUZZ_CHECK(out.empty());
                }
                aworker_step(h.h, c.n, b.g, 77, r >= m);
                break;
            }
        }
    }
    if (c.world == kServers) {
        server_round(servers, slices, c, b.g, m2, 0.1f);
    } else if (c.world == kCltk) {
        cltk_round(cltks, c.n, b.g, 77, 0.1f);
    }
    if (c.world == kWorkers || c.world == kSlices || c.world == kCltk || c.world == kLags)
        check_mean(ref, now, range, m, m2);
}

// ---------------------------------------------------------------------------
// Mutations

template <class T> void put(Bytes& b, size_t at, T v) {
    if (at + sizeof v <= b.size()) std::memcpy(&b[at], &v, sizeof v);
}

enum Op : uint8_t {
    kFlip, kFlipFixed, kSetByteFixed, kSetField, kTruncate, kTruncateFixed, kSwap, kSwapBlobs,
    kDuplicate, kDrop, kRank, kOffset, kRaw, kRawBlob, kTarget, kTarget2, kOps
};

void mutate(Input& in, std::vector<Part>& parts, gw_reshard_options& o) {
    const uint8_t op = in.u8() % kOps, a = in.u8(), v = in.u8();
    const uint16_t pos = in.u16();
    if (op == kRaw || op == kRawBlob) {
        if (parts.size() >= kMaxParts) return;
        Part p;
        p.rank = pos % 17;
        p.offset = (pos >> 5) % 65;
        p.blob = in.bytes(v);
        if (op == kRawBlob) {  // a well-formed header over fuzzer bytes, checksum fixed
            Bytes b = {'G', 'W', 'S', 'T', 2, 0, uint8_t(a % 8), 0, uint8_t(pos % 25), 0, 0, 0};
            b.insert(b.end(), p.blob.begin(), p.blob.end());
            b.resize(b.size() + 4);
            fix_crc(b);
            p.blob = std::move(b);
        }
        parts.push_back(std::move(p));
        return;
    }
    if (op == kTarget || op == kTarget2) {
        switch ((op == kTarget2 ? 8 : 0) + v % 8) {
            case 0: o.workers_in = pos % 20; break;
            case 1: o.workers_out = pos % 20; break;
            case 2: o.rank_out = pos % 20; break;
            case 3: o.offset = pos % 80; break;
            case 4: o.length = pos % 80; break;
            case 5: o.offset = pick(kU64, pos); break;
            case 6: o.length = pick(kU64, pos); break;
            case 7: o.version = pos % 3; break;
            case 8: o.workers_in = pick(kU32, pos); break;
            case 9: o.workers_out = pick(kU32, pos); break;
            case 10: o.rank_out = pick(kU32, pos); break;
            case 11: o.offset += pos % 5, o.length -= pos / 5 % 5; break;
            case 12: o.length += pos % 5, o.offset -= pos / 5 % 5; break;
            case 13: std::swap(o.workers_in, o.workers_out); break;
            default: o.offset = pick(kU64, pos), o.length = pick(kU64, pos >> 8); break;
        }
        return;
    }
    if (parts.empty()) return;
    Part& p = parts[a % parts.size()];
    Bytes& b = p.blob;
    switch (op) {
        case kFlip:
        case kFlipFixed:
            if (b.empty()) return;
            b[pos % b.size()] ^= uint8_t(1u << (v & 7));
            if (op == kFlipFixed) fix_crc(b);
            break;
        case kSetByteFixed:
            if (b.empty()) return;
            b[pos % b.size()] = v;
            fix_crc(b);
            break;
        case kSetField: {  // a field of the blob set to an extreme value, checksum fixed
            const auto f = fields_of(b);
            if (f.empty()) return;
            const FieldAt& x = f[pos % f.size()];
            const unsigned sel = pos >> 6;
            if (v & 0x80) {  // its element count, or its id or type
                if (v & 0x40) put<uint64_t>(b, x.header + 4, pick(kU64, sel));
                else if (v & 0x20) put<uint16_t>(b, x.header, uint16_t(v & 0x1F) + (v & 0x10 ? 64 : 16));
                else b[x.header + 2] = uint8_t(sel % 8);
            } else if (x.count > 0) {
                const uint64_t i = x.type == 6 || x.type == 5 ? (v & 0x3F) % x.count : 0;
                switch (x.type) {
                    case 1: b[x.data] = pick(kU8, sel); break;
                    case 2: put<uint32_t>(b, x.data, pick(kU32, sel)); break;
                    case 3: put<uint64_t>(b, x.data, pick(kU64, sel)); break;
                    case 5: b[x.data + i] = uint8_t(sel); break;
                    default: put<float>(b, x.data + 4 * i, pick(kF32, sel)); break;
                }
            }
            fix_crc(b);
            break;
        }
        case kTruncate:
        case kTruncateFixed:
            b.resize(pos % (b.size() + 1));
            if (op == kTruncateFixed) fix_crc(b);
            break;
        case kSwap: std::swap(p, parts[v % parts.size()]); break;
        case kSwapBlobs: {  // ranks and offsets stay: the wrong ones for the blobs
            Part& q = parts[v % parts.size()];
            std::swap(p.blob, q.blob);
            std::swap(p.origin, q.origin);
            break;
        }
        case kDuplicate:
            if (parts.size() < kMaxParts) {
                Part copy = p;
                if (v & 1) copy.rank = pos % 17;
                parts.push_back(std::move(copy));
            }
            break;
        case kDrop: parts.erase(parts.begin() + a % parts.size()); break;
        case kRank: p.rank = v & 0x80 ? pick(kU32, pos) : pos % 18; break;
        default:  // kOffset
            p.offset = v & 0x80 ? pick(kU64, pos) : v & 0x40 ? p.offset + pos % 3 - 1 : pos % 80;
            break;
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    Input in{data, size};
    Builder b;
    Config& c = b.c;
    c.world = in.u8() % kWorlds;
    c.workers = in.u8() % 16 + 1;
    const uint32_t m2 = in.u8() % 16 + 1;
    const uint32_t rank_out = in.u8() % m2;
    c.n = in.u8() % 64 + 1;
    c.variant = in.u8();
    b.steps = in.u8() % 4;
    b.g.seed = in.u16();
    b.g.scale = std::ldexp(1.0f, int(in.u8() % 41) - 20);
    b.lrs = in.u8();
    const uint8_t range_mode = in.u8(), range_a = in.u8(), range_b = in.u8();
    for (uint8_t& e : b.extra) e = in.u8();
    if (c.world == kSlices)
        for (uint32_t r = 0; r < c.workers; ++r) b.cuts.push_back(in.u8());

    std::vector<Part> parts;
    Reference ref;
    b.build(parts, ref);

    gw_reshard_options o;
    FUZZ_CHECK(gw_reshard_options_init(&o, GW_RESHARD_OPTIONS_VERSION) == GW_OK);
    o.workers_in = c.workers, o.workers_out = m2, o.rank_out = rank_out;
    Slice range{0, c.n};
    switch (c.world) {
        case kWorkers:
        case kSlices:
            if (range_mode % 3 == 1) {  // a slice of M' (the whole tensor where it is empty)
                FUZZ_CHECK(gw_shard_range(c.n, m2, range_a % m2, &range.off, &range.len) == GW_OK);
                if (range.len == 0) range = Slice{0, c.n};
            } else if (range_mode % 3 == 2) {  // any range in the tensor
                range.off = range_a % c.n;
                range.len = 1 + range_b % (c.n - range.off);
            }
            break;
        case kServers:
            if (range_mode % 2 == 0) {
                FUZZ_CHECK(gw_shard_range(c.n, m2, rank_out, &range.off, &range.len) == GW_OK);
            } else {  // any range, empty ones too
                range.off = range_a % (c.n + 1);
                range.len = range_b % (c.n - range.off + 1);
            }
            break;
        case kMaster:
        case kAWorkers: range = Slice{0, 0}; break;
        default: break;
    }
    o.offset = range.off, o.length = range.len;

    const size_t ops = in.u8() % (kMaxOps + 1);
    if (ops == 0) {
        check_valid(c, b, parts, ref, o);
        return 0;
    }
    for (size_t i = 0; i < ops; ++i) mutate(in, parts, o);
    check(c, parts, o);
    return 0;
}
