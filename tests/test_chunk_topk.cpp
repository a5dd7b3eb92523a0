// Chunk-wise top-k and index-only frames (docs/algorithms.md s.4): the
// selection matches a per-chunk sort reference on every SIMD target, on
// random, tied, all-equal, denormal and zero inputs, k = 0, k = n, n = 1 and
// every chunk layout; frames are canonical; decoders reject chunks holding
// more than their share; the index-set helpers.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <map>
#include <random>

#include "ref_algorithms.hpp"
#include "test_util.hpp"

using gwtest::bits_equal;
using gwtest::payload_offset;
using gwtest::random_floats;
using gwtest::refresh_crc;
using gwtest::Spec;
using ref::Vec;

namespace {

// Revision 0: the spec's default (2, exactly k).
Spec chunked(gw_codec_id id, int64_t k, int64_t chunk, gw_dtype vt = GW_DTYPE_F32, int zstd = 1,
             int revision = 0) {
    Spec s(id);
    s.set(GW_PARAM_K, k).set(GW_PARAM_CHUNK_SIZE, chunk).set(GW_PARAM_ZSTD, zstd);
    if (revision) s.set(GW_PARAM_REVISION, revision);
    if (k == 0) s.set(GW_PARAM_DENSITY_PPM, 0);
    if (id == GW_CODEC_CHUNK_TOPK) s.set(GW_PARAM_VALUE_DTYPE, vt);
    return s;
}


}  // namespace

TEST(ChunkTopk, MatchesPerChunkReferenceOnEveryTarget) {
    for (size_t n : {size_t(1), size_t(2), size_t(17), size_t(1000), size_t(70001)}) {
        const std::vector<uint64_t> chunks = {0, 1, 7, 64, n > 1 ? n - 1 : 1, n, n + 3, 65536};
        const std::vector<uint64_t> ks = {0, 1, n / 100, n / 10, n - 1, n};
        for (const auto& named : gwtest::selection_inputs(n))
            for (uint64_t c : chunks)
                for (uint64_t k : ks)
                for (int rev : {1, 2}) {
                    if (n > 1000 && c != 0 && c < 64) continue;  // tiny chunks: small n suffices
                    if (rev == 1 && n > 1000) continue;  // the first rule: small n suffices
                    const Vec& x = named.second;
                    SCOPED_TRACE(testing::Message() << "n " << n << " input " << named.first
                                                    << " chunk " << c << " k " << k << " revision " << rev);
                    const gw_dtype vt = k % 2 ? GW_DTYPE_BF16 : GW_DTYPE_F32;
                    const Spec vals = chunked(GW_CODEC_CHUNK_TOPK, int64_t(k), int64_t(c), vt, 1, rev);
                    const Spec idx = chunked(GW_CODEC_INDEX, int64_t(k), int64_t(c), GW_DTYPE_F32, 1, rev);
                    const uint64_t ke = std::min<uint64_t>(k, n);
                    const Vec want = ref::chunk_topk(x, ke, c, rev, vt);
                    Vec mask(n, 0.0f);
                    const Vec sel = ref::chunk_topk(x, ke, c, rev, GW_DTYPE_F32);
                    for (size_t i = 0; i < n; ++i) mask[i] = sel[i] != 0.0f ? 1.0f : 0.0f;
                    std::vector<uint8_t> first_vals, first_idx;
                    gwtest::for_each_target([&](gw_simd_target) {
                        const auto fv = gwtest::encode(vals, x), fi = gwtest::encode(idx, x);
                        if (first_vals.empty()) {
                            first_vals = fv;
                            first_idx = fi;
                        }
                        ASSERT_EQ(fv, first_vals) << "frame bytes differ between targets";
                        ASSERT_EQ(fi, first_idx) << "frame bytes differ between targets";
                        ASSERT_TRUE(bits_equal(gwtest::decode(fv, n), want));
                        ASSERT_TRUE(bits_equal(gwtest::decode(fi, n), mask));
                    });
                    // Canonical: decoding and re-encoding gives the same bytes.
                    ASSERT_EQ(gwtest::encode(vals, gwtest::decode(first_vals, n)), first_vals);
                    ASSERT_EQ(gwtest::encode(idx, gwtest::decode(first_idx, n)), first_idx);
                }
    }
}

