// Codecs through the C API on every SIMD target: frames byte-identical across
// targets, decoded values equal to the scalar reference of docs/algorithms.md s.1,
// decode_accumulate == acc + alpha * decoded, NaN/Inf policy, 16-bit casts.
#include <cfloat>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <string>

#include "codecs/codec.hpp"
#include "ref_algorithms.hpp"
#include "test_util.hpp"

using gwtest::bits_equal;
using gwtest::codec;
using ref::Vec;

namespace {

const size_t kLengths[] = {0, 1, 7, 8, 9, 63, 64, 65, 1000, 1000003};

// Named adversarial and random inputs of length n.
std::map<std::string, Vec> inputs(size_t n) {
    std::map<std::string, Vec> m;
    m["normal"] = gwtest::random_floats(n, 11);
    m["zeros"] = Vec(n, 0.0f);
    m["negzeros"] = Vec(n, -0.0f);
    Vec denorm(n), huge(n), mixed(n);
    for (size_t i = 0; i < n; ++i) {
        denorm[i] = (i % 2 ? -1.0f : 1.0f) * FLT_TRUE_MIN * float(1 + i % 100);
        huge[i] = (i % 3 ? -1.0f : 1.0f) * (FLT_MAX / float(1 + i % 4));
        mixed[i] = i % 5 == 0 ? 0.0f : (i % 7 == 0 ? 1e30f : (i % 2 ? -1e-30f : 3.0f));
    }
    m["denormals"] = denorm;
    m["huge"] = huge;
    m["mixed"] = mixed;
    return m;
}

Vec decode(const std::vector<uint8_t>& f, size_t n) {
    Vec out(n);
    uint64_t count = ~uint64_t(0);
    EXPECT_EQ(gw_decode(f.data(), f.size(), out.data(), n, &count), GW_OK);
    EXPECT_EQ(count, n);
    return out;
}

// Reference decode of each codec (docs/algorithms.md s.1, s.8).
Vec reference(gw_codec_id id, uint32_t block, const Vec& x) {
    switch (id) {
        case GW_CODEC_SCALED_SIGN: return ref::scaled_sign(x, block);
        case GW_CODEC_SIGN: return ref::sign(x);
        case GW_CODEC_FP16: return ref::fp16(x);
        case GW_CODEC_BF16: return ref::bf16(x);
        default: return x;
    }
}

struct Config {
    gw_codec_id id;
    uint32_t block;
};
const Config kConfigs[] = {{GW_CODEC_IDENTITY, 0},     {GW_CODEC_FP16, 0},       {GW_CODEC_BF16, 0},
                           {GW_CODEC_SIGN, 0},         {GW_CODEC_SCALED_SIGN, 0}, {GW_CODEC_SCALED_SIGN, 1},
                           {GW_CODEC_SCALED_SIGN, 7}, {GW_CODEC_SCALED_SIGN, 64}, {GW_CODEC_SCALED_SIGN, 4096}};

}  // namespace

TEST(Codecs, EveryTargetMatchesReferenceAndEachOther) {
    for (const Config& c : kConfigs)
        for (size_t n : kLengths) {
            if (n == 1000003 && c.block == 1) continue;  // a million one-element blocks: slow, adds nothing
            for (const auto& named : inputs(n)) {
                const std::string& name = named.first;
                const Vec& x = named.second;
                SCOPED_TRACE(testing::Message() << "codec " << c.id << " block " << c.block
                                                << " n " << n << " input " << name);
                std::vector<uint8_t> first;
                const Vec acc0 = gwtest::random_floats(n, 4);
                gwtest::for_each_target([&](gw_simd_target) {
                    const auto f = gwtest::encode(codec(c.id, c.block), x);
                    if (first.empty())
                        first = f;
                    else
                        ASSERT_EQ(f, first) << "frame bytes differ between targets";
                    const Vec d = decode(f, n);
                    ASSERT_TRUE(bits_equal(d, reference(c.id, c.block, x)));
                    // decode_accumulate: acc + alpha * decoded, elementwise, exactly.
                    Vec acc = acc0;
                    ASSERT_EQ(gw_decode_accumulate(f.data(), f.size(), -0.37f, acc.data(), n), GW_OK);
                    Vec want(n);
                    for (size_t i = 0; i < n; ++i) want[i] = acc0[i] + -0.37f * d[i];
                    ASSERT_TRUE(bits_equal(acc, want))
                        << "first diff " << gwtest::first_diff(acc.data(), want.data(), n);
                });
            }
        }
}

