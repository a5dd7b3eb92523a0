// What one handle computes with: its kernel table, its allocator, its working
// memory and its zstd contexts. Every handle owns one, so two handles in one
// process may run different targets and allocators side by side; stateless
// calls use their thread's (thread_context()), which follows the process-wide
// target and allocates with malloc. docs/kernels.md ("Per-handle kernels and
// the backend seam") says how another backend would plug in here.
#pragma once

#include <cstddef>

#include "kernels/kernels.hpp"
#include "util/alloc.hpp"
#include "util/scratch.hpp"

namespace gw {

// What a machine is created with: its kernel table (nullptr: the process's
// active one at creation) and its allocator.
struct Backend {
    const kern::Table* kernels = nullptr;
    Allocator alloc = malloc_allocator();
};

class Context {
    // First: the scratch members below hold the allocator's address.
    const kern::Table* k_;
    Allocator alloc_;

  public:
    explicit Context(const Backend& b = Backend());
    ~Context();
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;

    // A machine binds its context in init(), before anything is allocated.
    void bind(const Backend& b);

    const kern::Table& k() const { return *k_; }
    const Allocator& alloc() const { return alloc_; }
    // The stateless calls' thread context follows gw_simd_set_target.
    void set_kernels(const kern::Table& k) { k_ = &k; }

    // Input conversion (f16/bf16 -> f32), the codec's own work, the zstd
    // stage, and the views and tile of a call that takes many frames at once.
    Scratch convert{alloc_}, codec{alloc_}, stage{alloc_}, frames{alloc_}, tile{alloc_};
    // zstd's compression and decompression contexts, made on first use with
    // this context's allocator (frame.cpp).
    void* zstd_c = nullptr;
    void* zstd_d = nullptr;
};

// The calling thread's context for stateless calls, its kernels set to the
// process's active target.
Context& thread_context();

}  // namespace gw
