// Frame v1 validation: every malformed class gets its own status code, no
// input reads out of bounds, and a rejected frame changes nothing.
#include <set>

#include "test_util.hpp"

using gwtest::codec;
using gwtest::random_floats;
using gwtest::refresh_crc;

namespace {

const gw_codec_id kCodecs[] = {GW_CODEC_IDENTITY, GW_CODEC_FP16, GW_CODEC_BF16, GW_CODEC_SIGN,
                               GW_CODEC_SCALED_SIGN};

std::vector<uint8_t> sample(gw_codec_id id, size_t n = 37, uint32_t block = 0) {
    return gwtest::encode(codec(id, id == GW_CODEC_SCALED_SIGN ? block : 0), random_floats(n, 5));
}

gw_status decode_status(const std::vector<uint8_t>& f, uint64_t capacity = 1 << 16) {
    std::vector<float> out(capacity);
    return gw_decode(f.data(), f.size(), out.data(), capacity, nullptr);
}

// acc must be unchanged after any failed decode_accumulate.
void expect_rejected(const std::vector<uint8_t>& f, gw_status want, uint64_t n) {
    std::vector<float> acc = random_floats(n, 3), before = acc;
    EXPECT_EQ(gw_decode_accumulate(f.data(), f.size(), 0.5f, acc.data(), n), want);
    EXPECT_TRUE(gwtest::bits_equal(acc, before));
    EXPECT_EQ(decode_status(f), want);
}

}  // namespace

TEST(Frame, HeaderLayoutIsAsDocumented) {
    const auto f = gwtest::encode(codec(GW_CODEC_SCALED_SIGN, 16), std::vector<float>(40, -2.0f));
    ASSERT_GE(f.size(), 30u);
    EXPECT_EQ(std::string(f.begin(), f.begin() + 4), "GWFR");
    EXPECT_EQ(f[4], 1);                     // format version
    EXPECT_EQ(f[5], GW_CODEC_SCALED_SIGN);  // codec id
    EXPECT_EQ(f[6] | f[7], 0);              // flags
    uint64_t count, payload;
    uint16_t plen;
    uint32_t block;
    std::memcpy(&count, &f[8], 8);
    std::memcpy(&payload, &f[16], 8);
    std::memcpy(&plen, &f[24], 2);
    std::memcpy(&block, &f[26], 4);
    EXPECT_EQ(count, 40u);
    EXPECT_EQ(plen, 4u);
    EXPECT_EQ(block, 16u);
    EXPECT_EQ(payload, 3 * 4 + 2 + 2 + 1u);  // 3 scales; blocks of 16, 16, 8 signs
    EXPECT_EQ(f.size(), 26 + 4 + payload + 4);
    float s0;
    std::memcpy(&s0, &f[30], 4);
    EXPECT_EQ(s0, 2.0f);
    EXPECT_EQ(f[30 + 12], 0xFF);  // all negative -> all bits set
    uint32_t crc;
    gw_crc32c(f.data(), f.size() - 4, &crc);
    EXPECT_EQ(std::memcmp(&crc, &f[f.size() - 4], 4), 0);
}

TEST(Frame, InspectWithoutDecoding) {
    for (gw_codec_id id : kCodecs) {
        const auto f = sample(id, 1000, 64);
        gw_frame_info info;
        ASSERT_EQ(gw_frame_info_init(&info, GW_FRAME_INFO_VERSION), GW_OK);
        ASSERT_EQ(gw_frame_inspect(f.data(), f.size(), &info), GW_OK);
        EXPECT_EQ(info.codec, id);
        EXPECT_EQ(info.count, 1000u);
        EXPECT_EQ(info.frame_size, f.size());
        EXPECT_EQ(info.payload_size + 30 + (id == GW_CODEC_SCALED_SIGN ? 4 : 0), f.size());
        EXPECT_EQ(info.block_size, id == GW_CODEC_SCALED_SIGN ? 64u : 0u);
        info.version = 7;
        EXPECT_EQ(gw_frame_inspect(f.data(), f.size(), &info), GW_ERR_OPTIONS_VERSION);
    }
}

