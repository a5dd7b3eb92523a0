// Checkpoints: save/load round trips continue bit-identically; corrupted,
// truncated or mismatched blobs get their status code and change nothing.
#include "test_util.hpp"

using gwtest::codec;
using gwtest::random_floats;
using gwtest::save;

namespace {

gw_worker* make_worker(uint64_t n, gw_momentum m = GW_MOMENTUM_NESTEROV, int ef = 1,
                       uint32_t block = 0) {
    gw_worker_options o = GW_WORKER_OPTIONS_INIT;
    o.n = n;
    o.momentum = m;
    o.mu = m == GW_MOMENTUM_NONE ? 0.0f : 0.9f;
    o.error_feedback = ef;
    gw_worker* w = nullptr;
    EXPECT_EQ(gw_worker_create(&w, &o, codec(GW_CODEC_SCALED_SIGN, block)), GW_OK);
    return w;
}

gw_server* make_server(uint64_t total, uint64_t off, uint64_t len, uint32_t M, int ef = 1) {
    gw_server_options o = GW_SERVER_OPTIONS_INIT;
    o.total = total, o.offset = off, o.length = len, o.num_workers = M, o.error_feedback = ef;
    o.check_tag = 0;  // the tests push stateless frames
    gw_server* s = nullptr;
    EXPECT_EQ(gw_server_create(&s, &o, codec(GW_CODEC_SCALED_SIGN), nullptr), GW_OK);
    return s;
}

std::vector<uint8_t> step(gw_worker* w, uint64_t n, int t) {
    size_t bound = 0, written = 0;
    gw_worker_frame_bound(w, &bound);
    std::vector<uint8_t> f(bound);
    const auto g = random_floats(n, 500 + t);
    EXPECT_EQ(gw_worker_step(w, g.data(), GW_DTYPE_F32, n, 0.1f / (1 + t % 7), f.data(), f.size(),
                             &written),
              GW_OK);
    f.resize(written);
    return f;
}

void push(gw_server* s, uint64_t n, int seed) {
    const auto f = gwtest::encode(codec(GW_CODEC_SCALED_SIGN), random_floats(n, seed));
    ASSERT_EQ(gw_server_push(s, f.data(), f.size()), GW_OK);
}

std::vector<uint8_t> server_step(gw_server* s, float lr) {
    size_t bound = 0, written = 0;
    gw_server_frame_bound(s, &bound);
    std::vector<uint8_t> f(bound);
    EXPECT_EQ(gw_server_step(s, lr, f.data(), f.size(), &written), GW_OK);
    f.resize(written);
    return f;
}

// Offset of the data of field `id` in a blob (format 2: fields are
// u16 id | u8 type | u8 0 | u64 count | data), or 0 if absent.
size_t field_data(const std::vector<uint8_t>& b, uint16_t id, uint8_t* type = nullptr,
                  uint64_t* count = nullptr) {
    static const size_t width[] = {0, 1, 4, 8, 4, 1, 4};
    uint32_t fields;
    std::memcpy(&fields, &b[8], 4);
    size_t pos = 12;
    for (uint32_t i = 0; i < fields; ++i) {
        uint16_t fid;
        uint64_t c;
        std::memcpy(&fid, &b[pos], 2);
        std::memcpy(&c, &b[pos + 4], 8);
        if (fid == id) {
            if (type) *type = b[pos + 2];
            if (count) *count = c;
            return pos + 12;
        }
        pos += 12 + c * width[b[pos + 2]];
    }
    return 0;
}

}  // namespace

TEST(State, WorkerRestoreContinuesBitIdentically) {
    const uint64_t n = 333;
    for (gw_momentum m : {GW_MOMENTUM_NONE, GW_MOMENTUM_NESTEROV, GW_MOMENTUM_SIGNUM})
        for (int ef : {0, 1}) {
            gw_worker* a = make_worker(n, m, ef, 32);
            for (int t = 0; t < 37; ++t) step(a, n, t);
            const auto blob = save(a);
            gw_worker* b = make_worker(n, m, ef, 32);
            ASSERT_EQ(gw_worker_load(b, blob.data(), blob.size()), GW_OK);
            EXPECT_EQ(save(b), blob);
            for (int t = 37; t < 60; ++t) ASSERT_EQ(step(a, n, t), step(b, n, t)) << "step " << t;
            gw_worker_free(a);
            gw_worker_free(b);
        }
}

TEST(State, ServerRestoreMidRoundContinuesBitIdentically) {
    const uint64_t total = 100, off = 40, len = 60;
    const uint32_t M = 3;
    gw_server* a = make_server(total, off, len, M);
    for (int t = 0; t < 10; ++t) {
        for (uint32_t i = 0; i < M; ++i) push(a, len, t * 3 + i);
        server_step(a, 0.1f / (t + 1));
    }
    push(a, len, 1000);  // save with one push of the round already in
    const auto blob = save(a);
    gw_server* b = make_server(total, off, len, M);
    ASSERT_EQ(gw_server_load(b, blob.data(), blob.size()), GW_OK);
    for (gw_server* s : {a, b}) {
        push(s, len, 1001);
        push(s, len, 1002);
    }
    EXPECT_EQ(server_step(a, 0.01f), server_step(b, 0.01f));
    gw_server_free(a);
    gw_server_free(b);
}