// Issue 20: the ceil-per-chunk rule sent up to k + chunks - 1 entries (1000
// elements, k = 10, chunks of 7: 143). The default rule sends exactly
// min(k, n), each chunk its exact share of its own top entries; the index
// frames (CLT-k's leader message) and the chunk_topk frames alike.
TEST(ChunkTopk, SendsExactlyKEntries) {
    std::mt19937 rng(20);
    struct Case {
        uint64_t n, k, chunk;
    };
    std::vector<Case> cases = {{1000, 10, 7}, {20, 6, 8}, {20, 7, 6}, {1, 1, 1},
                               {5, 5, 2},    {5, 9, 2},  {20, 1000, 3}};  // k > n: all n
    for (int t = 0; t < 192; ++t) {
        const uint64_t n = 1 + rng() % 2000;
        const uint64_t k = 1 + rng() % std::min<uint64_t>(n, 200);
        const uint64_t chunk = t % 8 == 0 ? 0 : 1 + rng() % std::min<uint64_t>(n, 300);
        cases.push_back({n, k, chunk});
    }
    size_t exceeded = 0;
    for (const Case& cs : cases) {
        SCOPED_TRACE(testing::Message() << "n " << cs.n << " k " << cs.k << " chunk " << cs.chunk);
        Vec x = random_floats(cs.n, uint32_t(cs.n * 31 + cs.k));
        for (float& v : x)
            if (v == 0.0f) v = 0.5f;  // every entry is selectable
        const uint64_t ke = std::min(cs.k, cs.n);
        const Vec want = ref::chunk_topk(x, ke, cs.chunk, 2, 1);
        uint64_t shares = 0;
        const uint64_t c = cs.chunk == 0 || cs.chunk > cs.n ? cs.n : cs.chunk;
        for (uint64_t s : ref::chunk_shares(ke, cs.n, cs.chunk, 2)) {
            ASSERT_LE(s, c);
            shares += s;
        }
        ASSERT_EQ(shares, ke);
        for (gw_codec_id id : {GW_CODEC_CHUNK_TOPK, GW_CODEC_INDEX}) {
            SCOPED_TRACE(gw_codec_name(id));
            const auto f = gwtest::encode(chunked(id, int64_t(cs.k), int64_t(cs.chunk), GW_DTYPE_F32, 0), x);
            const Vec d = gwtest::decode(f, cs.n);
            uint64_t entries = 0;
            for (uint64_t i = 0; i < cs.n; ++i) {
                entries += d[i] != 0.0f;
                const float w = want[i] == 0.0f ? 0.0f : (id == GW_CODEC_INDEX ? 1.0f : want[i]);
                ASSERT_EQ(d[i], w) << "element " << i;
            }
            EXPECT_EQ(entries, ke);
        }
        // The first rule, still written on request: the sum of its ceilings.
        uint64_t ceil_sum = 0;
        for (uint64_t s : ref::chunk_shares(ke, cs.n, cs.chunk, 1)) ceil_sum += s;
        const auto f1 = gwtest::encode(chunked(GW_CODEC_INDEX, int64_t(cs.k), int64_t(cs.chunk), GW_DTYPE_F32, 0, 1), x);
        uint32_t count = 0;
        std::memcpy(&count, &f1[payload_offset(f1)], 4);
        EXPECT_EQ(count, ceil_sum);
        exceeded += ceil_sum > ke;
    }
    EXPECT_GT(exceeded, cases.size() / 2);  // the sample: 170 of 192
}

TEST(ChunkTopk, OneChunkIsExactTopk) {
    const Vec x = random_floats(5000, 4);
    Spec topk(GW_CODEC_TOPK);
    topk.set(GW_PARAM_K, 50).set(GW_PARAM_ZSTD, 0);
    EXPECT_TRUE(bits_equal(gwtest::decode(gwtest::encode(chunked(GW_CODEC_CHUNK_TOPK, 50, 0, GW_DTYPE_F32, 0), x), 5000),
                           gwtest::decode(gwtest::encode(topk, x), 5000)));
}

