// CRC32C of a concatenation from the CRCs of its parts: crc(A || B) from
// crc(A), crc(B) and B's length, in O(log len) carry-less products. Lets a
// codec checksum its payload tile by tile while the tile is in cache, and the
// frame layer join that with the header's CRC instead of reading the payload
// again.
#pragma once

#include <cstdint>

namespace gw {

uint32_t crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

}  // namespace gw
