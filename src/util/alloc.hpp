// The allocator a handle's memory comes from (gw_allocator): the caller's,
// or malloc's. Scratch and the buffers of src/util take it explicitly.
#pragma once

#include <cstddef>

namespace gw {

// The caller's allocator (gw_allocator): alloc returns `size` bytes aligned
// to `align` (a power of two, at most 64) or nullptr; free takes what alloc
// returned.
struct Allocator {
    void* (*alloc)(void* user, size_t size, size_t align) = nullptr;
    void (*free)(void* user, void* p) = nullptr;
    void* user = nullptr;

    void* allocate(size_t size, size_t align) const { return alloc(user, size, align); }
    void release(void* p) const {
        if (p) free(user, p);
    }
};
// malloc / aligned_alloc / free.
const Allocator& malloc_allocator();

}  // namespace gw