TEST(ChunkTopk, ResidualAndNanPolicy) {
    const size_t n = 3000;
    const Vec x = random_floats(n, 5);
    for (gw_codec_id id : {GW_CODEC_CHUNK_TOPK, GW_CODEC_INDEX}) {
        const Spec s = chunked(id, 30, 256);
        // gw_encode refuses NaN/Inf before writing anything.
        for (float bad : {NAN, INFINITY}) {
            Vec y = x;
            y[1234] = bad;
            std::vector<uint8_t> out(100000, 0xAB);
            size_t written = 7;
            EXPECT_EQ(gw_encode(s, nullptr, y.data(), GW_DTYPE_F32, n, out.data(), out.size(), &written),
                      GW_ERR_NONFINITE);
            EXPECT_EQ(written, 7u);
            EXPECT_EQ(out[0], 0xAB);
        }
    }
    // A worker with the chunk_topk codec keeps exactly what it did not send.
    gw_worker_options o = GW_WORKER_OPTIONS_INIT;
    o.n = n;
    o.momentum = GW_MOMENTUM_NONE;
    o.mu = 0.0f;
    gw_worker* w = nullptr;
    const Spec s = chunked(GW_CODEC_CHUNK_TOPK, 30, 256);
    ASSERT_EQ(gw_worker_create(&w, &o, s), GW_OK);
    size_t bound = 0, written = 0;
    ASSERT_EQ(gw_worker_frame_bound(w, &bound), GW_OK);
    std::vector<uint8_t> f(bound);
    ASSERT_EQ(gw_worker_step(w, x.data(), GW_DTYPE_F32, n, 1.0f, f.data(), f.size(), &written), GW_OK);
    f.resize(written);
    Vec e(n), d = gwtest::decode(f, n);
    ASSERT_EQ(gw_worker_residual(w, e.data(), n), GW_OK);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(e[i] + d[i], x[i]) << i;
    gw_worker_free(w);
}

namespace {

// A raw (no zstd) frame of `id` for n elements whose payload is replaced by p.
std::vector<uint8_t> with_payload(gw_codec_id id, size_t n, int64_t k, int64_t c,
                                  const std::vector<uint8_t>& p, int revision = 1) {
    auto f = gwtest::encode(chunked(id, k, c, GW_DTYPE_F32, 0, revision), random_floats(n, 2));
    f.resize(payload_offset(f));
    f.insert(f.end(), p.begin(), p.end());
    const uint64_t len = p.size();
    std::memcpy(&f[24], &len, 8);
    gwtest::refresh_header_crc(f);
    f.resize(f.size() + 4);
    refresh_crc(f);
    return f;
}

// Sparse payloads: u32 count | [values] | gap planes.
std::vector<uint8_t> payload(std::vector<uint32_t> idx, bool values) {
    const uint32_t nnz = uint32_t(idx.size());
    const size_t vs = values ? 4 : 0;
    std::vector<uint8_t> p(4 + nnz * (vs + 4));
    std::memcpy(p.data(), &nnz, 4);
    uint32_t next = 0;
    for (uint32_t i = 0; i < nnz; ++i) {
        const float v = 1.0f + float(i);
        if (values) std::memcpy(&p[4 + 4 * i], &v, 4);
        const uint32_t gap = idx[i] - next;
        for (int b = 0; b < 4; ++b) p[4 + nnz * vs + b * nnz + i] = uint8_t(gap >> (8 * b));
        next = idx[i] + 1;
    }
    return p;
}

gw_status status(const std::vector<uint8_t>& f, size_t n) {
    Vec out(n);
    return gw_decode(f.data(), f.size(), out.data(), n, nullptr);
}

}  // namespace

