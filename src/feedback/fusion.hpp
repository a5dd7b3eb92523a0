// LAGS-SGD's fusion buffer (docs/algorithms.md s.7): frames of small
// sparsified layers are merged into one bundle, which goes out when the
// buffer fills up or once every layer of the iteration has been added.
// Layers finish on different threads, so add() takes a lock; the bundle lists
// its frames by slot (layer), not by arrival, so its bytes do not depend on
// thread timing. Bundle format (docs/wire-format.md, "Bundles"):
//
//   magic "GWFB" | u8 version 1 | 3 zero bytes | u32 count |
//   count x (u32 slot | u64 frame size) | the frames, in that order |
//   u32 CRC32C of all before it
//
// Slots are strictly increasing and below kMaxSlots; every frame is a valid
// frame of exactly its size. What no encoder writes, no reader accepts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "gradwire_types.h"
#include "kernels/context.hpp"

namespace gw::fusion {

constexpr uint32_t kMaxSlots = 65536;
constexpr size_t kHeader = 12, kEntry = 12, kTrailer = 4;

struct Entry {
    uint32_t slot;
    size_t offset, size;  // of the frame within the bundle
};

// Validate a bundle: GW_OK with *count entries (written to out if capacity
// allows; GW_ERR_BUFFER_TOO_SMALL otherwise, *count still set), or a
// GW_ERR_FRAME_* status (the bundle's own checks, or its frames').
gw_status read(Context& cx, const uint8_t* b, size_t size, Entry* out, size_t capacity,
               size_t* count);

class Buffer {
  public:
    ~Buffer();
    gw_status init(const Backend& backend, size_t capacity, uint32_t slots);
    // The kernels and allocator it was created with.
    const Context& context() const { return cx_; }
    // Copy a (checked) frame into slot's place; *flush = 1 when the bundle
    // should go out now (pending bytes reached capacity, or every slot of the
    // round has been added).
    gw_status add(uint32_t slot, const uint8_t* frame, size_t size, int* flush);
    // Bytes flush() would write now.
    size_t bundle_size() const;
    // Write the pending frames as a bundle and empty the buffer; after the
    // round's last slot, a new round begins.
    gw_status flush(uint8_t* out, size_t capacity, size_t* written);
    uint32_t slots() const { return slots_; }
    size_t pending() const;

  private:
    struct Slot {
        uint8_t* data = nullptr;
        size_t cap = 0, size = 0;
        bool pending = false, seen = false;
    };
    size_t bundle_size_locked() const;
    mutable std::mutex mu_;
    Context cx_;  // first: the slots below are freed through its allocator
    Slot* slot_ = nullptr;
    uint32_t slots_ = 0, seen_ = 0, pending_count_ = 0;
    size_t capacity_ = 0, pending_bytes_ = 0;
};

}  // namespace gw::fusion