TEST(Frame, StreamOfFramesInspectsOneAtATime) {
    auto a = sample(GW_CODEC_SIGN, 100), b = sample(GW_CODEC_FP16, 9);
    std::vector<uint8_t> stream = a;
    stream.insert(stream.end(), b.begin(), b.end());
    gw_frame_info info;
    gw_frame_info_init(&info, GW_FRAME_INFO_VERSION);
    ASSERT_EQ(gw_frame_inspect(stream.data(), stream.size(), &info), GW_OK);
    ASSERT_EQ(info.frame_size, a.size());
    ASSERT_EQ(gw_frame_inspect(stream.data() + a.size(), stream.size() - a.size(), &info), GW_OK);
    EXPECT_EQ(info.codec, GW_CODEC_FP16);
    // Decoding insists on one whole frame.
    EXPECT_EQ(decode_status(stream), GW_ERR_FRAME_TRAILING);
}

TEST(Frame, TruncationAtEveryByte) {
    for (gw_codec_id id : kCodecs) {
        const auto f = sample(id, 45, 8);
        for (size_t len = 0; len < f.size(); ++len) {
            // Copy into an exact-size heap buffer so sanitizers catch over-reads.
            std::vector<uint8_t> prefix(f.begin(), f.begin() + len);
            SCOPED_TRACE(testing::Message() << "codec " << id << " length " << len);
            expect_rejected(prefix, GW_ERR_FRAME_TRUNCATED, 45);
            gw_frame_info info;
            gw_frame_info_init(&info, GW_FRAME_INFO_VERSION);
            EXPECT_EQ(gw_frame_inspect(prefix.data(), prefix.size(), &info), GW_ERR_FRAME_TRUNCATED);
        }
    }
}

TEST(Frame, HeaderFieldErrors) {
    const auto good = sample(GW_CODEC_SCALED_SIGN, 37);
    auto f = good;
    f[0] = 'X';
    expect_rejected(f, GW_ERR_FRAME_MAGIC, 37);
    f = good;
    f[3] ^= 1;
    expect_rejected(f, GW_ERR_FRAME_MAGIC, 37);
    for (uint8_t v : {0, 2, 255}) {
        f = good;
        f[4] = v;
        expect_rejected(f, GW_ERR_FRAME_VERSION, 37);
    }
    for (uint8_t c : {0, 6, 127, 128, 255}) {
        f = good;
        f[5] = c;
        expect_rejected(f, GW_ERR_FRAME_CODEC, 37);
    }
    for (int bit = 0; bit < 16; ++bit) {
        f = good;
        f[6 + bit / 8] |= static_cast<uint8_t>(1 << (bit % 8));
        expect_rejected(f, GW_ERR_FRAME_FLAGS, 37);
    }
    // Parameter length other than the codec's.
    f = good;
    f[24] = 3;
    expect_rejected(f, GW_ERR_FRAME_PARAMS, 37);
    f = sample(GW_CODEC_SIGN, 37);
    f[24] = 4;
    expect_rejected(f, GW_ERR_FRAME_PARAMS, 37);
}

TEST(Frame, LyingLengthsAndCounts) {
    for (gw_codec_id id : kCodecs) {
        SCOPED_TRACE(testing::Message() << "codec " << id);
        const auto good = sample(id, 37, 5);
        uint64_t payload;
        std::memcpy(&payload, &good[16], 8);
        for (uint64_t lie : {payload + 1, payload - 1, uint64_t(0), ~uint64_t(0), uint64_t(1) << 62}) {
            auto f = good;
            std::memcpy(&f[16], &lie, 8);
            expect_rejected(f, GW_ERR_FRAME_LENGTH, 37);
        }
        for (uint64_t count : {uint64_t(36), uint64_t(38), uint64_t(45), ~uint64_t(0), uint64_t(1) << 61}) {
            auto f = good;
            std::memcpy(&f[8], &count, 8);
            // A count whose payload happens to be the same size reaches the checksum.
            size_t bound = 0;
            const gw_codec_options o = codec(id, id == GW_CODEC_SCALED_SIGN ? 5 : 0);
            const bool same = gw_encode_bound(&o, count, &bound) == GW_OK && bound == f.size();
            expect_rejected(f, same ? GW_ERR_FRAME_CHECKSUM : GW_ERR_FRAME_LENGTH, 37);
        }
    }
    // A count larger than the caller's buffer, in an otherwise valid frame.
    const auto f = sample(GW_CODEC_IDENTITY, 100);
    std::vector<float> out(99);
    EXPECT_EQ(gw_decode(f.data(), f.size(), out.data(), 99, nullptr), GW_ERR_BUFFER_TOO_SMALL);
    std::vector<float> acc(99);
    EXPECT_EQ(gw_decode_accumulate(f.data(), f.size(), 1.0f, acc.data(), 99), GW_ERR_COUNT_MISMATCH);
}