TEST(Codecs, UnalignedInputsAndOutputs) {
    const size_t n = 1001;
    const Vec x = gwtest::random_floats(n + 1, 3);
    for (const Config& c : kConfigs) {
        std::vector<uint8_t> first;
        gwtest::for_each_target([&](gw_simd_target) {
            size_t bound = 0;
            gwtest::Spec o = codec(c.id, c.block);
            ASSERT_EQ(gw_encode_bound(o, n, &bound), GW_OK);
            std::vector<uint8_t> buf(bound + 3);
            for (size_t shift = 1; shift <= 3; ++shift) {
                size_t written = 0;
                ASSERT_EQ(gw_encode(o, nullptr, x.data() + 1, GW_DTYPE_F32, n, buf.data() + shift, bound, &written), GW_OK);
                std::vector<uint8_t> f(buf.begin() + shift, buf.begin() + shift + written);
                if (first.empty()) first = f;
                ASSERT_EQ(f, first);
                Vec out(n + 1);
                ASSERT_EQ(gw_decode(buf.data() + shift, written, out.data() + 1, n, nullptr), GW_OK);
                const Vec want = reference(c.id, c.block, Vec(x.begin() + 1, x.end()));
                ASSERT_TRUE(bits_equal(out.data() + 1, want.data(), n));
            }
        });
    }
}

TEST(Codecs, NonFiniteInputIsRefused) {
    for (const Config& c : kConfigs)
        for (float bad : {NAN, -NAN, INFINITY, -INFINITY})
            for (size_t pos : {size_t(0), size_t(31), size_t(99)}) {
                Vec x = gwtest::random_floats(100, 1);
                x[pos] = bad;
                gwtest::Spec o = codec(c.id, c.block);
                std::vector<uint8_t> f(1000);
                size_t written = 12345;
                EXPECT_EQ(gw_encode(o, nullptr, x.data(), GW_DTYPE_F32, x.size(), f.data(), f.size(), &written), GW_ERR_NONFINITE)
                    << "codec " << c.id;
                EXPECT_EQ(written, 12345u);
            }
}

TEST(Codecs, ScaledSignSemantics) {
    // sign(0) = +1 (documented); a zero block has scale 0.
    const Vec x = {0.0f, -0.0f, 2.0f, -4.0f};
    const auto f = gwtest::encode(codec(GW_CODEC_SCALED_SIGN), x);
    const Vec d = decode(f, 4);
    EXPECT_EQ(d, (Vec{1.5f, 1.5f, 1.5f, -1.5f}));
    const auto z = gwtest::encode(codec(GW_CODEC_SCALED_SIGN, 2), x);
    EXPECT_EQ(decode(z, 4), (Vec{0.0f, 0.0f, 3.0f, -3.0f}));
    // Wire cost: d sign bits + B float32 scales + 48 bytes of framing.
    EXPECT_EQ(gwtest::encode(codec(GW_CODEC_SCALED_SIGN), Vec(1024, 1.0f)).size(), 44u + 4 + 4 + 128);
}

TEST(Codecs, PhiDiagnostic) {
    double phi = 0;
    Vec flat(100, -3.0f);
    ASSERT_EQ(gw_scaled_sign_phi(flat.data(), flat.size(), 0, &phi), GW_OK);
    EXPECT_DOUBLE_EQ(phi, 1.0);
    Vec spike(100, 0.0f);
    spike[3] = 5.0f;
    ASSERT_EQ(gw_scaled_sign_phi(spike.data(), spike.size(), 0, &phi), GW_OK);
    EXPECT_DOUBLE_EQ(phi, 1.0 / 100);
    // Blockwise: the spike's block of 10 gives 1/10, flat blocks give 1.
    ASSERT_EQ(gw_scaled_sign_phi(spike.data(), spike.size(), 10, &phi), GW_OK);
    EXPECT_DOUBLE_EQ(phi, 1.0 / 10);
    spike[50] = NAN;
    EXPECT_EQ(gw_scaled_sign_phi(spike.data(), spike.size(), 10, &phi), GW_ERR_NONFINITE);
}