TEST(ChunkTopk, DecodersEnforceEveryChunksShare) {
    // n = 20, chunks of 8 (8, 8, 4), k = 6. Revision 1: k_j = 3, 3, 2.
    for (gw_codec_id id : {GW_CODEC_CHUNK_TOPK, GW_CODEC_INDEX}) {
        const bool v = id == GW_CODEC_CHUNK_TOPK;
        SCOPED_TRACE(gw_codec_name(id));
        EXPECT_EQ(status(with_payload(id, 20, 6, 8, payload({0, 1, 2, 8, 9, 10, 16, 19}, v)), 20), GW_OK);
        // Four entries in the first chunk: within the total (8) but not its share.
        EXPECT_EQ(status(with_payload(id, 20, 6, 8, payload({0, 1, 2, 3}, v)), 20), GW_ERR_FRAME_INDEX);
        EXPECT_EQ(status(with_payload(id, 20, 6, 8, payload({16, 17, 18}, v)), 20), GW_ERR_FRAME_INDEX);
        // More than the total, an index past n, a short payload.
        EXPECT_EQ(status(with_payload(id, 20, 6, 8, payload({0, 1, 2, 8, 9, 10, 16, 17, 19}, v)), 20),
                  GW_ERR_FRAME_LENGTH);
        EXPECT_EQ(status(with_payload(id, 20, 6, 8, payload({0, 20}, v)), 20), GW_ERR_FRAME_INDEX);
        auto p = payload({0, 1}, v);
        p.pop_back();
        EXPECT_EQ(status(with_payload(id, 20, 6, 8, p), 20), GW_ERR_FRAME_LENGTH);
        EXPECT_EQ(status(with_payload(id, 20, 6, 8, {1, 0}), 20), GW_ERR_FRAME_LENGTH);
    }
    // Revision 2 (exactly k): floor shares 2, 2, 1 and one more for chunk 0
    // (fractional parts .4, .4, .2: the tie goes to the lower chunk): 3, 2, 1.
    for (gw_codec_id id : {GW_CODEC_CHUNK_TOPK, GW_CODEC_INDEX}) {
        const bool v = id == GW_CODEC_CHUNK_TOPK;
        SCOPED_TRACE(gw_codec_name(id));
        auto st = [&](std::vector<uint32_t> idx) {
            return status(with_payload(id, 20, 6, 8, payload(idx, v), 2), 20);
        };
        EXPECT_EQ(st({0, 1, 2, 8, 9, 16}), GW_OK);
        EXPECT_EQ(st({0, 8, 9, 16}), GW_OK);  // fewer is fine (zeros are dropped)
        EXPECT_EQ(st({0, 1, 2, 3}), GW_ERR_FRAME_INDEX);
        EXPECT_EQ(st({8, 9, 10}), GW_ERR_FRAME_INDEX);  // within revision 1's share
        EXPECT_EQ(st({16, 17}), GW_ERR_FRAME_INDEX);
        EXPECT_EQ(st({0, 1, 2, 8, 9, 10, 16}), GW_ERR_FRAME_LENGTH);  // k + 1
        // Chunks of 6 (6, 6, 6, 2), k = 7: 2, 2, 2 and the short last chunk's
        // part .7 beats .1: 2, 2, 2, 1 (revision 1: 3, 3, 3, 1).
        auto st6 = [&](std::vector<uint32_t> idx) {
            return status(with_payload(id, 20, 7, 6, payload(idx, v), 2), 20);
        };
        EXPECT_EQ(st6({0, 1, 6, 7, 12, 13, 18}), GW_OK);
        EXPECT_EQ(st6({0, 1, 2, 6, 7, 12, 13}), GW_ERR_FRAME_INDEX);
        EXPECT_EQ(st6({18, 19}), GW_ERR_FRAME_INDEX);
    }
}

// The revision is the last parameter, absent from the wire when 1: frames of
// the first rule keep their bytes (P = 18 chunk_topk, 17 index); revision 2
// adds one byte; a 1 written out, or a revision out of 1..2, is refused.
TEST(ChunkTopk, RevisionOnTheWire) {
    const Vec x = random_floats(20, 3);
    for (gw_codec_id id : {GW_CODEC_CHUNK_TOPK, GW_CODEC_INDEX}) {
        SCOPED_TRACE(gw_codec_name(id));
        const size_t p1 = id == GW_CODEC_CHUNK_TOPK ? 18 : 17;
        int64_t lo = 0, hi = 0, def = 0;
        ASSERT_EQ(gw_codec_param_bounds(id, GW_PARAM_REVISION, &lo, &hi, &def), GW_OK);
        EXPECT_EQ(lo, 1);
        EXPECT_EQ(hi, 2);
        EXPECT_EQ(def, 2);
        EXPECT_STREQ(gw_param_name(GW_PARAM_REVISION), "revision");
        const auto f1 = gwtest::encode(chunked(id, 6, 8, GW_DTYPE_F32, 0, 1), x);
        const auto f2 = gwtest::encode(chunked(id, 6, 8, GW_DTYPE_F32, 0), x);
        EXPECT_EQ(payload_offset(f1), 40 + p1);
        EXPECT_EQ(payload_offset(f2), 40 + p1 + 1);
        EXPECT_EQ(f2[40 + p1], 2);
        for (const auto* f : {&f1, &f2}) {
            gw_codec_spec* spec = nullptr;
            ASSERT_EQ(gw_frame_spec(f->data(), f->size(), &spec), GW_OK);
            int64_t rev = 0;
            ASSERT_EQ(gw_codec_spec_get(spec, GW_PARAM_REVISION, &rev), GW_OK);
            EXPECT_EQ(rev, f == &f1 ? 1 : 2);
            // Re-encoding with the frame's own spec gives the same bytes.
            EXPECT_EQ(gwtest::encode(spec, gwtest::decode(*f, 20)), *f);
            gw_codec_spec_free(spec);
            size_t total = 0;
            ASSERT_EQ(gw_frame_size(f->data(), GW_FRAME_HEADER_SIZE, &total), GW_OK);
            EXPECT_EQ(total, f->size());
        }
        // Other revision bytes in a revision 2 frame (sizes and CRCs intact).
        for (uint8_t b : {0, 1, 3, 255}) {
            auto g = f2;
            g[40 + p1] = b;
            refresh_crc(g);
            Vec out(20);
            EXPECT_EQ(gw_decode(g.data(), g.size(), out.data(), 20, nullptr), GW_ERR_FRAME_PARAMS)
                << int(b);
        }
        // A parameter length that is neither form.
        for (uint16_t plen : {uint16_t(p1 - 1), uint16_t(p1 + 2)}) {
            auto g = f2;
            std::memcpy(&g[32], &plen, 2);
            gwtest::refresh_header_crc(g);
            size_t total = 0;
            EXPECT_EQ(gw_frame_size(g.data(), g.size(), &total), GW_ERR_FRAME_PARAMS);
        }
        // Frames of either rule are their own codec parameters: not equal.
        gw_codec_spec *a = nullptr, *b = nullptr;
        ASSERT_EQ(gw_frame_spec(f1.data(), f1.size(), &a), GW_OK);
        ASSERT_EQ(gw_frame_spec(f2.data(), f2.size(), &b), GW_OK);
        EXPECT_EQ(gw_codec_spec_equal(a, b), 0);
        gw_codec_spec_free(a);
        gw_codec_spec_free(b);
    }
}

