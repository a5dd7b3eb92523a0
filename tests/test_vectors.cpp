// Golden test vectors (tests/vectors/, docs/wire-format.md). For each case
// NAME there are NAME.input.hex (float32 LE input), NAME.frame.hex (the frame)
// and NAME.decoded.hex (float32 LE decoded values). The committed files are
// the reference; the library must match them on every SIMD target.
//
//  - Format 1 (NAME without prefix, written by 0.1): the frame still decodes
//    byte-exactly to its decoded values, and the codec math is unchanged: the
//    input, encoded today (as format 2), decodes to the same values.
//  - Format 2 (v2_NAME): the frame decodes byte-exactly to its decoded values;
//    the input and the decoded values both re-encode byte-exactly to the frame
//    with the frame's own spec (gw_frame_spec) and tag (gw_frame_inspect).
//    Every v2_*.frame.hex present is checked (vectors of new codecs need no
//    code here); kV2Cases lists the ones that must exist.
//
// The v1 files are never rewritten. The v2 files are written by the disabled
// test Vectors.DISABLED_WriteV2 (only the missing ones, on a deliberate wire
// format change):
//   test_vectors --gtest_also_run_disabled_tests --gtest_filter=Vectors.DISABLED_WriteV2
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "test_util.hpp"

namespace {

const std::string kDir = std::string(GW_SOURCE_DIR) + "/tests/vectors/";

struct V1Case {
    const char* name;
    gw_codec_id codec;
    int64_t block;
    uint64_t n;
};

// The format 1 vectors as 0.1 wrote them.
const V1Case kV1Cases[] = {
    {"identity_8", GW_CODEC_IDENTITY, 0, 8},
    {"fp16_9", GW_CODEC_FP16, 0, 9},
    {"bf16_9", GW_CODEC_BF16, 0, 9},
    {"sign_13", GW_CODEC_SIGN, 0, 13},
    {"scaled_sign_10", GW_CODEC_SCALED_SIGN, 0, 10},
    {"scaled_sign_b4_10", GW_CODEC_SCALED_SIGN, 4, 10},
    {"scaled_sign_b12_20", GW_CODEC_SCALED_SIGN, 12, 20},
    {"scaled_sign_0", GW_CODEC_SCALED_SIGN, 0, 0},
};

struct Param {
    gw_param id;
    int64_t value;
};

struct V2Case {
    const char* name;
    gw_codec_id codec;
    std::vector<Param> params;
    uint64_t n;
    uint64_t tag;
    const char* about;
};

// The format 2 vectors: the v1 cases again (same inputs, so the decoded
// values must agree with v1's), each with its own nonzero tag.
const std::vector<V2Case> kV2Cases = {
    {"v2_identity_8", GW_CODEC_IDENTITY, {}, 8, GW_TAG(1, 1), "identity codec, 8 elements"},
    {"v2_fp16_9", GW_CODEC_FP16, {}, 9, GW_TAG(2, 7),
     "IEEE half, round to nearest even, saturating"},
    {"v2_bf16_9", GW_CODEC_BF16, {}, 9, GW_TAG(3, 0x10000),
     "bfloat16, round to nearest even, saturating"},
    {"v2_sign_13", GW_CODEC_SIGN, {}, 13, GW_TAG(4, 0xFFFFFFFFu),
     "sign bits, 13 elements (3 padding bits)"},
    {"v2_scaled_sign_10", GW_CODEC_SCALED_SIGN, {{GW_PARAM_BLOCK_SIZE, 0}}, 10, GW_TAG(0x80000005u, 3),
     "scaled sign, one block (block_size 0)"},
    {"v2_scaled_sign_b4_10", GW_CODEC_SCALED_SIGN, {{GW_PARAM_BLOCK_SIZE, 4}}, 10, GW_TAG(6, 1),
     "blockwise scaled sign, blocks of 4 (4, 4, 2)"},
    {"v2_scaled_sign_b12_20", GW_CODEC_SCALED_SIGN, {{GW_PARAM_BLOCK_SIZE, 12}}, 20, GW_TAG(7, 2),
     "blocks of 12 and 8: padded sign fields"},
    {"v2_scaled_sign_0", GW_CODEC_SCALED_SIGN, {{GW_PARAM_BLOCK_SIZE, 0}}, 0,
     GW_TAG(0xFFFFFFFFu, 0xFFFFFFFFu), "empty tensor, largest tag"},
    // Top-k without the zstd stage (zstd's bytes depend on its version; the
    // stage is covered by tests/test_topk.cpp).
    {"v2_topk_k4_20", GW_CODEC_TOPK, {{GW_PARAM_K, 4}, {GW_PARAM_ZSTD, 0}}, 20, GW_TAG(8, 5),
     "top-k, k = 4 of 20, f32 values; ties in magnitude go to the lower index"},
    {"v2_topk_f16_k6_20", GW_CODEC_TOPK,
     {{GW_PARAM_K, 6}, {GW_PARAM_VALUE_DTYPE, GW_DTYPE_F16}, {GW_PARAM_ZSTD, 0}}, 20, GW_TAG(9, 1),
     "top-k, k = 6 of 20, f16 values (70000 saturates to 65504)"},
    {"v2_topk_bf16_density_20", GW_CODEC_TOPK,
     {{GW_PARAM_DENSITY_PPM, 250000}, {GW_PARAM_VALUE_DTYPE, GW_DTYPE_BF16}, {GW_PARAM_ZSTD, 0}},
     20, GW_TAG(10, 2), "top-k, density 25% of 20 = 5 entries, bf16 values"},
    // Chunk-wise selection, rule revision 1 (ceil per chunk; the revision is
    // absent from these frames) and 2 (exactly k, the default).
    {"v2_chunk_topk_c8_k6_20", GW_CODEC_CHUNK_TOPK,
     {{GW_PARAM_K, 6}, {GW_PARAM_CHUNK_SIZE, 8}, {GW_PARAM_ZSTD, 0}, {GW_PARAM_REVISION, 1}}, 20,
     GW_TAG(11, 3), "chunk-wise top-k, chunks of 8 (8, 8, 4), k = 6: 3, 3 and 2 entries per chunk"},
    {"v2_index_c8_k6_20", GW_CODEC_INDEX,
     {{GW_PARAM_K, 6}, {GW_PARAM_CHUNK_SIZE, 8}, {GW_PARAM_ZSTD, 0}, {GW_PARAM_REVISION, 1}}, 20,
     GW_TAG(12, 4), "index-only frame of the same selection (zeros are never selected)"},
    {"v2_chunk_topk_r2_c8_k6_20", GW_CODEC_CHUNK_TOPK,
     {{GW_PARAM_K, 6}, {GW_PARAM_CHUNK_SIZE, 8}, {GW_PARAM_ZSTD, 0}, {GW_PARAM_REVISION, 2}}, 20,
     GW_TAG(11, 4),
     "chunk-wise top-k, revision 2 (exactly k): chunks of 8 (8, 8, 4), k = 6: 3, 2, 1 entries"},
    {"v2_chunk_topk_r2_c6_k7_20", GW_CODEC_CHUNK_TOPK,
     {{GW_PARAM_K, 7}, {GW_PARAM_CHUNK_SIZE, 6}, {GW_PARAM_ZSTD, 0}, {GW_PARAM_REVISION, 2}}, 20,
     GW_TAG(11, 5),
     "revision 2, chunks of 6 (6, 6, 6, 2), k = 7: 2, 2, 2, 1 (the short chunk's share .7 wins)"},
    {"v2_index_r2_c8_k6_20", GW_CODEC_INDEX,
     {{GW_PARAM_K, 6}, {GW_PARAM_CHUNK_SIZE, 8}, {GW_PARAM_ZSTD, 0}, {GW_PARAM_REVISION, 2}}, 20,
     GW_TAG(12, 5), "index-only frame, revision 2: chunks of 8, k = 6: 3, 2, 1 entries"},
    {"v2_threshold_1_20", GW_CODEC_THRESHOLD, {{GW_PARAM_THRESHOLD, 0x3F800000}, {GW_PARAM_ZSTD, 0}},
     20, GW_TAG(13, 5), "threshold 1.0: every |x_i| >= 1, f32 values"},
    {"v2_threshold_f16_20", GW_CODEC_THRESHOLD,
     {{GW_PARAM_THRESHOLD, 0x40000000}, {GW_PARAM_VALUE_DTYPE, GW_DTYPE_F16}, {GW_PARAM_ZSTD, 0}},
     20, GW_TAG(14, 6), "threshold 2.0, f16 values (70000 saturates to 65504)"},
    {"v2_sampled_topk_k5_20", GW_CODEC_SAMPLED_TOPK, {{GW_PARAM_K, 5}, {GW_PARAM_ZSTD, 0}}, 20,
     GW_TAG(15, 7), "sampled top-k, k = 5 of 20 (20 < 1024: the sample is the whole input)"},
    {"v2_randomk_k6_20", GW_CODEC_RANDOMK, {{GW_PARAM_K, 6}, {GW_PARAM_REVISION, 1}}, 20,
     GW_TAG(16, 8),
     "random-k, k = 6 of 20, positions from seed 0, step 0, tensor 0 (in the payload)"},
    {"v2_randomk_r2_k6_20", GW_CODEC_RANDOMK, {{GW_PARAM_K, 6}, {GW_PARAM_REVISION, 2}}, 20,
     GW_TAG(16, 9), "random-k revision 2 (stratified), k = 6 of 20: one position in each of "
     "[0,3) [3,6) [6,10) [10,13) [13,16) [16,20), seed 0, step 0, tensor 0"},
    // Stochastic quantizers, seed 0, step 0, tensor 0: rounding rule revision
    // 1 (a word per element; absent from these frames) and 2 (a byte per
    // element, the default).
    {"v2_quant_b4_20", GW_CODEC_QUANT, {{GW_PARAM_BITS, 4}, {GW_PARAM_REVISION, 1}}, 20,
     GW_TAG(17, 1), "Q_(delta,4), one block: delta = 70000/7, codes c+7 in 4 bits"},
    {"v2_quant_b1_blk8_20", GW_CODEC_QUANT,
     {{GW_PARAM_BITS, 1}, {GW_PARAM_BLOCK_SIZE, 8}, {GW_PARAM_REVISION, 1}}, 20, GW_TAG(18, 2),
     "1-bit quantizer (levels +-delta), blocks of 8 (8, 8, 4)"},
    {"v2_quant_b16_20", GW_CODEC_QUANT, {{GW_PARAM_BITS, 16}, {GW_PARAM_REVISION, 1}}, 20,
     GW_TAG(19, 3), "Q_(delta,16): delta = 70000/32767, 2 bytes per code"},
    {"v2_qsgd_s3_blk8_20", GW_CODEC_QSGD,
     {{GW_PARAM_LEVELS, 3}, {GW_PARAM_BLOCK_SIZE, 8}, {GW_PARAM_REVISION, 1}}, 20, GW_TAG(20, 4),
     "QSGD, 3 levels (codes 0..6 in 3 bits), buckets of 8"},
    {"v2_terngrad_20", GW_CODEC_TERNGRAD, {{GW_PARAM_REVISION, 1}}, 20, GW_TAG(21, 5),
     "TernGrad: {-1, 0, 1} * ||x||_inf in 2 bits"},
    {"v2_quant_r2_b4_20", GW_CODEC_QUANT, {{GW_PARAM_BITS, 4}, {GW_PARAM_REVISION, 2}}, 20,
     GW_TAG(17, 2), "Q_(delta,4), rounding revision 2: element i's byte is byte i%4 of word i/4"},
    {"v2_quant_r2_b1_blk8_20", GW_CODEC_QUANT,
     {{GW_PARAM_BITS, 1}, {GW_PARAM_BLOCK_SIZE, 8}, {GW_PARAM_REVISION, 2}}, 20, GW_TAG(18, 3),
     "1-bit quantizer, blocks of 8 (8, 8, 4), rounding revision 2"},
    {"v2_qsgd_r2_s3_blk8_20", GW_CODEC_QSGD,
     {{GW_PARAM_LEVELS, 3}, {GW_PARAM_BLOCK_SIZE, 8}, {GW_PARAM_REVISION, 2}}, 20, GW_TAG(20, 5),
     "QSGD, 3 levels, buckets of 8, rounding revision 2"},
    {"v2_terngrad_r2_20", GW_CODEC_TERNGRAD, {{GW_PARAM_REVISION, 2}}, 20, GW_TAG(21, 6),
     "TernGrad, rounding revision 2"},
    {"v2_sparse_quant_b4_20", GW_CODEC_SPARSE_QUANT, {{GW_PARAM_BITS, 4}, {GW_PARAM_ZSTD, 0}}, 20,
     GW_TAG(22, 6), "Sparse-AsyLPG: kept with p_i = |x_i| / ||x||_inf, 4-bit codes, gap planes"},
};

// Exactly representable inputs with zeros, negative zero and a wide range
// (the same as the v1 vectors' inputs).
std::vector<float> input(uint64_t n) {
    std::vector<float> x(n);
    for (uint64_t i = 0; i < n; ++i) x[i] = float(int(i * 37 % 19) - 9) * 0.375f;
    if (n > 3) x[3] = -0.0f;
    if (n > 5) x[5] = 70000.0f;           // beyond fp16: saturates
    if (n > 7) x[7] = 1.0f + 0x1.0p-11f;  // fp16 rounding tie
    return x;
}

struct Files {
    std::vector<uint8_t> input, frame, decoded;
};

// The three files of a case (test failure if one is missing or malformed).
Files read_case(const std::string& name) {
    Files f;
    bool ok_in = false, ok_frame = false, ok_dec = false;
    f.input = gwhex::read(kDir + name + ".input.hex", &ok_in);
    f.frame = gwhex::read(kDir + name + ".frame.hex", &ok_frame);
    f.decoded = gwhex::read(kDir + name + ".decoded.hex", &ok_dec);
    EXPECT_TRUE(ok_in && ok_frame && ok_dec) << "missing or malformed vector files for " << name;
    EXPECT_EQ(f.input.size() % 4, 0u);
    EXPECT_EQ(f.decoded.size(), f.input.size());
    return f;
}

struct SpecPtr {
    gw_codec_spec* p = nullptr;
    ~SpecPtr() { gw_codec_spec_free(p); }
};

std::vector<uint8_t> encode(const gw_codec_spec* spec, uint64_t tag, const std::vector<float>& x) {
    size_t bound = 0, written = 0;
    EXPECT_EQ(gw_encode_bound(spec, x.size(), &bound), GW_OK);
    std::vector<uint8_t> f(bound);
    gw_encode_ctx ctx;
    EXPECT_EQ(gw_encode_ctx_init(&ctx, GW_ENCODE_CTX_VERSION), GW_OK);
    ctx.tag = tag;
    EXPECT_EQ(gw_encode(spec, &ctx, x.data(), GW_DTYPE_F32, x.size(), f.data(), f.size(), &written),
              GW_OK);
    f.resize(written);
    return f;
}

std::vector<float> decode(const std::vector<uint8_t>& frame, uint64_t n) {
    std::vector<float> d(n);
    uint64_t count = ~uint64_t(0);
    EXPECT_EQ(gw_decode(frame.data(), frame.size(), d.data(), n, &count), GW_OK);
    EXPECT_EQ(count, n);
    return d;
}

// Names NAME of the tests/vectors/NAME.frame.hex files starting with `prefix`.
std::vector<std::string> frame_names(const std::string& prefix) {
    std::vector<std::string> out;
    const std::string tail = ".frame.hex";
    for (const auto& e : std::filesystem::directory_iterator(kDir)) {
        const std::string f = e.path().filename().string();
        if (f.size() > tail.size() && f.compare(f.size() - tail.size(), tail.size(), tail) == 0 &&
            f.compare(0, prefix.size(), prefix) == 0)
            out.push_back(f.substr(0, f.size() - tail.size()));
    }
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

TEST(Vectors, V1FramesDecodeByteExactlyOnEveryTarget) {
    for (const V1Case& c : kV1Cases) {
        SCOPED_TRACE(c.name);
        const Files f = read_case(c.name);
        const auto want = gwtest::bytes_to_floats(f.decoded);
        ASSERT_EQ(want.size(), c.n);
        gw_frame_info info;
        ASSERT_EQ(gw_frame_info_init(&info, GW_FRAME_INFO_VERSION), GW_OK);
        ASSERT_EQ(gw_frame_inspect(f.frame.data(), f.frame.size(), &info), GW_OK);
        EXPECT_EQ(info.format_version, 1u);
        EXPECT_EQ(info.codec, c.codec);
        EXPECT_EQ(info.tag, 0u);
        EXPECT_EQ(info.count, c.n);
        EXPECT_EQ(info.frame_size, f.frame.size());
        SpecPtr spec;
        ASSERT_EQ(gw_frame_spec(f.frame.data(), f.frame.size(), &spec.p), GW_OK);
        if (c.codec == GW_CODEC_SCALED_SIGN) {
            int64_t block = -1;
            EXPECT_EQ(gw_codec_spec_get(spec.p, GW_PARAM_BLOCK_SIZE, &block), GW_OK);
            EXPECT_EQ(block, c.block);
        }
        gwtest::for_each_target([&](gw_simd_target) {
            EXPECT_TRUE(gwtest::bits_equal(decode(f.frame, c.n), want)) << "frame does not decode to the golden values";
            std::vector<float> acc(c.n, 0.0f);
            ASSERT_EQ(gw_decode_accumulate(f.frame.data(), f.frame.size(), 1.0f, acc.data(), c.n), GW_OK);
            for (uint64_t i = 0; i < c.n; ++i) EXPECT_EQ(acc[i], want[i]) << "element " << i;
        });
    }
}

TEST(Vectors, V1InputsEncodeToTheSameValuesAsFormat2) {
    for (const V1Case& c : kV1Cases) {
        SCOPED_TRACE(c.name);
        const Files f = read_case(c.name);
        const auto x = gwtest::bytes_to_floats(f.input);
        const auto want = gwtest::bytes_to_floats(f.decoded);
        ASSERT_EQ(x.size(), c.n);
        SpecPtr spec;
        ASSERT_EQ(gw_frame_spec(f.frame.data(), f.frame.size(), &spec.p), GW_OK);
        gwtest::for_each_target([&](gw_simd_target) {
            const auto frame = encode(spec.p, 0, x);
            gw_frame_info info;
            gw_frame_info_init(&info, GW_FRAME_INFO_VERSION);
            ASSERT_EQ(gw_frame_inspect(frame.data(), frame.size(), &info), GW_OK);
            EXPECT_EQ(info.format_version, 2u);
            EXPECT_EQ(info.codec, c.codec);
            EXPECT_TRUE(gwtest::bits_equal(decode(frame, c.n), want))
                << "format 2 encoding of the v1 input decodes to other values";
        });
    }
}

TEST(Vectors, V2FramesDecodeAndReencodeByteExactlyOnEveryTarget) {
    const auto names = frame_names("v2_");
    for (const V2Case& c : kV2Cases)
        EXPECT_NE(std::find(names.begin(), names.end(), c.name), names.end())
            << "missing vector " << c.name;
    for (const std::string& name : names) {
        SCOPED_TRACE(name);
        const Files f = read_case(name);
        const auto x = gwtest::bytes_to_floats(f.input);
        const auto want = gwtest::bytes_to_floats(f.decoded);
        const uint64_t n = x.size();
        gw_frame_info info;
        ASSERT_EQ(gw_frame_info_init(&info, GW_FRAME_INFO_VERSION), GW_OK);
        ASSERT_EQ(gw_frame_inspect(f.frame.data(), f.frame.size(), &info), GW_OK);
        EXPECT_EQ(info.format_version, 2u);
        EXPECT_NE(info.tag, 0u) << "v2 vectors carry a nonzero tag";
        EXPECT_EQ(info.count, n);
        EXPECT_EQ(info.frame_size, f.frame.size());
        size_t header_size = 0;
        ASSERT_EQ(gw_frame_size(f.frame.data(), GW_FRAME_HEADER_SIZE, &header_size), GW_OK);
        EXPECT_EQ(header_size, f.frame.size());
        SpecPtr spec;
        ASSERT_EQ(gw_frame_spec(f.frame.data(), f.frame.size(), &spec.p), GW_OK);
        for (const V2Case& c : kV2Cases) {
            if (name != c.name) continue;
            EXPECT_EQ(info.codec, c.codec);
            EXPECT_EQ(info.tag, c.tag);
            EXPECT_EQ(n, c.n);
            for (const Param& p : c.params) {
                int64_t v = -1;
                EXPECT_EQ(gw_codec_spec_get(spec.p, p.id, &v), GW_OK);
                EXPECT_EQ(v, p.value) << gw_param_name(p.id);
            }
        }
        gwtest::for_each_target([&](gw_simd_target) {
            EXPECT_TRUE(gwtest::bits_equal(decode(f.frame, n), want)) << "frame does not decode to the golden values";
            EXPECT_EQ(encode(spec.p, info.tag, x), f.frame) << "input does not encode to the golden frame";
            // A stochastic rounding of already-rounded values may go either
            // way (the grid's step is recomputed from them), so the quantizers'
            // frames are not a function of their decoded values.
            uint32_t flags = 0;
            ASSERT_EQ(gw_codec_flags(info.codec, &flags), GW_OK);
            if (!(flags & GW_CODEC_FLAG_STOCHASTIC_ROUNDING)) {
                EXPECT_EQ(encode(spec.p, info.tag, want), f.frame)
                    << "decoded values do not re-encode to the golden frame";
            }
        });
    }
}

// Same codec, parameters and input in both formats: same decoded values.
TEST(Vectors, V2DecodedValuesMatchV1) {
    for (const V1Case& c : kV1Cases) {
        const std::string v2 = std::string("v2_") + c.name;
        SCOPED_TRACE(v2);
        const Files a = read_case(c.name);
        const Files b = read_case(v2);
        EXPECT_EQ(a.input, b.input);
        EXPECT_EQ(a.decoded, b.decoded);
    }
}

// The generator of the v2 files (never the v1 ones). Disabled: run it by hand
// only when the wire format changes on purpose, then review the diff. It
// writes only cases without files: a golden vector, once committed, is never
// rewritten (a new rule gets new vectors beside the old ones).
TEST(Vectors, DISABLED_WriteV2) {
    for (const V2Case& c : kV2Cases) {
        SCOPED_TRACE(c.name);
        if (std::filesystem::exists(kDir + c.name + ".frame.hex")) continue;
        SpecPtr spec;
        ASSERT_EQ(gw_codec_spec_create(&spec.p, c.codec), GW_OK);
        std::string params;
        for (const Param& p : c.params) {
            ASSERT_EQ(gw_codec_spec_set(spec.p, p.id, p.value), GW_OK);
            params += std::string(", ") + gw_param_name(p.id) + " " + std::to_string(p.value);
        }
        const auto x = input(c.n);
        const auto frame = encode(spec.p, c.tag, x);
        const auto d = decode(frame, c.n);
        char tag[32];
        std::snprintf(tag, sizeof tag, "0x%016llx", static_cast<unsigned long long>(c.tag));
        const std::string about = std::string(c.about) + "\ncodec " + gw_codec_name(c.codec) + " (" +
                                  std::to_string(c.codec) + ")" + params + ", " + std::to_string(c.n) +
                                  " elements, tag " + tag;
        const std::string base = kDir + c.name;
        ASSERT_TRUE(gwhex::write(base + ".input.hex", gwtest::float_bytes(x), about + "\ninput: float32 little-endian"));
        ASSERT_TRUE(gwhex::write(base + ".frame.hex", frame, about + "\nframe format 2 (docs/wire-format.md)"));
        ASSERT_TRUE(gwhex::write(base + ".decoded.hex", gwtest::float_bytes(d), about + "\ndecoded: float32 little-endian"));
    }
}
