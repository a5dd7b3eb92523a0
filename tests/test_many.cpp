// Calls that take many frames at once: gw_decode_accumulate_many and
// gw_server_round. Both promise the bits of the one-frame-at-a-time calls
// (gw_decode_accumulate in turn; M pushes then a step) while tiling the work,
// and that a rejected call changes nothing. Sizes cross several 16K-element
// tiles, block sizes that are not multiples of 8 put tile boundaries in the
// middle of a block's sign bytes, and runs of more than 8 sign frames are
// split across kern::sign_accumulate_n calls.
#include <cfloat>
#include <cmath>
#include <memory>

#include "ref_algorithms.hpp"
#include "test_util.hpp"

using gwtest::bits_equal;
using gwtest::codec;
using gwtest::random_floats;
using gwtest::Spec;
using ref::Vec;
using Frame = std::vector<uint8_t>;

namespace {

using gwtest::Frames;

// acc after gw_decode_accumulate of every frame in turn.
Vec sequential(const std::vector<Frame>& frames, float alpha, Vec acc) {
    for (const Frame& f : frames)
        EXPECT_EQ(gw_decode_accumulate(f.data(), f.size(), alpha, acc.data(), acc.size()), GW_OK);
    return acc;
}

// The codecs whose frames add by ranges, with block sizes that tile and that do not.
std::vector<Spec> ranged_codecs() {
    std::vector<Spec> v;
    v.push_back(codec(GW_CODEC_SIGN));
    for (uint32_t block : {0u, 3u, 8u, 100u, 4096u, 20000u})
        v.push_back(codec(GW_CODEC_SCALED_SIGN, block));
    v.push_back(codec(GW_CODEC_FP16));
    v.push_back(codec(GW_CODEC_BF16));
    v.push_back(codec(GW_CODEC_IDENTITY));
    return v;
}

TEST(Many, TiledSumMatchesFrameByFrameOnEveryTarget) {
    for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(100), size_t(16384), size_t(50001)})
        gwtest::for_each_target([&](gw_simd_target) {
            for (const Spec& c : ranged_codecs()) {
                SCOPED_TRACE(testing::Message() << "n " << n << " codec " << gw_codec_name([&] {
                                 gw_codec_id id;
                                 gw_codec_spec_codec(c, &id);
                                 return id;
                             }()));
                std::vector<Frame> frames;
                for (uint32_t j = 0; j < 11; ++j) frames.push_back(gwtest::encode(c, random_floats(n, 40 + j)));
                const Vec acc0 = random_floats(n, 7);
                Vec acc = acc0;
                Frames f(frames);
                size_t bad = 0;
                ASSERT_EQ(gw_decode_accumulate_many(f.ptr.data(), f.size.data(), frames.size(), 0.3f,
                                                    acc.data(), n, &bad),
                          GW_OK);
                ASSERT_TRUE(bits_equal(acc, sequential(frames, 0.3f, acc0)));
            }
        });
}

// 0..16 frames of mixed codecs, among them sparse and zstd-staged ones that
// add whole (their payload is re-opened from the shared stage).
TEST(Many, EveryFrameCountWithMixedCodecs) {
    const size_t n = 20000;
    Spec topk(GW_CODEC_TOPK), topk_z(GW_CODEC_TOPK);
    topk.set(GW_PARAM_DENSITY_PPM, 10000);
    topk_z.set(GW_PARAM_DENSITY_PPM, 10000).set(GW_PARAM_ZSTD, 1);
    const std::vector<Spec> pool = {codec(GW_CODEC_SCALED_SIGN, 100), topk_z, codec(GW_CODEC_FP16),
                                    codec(GW_CODEC_SIGN), topk};
    const std::vector<Spec> ranged = ranged_codecs();
    for (bool only_ranged : {true, false})
        for (size_t count = 0; count <= 16; ++count) {
            SCOPED_TRACE(testing::Message() << "count " << count << " ranged " << only_ranged);
            std::vector<Frame> frames;
            for (size_t j = 0; j < count; ++j) {
                const Spec& c = only_ranged ? ranged[j % ranged.size()]
                                            : pool[j % pool.size()];
                frames.push_back(gwtest::encode(c, random_floats(n, 100 + j)));
            }
            const Vec acc0 = random_floats(n, 8);
            Vec acc = acc0;
            Frames f(frames);
            ASSERT_EQ(gw_decode_accumulate_many(f.ptr.data(), f.size.data(), count, -0.125f,
                                                acc.data(), n, nullptr),
                      GW_OK);
            ASSERT_TRUE(bits_equal(acc, sequential(frames, -0.125f, acc0)));
        }
}