TEST(State, CorruptionAtEveryByteIsRejectedAndChangesNothing) {
    const uint64_t n = 20;
    gw_worker* a = make_worker(n);
    for (int t = 0; t < 3; ++t) step(a, n, t);
    const auto blob = save(a);
    gw_worker* b = make_worker(n);  // fresh: its state must stay fresh
    const auto fresh = save(b);
    for (size_t i = 0; i < blob.size(); ++i) {
        auto bad = blob;
        bad[i] ^= 0x40;
        const gw_status st = gw_worker_load(b, bad.data(), bad.size());
        EXPECT_TRUE(st == GW_ERR_STATE_MAGIC || st == GW_ERR_STATE_VERSION ||
                    st == GW_ERR_STATE_CHECKSUM)
            << "byte " << i << ": " << gw_status_str(st);
    }
    for (size_t len = 0; len < blob.size(); ++len) {
        std::vector<uint8_t> prefix(blob.begin(), blob.begin() + len);
        EXPECT_NE(gw_worker_load(b, prefix.data(), prefix.size()), GW_OK) << "length " << len;
    }
    EXPECT_EQ(save(b), fresh);
    auto longer = blob;
    longer.insert(longer.end() - 4, 0);
    gwtest::refresh_crc(longer);
    EXPECT_EQ(gw_worker_load(b, longer.data(), longer.size()), GW_ERR_STATE_CORRUPT);
    EXPECT_EQ(save(b), fresh);
    gw_worker_free(a);
    gw_worker_free(b);
}

TEST(State, SpecificErrors) {
    const uint64_t n = 16;
    gw_worker* w = make_worker(n);
    step(w, n, 0);
    const auto blob = save(w);
    auto bad = blob;
    bad[0] = 'X';
    EXPECT_EQ(gw_worker_load(w, bad.data(), bad.size()), GW_ERR_STATE_MAGIC);
    bad = blob;
    bad[4] = 9;
    EXPECT_EQ(gw_worker_load(w, bad.data(), bad.size()), GW_ERR_STATE_VERSION);
    bad = blob;
    bad[bad.size() - 1] ^= 1;
    EXPECT_EQ(gw_worker_load(w, bad.data(), bad.size()), GW_ERR_STATE_CHECKSUM);
    // A NaN residual with a valid checksum: corrupt content.
    bad = blob;
    const uint32_t nan = 0x7FC00000u;
    std::memcpy(&bad[bad.size() - 8], &nan, 4);
    gwtest::refresh_crc(bad);
    EXPECT_EQ(gw_worker_load(w, bad.data(), bad.size()), GW_ERR_STATE_CORRUPT);
    // Differently configured handles.
    gw_worker* other_n = make_worker(n + 1);
    gw_worker* other_m = make_worker(n, GW_MOMENTUM_SIGNUM);
    gw_worker* other_ef = make_worker(n, GW_MOMENTUM_NESTEROV, 0);
    gw_worker* other_block = make_worker(n, GW_MOMENTUM_NESTEROV, 1, 8);
    for (gw_worker* o : {other_n, other_m, other_ef, other_block})
        EXPECT_EQ(gw_worker_load(o, blob.data(), blob.size()), GW_ERR_STATE_MISMATCH);
    // A server blob is not a worker blob, and vice versa.
    gw_server* s = make_server(n, 0, n, 2);
    const auto sblob = save(s);
    EXPECT_EQ(gw_worker_load(w, sblob.data(), sblob.size()), GW_ERR_STATE_MISMATCH);
    EXPECT_EQ(gw_server_load(s, blob.data(), blob.size()), GW_ERR_STATE_MISMATCH);
    gw_server* s2 = make_server(n + 4, 4, n, 2);
    EXPECT_EQ(gw_server_load(s2, sblob.data(), sblob.size()), GW_ERR_STATE_MISMATCH);
    EXPECT_EQ(gw_worker_load(w, nullptr, 0), GW_ERR_STATE_CORRUPT);
    EXPECT_EQ(gw_worker_load(w, nullptr, 10), GW_ERR_NULL_POINTER);
    size_t written = 0;
    std::vector<uint8_t> small(blob.size() - 1);
    EXPECT_EQ(gw_worker_save(w, small.data(), small.size(), &written), GW_ERR_BUFFER_TOO_SMALL);
    for (gw_worker* o : {w, other_n, other_m, other_ef, other_block}) gw_worker_free(o);
    gw_server_free(s);
    gw_server_free(s2);
}