TEST(Codecs, HalfPrecisionKnownValues) {
    auto half_bits = [](gw_codec_id id, float v) {
        const auto f = gwtest::encode(codec(id), Vec{v});
        return uint16_t(f[40] | f[41] << 8);  // little-endian on the wire
    };
    gwtest::for_each_target([&](gw_simd_target) {
        EXPECT_EQ(half_bits(GW_CODEC_FP16, 1.0f), 0x3C00);
        EXPECT_EQ(half_bits(GW_CODEC_FP16, -2.0f), 0xC000);
        EXPECT_EQ(half_bits(GW_CODEC_FP16, 65504.0f), 0x7BFF);
        EXPECT_EQ(half_bits(GW_CODEC_FP16, 1e6f), 0x7BFF);    // saturates
        EXPECT_EQ(half_bits(GW_CODEC_FP16, -1e30f), 0xFBFF);  // saturates
        EXPECT_EQ(half_bits(GW_CODEC_FP16, 65520.0f), 0x7BFF); // would round to Inf in IEEE
        EXPECT_EQ(half_bits(GW_CODEC_FP16, 0x1.0p-24f), 0x0001);  // smallest subnormal
        EXPECT_EQ(half_bits(GW_CODEC_FP16, 0x1.0p-26f), 0x0000);  // rounds to zero
        EXPECT_EQ(half_bits(GW_CODEC_FP16, 1.0f + 0x1.0p-11f), 0x3C00);  // tie -> even
        EXPECT_EQ(half_bits(GW_CODEC_FP16, 1.0f + 0x1.8p-10f), 0x3C02);  // tie -> even (up)
        EXPECT_EQ(half_bits(GW_CODEC_BF16, 1.0f), 0x3F80);
        EXPECT_EQ(half_bits(GW_CODEC_BF16, FLT_MAX), 0x7F7F);  // saturates instead of Inf
        EXPECT_EQ(half_bits(GW_CODEC_BF16, 1.0f + 0x1.0p-8f), 0x3F80);   // tie -> even
        EXPECT_EQ(half_bits(GW_CODEC_BF16, 1.0f + 0x1.8p-7f), 0x3F82);   // tie -> even (up)
    });
    // Round trip error bound: relative 2^-11 (fp16 normal range) / 2^-8 (bf16).
    const Vec x = gwtest::random_floats(10000, 8, 10.0f);
    const Vec h = decode(gwtest::encode(codec(GW_CODEC_FP16), x), x.size());
    const Vec b = decode(gwtest::encode(codec(GW_CODEC_BF16), x), x.size());
    for (size_t i = 0; i < x.size(); ++i) {
        if (std::fabs(x[i]) > 1e-4f) {
            EXPECT_LE(std::fabs(h[i] - x[i]), std::fabs(x[i]) * 0x1.0p-11f);
        }
        EXPECT_LE(std::fabs(b[i] - x[i]), std::fabs(x[i]) * 0x1.0p-8f);
    }
}