TEST(Many, RejectedCallsLeaveTheAccumulatorUntouched) {
    const size_t n = 40000;
    std::vector<Frame> frames;
    for (uint32_t j = 0; j < 5; ++j)
        frames.push_back(gwtest::encode(codec(GW_CODEC_SCALED_SIGN, 4096), random_floats(n, j)));
    const Vec acc0 = random_floats(n, 9);
    auto call = [&](const std::vector<Frame>& fr, size_t* bad, float alpha = 1.0f) {
        Vec acc = acc0;
        Frames f(fr);
        const gw_status st = gw_decode_accumulate_many(f.ptr.data(), f.size.data(), fr.size(),
                                                       alpha, acc.data(), n, bad);
        EXPECT_TRUE(bits_equal(acc, acc0)) << "acc changed by a rejected call";
        return st;
    };
    size_t bad = 0;
    // A flipped payload bit in frame 3 (CRC), a frame of the wrong length,
    // a truncated frame, a frame with trailing bytes: each named by index.
    auto corrupt = frames;
    corrupt[3][gwtest::payload_offset(corrupt[3]) + 10] ^= 1;
    EXPECT_EQ(call(corrupt, &bad), GW_ERR_FRAME_CHECKSUM);
    EXPECT_EQ(bad, 3u);
    auto shorter = frames;
    shorter[1] = gwtest::encode(codec(GW_CODEC_SCALED_SIGN, 4096), random_floats(n - 1, 1));
    EXPECT_EQ(call(shorter, &bad), GW_ERR_COUNT_MISMATCH);
    EXPECT_EQ(bad, 1u);
    auto cut = frames;
    cut[4].resize(cut[4].size() - 1);
    EXPECT_NE(call(cut, &bad), GW_OK);
    EXPECT_EQ(bad, 4u);
    auto longer = frames;
    longer[0].push_back(0);
    EXPECT_EQ(call(longer, &bad), GW_ERR_FRAME_TRAILING);
    EXPECT_EQ(bad, 0u);
    // Argument errors blame no frame.
    EXPECT_EQ(call(frames, &bad, NAN), GW_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(bad, SIZE_MAX);
    Vec acc = acc0;
    EXPECT_EQ(gw_decode_accumulate_many(nullptr, nullptr, 2, 1.0f, acc.data(), n, &bad),
              GW_ERR_NULL_POINTER);
    const void* ptrs[2] = {frames[0].data(), nullptr};
    const size_t sizes[2] = {frames[0].size(), 5};
    EXPECT_EQ(gw_decode_accumulate_many(ptrs, sizes, 2, 1.0f, acc.data(), n, &bad),
              GW_ERR_NULL_POINTER);
    EXPECT_EQ(bad, 1u);
    // A frame inside the accumulator.
    Vec big(n + frames[2].size());
    std::memcpy(big.data() + n, frames[2].data(), frames[2].size());
    const void* inside[2] = {frames[0].data(), big.data() + 10};
    const size_t in_sizes[2] = {frames[0].size(), frames[2].size()};
    EXPECT_EQ(gw_decode_accumulate_many(inside, in_sizes, 2, 1.0f, big.data(), n, &bad),
              GW_ERR_OVERLAP);
    EXPECT_EQ(bad, 1u);
    // No frames: nothing to do.
    EXPECT_EQ(gw_decode_accumulate_many(nullptr, nullptr, 0, 1.0f, acc.data(), n, &bad), GW_OK);
    EXPECT_TRUE(bits_equal(acc, acc0));
}

using gwtest::Server;

float lr_at(int t) { return t < 3 ? 0.05f * (t + 1) : 0.2f * std::pow(0.9f, float(t)); }

struct RoundCase {
    const char* name;
    Spec broadcast, push;
    int ef;
};

std::vector<RoundCase> round_cases() {
    Spec topk(GW_CODEC_TOPK);
    topk.set(GW_PARAM_DENSITY_PPM, 20000);
    return {
        {"scaled_sign tensor (fused)", codec(GW_CODEC_SCALED_SIGN), codec(GW_CODEC_SCALED_SIGN), 1},
        {"scaled_sign 4096 (fused)", codec(GW_CODEC_SCALED_SIGN, 4096),
         codec(GW_CODEC_SCALED_SIGN, 4096), 1},
        {"scaled_sign 100 (tiled sum, whole encode)", codec(GW_CODEC_SCALED_SIGN, 100),
         codec(GW_CODEC_SCALED_SIGN, 100), 1},
        // The DDP hook's blocks: the round sums its frames 8 at a time block by
        // block (sign_accumulate_blocks), the pushes one frame at a time.
        {"scaled_sign 64 (fused, blocks summed)", codec(GW_CODEC_SCALED_SIGN, 64),
         codec(GW_CODEC_SCALED_SIGN, 64), 1},
        {"scaled_sign, no error feedback", codec(GW_CODEC_SCALED_SIGN), codec(GW_CODEC_SIGN), 0},
        {"majority vote", codec(GW_CODEC_SIGN), codec(GW_CODEC_SIGN), 0},
        {"fp16 pushes, scaled_sign broadcast", codec(GW_CODEC_SCALED_SIGN, 4096),
         codec(GW_CODEC_FP16), 1},
        {"top-k pushes (whole frames)", codec(GW_CODEC_SCALED_SIGN), topk, 1},
    };
}

// Two servers, one fed by pushes and one by rounds: the same frames and
// residuals, step after step, for every worker count 1..16.
TEST(ServerRound, MatchesPushesThenStepForEveryWorkerCount) {
    for (const RoundCase& s : round_cases())
        for (uint32_t M = 1; M <= 16; ++M) {
            const size_t n = (M % 5 == 1) ? 40001 : 999;
            SCOPED_TRACE(testing::Message() << s.name << " M " << M << " n " << n);
            Server a(n, 0, n, M, s.broadcast, s.ef), b(n, 0, n, M, s.broadcast, s.ef);
            for (int t = 0; t < 4; ++t) {
                std::vector<Frame> frames;
                for (uint32_t i = 0; i < M; ++i)
                    frames.push_back(gwtest::encode(s.push, random_floats(n, 1000 * t + i)));
                ASSERT_EQ(a.push_step(frames, lr_at(t)), GW_OK);
                size_t bad = 7;
                ASSERT_EQ(b.round(frames, lr_at(t), &bad), GW_OK);
                EXPECT_EQ(bad, SIZE_MAX);
                ASSERT_EQ(a.frame, b.frame) << "step " << t;
                ASSERT_TRUE(bits_equal(a.residual(n), b.residual(n))) << "step " << t;
            }
            EXPECT_EQ(b.steps(), 4u);
        }
}

// The push path, now tiled, against the paper's reference over several tiles
// (its pushes decoded by gw_decode, block by block). 64-element blocks with 11
// frames: a round sums them 8, then 3, at a time.
TEST(ServerRound, PushesAndRoundsMatchTheReferenceAcrossTiles) {
    const size_t n = 50001;
    for (uint32_t block : {0u, 64u, 100u, 4096u})
        gwtest::for_each_target([&](gw_simd_target) {
            const uint32_t M = block == 64 ? 11 : 3;
            Server a(n, 0, n, M, codec(GW_CODEC_SCALED_SIGN, block), 1);
            Server b(n, 0, n, M, codec(GW_CODEC_SCALED_SIGN, block), 1);
            ref::Server r(n, true);
            for (int t = 0; t < 3; ++t) {
                std::vector<Frame> frames;
                std::vector<Vec> pushed;
                for (uint32_t i = 0; i < M; ++i) {
                    frames.push_back(gwtest::encode(codec(GW_CODEC_SCALED_SIGN, block),
                                                    random_floats(n, 10 * t + i)));
                    pushed.push_back(gwtest::decode(frames.back(), n));
                }
                ASSERT_EQ(a.push_step(frames, lr_at(t)), GW_OK);
                ASSERT_EQ(b.round(frames, lr_at(t)), GW_OK);
                const Vec want = r.step(pushed, lr_at(t),
                                        [&](const Vec& q) { return ref::scaled_sign(q, block); });
                ASSERT_TRUE(bits_equal(gwtest::decode(a.frame, n), want)) << "step " << t;
                ASSERT_TRUE(bits_equal(gwtest::decode(b.frame, n), want)) << "step " << t;
                ASSERT_TRUE(bits_equal(a.residual(n), r.e));
                ASSERT_TRUE(bits_equal(b.residual(n), r.e));
            }
        });
}

// Sharded: M servers each owning a slice (some empty when M > n).
TEST(ServerRound, ShardedSlicesAndEmptySlices) {
    for (size_t n : {size_t(5), size_t(30000)})
        for (uint32_t M : {3u, 7u, 16u}) {
            SCOPED_TRACE(testing::Message() << "n " << n << " M " << M);
            for (uint32_t j = 0; j < M; ++j) {
                uint64_t off = 0, len = 0;
                ASSERT_EQ(gw_shard_range(n, M, j, &off, &len), GW_OK);
                Server a(n, off, len, M, codec(GW_CODEC_SCALED_SIGN), 1);
                Server b(n, off, len, M, codec(GW_CODEC_SCALED_SIGN), 1);
                for (int t = 0; t < 2; ++t) {
                    std::vector<Frame> frames;
                    for (uint32_t i = 0; i < M; ++i)
                        frames.push_back(gwtest::encode(codec(GW_CODEC_SCALED_SIGN),
                                                        random_floats(len, 77 * t + i + j)));
                    ASSERT_EQ(a.push_step(frames, lr_at(t)), GW_OK);
                    ASSERT_EQ(b.round(frames, lr_at(t)), GW_OK);
                    ASSERT_EQ(a.frame, b.frame);
                }
            }
        }
}

// A rejected round changes nothing: the next good round gives what a fresh
// server's would, and the step count does not move.
TEST(ServerRound, RejectedRoundsChangeNothing) {
    const size_t n = 20000;
    const uint32_t M = 4;
    const Spec c = codec(GW_CODEC_SCALED_SIGN);
    auto frames_at = [&](uint64_t step, uint32_t tensor = 0) {
        std::vector<Frame> f;
        for (uint32_t i = 0; i < M; ++i)
            f.push_back(gwtest::encode(c, random_floats(n, 50 + i), GW_TAG(tensor, step)));
        return f;
    };
    Server ref_s(n, 0, n, M, c, 1, 1, c);
    ASSERT_EQ(ref_s.round(frames_at(0), 0.1f), GW_OK);
    ASSERT_EQ(ref_s.round(frames_at(1), 0.1f), GW_OK);

    Server s(n, 0, n, M, c, 1, 1, c);
    ASSERT_EQ(s.round(frames_at(0), 0.1f), GW_OK);
    const Vec e1 = s.residual(n);
    size_t bad = 0;
    auto f = frames_at(1);
    // Count other than M; a round after a push.
    EXPECT_EQ(s.round({f[0], f[1]}, 0.1f, &bad), GW_ERR_SEQUENCE);
    EXPECT_EQ(bad, SIZE_MAX);
    ASSERT_EQ(gw_server_push(s.h, f[0].data(), f[0].size()), GW_OK);
    EXPECT_EQ(s.round(f, 0.1f), GW_ERR_SEQUENCE);
    ASSERT_EQ(gw_server_reset_round(s.h), GW_OK);
    // Wrong tag (last round's), wrong codec, a corrupt frame: each blamed.
    auto stale = f;
    stale[2] = frames_at(0)[2];
    EXPECT_EQ(s.round(stale, 0.1f, &bad), GW_ERR_TAG_MISMATCH);
    EXPECT_EQ(bad, 2u);
    auto other = f;
    other[3] = gwtest::encode(codec(GW_CODEC_SIGN), random_floats(n, 3), GW_TAG(0, 1));
    EXPECT_EQ(s.round(other, 0.1f, &bad), GW_ERR_CODEC_MISMATCH);
    EXPECT_EQ(bad, 3u);
    auto corrupt = f;
    corrupt[1][gwtest::payload_offset(corrupt[1])] ^= 0x40;
    EXPECT_EQ(s.round(corrupt, 0.1f, &bad), GW_ERR_FRAME_CHECKSUM);
    EXPECT_EQ(bad, 1u);
    // Bad learning rate, short output buffer, output overlapping an input.
    EXPECT_EQ(s.round(f, -1.0f, &bad), GW_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(bad, SIZE_MAX);
    Frames fr(f);
    size_t written = 0;
    EXPECT_EQ(gw_server_round(s.h, fr.ptr.data(), fr.size.data(), M, 0.1f, s.frame.data(), 10,
                              &written, &bad),
              GW_ERR_BUFFER_TOO_SMALL);
    Frame out(s.frame.capacity() + f[0].size());
    std::memcpy(out.data(), f[0].data(), f[0].size());
    fr.ptr[0] = out.data();
    EXPECT_EQ(gw_server_round(s.h, fr.ptr.data(), fr.size.data(), M, 0.1f, out.data(), out.size(),
                              &written, &bad),
              GW_ERR_OVERLAP);
    EXPECT_EQ(bad, 0u);
    EXPECT_EQ(gw_server_round(nullptr, fr.ptr.data(), fr.size.data(), M, 0.1f, s.frame.data(),
                              s.frame.size(), &written, &bad),
              GW_ERR_NULL_POINTER);
    EXPECT_EQ(s.steps(), 1u);
    EXPECT_TRUE(bits_equal(s.residual(n), e1));
    ASSERT_EQ(s.round(f, 0.1f), GW_OK);
    EXPECT_EQ(s.frame, ref_s.frame);
    EXPECT_TRUE(bits_equal(s.residual(n), ref_s.residual(n)));
}

// A round whose q = mean + r e_s overflows float32 (a huge residual kept
// at lr 1, then r = 100 when the lr drops) is rejected like the step that
// overflows, fused broadcast or not, and leaves the server as it was.
TEST(ServerRound, OverflowIsRejectedWithNothingChanged) {
    const size_t n = 20000;
    const uint32_t M = 2;
    for (const Spec& bc : {codec(GW_CODEC_SCALED_SIGN), codec(GW_CODEC_SCALED_SIGN, 4096),
                           codec(GW_CODEC_FP16)}) {
        Server s(n, 0, n, M, bc, 1), p(n, 0, n, M, bc, 1);
        Vec huge = random_floats(n, 1);
        huge[n - 3] = 3e38f;
        const std::vector<Frame> f = {gwtest::encode(codec(GW_CODEC_IDENTITY), huge),
                                      gwtest::encode(codec(GW_CODEC_IDENTITY), huge)};
        ASSERT_EQ(s.round(f, 1.0f), GW_OK);
        ASSERT_EQ(p.push_step(f, 1.0f), GW_OK);
        const Vec e1 = s.residual(n);
        EXPECT_EQ(s.round(f, 0.01f), GW_ERR_OVERFLOW);
        EXPECT_EQ(p.push_step(f, 0.01f), GW_ERR_OVERFLOW);
        ASSERT_EQ(gw_server_reset_round(p.h), GW_OK);
        EXPECT_EQ(s.steps(), 1u);
        ASSERT_TRUE(bits_equal(s.residual(n), e1));
        const std::vector<Frame> g = {gwtest::encode(codec(GW_CODEC_IDENTITY), random_floats(n, 2)),
                                      gwtest::encode(codec(GW_CODEC_IDENTITY), random_floats(n, 3))};
        ASSERT_EQ(s.round(g, 1.0f), GW_OK);
        ASSERT_EQ(p.push_step(g, 1.0f), GW_OK);
        ASSERT_EQ(s.frame, p.frame);
        ASSERT_TRUE(bits_equal(s.residual(n), p.residual(n)));
    }
}

// Fixed-block rounds of sign frames go in one pass when the frames' scales
// and the bound carried on e_s prove q finite (feedback/fused_sign.hpp). A
// round that overflows in its last tile only must still change nothing, also
// on a server just reloaded or fed by pushes until then (its bound unknown),
// and all go on alike.
TEST(ServerRound, OnePassRoundsRefuseALateOverflow) {
    const size_t n = 40003;  // three tiles
    const uint32_t M = 3;
    const Spec c = codec(GW_CODEC_SCALED_SIGN, 4096);
    Server s(n, 0, n, M, c, 1), p(n, 0, n, M, c, 1);
    auto frames_of = [&](uint32_t seed, float late) {
        std::vector<Frame> f;
        for (uint32_t i = 0; i < M; ++i) {
            Vec x = random_floats(n, seed + i);
            x[n - 5] = late;  // in the last block: its scale is ~ late / 3139
            f.push_back(gwtest::encode(c, x));
        }
        return f;
    };
    for (int t = 0; t < 3; ++t) {
        const auto f = frames_of(10 * t, t == 2 ? 3e38f : 1.0f);
        ASSERT_EQ(s.round(f, 1.0f), GW_OK);
        ASSERT_EQ(p.push_step(f, 1.0f), GW_OK);
        ASSERT_EQ(s.frame, p.frame);
    }
    // e_s ~ 1e35 in the last block only; r = 1e4 overflows q there.
    const auto before = gwtest::save(s.h);
    const auto late = frames_of(100, 1.0f);
    EXPECT_EQ(s.round(late, 1e-4f), GW_ERR_OVERFLOW);
    EXPECT_EQ(gwtest::save(s.h), before);
    Server twin(n, 0, n, M, c, 1);
    ASSERT_EQ(gw_server_load(twin.h, before.data(), before.size()), GW_OK);
    EXPECT_EQ(twin.round(late, 1e-4f), GW_ERR_OVERFLOW);
    EXPECT_EQ(gwtest::save(twin.h), before);
    // So does the server whose e_s came from pushes and steps.
    EXPECT_EQ(p.round(late, 1e-4f), GW_ERR_OVERFLOW);
    EXPECT_EQ(gwtest::save(p.h), before);
    for (int t = 0; t < 3; ++t) {
        const auto f = frames_of(200 + 10 * t, 1.0f);
        ASSERT_EQ(s.round(f, 0.5f), GW_OK);
        ASSERT_EQ(twin.round(f, 0.5f), GW_OK);
        ASSERT_EQ(p.push_step(f, 0.5f), GW_OK);
        ASSERT_EQ(s.frame, p.frame);
        ASSERT_EQ(twin.frame, p.frame);
        ASSERT_TRUE(bits_equal(s.residual(n), p.residual(n)));
    }
}

// Rounds of 1..16 frames under random magnitudes (up to 2^125, r up to 1e6), in
// episodes so that rounds go in one pass, in two, or are refused: the same
// status and bits as a server fed by pushes (which never takes one pass), a
// refused round leaving the checkpoint unchanged.
// One block per tensor goes in one pass too, its residual deferred; every
// fourth round of it goes through pushes and a step instead (which settles it).
TEST(ServerRound, RandomMagnitudesMatchPushes) {
    const size_t n = 20011;
    // The unscaled inputs depend on the round and the worker only: drawn once.
    std::vector<Vec> base;
    for (int t = 0; t < 12; ++t)
        for (uint32_t j = 0; j < 16; ++j) base.push_back(random_floats(n, 100 * t + j));
    for (uint32_t block : {1024u, 64u, 0u}) {
        const Spec c = codec(GW_CODEC_SCALED_SIGN, block);
        std::mt19937 rng(5);
        int ok = 0, refused = 0;
        for (uint32_t M = 1; M <= 16; ++M)
            for (int top : {60, 100, 127}) {
                SCOPED_TRACE(testing::Message() << "block " << block << " M " << M << " top 2^" << top);
                Server s(n, 0, n, M, c, 1), p(n, 0, n, M, c, 1);
                std::uniform_int_distribution<int> expo(top - 30, top);
                std::uniform_real_distribution<double> lr_exp(-6.0, 0.0);
                for (int t = 0; t < 12; ++t) {
                    std::vector<Frame> f;
                    for (uint32_t j = 0; j < M; ++j) {
                        Vec x = base[16 * t + j];
                        const double scale = std::ldexp(1.0, expo(rng) - 2);
                        for (float& v : x) {
                            v = static_cast<float>(v * scale);
                            if (!std::isfinite(v)) v = 0.0f;
                        }
                        f.push_back(gwtest::encode(c, x));
                    }
                    const float lr = static_cast<float>(std::pow(10.0, lr_exp(rng)));
                    const auto before = gwtest::save(s.h);
                    const gw_status st = block == 0 && t % 4 == 3 ? s.push_step(f, lr) : s.round(f, lr);
                    const gw_status sp = p.push_step(f, lr);
                    ASSERT_EQ(st, sp) << "round " << t;
                    if (st != GW_OK) {
                        ASSERT_EQ(st, GW_ERR_OVERFLOW);
                        ++refused;
                        ASSERT_EQ(gw_server_reset_round(s.h), GW_OK);  // after pushes
                        ASSERT_EQ(gwtest::save(s.h), before);
                        ASSERT_EQ(gw_server_reset_round(p.h), GW_OK);
                        continue;
                    }
                    ++ok;
                    ASSERT_EQ(s.frame, p.frame) << "round " << t;
                    ASSERT_TRUE(bits_equal(s.residual(n), p.residual(n))) << "round " << t;
                    if (t == 6) {  // a reloaded twin goes on the same way
                        Server twin(n, 0, n, M, c, 1);
                        const auto saved = gwtest::save(s.h);
                        ASSERT_EQ(gw_server_load(twin.h, saved.data(), saved.size()), GW_OK);
                        ASSERT_EQ(gwtest::save(twin.h), saved);
                    }
                }
            }
        EXPECT_GT(ok, 200);
        EXPECT_GT(refused, 10);
    }
}

}  // namespace
