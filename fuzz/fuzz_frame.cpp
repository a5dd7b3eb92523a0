// Fuzz target: the frame parser and every decoder, through the public API.
// Any input must return a status (never crash, hang, leak or over-read), and
// whatever is accepted must behave consistently. The same bytes read as
// float32 also feed every encoder, whose frames must decode back.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "gradwire.h"

#define FUZZ_CHECK(cond) \
    do {                 \
        if (!(cond)) std::abort(); \
    } while (0)

namespace {

void decode_paths(const uint8_t* data, size_t size) {
    gw_frame_info info;
    gw_frame_info_init(&info, GW_FRAME_INFO_VERSION);
    const gw_status st = gw_frame_inspect(data, size, &info);
    std::vector<float> out(64);
    // Whatever inspect says, decode must agree on validity (exact-size rules aside).
    const gw_status dst = gw_decode(data, size, out.data(), out.size(), nullptr);
    if (st != GW_OK) {
        FUZZ_CHECK(dst != GW_OK);
        return;
    }
    FUZZ_CHECK(info.frame_size <= size);
    const size_t fsize = static_cast<size_t>(info.frame_size);
    if (info.count > (1u << 20)) return;  // valid but too large to be worth decoding here
    const uint64_t n = info.count;
    std::vector<float> dec(n + 1), acc(n + 1, 1.0f);
    uint64_t count = 0;
    FUZZ_CHECK(gw_decode(data, fsize, dec.data(), n, &count) == GW_OK && count == n);
    if (n > 0) FUZZ_CHECK(gw_decode(data, fsize, dec.data(), n - 1, nullptr) == GW_ERR_BUFFER_TOO_SMALL);
    FUZZ_CHECK(gw_decode_accumulate(data, fsize, 0.5f, acc.data(), n) == GW_OK);
    FUZZ_CHECK(gw_decode_accumulate(data, fsize, 0.5f, acc.data(), n + 1) == GW_ERR_COUNT_MISMATCH);
    for (uint64_t i = 0; i < n; ++i) FUZZ_CHECK(dec[i] == dec[i]);  // decoders never emit NaN
    // Re-encoding a decoded frame with its own codec reproduces it (canonical frames).
    gw_codec_options o;
    gw_codec_options_init(&o, GW_CODEC_OPTIONS_VERSION);
    o.codec = info.codec;
    o.block_size = info.block_size;
    std::vector<uint8_t> again(fsize);
    size_t written = 0;
    if (info.codec != GW_CODEC_FP16 && info.codec != GW_CODEC_BF16) {
        FUZZ_CHECK(gw_encode(&o, dec.data(), n, again.data(), again.size(), &written) == GW_OK);
        FUZZ_CHECK(written == fsize && std::memcmp(again.data(), data, fsize) == 0);
    }
    // A server of the same length accepts it as a worker frame.
    if (n > 0) {
        gw_server_options so;
        gw_server_options_init(&so, GW_SERVER_OPTIONS_VERSION);
        so.total = so.length = n;
        gw_server* s = nullptr;
        if (gw_server_create(&s, &so) == GW_OK) {
            FUZZ_CHECK(gw_server_push(s, data, fsize) == GW_OK);
            size_t bound = 0;
            gw_server_frame_bound(s, &bound);
            std::vector<uint8_t> bf(bound);
            FUZZ_CHECK(gw_server_step(s, 0.1f, bf.data(), bf.size(), &written) == GW_OK);
            gw_server_free(s);
        }
    }
}

void encode_paths(const uint8_t* data, size_t size) {
    const size_t n = size / 4;
    std::vector<float> x(n);
    if (n) std::memcpy(x.data(), data, n * 4);
    const gw_codec_id ids[] = {GW_CODEC_IDENTITY, GW_CODEC_FP16, GW_CODEC_BF16, GW_CODEC_SIGN,
                               GW_CODEC_SCALED_SIGN};
    for (gw_codec_id id : ids) {
        gw_codec_options o;
        gw_codec_options_init(&o, GW_CODEC_OPTIONS_VERSION);
        o.codec = id;
        o.block_size = id == GW_CODEC_SCALED_SIGN && size ? data[0] % 9 : 0;
        size_t bound = 0, written = 0;
        FUZZ_CHECK(gw_encode_bound(&o, n, &bound) == GW_OK);
        std::vector<uint8_t> f(bound);
        const gw_status st = gw_encode(&o, x.data(), n, f.data(), f.size(), &written);
        if (st == GW_ERR_NONFINITE) continue;
        FUZZ_CHECK(st == GW_OK && written == bound);
        std::vector<float> d(n);
        FUZZ_CHECK(gw_decode(f.data(), written, d.data(), n, nullptr) == GW_OK);
        if (id == GW_CODEC_IDENTITY) FUZZ_CHECK(n == 0 || std::memcmp(d.data(), x.data(), n * 4) == 0);
        if (id == GW_CODEC_SIGN || id == GW_CODEC_SCALED_SIGN)
            for (size_t i = 0; i < n; ++i) FUZZ_CHECK(d[i] == 0.0f || (d[i] < 0) == (x[i] < 0));
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    decode_paths(data, size);
    encode_paths(data, size);
    return 0;
}
