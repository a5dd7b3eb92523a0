// LAGS-SGD's fusion buffer and bundles (docs/wire-format.md, "Bundles"):
// layers added from threads in any order give the same bundle bytes; a
// bundle flushes when full or after the last layer; the reader takes apart
// what the buffer writes and refuses every malformed bundle with its own
// status, prefixes as truncated.
#include <algorithm>
#include <random>
#include <thread>

#include "test_util.hpp"

using gwtest::random_floats;
using gwtest::Spec;

namespace {

struct Fusion {
    gw_fusion* h = nullptr;
    Fusion(uint32_t layers, size_t capacity) {
        gw_fusion_options o = GW_FUSION_OPTIONS_INIT;
        o.layers = layers;
        o.capacity = capacity;
        EXPECT_EQ(gw_fusion_create(&h, &o), GW_OK);
    }
    ~Fusion() { gw_fusion_free(h); }
    std::vector<uint8_t> flush() {
        size_t size = 0, written = 0;
        EXPECT_EQ(gw_fusion_bundle_size(h, &size), GW_OK);
        std::vector<uint8_t> b(size);
        EXPECT_EQ(gw_fusion_flush(h, b.data(), b.size(), &written), GW_OK);
        EXPECT_EQ(written, size);
        return b;
    }
};

// Sparse frames of L layers of different sizes (layer l tagged GW_TAG(l, 7)).
std::vector<std::vector<uint8_t>> layer_frames(uint32_t L) {
    std::vector<std::vector<uint8_t>> f;
    Spec s(GW_CODEC_TOPK);
    s.set(GW_PARAM_K, 3);
    for (uint32_t l = 0; l < L; ++l) f.push_back(gwtest::encode(s, random_floats(10 + 7 * l, l), GW_TAG(l, 7)));
    return f;
}

std::vector<gw_bundle_entry> entries(const std::vector<uint8_t>& b, gw_status want = GW_OK) {
    size_t count = 0;
    std::vector<gw_bundle_entry> e(GW_FUSION_MAX_LAYERS);
    EXPECT_EQ(gw_bundle_frames(b.data(), b.size(), e.data(), e.size(), &count), want);
    e.resize(want == GW_OK ? count : 0);
    return e;
}

}  // namespace

TEST(Fusion, ThreadsInAnyOrderGiveTheSameBundle) {
    const uint32_t L = 12;
    const auto frames = layer_frames(L);
    Fusion ref(L, size_t(1) << 20);
    int flush = 0;
    for (uint32_t l = 0; l < L; ++l) {
        ASSERT_EQ(gw_fusion_add(ref.h, l, frames[l].data(), frames[l].size(), &flush), GW_OK);
        EXPECT_EQ(flush, l + 1 == L);  // the last layer completes the iteration
    }
    const auto want = ref.flush();
    const auto e = entries(want);
    ASSERT_EQ(e.size(), L);
    for (uint32_t l = 0; l < L; ++l) {
        EXPECT_EQ(e[l].layer, l);
        EXPECT_EQ(std::vector<uint8_t>(want.begin() + e[l].offset, want.begin() + e[l].offset + e[l].size),
                  frames[l]);
    }
    for (int rep = 0; rep < 20; ++rep) {
        Fusion f(L, size_t(1) << 20);
        std::vector<std::thread> th;
        std::atomic<int> flushes{0};
        std::vector<uint32_t> order(L);
        for (uint32_t l = 0; l < L; ++l) order[l] = l;
        std::shuffle(order.begin(), order.end(), std::mt19937(rep));
        for (uint32_t l : order)
            th.emplace_back([&, l] {
                int fl = 0;
                EXPECT_EQ(gw_fusion_add(f.h, l, frames[l].data(), frames[l].size(), &fl), GW_OK);
                flushes += fl;
            });
        for (auto& t : th) t.join();
        EXPECT_EQ(flushes.load(), 1);
        EXPECT_EQ(f.flush(), want);
    }
}

