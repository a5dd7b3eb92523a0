// What the dense codecs with fixed-size elements (identity: float32; fp16,
// bf16) share for a frame's check and decode: the check and the payload's
// CRC in one read, and the decode's order.
#pragma once

#include <cstddef>
#include <cstdint>

#include "codecs/codec.hpp"
#include "kernels/kernels.hpp"

namespace gw {

// Payloads up to this size stay in L2 whole between the frame's check and
// the decode (L2 is 1 MiB to 2 MiB per core on the machines measured), so
// the orders and tilings below do not pay for them.
constexpr uint64_t kInL2Bytes = uint64_t(1) << 20;

// A frame's check (frame::open) reads its whole payload front to back, so
// when a decode after it starts the caches hold the payload's end. A decode
// of n fixed-size elements calls tile(start, count) on tiles from the last to
// the first, which reads that part first (1M: fp16 1.07x, float32 1.10x).
// Payloads in L2 and outputs the kernels stream (kern::kStreamBytes and
// more, whole calls only) go front to back in one call.
template <size_t ElemBytes, class Tile>
void decode_back_to_front(uint64_t n, Tile&& tile) {
    constexpr uint64_t kTile = 16384;
    if (n * ElemBytes <= kInL2Bytes || n >= kern::kStreamBytes / 4) {
        tile(uint64_t(0), n);
        return;
    }
    for (uint64_t end = n; end > 0;) {
        const uint64_t start = end > kTile ? end - kTile : 0;
        tile(start, end - start);
        end = start;
    }
}

// A Codec::check_crc for payloads of n fixed-size elements: fits(p, c)
// on each tile of c elements while it is in L1, then the tile's CRC, so the
// payload is read from memory once. The CRC covers every tile whatever fits
// finds.
template <size_t ElemBytes, class Fits>
gw_status check_crc_tiles(const kern::Table& kt, const uint8_t* payload, uint64_t n, Fits&& fits,
                          uint32_t* crc) {
    constexpr uint64_t kTile = 4096 / ElemBytes;
    uint32_t c = 0;
    bool ok = true;
    for (uint64_t i = 0; i < n; i += kTile) {
        const uint64_t t = n - i < kTile ? n - i : kTile;
        ok = ok && fits(payload + ElemBytes * i, t);
        c = kt.crc32c(c, payload + ElemBytes * i, static_cast<size_t>(ElemBytes * t));
    }
    *crc = c;
    return ok ? GW_OK : GW_ERR_FRAME_PAYLOAD;
}

}  // namespace gw