TEST(Frame, ChecksumCoversEveryByte) {
    const auto good = sample(GW_CODEC_SCALED_SIGN, 50, 16);
    // Bytes 0..7 are checked before the checksum; from the count on, any flip
    // is a checksum or length error.
    for (size_t i = 8; i < good.size(); ++i)
        for (int bit : {0, 7}) {
            auto f = good;
            f[i] ^= static_cast<uint8_t>(1 << bit);
            std::vector<float> out(1 << 16);
            const gw_status st = gw_decode(f.data(), f.size(), out.data(), out.size(), nullptr);
            EXPECT_TRUE(st == GW_ERR_FRAME_CHECKSUM || st == GW_ERR_FRAME_LENGTH ||
                        st == GW_ERR_FRAME_PARAMS || st == GW_ERR_FRAME_TRUNCATED)
                << "byte " << i << " bit " << bit << ": " << gw_status_str(st);
            EXPECT_NE(st, GW_OK);
        }
    auto f = good;
    f[40] ^= 4;
    expect_rejected(f, GW_ERR_FRAME_CHECKSUM, 50);
}

TEST(Frame, InvalidPayloadWithValidChecksum) {
    // Scaled sign: negative, -0, NaN and Inf scales; pad bits set.
    const auto ss = sample(GW_CODEC_SCALED_SIGN, 20, 12);  // blocks 12 + 8: 2 scales
    for (uint32_t bad : {0xBF800000u, 0x80000000u, 0x7FC00000u, 0x7F800000u, 0xFF800000u}) {
        auto f = ss;
        std::memcpy(&f[30 + 4], &bad, 4);  // second scale
        refresh_crc(f);
        expect_rejected(f, GW_ERR_FRAME_PAYLOAD, 20);
    }
    {
        auto f = ss;
        f[30 + 8 + 1] |= 0x80;  // first block has 12 signs: bits 12..15 of its 2 bytes are padding
        refresh_crc(f);
        expect_rejected(f, GW_ERR_FRAME_PAYLOAD, 20);
    }
    {
        auto f = sample(GW_CODEC_SIGN, 13);
        f[26 + 1] |= 0x20;  // bit 13 of 16: padding
        refresh_crc(f);
        expect_rejected(f, GW_ERR_FRAME_PAYLOAD, 13);
    }
    for (uint32_t bad : {0x7FC00000u, 0x7F800000u, 0xFF800000u}) {
        auto f = sample(GW_CODEC_IDENTITY, 10);
        std::memcpy(&f[26 + 4 * 7], &bad, 4);
        refresh_crc(f);
        expect_rejected(f, GW_ERR_FRAME_PAYLOAD, 10);
    }
    for (uint16_t bad : {uint16_t(0x7C00), uint16_t(0xFE00)}) {
        auto f = sample(GW_CODEC_FP16, 10);
        std::memcpy(&f[26 + 2 * 3], &bad, 2);
        refresh_crc(f);
        expect_rejected(f, GW_ERR_FRAME_PAYLOAD, 10);
    }
    for (uint16_t bad : {uint16_t(0x7F80), uint16_t(0xFFC1)}) {
        auto f = sample(GW_CODEC_BF16, 10);
        std::memcpy(&f[26 + 2 * 9], &bad, 2);
        refresh_crc(f);
        expect_rejected(f, GW_ERR_FRAME_PAYLOAD, 10);
    }
}

