// Frame format 2 validation: every malformed class gets its own status code,
// no input reads out of bounds, a rejected frame changes nothing, and the
// size of a frame is known from its fixed header alone.
#include <set>

#include "frame/frame.hpp"
#include "test_util.hpp"

using gwtest::codec;
using gwtest::payload_offset;
using gwtest::random_floats;
using gwtest::refresh_crc;
using gwtest::refresh_header_crc;

namespace {

const gw_codec_id kCodecs[] = {GW_CODEC_IDENTITY, GW_CODEC_FP16, GW_CODEC_BF16, GW_CODEC_SIGN,
                               GW_CODEC_SCALED_SIGN};

std::vector<uint8_t> sample(gw_codec_id id, size_t n = 37, uint32_t block = 0, uint64_t tag = 0) {
    return gwtest::encode(codec(id, id == GW_CODEC_SCALED_SIGN ? block : 0), random_floats(n, 5),
                          tag);
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

// The core's tag helpers and the public macros are one layout.
TEST(Frame, TagHelpersAgreeWithThePublicMacros) {
    for (uint32_t tensor : {0u, 1u, 7u, 0x80000005u, 0xFFFFFFFFu})
        for (uint64_t step : {uint64_t(0), uint64_t(3), uint64_t(0xFFFFFFFFu), uint64_t(1) << 32,
                              (uint64_t(5) << 32) | 9, ~uint64_t(0)}) {
            const uint64_t tag = gw::frame::make_tag(tensor, step);
            EXPECT_EQ(tag, GW_TAG(tensor, step));
            EXPECT_EQ(gw::frame::tag_tensor(tag), tensor);
            EXPECT_EQ(gw::frame::tag_round(tag), static_cast<uint32_t>(step));
            EXPECT_EQ(GW_TAG_TENSOR(tag), tensor);
            EXPECT_EQ(GW_TAG_STEP(tag), static_cast<uint32_t>(step));
        }
    static_assert(gw::frame::make_tag(7, 3) == GW_TAG(7, 3), "one tag layout");
}

TEST(Frame, HeaderLayoutIsAsDocumented) {
    const auto f = gwtest::encode(codec(GW_CODEC_SCALED_SIGN, 16), std::vector<float>(40, -2.0f),
                                  GW_TAG(7, 3));
    ASSERT_GE(f.size(), 44u);
    EXPECT_EQ(std::string(f.begin(), f.begin() + 4), "GWFR");
    EXPECT_EQ(f[4], 2);                     // format version
    EXPECT_EQ(f[5], GW_CODEC_SCALED_SIGN);  // codec id
    EXPECT_EQ(f[6] | f[7], 0);              // flags
    // Little-endian fields, read the same way on any host.
    const uint64_t tag = gwtest::get_le<uint64_t>(&f[8]), count = gwtest::get_le<uint64_t>(&f[16]),
                   payload = gwtest::get_le<uint64_t>(&f[24]);
    const uint16_t plen = gwtest::get_le<uint16_t>(&f[32]), reserved = gwtest::get_le<uint16_t>(&f[34]);
    const uint32_t hcrc = gwtest::get_le<uint32_t>(&f[36]), block = gwtest::get_le<uint32_t>(&f[40]);
    uint32_t crc;
    EXPECT_EQ(tag, (uint64_t(7) << 32) | 3);
    EXPECT_EQ(count, 40u);
    EXPECT_EQ(plen, 4u);
    EXPECT_EQ(reserved, 0u);
    gw_crc32c(f.data(), 36, &crc);
    EXPECT_EQ(hcrc, crc);
    EXPECT_EQ(block, 16u);
    EXPECT_EQ(payload, 3 * 4 + 2 + 2 + 1u);  // 3 scales; blocks of 16, 16, 8 signs
    EXPECT_EQ(f.size(), 40 + 4 + payload + 4);
    EXPECT_EQ(gwtest::get_le<float>(&f[44]), 2.0f);
    EXPECT_EQ(f[44 + 12], 0xFF);  // all negative -> all bits set
    gw_crc32c(f.data(), f.size() - 4, &crc);
    EXPECT_EQ(gwtest::get_le<uint32_t>(&f[f.size() - 4]), crc);
}

TEST(Frame, InspectWithoutDecoding) {
    for (gw_codec_id id : kCodecs) {
        const auto f = sample(id, 1000, 64, 99);
        gw_frame_info info;
        ASSERT_EQ(gw_frame_info_init(&info, GW_FRAME_INFO_VERSION), GW_OK);
        ASSERT_EQ(gw_frame_inspect(f.data(), f.size(), &info), GW_OK);
        EXPECT_EQ(info.format_version, 2u);
        EXPECT_EQ(info.codec, id);
        EXPECT_EQ(info.tag, 99u);
        EXPECT_EQ(info.flags, 0u);
        EXPECT_EQ(info.count, 1000u);
        EXPECT_EQ(info.frame_size, f.size());
        EXPECT_EQ(info.payload_size + 44 + (id == GW_CODEC_SCALED_SIGN ? 4 : 0), f.size());
        gw_codec_spec* spec = nullptr;
        ASSERT_EQ(gw_frame_spec(f.data(), f.size(), &spec), GW_OK);
        EXPECT_TRUE(gw_codec_spec_equal(spec, codec(id, id == GW_CODEC_SCALED_SIGN ? 64 : 0)));
        gw_codec_spec_free(spec);
        info.version = 7;
        EXPECT_EQ(gw_frame_inspect(f.data(), f.size(), &info), GW_ERR_OPTIONS_VERSION);
        info.version = 0;
        EXPECT_EQ(gw_frame_inspect(f.data(), f.size(), &info), GW_ERR_OPTIONS_VERSION);
    }
}

TEST(Frame, SizeFromTheFixedHeaderAlone) {
    for (gw_codec_id id : kCodecs) {
        const auto f = sample(id, 333, 10);
        size_t size = 0;
        // Exactly the header, nothing after it: the whole size is known.
        std::vector<uint8_t> head(f.begin(), f.begin() + GW_FRAME_HEADER_SIZE);
        ASSERT_EQ(gw_frame_size(head.data(), head.size(), &size), GW_OK);
        EXPECT_EQ(size, f.size());
        for (size_t len = 0; len < GW_FRAME_HEADER_SIZE; ++len) {
            std::vector<uint8_t> p(f.begin(), f.begin() + len);
            EXPECT_EQ(gw_frame_size(p.data(), p.size(), &size), GW_ERR_FRAME_TRUNCATED) << len;
        }
        // A corrupted size field is caught by the header CRC before anyone
        // allocates for it.
        auto bad = head;
        bad[30] ^= 0x10;
        EXPECT_EQ(gw_frame_size(bad.data(), bad.size(), &size), GW_ERR_FRAME_CHECKSUM);
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
    for (uint8_t v : {0, 3, 255}) {
        f = good;
        f[4] = v;
        expect_rejected(f, GW_ERR_FRAME_VERSION, 37);
    }
    for (uint8_t c : {0, 100, 127, 128, 255}) {
        f = good;
        f[5] = c;
        expect_rejected(f, GW_ERR_FRAME_CODEC, 37);
    }
    // Bit 0 is the zstd stage, which this codec never takes; the others are reserved.
    for (int bit = 0; bit < 16; ++bit) {
        f = good;
        f[6 + bit / 8] |= static_cast<uint8_t>(1 << (bit % 8));
        refresh_header_crc(f);
        refresh_crc(f);
        expect_rejected(f, GW_ERR_FRAME_FLAGS, 37);
    }
    // Reserved bytes 34-35.
    f = good;
    f[35] = 1;
    refresh_header_crc(f);
    expect_rejected(f, GW_ERR_FRAME_FLAGS, 37);
    // Any header byte flipped after the flags: header checksum.
    for (size_t i = 8; i < 40; ++i) {
        f = good;
        f[i] ^= 0x40;
        expect_rejected(f, GW_ERR_FRAME_CHECKSUM, 37);
    }
    // Parameter length other than the codec's.
    f = good;
    f[32] = 3;
    refresh_header_crc(f);
    expect_rejected(f, GW_ERR_FRAME_PARAMS, 37);
    f = sample(GW_CODEC_SIGN, 37);
    f[32] = 4;
    refresh_header_crc(f);
    expect_rejected(f, GW_ERR_FRAME_PARAMS, 37);
}

TEST(Frame, LyingLengthsAndCounts) {
    for (gw_codec_id id : kCodecs) {
        SCOPED_TRACE(testing::Message() << "codec " << id);
        const uint32_t block = id == GW_CODEC_SCALED_SIGN ? 5 : 0;
        const auto good = sample(id, 37, block);
        const uint64_t payload = gwtest::get_le<uint64_t>(&good[24]);
        for (uint64_t lie : {payload + 1, payload - 1, uint64_t(0), ~uint64_t(0), uint64_t(1) << 62}) {
            auto f = good;
            gwtest::put_le(&f[24], lie);
            refresh_header_crc(f);
            if (lie > payload) {
                // More than the codec's largest payload for this count.
                expect_rejected(f, GW_ERR_FRAME_LENGTH, 37);
            } else {
                // Shorter, with a checksum that matches: the codec's exact check.
                f.resize(payload_offset(f) + lie + 4);
                refresh_crc(f);
                expect_rejected(f, GW_ERR_FRAME_LENGTH, 37);
            }
        }
        for (uint64_t count : {uint64_t(36), uint64_t(38), uint64_t(45), ~uint64_t(0), uint64_t(1) << 61}) {
            auto f = good;
            gwtest::put_le(&f[16], count);
            refresh_header_crc(f);
            refresh_crc(f);
            // Same payload size for another count: the codec's own check decides.
            size_t bound = 0;
            const bool same = gw_encode_bound(codec(id, block), count, &bound) == GW_OK &&
                              bound == f.size();
            const gw_status st = decode_status(f);
            if (same)
                EXPECT_TRUE(st == GW_OK || st == GW_ERR_FRAME_PAYLOAD) << gw_status_name(st);
            else
                EXPECT_EQ(st, GW_ERR_FRAME_LENGTH);
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
    for (size_t i = 8; i < good.size(); ++i)
        for (int bit : {0, 7}) {
            auto f = good;
            f[i] ^= static_cast<uint8_t>(1 << bit);
            const gw_status st = decode_status(f);
            EXPECT_TRUE(st == GW_ERR_FRAME_CHECKSUM || st == GW_ERR_FRAME_LENGTH ||
                        st == GW_ERR_FRAME_PARAMS || st == GW_ERR_FRAME_TRUNCATED)
                << "byte " << i << " bit " << bit << ": " << gw_status_str(st);
        }
    auto f = good;
    f[50] ^= 4;
    expect_rejected(f, GW_ERR_FRAME_CHECKSUM, 50);
}

TEST(Frame, InvalidPayloadWithValidChecksum) {
    // Scaled sign: negative, -0, NaN and Inf scales; pad bits set.
    const auto ss = sample(GW_CODEC_SCALED_SIGN, 20, 12);  // blocks 12 + 8: 2 scales
    const size_t po = payload_offset(ss);
    for (uint32_t bad : {0xBF800000u, 0x80000000u, 0x7FC00000u, 0x7F800000u, 0xFF800000u}) {
        auto f = ss;
        gwtest::put_le(&f[po + 4], bad);  // second scale
        refresh_crc(f);
        expect_rejected(f, GW_ERR_FRAME_PAYLOAD, 20);
    }
    {
        auto f = ss;
        f[po + 8 + 1] |= 0x80;  // first block has 12 signs: bits 12..15 of its 2 bytes are padding
        refresh_crc(f);
        expect_rejected(f, GW_ERR_FRAME_PAYLOAD, 20);
    }
    {
        auto f = sample(GW_CODEC_SIGN, 13);
        f[40 + 1] |= 0x20;  // bit 13 of 16: padding
        refresh_crc(f);
        expect_rejected(f, GW_ERR_FRAME_PAYLOAD, 13);
    }
    for (uint32_t bad : {0x7FC00000u, 0x7F800000u, 0xFF800000u}) {
        auto f = sample(GW_CODEC_IDENTITY, 10);
        gwtest::put_le(&f[40 + 4 * 7], bad);
        refresh_crc(f);
        expect_rejected(f, GW_ERR_FRAME_PAYLOAD, 10);
    }
    // The identity check reads 1024 values at a time, then the rest: a bad
    // value at either end of a chunk, in the rest, and in a rest that is empty.
    for (uint64_t n : {uint64_t(1024), uint64_t(3000)})
        for (uint64_t at : {uint64_t(0), uint64_t(1023), uint64_t(1024), uint64_t(2047),
                            uint64_t(2048), uint64_t(2999)}) {
            if (at >= n) continue;
            auto f = sample(GW_CODEC_IDENTITY, n);
            gwtest::put_le(&f[40 + 4 * at], 0x7FC00000u);
            refresh_crc(f);
            expect_rejected(f, GW_ERR_FRAME_PAYLOAD, n);
        }
    for (uint16_t bad : {uint16_t(0x7C00), uint16_t(0xFE00)}) {
        auto f = sample(GW_CODEC_FP16, 10);
        gwtest::put_le(&f[40 + 2 * 3], bad);
        refresh_crc(f);
        expect_rejected(f, GW_ERR_FRAME_PAYLOAD, 10);
    }
    for (uint16_t bad : {uint16_t(0x7F80), uint16_t(0xFFC1)}) {
        auto f = sample(GW_CODEC_BF16, 10);
        gwtest::put_le(&f[40 + 2 * 9], bad);
        refresh_crc(f);
        expect_rejected(f, GW_ERR_FRAME_PAYLOAD, 10);
    }
}

// Large dense frames are checked tile by tile, their payload's CRC joined
// with the header's (codec_half.cpp, codec_identity.cpp; 16-bit frames are
// also encoded so); gw_decode decodes them as it checks them (one read of
// the payload), gw_decode_accumulate after, in tiles from the payload's end:
// the frames are the ones a whole-frame CRC gives, each decodes to what
// encodes back to it (also into a larger output), a flipped bit anywhere is
// still a checksum error (also with a non-finite value elsewhere), a
// non-finite value with a valid CRC still the payload's, and a non-finite
// input in the last tile refused.
TEST(Frame, LargeDenseFramesFuseTheirChecksAndCrc) {
    struct Case {
        gw_codec_id id;
        size_t n;
    };
    // Around each codec's fused and back-to-front sizes (payloads of 32 KiB
    // and of more than 1 MiB; identity's encode and gw_decode fuse from
    // 32 KiB, its check beyond 1 MiB), and not multiples of a tile.
    const Case cases[] = {{GW_CODEC_FP16, 16383},      {GW_CODEC_FP16, 16384},
                          {GW_CODEC_FP16, 40003},      {GW_CODEC_FP16, 600001},
                          {GW_CODEC_BF16, 16383},      {GW_CODEC_BF16, 16384},
                          {GW_CODEC_BF16, 40003},      {GW_CODEC_BF16, 600001},
                          {GW_CODEC_IDENTITY, 8191},   {GW_CODEC_IDENTITY, 8192},
                          {GW_CODEC_IDENTITY, 40003},  {GW_CODEC_IDENTITY, 262144},
                          {GW_CODEC_IDENTITY, 262145}, {GW_CODEC_IDENTITY, 300001}};
    for (const Case& c : cases) {
        const size_t n = c.n;
        const std::vector<float> x = random_floats(n, 11);
        const auto good = gwtest::encode(codec(c.id), x, 0);
        auto recomputed = good;
        refresh_crc(recomputed);
        EXPECT_EQ(recomputed, good) << "n=" << n;
        std::vector<float> decoded(n);
        ASSERT_EQ(gw_decode(good.data(), good.size(), decoded.data(), n, nullptr), GW_OK);
        EXPECT_EQ(gwtest::encode(codec(c.id), decoded, 0), good) << "n=" << n;
        std::vector<float> roomy(n + 9, -1.0f), zero(n, 0.0f);
        uint64_t count = 0;
        ASSERT_EQ(gw_decode(good.data(), good.size(), roomy.data(), n + 9, &count), GW_OK);
        EXPECT_EQ(count, n);
        EXPECT_TRUE(gwtest::bits_equal(std::vector<float>(roomy.begin(), roomy.begin() + n), decoded));
        EXPECT_EQ(roomy[n], -1.0f);  // nothing past the count
        ASSERT_EQ(gw_decode_accumulate(good.data(), good.size(), 1.0f, zero.data(), n), GW_OK);
        EXPECT_TRUE(gwtest::bits_equal(zero, decoded)) << "n=" << n;
        EXPECT_EQ(gw_decode(good.data(), good.size(), roomy.data(), n - 1, nullptr),
                  GW_ERR_BUFFER_TOO_SMALL);
        const size_t po = payload_offset(good);
        const size_t vs = c.id == GW_CODEC_IDENTITY ? 4 : 2;
        for (size_t at : {po, po + n, good.size() - 5, size_t(9)}) {
            auto f = good;
            f[at] ^= 0x10;
            EXPECT_NE(decode_status(f, n), GW_OK) << "n=" << n << " byte " << at;
            if (at >= po) expect_rejected(f, GW_ERR_FRAME_CHECKSUM, n);
        }
        auto f = good;
        if (c.id == GW_CODEC_IDENTITY)
            gwtest::put_le(&f[po + vs * (n - 1)], uint32_t(0x7F800000));
        else
            gwtest::put_le(&f[po + vs * (n - 1)], uint16_t(c.id == GW_CODEC_FP16 ? 0x7C00 : 0x7F80));
        refresh_crc(f);
        expect_rejected(f, GW_ERR_FRAME_PAYLOAD, n);
        f[po] ^= 1;  // and a corrupted byte: the checksum speaks first
        expect_rejected(f, GW_ERR_FRAME_CHECKSUM, n);
        for (size_t at : {size_t(0), n / 2, n - 2}) {
            std::vector<float> bad = x;
            bad[at] = at == 0 ? NAN : INFINITY;
            std::vector<uint8_t> out(good.size());
            size_t written = 0;
            EXPECT_EQ(gw_encode(codec(c.id), nullptr, bad.data(), GW_DTYPE_F32, n, out.data(),
                                out.size(), &written),
                      GW_ERR_NONFINITE)
                << "n=" << n << " at " << at;
        }
    }
}

// Defect: a scaled-sign block with scale 0 but sign bits set was accepted and
// decoded to -0.0, so re-encoding gave other bytes. This is the reported
// format-1 reproducer; its format-2 twin is rejected the same way.
TEST(Frame, ZeroScaleWithSignBitsIsNotCanonical) {
    const std::vector<uint8_t> v1 = gwtest::read_hex_string(
        "47574652010500000a000000000000000f000000000000000400040000000000000060ba88460000103f"
        "010000004aae55");
    expect_rejected(v1, GW_ERR_FRAME_PAYLOAD, 10);
    auto f = gwtest::encode(codec(GW_CODEC_SCALED_SIGN, 4), std::vector<float>(10, 0.0f));
    const size_t po = payload_offset(f);
    f[po + 12] = 0x05;  // signs of block 0, whose scale is 0
    refresh_crc(f);
    expect_rejected(f, GW_ERR_FRAME_PAYLOAD, 10);
    // The encoder writes clear bits for a zero scale, also for -0 inputs and for
    // values whose L1 mean underflows to 0.
    std::vector<float> x(10, -0.0f);
    x[0] = -1e-45f;
    const auto g = gwtest::encode(codec(GW_CODEC_SCALED_SIGN, 4), x);
    EXPECT_EQ(g[po + 12], 0);
    EXPECT_EQ(g[po + 13], 0);
    EXPECT_EQ(g[po + 14], 0);
    // Blocks of a multiple of 8 (the DDP hook's 64) are encoded and checked by
    // other code: a zero block in the middle, all -0 with a tiny negative
    // value, gets clear bits, and a set bit there is refused; so is a padding
    // bit of the last block (130 = 2 x 64 + 2).
    std::vector<float> y = gwtest::random_floats(130, 3);
    for (size_t i = 64; i < 128; ++i) y[i] = -0.0f;
    y[70] = -1e-45f;
    auto h = gwtest::encode(codec(GW_CODEC_SCALED_SIGN, 64), y);
    const size_t ph = payload_offset(h), bits1 = ph + 3 * 4 + 8;
    EXPECT_EQ(gwtest::get_le32(&h[ph + 4]), 0u) << "the middle block's scale";
    for (size_t k = 0; k < 8; ++k) EXPECT_EQ(h[bits1 + k], 0) << k;
    EXPECT_EQ(gw_decode(h.data(), h.size(), y.data(), y.size(), nullptr), GW_OK);
    for (uint8_t bit : {uint8_t(0x01), uint8_t(0x40)}) {
        auto bad = h;
        bad[bits1 + 3] |= bit;
        refresh_crc(bad);
        expect_rejected(bad, GW_ERR_FRAME_PAYLOAD, 130);
    }
    auto pad = gwtest::encode(codec(GW_CODEC_SCALED_SIGN, 64), gwtest::random_floats(130, 4));
    pad[ph + 3 * 4 + 16] |= 0x04;  // the last block's third bit: it has 2 elements
    refresh_crc(pad);
    expect_rejected(pad, GW_ERR_FRAME_PAYLOAD, 130);
}

TEST(Frame, EmptyTensorsRoundTrip) {
    for (gw_codec_id id : kCodecs) {
        const auto f = gwtest::encode(codec(id), {});
        EXPECT_EQ(gw_decode(f.data(), f.size(), nullptr, 0, nullptr), GW_OK);
        EXPECT_EQ(gw_decode_accumulate(f.data(), f.size(), 1.0f, nullptr, 0), GW_OK);
    }
}

TEST(Frame, OverlappingBuffersAreRejected) {
    auto f = sample(GW_CODEC_IDENTITY, 64);
    // Decoding into the frame's own bytes would read what it has just written.
    float* inside = reinterpret_cast<float*>(f.data() + 44);
    EXPECT_EQ(gw_decode(f.data(), f.size(), inside, 16, nullptr), GW_ERR_OVERLAP);
    EXPECT_EQ(gw_decode_accumulate(f.data(), f.size(), 1.0f, inside, 64), GW_ERR_OVERLAP);
    std::vector<uint8_t> buf(4096);
    size_t written = 0;
    EXPECT_EQ(gw_encode(codec(GW_CODEC_IDENTITY), nullptr, buf.data() + 8, GW_DTYPE_F32, 64,
                        buf.data(), buf.size(), &written),
              GW_ERR_OVERLAP);
}

TEST(Frame, HalfPrecisionInputEncodesLikeItsFloatValue) {
    const auto x = random_floats(1001, 8);
    std::vector<uint16_t> h(x.size()), b(x.size());
    std::vector<float> xh(x.size()), xb(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
        // bf16 by truncation and fp16 via the library's own fp16 codec round trip.
        uint32_t u;
        std::memcpy(&u, &x[i], 4);
        b[i] = static_cast<uint16_t>(u >> 16);
        u &= 0xFFFF0000u;
        std::memcpy(&xb[i], &u, 4);
    }
    const auto f16 = gwtest::encode(codec(GW_CODEC_FP16), x);
    for (size_t i = 0; i < h.size(); ++i) h[i] = gwtest::get_le<uint16_t>(f16.data() + 40 + 2 * i);
    xh = gwtest::decode(f16, x.size());
    for (gw_codec_id id : kCodecs) {
        gwtest::Spec s = codec(id, id == GW_CODEC_SCALED_SIGN ? 100 : 0);
        for (auto [bits, as_float, dtype] :
             {std::tuple{&h, &xh, GW_DTYPE_F16}, std::tuple{&b, &xb, GW_DTYPE_BF16}}) {
            size_t bound = 0, written = 0;
            ASSERT_EQ(gw_encode_bound(s, x.size(), &bound), GW_OK);
            std::vector<uint8_t> f(bound);
            ASSERT_EQ(gw_encode(s, nullptr, bits->data(), dtype, x.size(), f.data(), f.size(),
                                &written),
                      GW_OK);
            f.resize(written);
            EXPECT_EQ(f, gwtest::encode(s, *as_float)) << "codec " << id << " dtype " << dtype;
        }
    }
}

TEST(Api, NullPointersAndOptions) {
    const auto f = sample(GW_CODEC_SIGN, 8);
    float out[8];
    size_t written = 0, bound = 0;
    gwtest::Spec o = codec(GW_CODEC_SIGN);
    EXPECT_EQ(gw_decode(nullptr, 10, out, 8, nullptr), GW_ERR_NULL_POINTER);
    EXPECT_EQ(gw_decode(f.data(), f.size(), nullptr, 8, nullptr), GW_ERR_NULL_POINTER);
    EXPECT_EQ(gw_decode_accumulate(f.data(), f.size(), 1.0f, nullptr, 8), GW_ERR_NULL_POINTER);
    EXPECT_EQ(gw_decode_accumulate(f.data(), f.size(), NAN, out, 8), GW_ERR_INVALID_ARGUMENT);
    std::vector<uint8_t> fb(256);
    EXPECT_EQ(gw_encode(o, nullptr, nullptr, GW_DTYPE_F32, 8, fb.data(), fb.size(), &written),
              GW_ERR_NULL_POINTER);
    EXPECT_EQ(gw_encode(nullptr, nullptr, out, GW_DTYPE_F32, 8, fb.data(), fb.size(), &written),
              GW_ERR_NULL_POINTER);
    EXPECT_EQ(gw_encode(o, nullptr, out, static_cast<gw_dtype>(9), 8, fb.data(), fb.size(), &written),
              GW_ERR_INVALID_ARGUMENT);
    gw_encode_ctx ctx = GW_ENCODE_CTX_INIT;
    ctx.version = 2;
    EXPECT_EQ(gw_encode(o, &ctx, out, GW_DTYPE_F32, 8, fb.data(), fb.size(), &written),
              GW_ERR_OPTIONS_VERSION);
    EXPECT_EQ(gw_encode_ctx_init(&ctx, 0), GW_ERR_OPTIONS_VERSION);
    EXPECT_EQ(gw_encode_ctx_init(&ctx, GW_ENCODE_CTX_VERSION), GW_OK);
    EXPECT_EQ(gw_encode_bound(o, 8, nullptr), GW_ERR_NULL_POINTER);
    EXPECT_EQ(gw_frame_inspect(f.data(), f.size(), nullptr), GW_ERR_NULL_POINTER);
    // Sizes that can never be allocated are invalid arguments, not out-of-memory.
    EXPECT_EQ(gw_encode_bound(codec(GW_CODEC_IDENTITY), ~uint64_t(0), &bound), GW_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(gw_encode_bound(codec(GW_CODEC_IDENTITY), GW_MAX_ELEMENTS + 1, &bound),
              GW_ERR_INVALID_ARGUMENT);
    std::vector<float> x(8, 1.0f);
    std::vector<uint8_t> small(10);
    EXPECT_EQ(gw_encode(codec(GW_CODEC_IDENTITY), nullptr, x.data(), GW_DTYPE_F32, 8, small.data(),
                        small.size(), &written),
              GW_ERR_BUFFER_TOO_SMALL);
}

TEST(Api, CodecRegistryAndParameters) {
    size_t count = 0;
    ASSERT_EQ(gw_codec_list(nullptr, 0, &count), GW_OK);
    std::vector<gw_codec_id> ids(count);
    ASSERT_EQ(gw_codec_list(ids.data(), ids.size(), &count), GW_OK);
    std::set<std::string> names;
    for (gw_codec_id id : ids) {
        const char* name = gw_codec_name(id);
        ASSERT_NE(name, nullptr);
        EXPECT_TRUE(names.insert(name).second);
        gw_codec_id back;
        ASSERT_EQ(gw_codec_from_name(name, &back), GW_OK);
        EXPECT_EQ(back, id);
        size_t np = 0;
        ASSERT_EQ(gw_codec_params(id, nullptr, 0, &np), GW_OK);
        std::vector<gw_param> ps(np);
        ASSERT_EQ(gw_codec_params(id, ps.data(), ps.size(), &np), GW_OK);
        gw_codec_spec* s = nullptr;
        ASSERT_EQ(gw_codec_spec_create(&s, id), GW_OK);
        for (gw_param p : ps) {
            ASSERT_NE(gw_param_name(p), nullptr);
            int64_t lo, hi, def, v;
            ASSERT_EQ(gw_codec_param_bounds(id, p, &lo, &hi, &def), GW_OK);
            EXPECT_LE(lo, def);
            EXPECT_LE(def, hi);
            ASSERT_EQ(gw_codec_spec_get(s, p, &v), GW_OK);
            EXPECT_EQ(v, def);
            // Out of range: refused, and nothing changes.
            if (hi < INT64_MAX) {
                EXPECT_EQ(gw_codec_spec_set(s, p, hi + 1), GW_ERR_INVALID_ARGUMENT);
            }
            EXPECT_EQ(gw_codec_spec_set(s, p, lo - 1), GW_ERR_INVALID_ARGUMENT);
            ASSERT_EQ(gw_codec_spec_get(s, p, &v), GW_OK);
            EXPECT_EQ(v, def);
            EXPECT_EQ(gw_codec_spec_set(s, p, hi), GW_OK);
        }
        // A parameter the codec does not take.
        EXPECT_EQ(gw_codec_spec_set(s, static_cast<gw_param>(999), 0), GW_ERR_INVALID_ARGUMENT);
        gw_codec_spec_free(s);
    }
    EXPECT_TRUE(names.count("scaled_sign"));
    gw_codec_id id;
    EXPECT_EQ(gw_codec_from_name("nope", &id), GW_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(gw_codec_name(static_cast<gw_codec_id>(200)), nullptr);
    gw_codec_spec* s = nullptr;
    EXPECT_EQ(gw_codec_spec_create(&s, static_cast<gw_codec_id>(0)), GW_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(gw_codec_spec_set(codec(GW_CODEC_SIGN).get(), GW_PARAM_BLOCK_SIZE, 4),
              GW_ERR_INVALID_ARGUMENT);
    gw_codec_spec_free(nullptr);
}

TEST(Api, StatusStringsNamesAndVersion) {
    const int codes[] = {0,   -1,  -2,  -3,  -4,  -5,  -6,  -7,  -8,  -9,  -10, -11, -12, -13, -14,
                         -20, -21, -22, -23, -24, -25, -26, -27, -28, -29, -30, -31, -40, -41,
                         -42, -43, -44, -45, -46, -99};
    std::set<std::string> seen, names;
    for (int c : codes) {
        const char* s = gw_status_str(static_cast<gw_status>(c));
        ASSERT_NE(s, nullptr);
        EXPECT_NE(std::string(s), "unknown status") << c;
        EXPECT_TRUE(seen.insert(s).second) << "duplicate message for " << c;
        const std::string name = gw_status_name(static_cast<gw_status>(c));
        EXPECT_EQ(name.rfind("GW_", 0), 0u) << c;
        EXPECT_NE(name, "GW_UNKNOWN") << c;
        EXPECT_TRUE(names.insert(name).second) << name;
    }
    EXPECT_STREQ(gw_status_name(GW_ERR_SEQUENCE), "GW_ERR_SEQUENCE");
    EXPECT_STREQ(gw_status_str(static_cast<gw_status>(12345)), "unknown status");
    EXPECT_STREQ(gw_status_name(static_cast<gw_status>(12345)), "GW_UNKNOWN");
    EXPECT_EQ(gw_version_number(), unsigned(GW_VERSION_NUMBER));
    EXPECT_EQ(std::string(gw_version_string()),
              std::to_string(GW_VERSION_MAJOR) + "." + std::to_string(GW_VERSION_MINOR) + "." +
                  std::to_string(GW_VERSION_PATCH));
}

// (NULL, 0) is an empty frame, not a missing pointer: every reader answers it
// as it answers any frame shorter than the header (issue 20, item 8).
TEST(Api, EveryReaderTakesNullEmptyAsTruncated) {
    const gw_status T = GW_ERR_FRAME_TRUNCATED;
    float out[4] = {0, 0, 0, 0};
    uint64_t count = 0;
    size_t size = 0, cnt = 0, bad = 0;
    double ratio = 0;
    uint32_t idx[4];
    gw_frame_info info = GW_FRAME_INFO_INIT;
    gw_codec_spec* spec = nullptr;
    EXPECT_EQ(gw_decode(nullptr, 0, out, 4, &count), T);
    EXPECT_EQ(gw_decode_accumulate(nullptr, 0, 1.0f, out, 4), T);
    const void* frames[1] = {nullptr};
    const size_t sizes[1] = {0};
    EXPECT_EQ(gw_decode_accumulate_many(frames, sizes, 1, 1.0f, out, 4, &bad), T);
    EXPECT_EQ(gw_frame_size(nullptr, 0, &size), T);
    EXPECT_EQ(gw_frame_inspect(nullptr, 0, &info), T);
    EXPECT_EQ(gw_frame_spec(nullptr, 0, &spec), T);
    EXPECT_EQ(gw_frame_compression_ratio(nullptr, 0, &ratio), T);
    EXPECT_EQ(gw_index_frame_indices(nullptr, 0, idx, 4, &cnt), T);
    EXPECT_EQ(gw_index_frame_indices(nullptr, 0, nullptr, 0, &cnt), T);

    gw_fusion_options fo = GW_FUSION_OPTIONS_INIT;
    fo.layers = 2;
    gw_fusion* f = nullptr;
    ASSERT_EQ(gw_fusion_create(&f, &fo), GW_OK);
    int flush = 0;
    EXPECT_EQ(gw_fusion_add(f, 0, nullptr, 0, &flush), T);
    gw_fusion_free(f);

    gwtest::Spec sign = codec(GW_CODEC_SIGN);
    gw_server_options so = GW_SERVER_OPTIONS_INIT;
    so.total = so.length = 4;
    so.num_workers = 1;
    gw_server* s = nullptr;
    ASSERT_EQ(gw_server_create(&s, &so, sign, nullptr), GW_OK);
    EXPECT_EQ(gw_server_push(s, nullptr, 0), T);
    gw_server_free(s);

    gw_asylpg_worker_options wo = GW_ASYLPG_WORKER_OPTIONS_INIT;
    wo.n = 4;
    gw_asylpg_worker* w = nullptr;
    ASSERT_EQ(gw_asylpg_worker_create(&w, &wo, codec(GW_CODEC_QUANT)), GW_OK);
    ASSERT_EQ(gw_asylpg_worker_set_snapshot(w, out, 4), GW_OK);
    EXPECT_EQ(gw_asylpg_worker_receive(w, nullptr, 0), T);
    gw_asylpg_worker_free(w);

    gw_asylpg_master_options mo = GW_ASYLPG_MASTER_OPTIONS_INIT;
    mo.n = 4;
    mo.epoch_length = 2;
    gw_asylpg_master* m = nullptr;
    ASSERT_EQ(gw_asylpg_master_create(&m, &mo, out, 4), GW_OK);
    ASSERT_EQ(gw_asylpg_master_begin_epoch(m, out, 4), GW_OK);
    EXPECT_EQ(gw_asylpg_master_push(m, nullptr, 0), T);
    gw_asylpg_master_free(m);
}

// x0's length differs from opts->n: the count of a buffer against the
// tensor's length, COUNT_MISMATCH as in every other call (docs/c-api.md).
TEST(Api, AsylpgMasterX0LengthIsACountMismatch) {
    gw_asylpg_master_options o = GW_ASYLPG_MASTER_OPTIONS_INIT;
    o.n = 4;
    o.epoch_length = 2;
    const float x0[5] = {1, 2, 3, 4, 5};
    gw_asylpg_master* m = nullptr;
    EXPECT_EQ(gw_asylpg_master_create(&m, &o, x0, 5), GW_ERR_COUNT_MISMATCH);
    EXPECT_EQ(gw_asylpg_master_create(&m, &o, x0, 3), GW_ERR_COUNT_MISMATCH);
    EXPECT_EQ(m, nullptr);
    ASSERT_EQ(gw_asylpg_master_create(&m, &o, x0, 4), GW_OK);
    gw_asylpg_master_free(m);
}