TEST(Fusion, FlushesWhenFullAndStartsANewIteration) {
    const uint32_t L = 6;
    const auto frames = layer_frames(L);
    Fusion f(L, frames[0].size() + frames[1].size());  // about two frames per bundle
    std::vector<std::vector<uint8_t>> bundles;
    for (int iter = 0; iter < 2; ++iter)
        for (uint32_t l = 0; l < L; ++l) {
            int flush = 0;
            ASSERT_EQ(gw_fusion_add(f.h, l, frames[l].data(), frames[l].size(), &flush), GW_OK);
            if (flush) bundles.push_back(f.flush());
        }
    size_t pending = 1;
    ASSERT_EQ(gw_fusion_pending(f.h, &pending), GW_OK);
    EXPECT_EQ(pending, 0u);
    // Every frame came out once per iteration, in layer order within a bundle.
    std::vector<int> seen(L, 0);
    for (const auto& b : bundles) {
        const auto e = entries(b);
        EXPECT_GE(e.size(), 1u);
        for (const auto& x : e) {
            seen[x.layer]++;
            EXPECT_EQ(std::vector<uint8_t>(b.begin() + x.offset, b.begin() + x.offset + x.size), frames[x.layer]);
        }
    }
    for (uint32_t l = 0; l < L; ++l) EXPECT_EQ(seen[l], 2) << l;
    EXPECT_GT(bundles.size(), 4u);
    // A layer added twice in one iteration, an unknown layer, a broken frame.
    int flush = 0;
    ASSERT_EQ(gw_fusion_add(f.h, 2, frames[2].data(), frames[2].size(), &flush), GW_OK);
    EXPECT_EQ(gw_fusion_add(f.h, 2, frames[2].data(), frames[2].size(), &flush), GW_ERR_SEQUENCE);
    EXPECT_EQ(gw_fusion_add(f.h, L, frames[2].data(), frames[2].size(), &flush), GW_ERR_INVALID_ARGUMENT);
    auto bad = frames[3];
    bad[bad.size() - 1] ^= 1;
    EXPECT_EQ(gw_fusion_add(f.h, 3, bad.data(), bad.size(), &flush), GW_ERR_FRAME_CHECKSUM);
    EXPECT_EQ(gw_fusion_add(f.h, 3, frames[3].data(), frames[3].size() - 1, &flush), GW_ERR_FRAME_TRUNCATED);
    ASSERT_EQ(gw_fusion_pending(f.h, &pending), GW_OK);
    EXPECT_EQ(pending, 1u);
    std::vector<uint8_t> small(10);
    size_t written = 0;
    EXPECT_EQ(gw_fusion_flush(f.h, small.data(), small.size(), &written), GW_ERR_BUFFER_TOO_SMALL);
    gw_fusion* none = nullptr;
    gw_fusion_options o = GW_FUSION_OPTIONS_INIT;
    EXPECT_EQ(gw_fusion_create(&none, &o), GW_ERR_INVALID_ARGUMENT);  // no layers
    gw_fusion_free(nullptr);
}

TEST(Fusion, MalformedBundlesAreRefused) {
    const auto frames = layer_frames(3);
    Fusion f(3, 1 << 20);
    int flush = 0;
    for (uint32_t l = 0; l < 3; ++l) ASSERT_EQ(gw_fusion_add(f.h, l, frames[l].data(), frames[l].size(), &flush), GW_OK);
    const auto good = f.flush();
    auto st = [](const std::vector<uint8_t>& b) {
        size_t count = 0;
        gw_bundle_entry e[8];
        return gw_bundle_frames(b.data(), b.size(), e, 8, &count);
    };
    auto recrc = [](std::vector<uint8_t> b) {
        uint32_t crc = 0;
        gw_crc32c(b.data(), b.size() - 4, &crc);
        gwtest::put_le(&b[b.size() - 4], crc);  // little-endian on every host
        return b;
    };
    EXPECT_EQ(st(good), GW_OK);
    for (size_t n = 0; n < good.size(); ++n)
        ASSERT_EQ(st(std::vector<uint8_t>(good.begin(), good.begin() + n)), GW_ERR_FRAME_TRUNCATED) << n;
    auto b = good;
    b.push_back(0);
    EXPECT_EQ(st(b), GW_ERR_FRAME_TRAILING);
    b = good;
    b[0] = 'X';
    EXPECT_EQ(st(b), GW_ERR_FRAME_MAGIC);
    b = good;
    b[4] = 2;
    EXPECT_EQ(st(b), GW_ERR_FRAME_VERSION);
    b = good;
    b[6] = 1;
    EXPECT_EQ(st(b), GW_ERR_FRAME_FLAGS);
    b = good;
    b[b.size() / 2] ^= 1;
    EXPECT_EQ(st(b), GW_ERR_FRAME_CHECKSUM);
    b = good;
    b[12 + 12] = 0;  // second slot 0 after slot 0: not increasing
    EXPECT_EQ(st(recrc(b)), GW_ERR_FRAME_INDEX);
    b = good;
    b[12 + 24] = 0xFF, b[12 + 25] = 0xFF, b[12 + 26] = 0x01;  // slot 0x1FFFF: too large
    EXPECT_EQ(st(recrc(b)), GW_ERR_FRAME_INDEX);
    b = good;
    b[12 + 4] += 1;  // first frame one byte longer: sizes no longer add up
    EXPECT_EQ(st(recrc(b)), GW_ERR_FRAME_TRUNCATED);
    b = good;
    b[8] = 0xFF, b[9] = 0xFF, b[10] = 0xFF;  // count beyond the slot limit
    EXPECT_EQ(st(recrc(b)), GW_ERR_FRAME_LENGTH);
    b = good;
    b[12 + 36 + 3] ^= 1;  // inside the first frame's magic
    EXPECT_EQ(st(recrc(b)), GW_ERR_FRAME_MAGIC);
    size_t count = 0;
    gw_bundle_entry one[1];
    EXPECT_EQ(gw_bundle_frames(good.data(), good.size(), one, 1, &count), GW_ERR_BUFFER_TOO_SMALL);
    EXPECT_EQ(count, 3u);
}
