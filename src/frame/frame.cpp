#include "frame/frame.hpp"

#include <cstring>

#include "kernels/kernels.hpp"
#include "util/bytes.hpp"

namespace gw::frame {

bool frame_size(const Codec& c, const CodecParams& p, uint64_t n, size_t* size) {
    uint64_t payload = 0;
    if (!c.payload_size(p, n, &payload)) return false;
    const uint64_t fixed = kHeaderSize + c.params_size + kTrailerSize;
    if (payload > SIZE_MAX - fixed) return false;
    *size = static_cast<size_t>(fixed + payload);
    return true;
}

gw_status open(const void* data, size_t size, bool exact, View* view) {
    const uint8_t* f = static_cast<const uint8_t*>(data);
    // Fields are checked in wire order, each as soon as its bytes are present,
    // so any prefix of a valid frame is reported as truncated.
    if (size == 0) return GW_ERR_FRAME_TRUNCATED;
    if (std::memcmp(f, kMagic, size < 4 ? size : 4) != 0) return GW_ERR_FRAME_MAGIC;
    if (size < 5) return GW_ERR_FRAME_TRUNCATED;
    if (f[4] != GW_FRAME_FORMAT_VERSION) return GW_ERR_FRAME_VERSION;
    if (size < 6) return GW_ERR_FRAME_TRUNCATED;
    const Codec* codec = codec_for(f[5]);
    if (!codec) return GW_ERR_FRAME_CODEC;
    if (size < 8) return GW_ERR_FRAME_TRUNCATED;
    if (load_le<uint16_t>(f + 6) != 0) return GW_ERR_FRAME_FLAGS;
    if (size < kHeaderSize) return GW_ERR_FRAME_TRUNCATED;
    const uint64_t count = load_le<uint64_t>(f + 8);
    const uint64_t payload_len = load_le<uint64_t>(f + 16);
    const uint16_t params_len = load_le<uint16_t>(f + 24);
    if (params_len != codec->params_size) return GW_ERR_FRAME_PARAMS;
    if (size - kHeaderSize < params_len) return GW_ERR_FRAME_TRUNCATED;
    CodecParams params;
    gw_status st = codec->read_params(f + kHeaderSize, &params);
    if (st != GW_OK) return st;
    uint64_t expected = 0;
    if (!codec->payload_size(params, count, &expected) || expected != payload_len)
        return GW_ERR_FRAME_LENGTH;
    size_t total = 0;
    if (!frame_size(*codec, params, count, &total)) return GW_ERR_FRAME_LENGTH;
    if (size < total) return GW_ERR_FRAME_TRUNCATED;
    if (exact && size != total) return GW_ERR_FRAME_TRAILING;
    const size_t body = total - kTrailerSize;
    if (kern::active().crc32c(0, f, body) != load_le<uint32_t>(f + body))
        return GW_ERR_FRAME_CHECKSUM;
    const uint8_t* payload = f + kHeaderSize + params_len;
    st = codec->check(params, payload, count);
    if (st != GW_OK) return st;
    *view = View{codec, params, count, payload, payload_len, total};
    return GW_OK;
}

gw_status encode(const CodecParams& p, const float* x, uint64_t n, void* out, size_t capacity,
                 size_t* written, float* residual) {
    const Codec* codec = codec_for(p.id);
    if (!codec) return GW_ERR_INVALID_ARGUMENT;
    size_t total = 0;
    if (!frame_size(*codec, p, n, &total)) return GW_ERR_INVALID_ARGUMENT;
    if (capacity < total) return GW_ERR_BUFFER_TOO_SMALL;
    uint8_t* f = static_cast<uint8_t*>(out);
    uint64_t payload_len = 0;
    codec->payload_size(p, n, &payload_len);
    uint8_t* payload = f + kHeaderSize + codec->params_size;
    const gw_status st = codec->encode(p, x, n, payload, residual);
    if (st != GW_OK) return st;
    std::memcpy(f, kMagic, 4);
    f[4] = GW_FRAME_FORMAT_VERSION;
    f[5] = static_cast<uint8_t>(p.id);
    store_le<uint16_t>(f + 6, 0);
    store_le<uint64_t>(f + 8, n);
    store_le<uint64_t>(f + 16, payload_len);
    store_le<uint16_t>(f + 24, static_cast<uint16_t>(codec->params_size));
    codec->write_params(p, f + kHeaderSize);
    const size_t body = total - kTrailerSize;
    store_le<uint32_t>(f + body, kern::active().crc32c(0, f, body));
    *written = total;
    return GW_OK;
}

}  // namespace gw::frame
