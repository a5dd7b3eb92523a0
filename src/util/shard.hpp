// Slices of a tensor for M servers (docs/c-api.md, "Server"): slice `index`
// of `parts` near-equal slices of `total` elements, the first total % parts
// one element longer. Callers check parts > 0 and index < parts.
#pragma once

#include <cstdint>

namespace gw {

inline void shard_range(uint64_t total, uint32_t parts, uint32_t index, uint64_t* offset,
                        uint64_t* length) {
    const uint64_t base = total / parts, extra = total % parts;
    *offset = index * base + (index < extra ? index : extra);
    *length = base + (index < extra ? 1 : 0);
}

}  // namespace gw
