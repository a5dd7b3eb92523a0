// Heap float buffer that reports allocation failure instead of aborting
// (the library is built without exceptions; std::vector would abort on OOM).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>

namespace gw {

struct FreeDeleter {
    void operator()(void* p) const { std::free(p); }
};
using FloatBuf = std::unique_ptr<float[], FreeDeleter>;

// Zero-filled; empty on failure or n == 0.
inline FloatBuf alloc_floats(uint64_t n) {
    if (n == 0 || n > SIZE_MAX / sizeof(float)) return FloatBuf();
    return FloatBuf(static_cast<float*>(std::calloc(static_cast<size_t>(n), sizeof(float))));
}

}  // namespace gw