// gw_ef_cast (the DDP hook's 16-bit all-reduce): y = e + alpha * x, out = the
// fp16 / bf16 codec's cast of y, e = y - out, the same bits on every target and
// tile boundary; NaN / Inf go out as they are and leave e; argument checks.
// The DDP cast mode's worker count enters gw_ef_cast only as alpha = 1/M: for
// every M from 1 to 16 and every rank, what a rank sends (the decoded cast)
// plus what it keeps (its new residual) is exactly what came in, y = e + x/M,
// over several steps with the residual carried.
TEST(Codecs, EfCastKeepsTheMassForEveryWorkerCount) {
    const size_t n = 4099;
    for (gw_dtype dt : {GW_DTYPE_F16, GW_DTYPE_BF16}) {
        for (uint32_t workers = 1; workers <= 16; ++workers) {
            SCOPED_TRACE("M=" + std::to_string(workers) + " dtype=" + std::to_string(dt));
            const float alpha = 1.0f / static_cast<float>(workers);
            for (uint32_t rank = 0; rank < workers; ++rank) {
                Vec e(n, 0.0f);
                std::vector<uint16_t> out(n);
                for (uint32_t step = 0; step < 3; ++step) {
                    const Vec x = gwtest::random_floats(n, 1000 * workers + 10 * rank + step,
                                                        step == 2 ? 7e4f : 1.0f);
                    Vec y(n);
                    for (size_t i = 0; i < n; ++i) {
                        const float t = alpha * x[i];
                        y[i] = e[i] + t;
                    }
                    uint64_t bad = 99;
                    ASSERT_EQ(gw_ef_cast(x.data(), n, alpha, e.data(), dt, out.data(), &bad),
                              GW_OK);
                    ASSERT_EQ(bad, 0u);
                    for (size_t i = 0; i < n; ++i) {
                        const float h = dt == GW_DTYPE_F16 ? gw::ref::f16_to_f32(out[i])
                                                           : gw::ref::bf16_to_f32(out[i]);
                        // Sent plus kept: exact where the cast did not saturate
                        // (then e = y - h is exact); a saturated fp16 value keeps
                        // the excess, rounded once.
                        if (std::fabs(y[i]) <= 65504.0f || dt == GW_DTYPE_BF16)
                            ASSERT_EQ(h + e[i], y[i])
                                << "rank " << rank << " step " << step << " i " << i;
                        else
                            ASSERT_EQ(e[i], y[i] - h) << "rank " << rank << " step " << step;
                    }
                }
            }
        }
    }
}

TEST(Codecs, EfCastIsTheHalfCodecWithItsResidual) {
    const float alpha = 1.0f / 3;
    auto bits = [](float v) {
        uint32_t b;
        std::memcpy(&b, &v, 4);
        return b;
    };
    for (gw_dtype dt : {GW_DTYPE_F16, GW_DTYPE_BF16}) {
        const gw_codec_id id = dt == GW_DTYPE_F16 ? GW_CODEC_FP16 : GW_CODEC_BF16;
        for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(2047), size_t(2049),
                         size_t(10007)}) {
            for (const auto& [name, x] : inputs(n)) {
                SCOPED_TRACE(name + " n=" + std::to_string(n) + " dtype=" + std::to_string(dt));
                const Vec e0 = gwtest::random_floats(n, 3, 1e-3f);
                Vec y(n);
                for (size_t i = 0; i < n; ++i) {
                    const float t = alpha * x[i];
                    y[i] = e0[i] + t;
                }
                const Vec want = reference(id, 0, y);  // the codec's cast, decoded
                const Vec& xv = x;  // C++17 lambdas cannot capture a structured binding
                std::vector<uint16_t> first;
                gwtest::for_each_target([&](gw_simd_target) {
                    Vec e = e0;
                    std::vector<uint16_t> out(n, 0xAAAA);
                    uint64_t bad = 99;
                    ASSERT_EQ(gw_ef_cast(xv.data(), n, alpha, e.data(), dt, out.data(), &bad), GW_OK);
                    EXPECT_EQ(bad, 0u);
                    for (size_t i = 0; i < n; ++i) {
                        const float h = dt == GW_DTYPE_F16 ? gw::ref::f16_to_f32(out[i])
                                                           : gw::ref::bf16_to_f32(out[i]);
                        ASSERT_EQ(bits(h), bits(want[i])) << i;
                        ASSERT_EQ(bits(e[i]), bits(y[i] - h)) << i;
                    }
                    if (first.empty()) first = out;
                    EXPECT_EQ(out, first);
                });
            }
        }
        // NaN / Inf: out as they are, e kept there; the rest as usual.
        Vec x = gwtest::random_floats(3000, 5), e(3000, 0.25f);
        x[10] = NAN, x[2500] = -INFINITY;
        std::vector<uint16_t> out(3000);
        uint64_t bad = 0;
        ASSERT_EQ(gw_ef_cast(x.data(), x.size(), 1.0f, e.data(), dt, out.data(), &bad), GW_OK);
        EXPECT_EQ(bad, 2u);
        const bool f16 = dt == GW_DTYPE_F16;
        EXPECT_EQ(out[10] & (f16 ? 0x7C00 : 0x7F80), f16 ? 0x7C00 : 0x7F80);
        EXPECT_NE(out[10] & (f16 ? 0x03FF : 0x007F), 0);  // a NaN
        EXPECT_EQ(out[2500], f16 ? 0xFC00 : 0xFF80);      // -Inf
        EXPECT_EQ(e[10], 0.25f);
        EXPECT_EQ(e[2500], 0.25f);
        EXPECT_NE(e[11], 0.25f);
        // Arguments.
        EXPECT_EQ(gw_ef_cast(x.data(), 10, 1.0f, e.data(), GW_DTYPE_F32, out.data(), nullptr),
                  GW_ERR_INVALID_ARGUMENT);
        EXPECT_EQ(gw_ef_cast(x.data(), 10, NAN, e.data(), dt, out.data(), nullptr),
                  GW_ERR_INVALID_ARGUMENT);
        EXPECT_EQ(gw_ef_cast(nullptr, 10, 1.0f, e.data(), dt, out.data(), nullptr),
                  GW_ERR_NULL_POINTER);
        EXPECT_EQ(gw_ef_cast(x.data(), 10, 1.0f, x.data() + 5, dt, out.data(), nullptr),
                  GW_ERR_OVERLAP);
        EXPECT_EQ(gw_ef_cast(x.data(), 10, 1.0f, e.data(), dt, e.data() + 3, nullptr),
                  GW_ERR_OVERLAP);
        EXPECT_EQ(gw_ef_cast(nullptr, 0, 1.0f, nullptr, dt, nullptr, nullptr), GW_OK);
    }
}