TEST(Frame, EmptyTensorsRoundTrip) {
    for (gw_codec_id id : kCodecs) {
        const auto f = gwtest::encode(codec(id), {});
        EXPECT_EQ(gw_decode(f.data(), f.size(), nullptr, 0, nullptr), GW_OK);
        EXPECT_EQ(gw_decode_accumulate(f.data(), f.size(), 1.0f, nullptr, 0), GW_OK);
    }
}

TEST(Api, NullPointersAndOptions) {
    const auto f = sample(GW_CODEC_SIGN, 8);
    float out[8];
    size_t written = 0, bound = 0;
    gw_codec_options o = codec(GW_CODEC_SIGN);
    EXPECT_EQ(gw_decode(nullptr, 10, out, 8, nullptr), GW_ERR_NULL_POINTER);
    EXPECT_EQ(gw_decode(f.data(), f.size(), nullptr, 8, nullptr), GW_ERR_NULL_POINTER);
    EXPECT_EQ(gw_decode_accumulate(f.data(), f.size(), 1.0f, nullptr, 8), GW_ERR_NULL_POINTER);
    EXPECT_EQ(gw_decode_accumulate(f.data(), f.size(), NAN, out, 8), GW_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(gw_encode(&o, nullptr, 8, out, sizeof out, &written), GW_ERR_NULL_POINTER);
    EXPECT_EQ(gw_encode(nullptr, out, 8, out, sizeof out, &written), GW_ERR_NULL_POINTER);
    EXPECT_EQ(gw_encode_bound(&o, 8, nullptr), GW_ERR_NULL_POINTER);
    EXPECT_EQ(gw_frame_inspect(f.data(), f.size(), nullptr), GW_ERR_NULL_POINTER);
    EXPECT_EQ(gw_codec_options_init(nullptr, GW_CODEC_OPTIONS_VERSION), GW_ERR_NULL_POINTER);
    EXPECT_EQ(gw_codec_options_init(&o, 0), GW_ERR_OPTIONS_VERSION);
    o.version = 2;
    EXPECT_EQ(gw_encode_bound(&o, 8, &bound), GW_ERR_OPTIONS_VERSION);
    o = codec(static_cast<gw_codec_id>(0));
    EXPECT_EQ(gw_encode_bound(&o, 8, &bound), GW_ERR_INVALID_ARGUMENT);
    o = codec(GW_CODEC_IDENTITY);
    EXPECT_EQ(gw_encode_bound(&o, ~uint64_t(0), &bound), GW_ERR_INVALID_ARGUMENT);
    std::vector<float> x(8, 1.0f);
    std::vector<uint8_t> small(10);
    EXPECT_EQ(gw_encode(&o, x.data(), 8, small.data(), small.size(), &written), GW_ERR_BUFFER_TOO_SMALL);
}

TEST(Api, StatusStringsAndVersion) {
    const int codes[] = {0,   -1,  -2,  -3,  -4,  -5,  -6,  -7,  -8,  -9,  -10, -20, -21, -22,
                         -23, -24, -25, -26, -27, -28, -29, -40, -41, -42, -43, -44, -99};
    std::set<std::string> seen;
    for (int c : codes) {
        const char* s = gw_status_str(static_cast<gw_status>(c));
        ASSERT_NE(s, nullptr);
        EXPECT_NE(std::string(s), "unknown status") << c;
        EXPECT_TRUE(seen.insert(s).second) << "duplicate message for " << c;
    }
    EXPECT_STREQ(gw_status_str(static_cast<gw_status>(12345)), "unknown status");
    EXPECT_EQ(gw_version_number(), unsigned(GW_VERSION_NUMBER));
    EXPECT_EQ(std::string(gw_version_string()),
              std::to_string(GW_VERSION_MAJOR) + "." + std::to_string(GW_VERSION_MINOR) + "." +
                  std::to_string(GW_VERSION_PATCH));
}
