// Heap arrays from a context's allocator that report allocation failure
// instead of aborting (the library is built without exceptions; std::vector
// would abort on OOM, and would not use the caller's allocator).
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>

#include "util/alloc.hpp"

namespace gw {

struct AllocDeleter {
    const Allocator* a = nullptr;
    void operator()(void* p) const {
        if (a) a->release(p);
    }
};
template <class T> using Buf = std::unique_ptr<T[], AllocDeleter>;
using FloatBuf = Buf<float>;

// Zero-filled; empty on failure or n == 0. `a` must outlive the buffer.
template <class T = float> Buf<T> alloc_zeroed(const Allocator& a, uint64_t n) {
    if (n == 0 || n > SIZE_MAX / sizeof(T)) return Buf<T>(nullptr, AllocDeleter{&a});
    const size_t bytes = static_cast<size_t>(n) * sizeof(T);
    T* p = static_cast<T*>(a.allocate(bytes, alignof(T) < 64 ? 64 : alignof(T)));
    if (p) std::memset(static_cast<void*>(p), 0, bytes);
    return Buf<T>(p, AllocDeleter{&a});
}
inline FloatBuf alloc_floats(const Allocator& a, uint64_t n) { return alloc_zeroed<float>(a, n); }

}  // namespace gw