TEST(IndexSets, FrameIndicesAndOverlap) {
    const Vec x = {0, 5, -1, 0, 3, 0, 0, -7, 0.5f, 0};
    const auto f = gwtest::encode(chunked(GW_CODEC_INDEX, 4, 0), x);
    uint32_t idx[10];
    size_t count = 0;
    ASSERT_EQ(gw_index_frame_indices(f.data(), f.size(), idx, 10, &count), GW_OK);
    ASSERT_EQ(count, 4u);
    EXPECT_EQ(std::vector<uint32_t>(idx, idx + 4), (std::vector<uint32_t>{1, 2, 4, 7}));
    count = 0;
    EXPECT_EQ(gw_index_frame_indices(f.data(), f.size(), idx, 3, &count), GW_ERR_BUFFER_TOO_SMALL);
    EXPECT_EQ(count, 4u);  // set for a valid frame: (NULL, 0) asks for the count
    count = 0;
    EXPECT_EQ(gw_index_frame_indices(f.data(), f.size(), nullptr, 0, &count), GW_ERR_BUFFER_TOO_SMALL);
    EXPECT_EQ(count, 4u);
    EXPECT_EQ(gw_index_frame_indices(f.data(), f.size() - 1, idx, 10, &count), GW_ERR_FRAME_TRUNCATED);
    Spec topk(GW_CODEC_TOPK);
    const auto g = gwtest::encode(topk, x);
    EXPECT_EQ(gw_index_frame_indices(g.data(), g.size(), idx, 10, &count), GW_ERR_CODEC_MISMATCH);
    // Fewer nonzeros than k: zeros are not selected.
    const auto h = gwtest::encode(chunked(GW_CODEC_INDEX, 8, 0), x);
    ASSERT_EQ(gw_index_frame_indices(h.data(), h.size(), idx, 10, &count), GW_OK);
    EXPECT_EQ(count, 5u);

    const uint32_t a[] = {1, 2, 4, 7}, b[] = {2, 3, 7}, bad[] = {3, 3};
    double ov = -1;
    ASSERT_EQ(gw_index_overlap(a, 4, b, 3, &ov), GW_OK);
    EXPECT_DOUBLE_EQ(ov, 2.0 / 4.0);
    ASSERT_EQ(gw_index_overlap(a, 4, a, 4, &ov), GW_OK);
    EXPECT_DOUBLE_EQ(ov, 1.0);
    ASSERT_EQ(gw_index_overlap(nullptr, 0, nullptr, 0, &ov), GW_OK);
    EXPECT_DOUBLE_EQ(ov, 1.0);
    ASSERT_EQ(gw_index_overlap(a, 4, nullptr, 0, &ov), GW_OK);
    EXPECT_DOUBLE_EQ(ov, 0.0);
    EXPECT_EQ(gw_index_overlap(bad, 2, a, 4, &ov), GW_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(gw_index_overlap(a, 4, nullptr, 1, &ov), GW_ERR_NULL_POINTER);
}
