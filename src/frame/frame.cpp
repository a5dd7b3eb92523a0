#include "frame/frame.hpp"

#include <cstring>

#if defined(GW_HAVE_ZSTD)
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_customMem: zstd allocates with the handle's allocator
#include <zstd.h>
#endif

#include "util/bytes.hpp"
#include "util/crc_combine.hpp"

namespace gw::frame {
namespace {

constexpr uint8_t kMagic[4] = {'G', 'W', 'F', 'R'};
constexpr uint64_t kMaxElements = uint64_t(1) << 40;  // GW_MAX_ELEMENTS
constexpr int kZstdLevel = 1;

bool zstd_enabled(const CodecParams& p) { return param_or(p, GW_PARAM_ZSTD, 0) != 0; }

#if defined(GW_HAVE_ZSTD)
// What the zstd stage costs, compressing a raw payload once and decompressing
// it once (level 1 on sparse payloads, one core of this library's bench
// machine: 4 us plus 1.8 ns per raw byte; docs/performance.md). With the link
// known the stage is used only where the bytes it saves take longer to send
// than that: below about 2 Gbit/s for a 1% top-k payload of 1M elements.
constexpr double kStageFixedSeconds = 4e-6;
constexpr double kStageSecondsPerByte = 1.8e-9;
bool stage_may_pay(uint64_t raw, uint64_t saved, uint64_t link_bps) {
    if (link_bps == 0) return true;  // unknown link: whenever the payload shrinks
    return double(saved) * 8.0 / double(link_bps) >
           kStageFixedSeconds + kStageSecondsPerByte * double(raw);
}

// zstd allocates through the context's allocator too.
ZSTD_customMem zstd_mem(const Context& cx) {
    const Allocator* a = &cx.alloc();
    return ZSTD_customMem{
        [](void* u, size_t size) { return static_cast<const Allocator*>(u)->allocate(size, 16); },
        [](void* u, void* p) { static_cast<const Allocator*>(u)->release(p); },
        const_cast<Allocator*>(a)};
}

// Replace the raw payload at `payload` (len bytes) by [u64 len][zstd frame] if
// that is smaller and, with the link's speed known, if it pays there. Any
// failure just keeps the raw payload.
bool zstd_stage(Context& cx, uint8_t* payload, uint64_t* len, uint64_t link_bps) {
    const size_t raw = static_cast<size_t>(*len);
    if (!stage_may_pay(raw, raw, link_bps)) return false;  // not even if it saved every byte
    const size_t cap = ZSTD_compressBound(raw);
    uint8_t* tmp = static_cast<uint8_t*>(cx.stage.get(cap));
    if (!cx.zstd_c) cx.zstd_c = ZSTD_createCCtx_advanced(zstd_mem(cx));
    if (!tmp || !cx.zstd_c) return false;
    const size_t c =
        ZSTD_compressCCtx(static_cast<ZSTD_CCtx*>(cx.zstd_c), tmp, cap, payload, raw, kZstdLevel);
    if (ZSTD_isError(c) || c + 8 >= raw || !stage_may_pay(raw, raw - (c + 8), link_bps))
        return false;
    store_le<uint64_t>(payload, raw);
    std::memcpy(payload + 8, tmp, c);
    *len = c + 8;
    return true;
}

// Undo the stage into `stage` scratch; every size is bounded before use.
gw_status zstd_unstage(Context& cx, const uint8_t* wire, uint64_t len, uint64_t max_raw,
                       const uint8_t** raw_out, uint64_t* raw_len) {
    if (len < 8) return GW_ERR_FRAME_ZSTD;
    const uint64_t raw = load_le<uint64_t>(wire);
    // The encoder stages only what gets smaller; more than the codec's
    // maximum would be a decompression bomb.
    if (raw > max_raw || len >= raw) return GW_ERR_FRAME_ZSTD;
    const uint8_t* src = wire + 8;
    const size_t csize = static_cast<size_t>(len - 8);
    if (ZSTD_getFrameContentSize(src, csize) != raw) return GW_ERR_FRAME_ZSTD;
    if (ZSTD_findFrameCompressedSize(src, csize) != csize) return GW_ERR_FRAME_ZSTD;
    uint8_t* dst = static_cast<uint8_t*>(cx.stage.get(static_cast<size_t>(raw)));
    if (!cx.zstd_d) cx.zstd_d = ZSTD_createDCtx_advanced(zstd_mem(cx));
    if (!dst || !cx.zstd_d) return GW_ERR_OUT_OF_MEMORY;
    const size_t got = ZSTD_decompressDCtx(static_cast<ZSTD_DCtx*>(cx.zstd_d), dst,
                                           static_cast<size_t>(raw), src, csize);
    if (ZSTD_isError(got) || got != raw) return GW_ERR_FRAME_ZSTD;
    *raw_out = dst;
    *raw_len = raw;
    return GW_OK;
}
#else
bool zstd_stage(Context&, uint8_t*, uint64_t*, uint64_t) { return false; }
gw_status zstd_unstage(Context&, const uint8_t*, uint64_t, uint64_t, const uint8_t**, uint64_t*) {
    return GW_ERR_UNSUPPORTED;
}
#endif

// The fields before the codec parameters, checked in wire order so that any
// prefix of a valid frame is reported as truncated.
struct Header {
    unsigned format = 0;
    const Codec* codec = nullptr;
    uint16_t flags = 0;
    uint64_t tag = 0, count = 0, payload_len = 0;
    uint16_t params_len = 0;
    size_t size = 0;  // header bytes
};

gw_status read_header(const kern::Table& kt, const uint8_t* f, size_t size, Header* h) {
    if (size == 0) return GW_ERR_FRAME_TRUNCATED;
    if (std::memcmp(f, kMagic, size < 4 ? size : 4) != 0) return GW_ERR_FRAME_MAGIC;
    if (size < 5) return GW_ERR_FRAME_TRUNCATED;
    h->format = f[4];
    if (h->format != 1 && h->format != kVersion) return GW_ERR_FRAME_VERSION;
    if (size < 6) return GW_ERR_FRAME_TRUNCATED;
    h->codec = codec_for(f[5]);
    // Format 1 knew the first five codecs only.
    if (!h->codec || (h->format == 1 && f[5] > GW_CODEC_SCALED_SIGN)) return GW_ERR_FRAME_CODEC;
    if (size < 8) return GW_ERR_FRAME_TRUNCATED;
    h->flags = load_le<uint16_t>(f + 6);
    const uint16_t allowed = h->format == 1 ? 0 : kFlagZstd;
    if ((h->flags & ~allowed) != 0) return GW_ERR_FRAME_FLAGS;
    if (h->format == 1) {
        if (size < kHeaderSizeV1) return GW_ERR_FRAME_TRUNCATED;
        h->count = load_le<uint64_t>(f + 8);
        h->payload_len = load_le<uint64_t>(f + 16);
        h->params_len = load_le<uint16_t>(f + 24);
        h->size = kHeaderSizeV1;
    } else {
        if (size < kHeaderSize) return GW_ERR_FRAME_TRUNCATED;
        if (kt.crc32c(0, f, 36) != load_le<uint32_t>(f + 36)) return GW_ERR_FRAME_CHECKSUM;
        if (load_le<uint16_t>(f + 34) != 0) return GW_ERR_FRAME_FLAGS;
        h->tag = load_le<uint64_t>(f + 8);
        h->count = load_le<uint64_t>(f + 16);
        h->payload_len = load_le<uint64_t>(f + 24);
        h->params_len = load_le<uint16_t>(f + 32);
        h->size = kHeaderSize;
    }
    if (h->count > kMaxElements) return GW_ERR_FRAME_LENGTH;
    if (!params_wire_size_valid(*h->codec, h->params_len)) return GW_ERR_FRAME_PARAMS;
    return GW_OK;
}

bool total_size(const Header& h, size_t* total) {
    const uint64_t fixed = h.size + h.params_len + kTrailerSize;
    if (h.payload_len > SIZE_MAX - fixed) return false;
    *total = static_cast<size_t>(fixed + h.payload_len);
    return true;
}

gw_status fill_view(const CodecParams& params, const Header& h, const uint8_t* payload,
                    uint64_t payload_len, size_t total, View* view) {
    view->params = params;
    view->format = h.format;
    view->flags = h.flags;
    view->tag = h.tag;
    view->count = h.count;
    view->payload = payload;
    view->payload_len = payload_len;
    view->wire_payload_len = h.payload_len;
    view->frame_size = total;
    return GW_OK;
}

}  // namespace

bool frame_bound(const CodecParams& p, uint64_t n, size_t* size) {
    uint64_t payload = 0;
    if (n > kMaxElements || !p.codec->max_payload(p, n, &payload)) return false;
    const uint64_t fixed = kHeaderSize + params_wire_size(p) + kTrailerSize;
    if (payload > SIZE_MAX - fixed) return false;
    *size = static_cast<size_t>(fixed + payload);
    return true;
}

gw_status frame_size(const kern::Table& kt, const void* data, size_t size, size_t* total) {
    Header h;
    const gw_status st = read_header(kt, static_cast<const uint8_t*>(data), size, &h);
    if (st != GW_OK) return st;
    return total_size(h, total) ? GW_OK : GW_ERR_FRAME_LENGTH;
}

gw_status open(Context& cx, const void* data, size_t size, bool exact, View* view,
               DecodeInto* into) {
    const uint8_t* f = static_cast<const uint8_t*>(data);
    Header h;
    gw_status st = read_header(cx.k(), f, size, &h);
    if (st != GW_OK) return st;
    if (size - h.size < h.params_len) return GW_ERR_FRAME_TRUNCATED;
    CodecParams params;
    st = read_params(*h.codec, f + h.size, h.params_len, &params);
    if (st != GW_OK) return st;
    uint64_t max_raw = 0;
    if (!params.codec->max_payload(params, h.count, &max_raw)) return GW_ERR_FRAME_LENGTH;
    // A staged payload is smaller than its raw form, so L <= max_raw always.
    if (h.payload_len > max_raw) return GW_ERR_FRAME_LENGTH;
    size_t total = 0;
    if (!total_size(h, &total)) return GW_ERR_FRAME_LENGTH;
    if (size < total) return GW_ERR_FRAME_TRUNCATED;
    if (exact && size != total) return GW_ERR_FRAME_TRAILING;
    const size_t body = total - kTrailerSize;
    const uint8_t* payload = f + h.size + h.params_len;
    uint64_t payload_len = h.payload_len;
    const Codec& c = *params.codec;
    const bool decode = into && c.decode_crc && payload_len >= c.decode_crc_min && h.count &&
                        h.count <= into->capacity;
    if (!(h.flags & kFlagZstd) && c.check_crc && (decode || payload_len >= c.check_crc_min)) {
        // One pass checks the payload and computes its CRC (and decodes it);
        // the checksum's verdict still comes first.
        uint32_t payload_crc = 0;
        if (decode) {
            st = c.decode_crc(cx.k(), params, payload, payload_len, h.count, into->out,
                              &payload_crc);
            into->done = true;
        } else {
            st = c.check_crc(cx.k(), params, payload, payload_len, h.count, &payload_crc);
        }
        const uint32_t crc =
            crc32c_combine(cx.k().crc32c(0, f, h.size + h.params_len), payload_crc, payload_len);
        if (crc != load_le<uint32_t>(f + body)) return GW_ERR_FRAME_CHECKSUM;
        if (st != GW_OK) return st;
        return fill_view(params, h, payload, payload_len, total, view);
    }
    if (cx.k().crc32c(0, f, body) != load_le<uint32_t>(f + body)) return GW_ERR_FRAME_CHECKSUM;
    if (h.flags & kFlagZstd) {
        // Only codecs that ask for the stage may carry it (one canonical form).
        if (!zstd_enabled(params)) return GW_ERR_FRAME_FLAGS;
        st = zstd_unstage(cx, payload, h.payload_len, max_raw, &payload, &payload_len);
        if (st != GW_OK) return st;
    }
    st = params.codec->check(cx.k(), params, payload, payload_len, h.count);
    if (st != GW_OK) return st;
    return fill_view(params, h, payload, payload_len, total, view);
}

size_t seal(const kern::Table& kt, const CodecParams& p, uint64_t tag, uint64_t n, uint64_t len,
            uint16_t flags, void* out, PayloadCrc payload_crc) {
    uint8_t* f = static_cast<uint8_t*>(out);
    const size_t params_len = params_wire_size(p);
    std::memcpy(f, kMagic, 4);
    f[4] = kVersion;
    f[5] = static_cast<uint8_t>(p.codec->id);
    store_le<uint16_t>(f + 6, flags);
    store_le<uint64_t>(f + 8, tag);
    store_le<uint64_t>(f + 16, n);
    store_le<uint64_t>(f + 24, len);
    store_le<uint16_t>(f + 32, static_cast<uint16_t>(params_len));
    store_le<uint16_t>(f + 34, 0);
    store_le<uint32_t>(f + 36, kt.crc32c(0, f, 36));
    write_params(p, f + kHeaderSize);
    const size_t head = kHeaderSize + params_len;
    const size_t body = head + static_cast<size_t>(len);
    const uint32_t crc = payload_crc.known
                             ? crc32c_combine(kt.crc32c(0, f, head), payload_crc.value, len)
                             : kt.crc32c(0, f, body);
    store_le<uint32_t>(f + body, crc);
    return body + kTrailerSize;
}

gw_status encode(Context& cx, const CodecParams& p, const EncodeCtx& ctx, uint64_t tag,
                 const float* x, uint64_t n, void* out, size_t capacity, size_t* written,
                 float* residual) {
    size_t bound = 0;
    if (!frame_bound(p, n, &bound)) return GW_ERR_INVALID_ARGUMENT;
    if (capacity < bound) return GW_ERR_BUFFER_TOO_SMALL;
    uint8_t* payload = payload_of(p, out);
    uint64_t len = 0;
    PayloadCrc crc;
    EncodeCtx with_crc = ctx;
    with_crc.crc = &crc;
    const gw_status st = p.codec->encode(p, with_crc, x, n, payload, &len, residual);
    if (st != GW_OK) return st;
    uint16_t flags = 0;
    if (zstd_enabled(p) && len > 0 && zstd_stage(cx, payload, &len, p.link_bps)) {
        flags |= kFlagZstd;
        crc.known = false;  // the CRC covers the staged bytes
    }
    *written = seal(cx.k(), p, tag, n, len, flags, out, crc);
    return GW_OK;
}

}  // namespace gw::frame
