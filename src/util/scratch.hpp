// Growable, 64-byte aligned working memory. Handles own one (so steady-state
// steps do not allocate); stateless calls use one per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>

namespace gw {

class Scratch {
  public:
    Scratch() = default;
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    ~Scratch() { std::free(p_); }

    // At least `bytes` bytes (64-byte aligned; contents unspecified), or
    // nullptr if the allocation fails. Invalidates earlier pointers.
    void* get(size_t bytes) {
        if (bytes <= cap_ && p_) return p_;
        const size_t rounded = (bytes + 63) / 64 * 64;
        if (rounded < bytes) return nullptr;
        void* q = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
        if (!q) return nullptr;
        std::free(p_);
        p_ = q;
        cap_ = rounded;
        return p_;
    }

  private:
    void* p_ = nullptr;
    size_t cap_ = 0;
};

// Working memory of one handle, or of one thread for stateless calls: input
// conversion (f16/bf16 -> f32), the codec's own work, the zstd stage, and
// the views and tile of a call that takes many frames at once.
struct Workspace {
    Scratch convert, codec, stage, frames, tile;
};
Workspace& thread_workspace();

}  // namespace gw
