#include "util/alloc.hpp"

#include <cstdlib>

#include "util/scratch.hpp"

namespace gw {
namespace {

void* malloc_alloc(void*, size_t size, size_t align) {
    if (size == 0) size = 1;
    if (align <= alignof(std::max_align_t)) return std::malloc(size);
    const size_t rounded = (size + align - 1) / align * align;  // aligned_alloc's rule
    return rounded < size ? nullptr : std::aligned_alloc(align, rounded);
}
void malloc_free(void*, void* p) { std::free(p); }

}  // namespace

const Allocator& malloc_allocator() {
    static const Allocator a{malloc_alloc, malloc_free, nullptr};
    return a;
}

Scratch::~Scratch() { a_->release(p_); }

void* Scratch::grow(size_t bytes) {
    const size_t rounded = (bytes + 63) / 64 * 64;
    if (rounded < bytes) return nullptr;
    void* q = a_->allocate(rounded == 0 ? 64 : rounded, 64);
    if (!q) return nullptr;
    a_->release(p_);
    p_ = q;
    cap_ = rounded;
    return p_;
}

}  // namespace gw
