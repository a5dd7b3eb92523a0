// Growable, 64-byte aligned working memory from a context's allocator
// (context.hpp). Handles own theirs, so steady-state steps do not allocate.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gw {

struct Allocator;

class Scratch {
  public:
    explicit Scratch(const Allocator& a) : a_(&a) {}
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    ~Scratch();

    // At least `bytes` bytes (64-byte aligned; contents unspecified), or
    // nullptr if the allocation fails. Invalidates earlier pointers.
    void* get(size_t bytes) {
        if (bytes <= cap_ && p_) return p_;
        return grow(bytes);
    }

  private:
    void* grow(size_t bytes);

    const Allocator* a_;
    void* p_ = nullptr;
    size_t cap_ = 0;
};

// Offsets of consecutive arrays carved from one Scratch block. Each starts
// 64-byte aligned and kStagger bytes further along the 4 KiB page than the
// one before. Arrays whose sizes are multiples of 4 KiB would otherwise start
// at the same page offset, and a loop that stores into one while loading the
// next element of another stalls on false store-to-load dependencies (a core
// first matches a load against older stores by the low 12 address bits):
// Sparse-AsyLPG's compaction of 9.4M kept entries took 13 ns per entry, not 1.1.
class ScratchLayout {
  public:
    // The offset of a new array of `bytes` bytes (64 bytes of slack after it).
    size_t add(size_t bytes) {
        size_t off = (end_ + 63) / 64 * 64;
        const size_t want = (count_++ * kStagger) % kPage;
        off += (want + kPage - off % kPage) % kPage;
        end_ = off + bytes + 64;
        return off;
    }
    // The block to ask the Scratch for.
    size_t bytes() const { return end_; }

  private:
    static constexpr size_t kPage = 4096, kStagger = 320;
    size_t end_ = 0;
    unsigned count_ = 0;
};

}  // namespace gw