TEST(Simd, TargetsCanBeForced) {
    EXPECT_TRUE(gw_simd_target_supported(GW_SIMD_SCALAR));
    EXPECT_FALSE(gw_simd_target_supported(GW_SIMD_AUTO));
    for (gw_simd_target t : gwtest::supported_targets()) {
        ASSERT_EQ(gw_simd_set_target(t), GW_OK);
        EXPECT_EQ(gw_simd_active_target(), t);
        std::printf("[ target ] %s supported\n", gw_simd_target_name(t));
    }
    EXPECT_EQ(gw_simd_set_target(static_cast<gw_simd_target>(99)), GW_ERR_UNSUPPORTED);
    ASSERT_EQ(gw_simd_set_target(GW_SIMD_AUTO), GW_OK);
    EXPECT_NE(gw_simd_active_target(), GW_SIMD_AUTO);
}

// The registry (codecs/registry.def) and every descriptor in it: what the
// parameter machinery, the frame reader and the capability tests rely on.
TEST(Registry, DescriptorsAreConsistent) {
    const uint32_t known = gw::kCapPublic | gw::kCapFusedScaledSign;
    std::set<unsigned> ids;
    std::set<std::string> names;
    std::map<int, std::string> param_names;
    ASSERT_GT(gw::codec_count(), 0u);
    for (size_t i = 0; i < gw::codec_count(); ++i) {
        const gw::Codec& c = *gw::codec_at(i);
        SCOPED_TRACE(c.name ? c.name : "(no name)");
        ASSERT_NE(c.name, nullptr);
        const unsigned id = c.id;  // an enum the compiler thinks it knows the range of
        EXPECT_TRUE(id >= 1 && id <= 127) << "built-in ids are 1..127";
        EXPECT_TRUE(ids.insert(id).second) << "duplicate id";
        EXPECT_TRUE(names.insert(c.name).second) << "duplicate name";
        EXPECT_EQ(gw::codec_for(c.id), &c);
        gw_codec_id by_name;
        ASSERT_EQ(gw_codec_from_name(c.name, &by_name), GW_OK);
        EXPECT_EQ(by_name, c.id);
        EXPECT_TRUE(c.max_payload && c.encode && c.check && c.decode && c.accumulate);
        ASSERT_LE(c.num_params, gw::kMaxParams);
        EXPECT_EQ(c.num_params == 0, c.params == nullptr);
        std::set<int> taken;
        for (size_t j = 0; j < c.num_params; ++j) {
            const gw::ParamDef& d = c.params[j];
            EXPECT_TRUE(taken.insert(d.id).second) << "parameter listed twice: " << d.name;
            EXPECT_TRUE(d.wire_bytes == 1 || d.wire_bytes == 2 || d.wire_bytes == 4 ||
                        d.wire_bytes == 8);
            EXPECT_TRUE(0 <= d.min && d.min <= d.def && d.def <= d.max) << d.name;
            if (d.wire_bytes < 8) {
                EXPECT_LT(static_cast<uint64_t>(d.max), uint64_t(1) << (8 * d.wire_bytes))
                    << d.name;
            }
            // One name per parameter id, whichever codec takes it.
            const auto seen = param_names.emplace(d.id, d.name).first->second;
            EXPECT_EQ(seen, d.name);
        }
        EXPECT_EQ(c.caps & ~known, 0u) << "unknown capability bits";
        if (c.caps & (gw::kCapStochasticRounding | gw::kCapDrawInPayload)) {
            EXPECT_TRUE(c.caps & gw::kCapStochastic) << "a draw makes a codec stochastic";
        }
        if (c.caps & gw::kCapFusedScaledSign) {
            EXPECT_GE(gw::param_slot(c, GW_PARAM_BLOCK_SIZE), 0);
        }
    }
    size_t count = 0;
    ASSERT_EQ(gw_codec_list(nullptr, 0, &count), GW_OK);
    EXPECT_EQ(count, gw::codec_count());
}

