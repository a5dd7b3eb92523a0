// Golden test vectors (tests/vectors/, docs/wire-format.md): for each case
// NAME there are NAME.input.hex (float32 LE input), NAME.frame.hex (the frame)
// and NAME.decoded.hex (float32 LE decoded values). The test checks that the
// input encodes to the frame byte for byte, the frame decodes to the decoded
// values, and the decoded values re-encode to the same frame, on every SIMD
// target. Bindings reuse the same files. GW_WRITE_VECTORS=1 rewrites them
// (only when the wire format changes on purpose, with a new format version).
#include <cstdlib>

#include "test_util.hpp"

namespace {

struct Case {
    const char* name;
    gw_codec_id codec;
    uint32_t block;
    size_t n;
    const char* about;
};

const Case kCases[] = {
    {"identity_8", GW_CODEC_IDENTITY, 0, 8, "identity codec, 8 elements"},
    {"fp16_9", GW_CODEC_FP16, 0, 9, "IEEE half, round to nearest even, saturating"},
    {"bf16_9", GW_CODEC_BF16, 0, 9, "bfloat16, round to nearest even, saturating"},
    {"sign_13", GW_CODEC_SIGN, 0, 13, "sign bits, 13 elements (3 padding bits)"},
    {"scaled_sign_10", GW_CODEC_SCALED_SIGN, 0, 10, "scaled sign, one block"},
    {"scaled_sign_b4_10", GW_CODEC_SCALED_SIGN, 4, 10, "blockwise scaled sign, blocks of 4 (4, 4, 2)"},
    {"scaled_sign_b12_20", GW_CODEC_SCALED_SIGN, 12, 20, "blocks of 12 and 8: padded sign fields"},
    {"scaled_sign_0", GW_CODEC_SCALED_SIGN, 0, 0, "empty tensor"},
};

// Exactly representable inputs with zeros, negative zero and a wide range.
std::vector<float> input(size_t n) {
    std::vector<float> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = float(int(i * 37 % 19) - 9) * 0.375f;
    if (n > 3) x[3] = -0.0f;
    if (n > 5) x[5] = 70000.0f;  // beyond fp16: saturates
    if (n > 7) x[7] = 1.0f + 0x1.0p-11f;  // fp16 rounding tie
    return x;
}

std::string path(const Case& c, const char* kind) {
    return std::string(GW_SOURCE_DIR) + "/tests/vectors/" + c.name + "." + kind + ".hex";
}

void write(const std::string& p, const std::vector<uint8_t>& bytes, const std::string& comment) {
    std::ofstream(p) << gwtest::to_hex(bytes, comment);
}

}  // namespace

TEST(Vectors, GoldenFramesRoundTripByteExactly) {
    const bool regenerate = std::getenv("GW_WRITE_VECTORS") != nullptr;
    for (const Case& c : kCases) {
        SCOPED_TRACE(c.name);
        const gw_codec_options o = gwtest::codec(c.codec, c.block);
        if (regenerate) {
            const auto x = input(c.n);
            const auto f = gwtest::encode(o, x);
            std::vector<float> d(c.n);
            ASSERT_EQ(gw_decode(f.data(), f.size(), d.data(), c.n, nullptr), GW_OK);
            const std::string about = std::string(c.about) + "\ncodec " + std::to_string(c.codec) +
                                      ", block_size " + std::to_string(c.block) + ", " +
                                      std::to_string(c.n) + " elements";
            write(path(c, "input"), gwtest::float_bytes(x), about + "\ninput: float32 little-endian");
            write(path(c, "frame"), f, about + "\nframe v1 (docs/wire-format.md)");
            write(path(c, "decoded"), gwtest::float_bytes(d), about + "\ndecoded: float32 little-endian");
        }
        bool ok_in = false, ok_frame = false, ok_dec = false;
        const auto x = gwtest::bytes_to_floats(gwtest::read_hex(path(c, "input"), &ok_in));
        const auto frame = gwtest::read_hex(path(c, "frame"), &ok_frame);
        const auto want = gwtest::bytes_to_floats(gwtest::read_hex(path(c, "decoded"), &ok_dec));
        ASSERT_TRUE(ok_in && ok_frame && ok_dec) << "missing vector files for " << c.name;
        ASSERT_EQ(x.size(), c.n);
        gwtest::for_each_target([&](gw_simd_target) {
            EXPECT_EQ(gwtest::encode(o, x), frame) << "input does not encode to the golden frame";
            std::vector<float> d(c.n);
            uint64_t count = 0;
            ASSERT_EQ(gw_decode(frame.data(), frame.size(), d.data(), c.n, &count), GW_OK);
            EXPECT_EQ(count, c.n);
            EXPECT_TRUE(gwtest::bits_equal(d, want)) << "frame does not decode to the golden values";
            EXPECT_EQ(gwtest::encode(o, d), frame) << "decoded values do not re-encode to the frame";
        });
    }
}