TEST(State, ServerBlobPushCountIsValidated) {
    const uint64_t n = 8;
    gw_server* s = make_server(n, 0, n, 2);
    auto blob = save(s);
    const size_t at = field_data(blob, 34);  // pushes
    ASSERT_NE(at, 0u);
    const uint32_t three = 3;
    std::memcpy(&blob[at], &three, 4);
    gwtest::refresh_crc(blob);
    EXPECT_EQ(gw_server_load(s, blob.data(), blob.size()), GW_ERR_STATE_CORRUPT);
    gw_server_free(s);
}

// Blobs describe themselves: a tool can find a server slice's place in the
// whole tensor and its residual without the handle (what re-sharding needs).
TEST(State, BlobsAreSelfDescribing) {
    const uint64_t total = 100, off = 40, len = 60;
    gw_server* s = make_server(total, off, len, 2);
    push(s, len, 1);
    const auto blob = save(s);
    const std::pair<uint16_t, uint64_t> want[] = {{1, total}, {2, off}, {3, len}, {4, 2}};
    for (auto [id, value] : want) {
        uint8_t type = 0;
        uint64_t count = 0, v = 0;
        const size_t at = field_data(blob, id, &type, &count);
        ASSERT_NE(at, 0u) << id;
        EXPECT_EQ(count, 1u);
        std::memcpy(&v, &blob[at], type == 3 ? 8 : 4);
        EXPECT_EQ(v, value) << id;
    }
    uint8_t type = 0;
    uint64_t count = 0;
    ASSERT_NE(field_data(blob, 64, &type, &count), 0u);  // e_s
    EXPECT_EQ(type, 6);
    EXPECT_EQ(count, len);
    ASSERT_NE(field_data(blob, 65, &type, &count), 0u);  // the round's partial sum
    EXPECT_EQ(count, len);
    gw_server_free(s);
}

// The calls c_api/handles.def generates for every handle, driven by the same
// list, so a new line is tested with no edit here: options_init fills the
// INIT value and checks pointer and version; the rest refuse a NULL handle
// or output, and free(NULL) does nothing.
TEST(Handles, SharedCallsCheckTheirArguments) {
    size_t bytes = 0;
    uint64_t steps = 0;
    uint8_t blob[16];
#define GW_CHECK_BOUND_none(name)
#define GW_CHECK_BOUND_frame_bound(name) GW_CHECK_BOUND(name, frame_bound)
#define GW_CHECK_BOUND_index_frame_bound(name) GW_CHECK_BOUND(name, index_frame_bound)
#define GW_CHECK_BOUND(name, bound) \
    EXPECT_EQ(gw_##name##_##bound(nullptr, &bytes), GW_ERR_NULL_POINTER) << #name;
#define GW_CHECK_STEPS_none(name)
#define GW_CHECK_STEPS_step_count(name) \
    EXPECT_EQ(gw_##name##_step_count(nullptr, &steps), GW_ERR_NULL_POINTER) << #name;
#define GW_CHECK_STATE_none(name)
#define GW_CHECK_STATE_checkpoint(name)                                                      \
    EXPECT_EQ(gw_##name##_save_bound(nullptr, &bytes), GW_ERR_NULL_POINTER) << #name;        \
    EXPECT_EQ(gw_##name##_save(nullptr, blob, sizeof blob, &bytes), GW_ERR_NULL_POINTER);    \
    EXPECT_EQ(gw_##name##_load(nullptr, blob, sizeof blob), GW_ERR_NULL_POINTER) << #name;
#define GW_HANDLE(name, NAME, Impl, bound, steps, state)                                      \
    {                                                                                         \
        gw_##name##_options o, init = GW_##NAME##_OPTIONS_INIT;                               \
        std::memset(&o, 0xA5, sizeof o);                                                      \
        EXPECT_EQ(gw_##name##_options_init(nullptr, GW_##NAME##_OPTIONS_VERSION),             \
                  GW_ERR_NULL_POINTER) << #name;                                              \
        EXPECT_EQ(gw_##name##_options_init(&o, 0), GW_ERR_OPTIONS_VERSION) << #name;          \
        EXPECT_EQ(gw_##name##_options_init(&o, GW_##NAME##_OPTIONS_VERSION + 1),              \
                  GW_ERR_OPTIONS_VERSION) << #name;                                           \
        ASSERT_EQ(gw_##name##_options_init(&o, GW_##NAME##_OPTIONS_VERSION), GW_OK) << #name; \
        EXPECT_EQ(o.version, init.version) << #name;                                          \
        gw_##name##_free(nullptr);                                                            \
        GW_CHECK_BOUND_##bound(name) GW_CHECK_STEPS_##steps(name) GW_CHECK_STATE_##state(name) \
    }
#include "../c_api/handles.def"
#undef GW_HANDLE
}