// Each codec's GW_CODEC_FLAG_* bits, shown by its frames: what the fuzzers
// and the vector tests skip or check on their word.
TEST(Codecs, FlagsAreWhatFramesShow) {
    uint32_t flags = 0;
    EXPECT_EQ(gw_codec_flags(static_cast<gw_codec_id>(0), &flags), GW_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(gw_codec_flags(static_cast<gw_codec_id>(200), &flags), GW_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(gw_codec_flags(GW_CODEC_SIGN, nullptr), GW_ERR_NULL_POINTER);
    const Vec x = gwtest::random_floats(5000, 21);
    using gwtest::encode_ctx;
    size_t count = 0;
    ASSERT_EQ(gw_codec_list(nullptr, 0, &count), GW_OK);
    std::vector<gw_codec_id> ids(count);
    ASSERT_EQ(gw_codec_list(ids.data(), count, &count), GW_OK);
    for (gw_codec_id id : ids) {
        SCOPED_TRACE(gw_codec_name(id));
        ASSERT_EQ(gw_codec_flags(id, &flags), GW_OK);
        const auto spec = codec(id);
        const auto a = encode_ctx(spec, x, 1, 2, 3);
        // Another draw: the same frame exactly when the codec is not stochastic.
        EXPECT_EQ(encode_ctx(spec, x, 4, 5, 6) == a, !(flags & GW_CODEC_FLAG_STOCHASTIC));
        // Without stochastic rounding, the decoded values encode (same draw)
        // to the same frame.
        if (!(flags & GW_CODEC_FLAG_STOCHASTIC_ROUNDING)) {
            EXPECT_EQ(encode_ctx(spec, decode(a, x.size()), 1, 2, 3), a);
        }
        if (flags & GW_CODEC_FLAG_DRAW_IN_PAYLOAD) {
            const uint8_t* p = a.data() + gwtest::payload_offset(a);
            const uint64_t seed = gwtest::get_le32(p) | uint64_t(gwtest::get_le32(p + 4)) << 32;
            const uint32_t step = gwtest::get_le32(p + 8), tensor = gwtest::get_le32(p + 12);
            EXPECT_EQ(seed, 1u);
            EXPECT_EQ(step, 2u);
            EXPECT_EQ(tensor, 3u);
        }
    }
}
