#include "feedback/fusion.hpp"

#include <cstring>

#include "frame/frame.hpp"
#include "util/bytes.hpp"

namespace gw::fusion {
namespace {
constexpr uint8_t kMagic[4] = {'G', 'W', 'F', 'B'};
constexpr uint8_t kVersion = 1;
}  // namespace

gw_status read(Context& cx, const uint8_t* b, size_t size, Entry* out, size_t capacity,
               size_t* count) {
    // Same order as frames: a prefix of a valid bundle is truncated, never
    // anything else.
    if (size == 0) return GW_ERR_FRAME_TRUNCATED;
    if (std::memcmp(b, kMagic, size < 4 ? size : 4) != 0) return GW_ERR_FRAME_MAGIC;
    if (size < 5) return GW_ERR_FRAME_TRUNCATED;
    if (b[4] != kVersion) return GW_ERR_FRAME_VERSION;
    if (size < kHeader) return GW_ERR_FRAME_TRUNCATED;
    if (b[5] || b[6] || b[7]) return GW_ERR_FRAME_FLAGS;
    const uint64_t n = load_le<uint32_t>(b + 8);
    if (n > kMaxSlots) return GW_ERR_FRAME_LENGTH;
    const uint64_t dir_end = kHeader + n * kEntry;
    if (size < dir_end) return GW_ERR_FRAME_TRUNCATED;
    uint64_t total = dir_end;
    for (uint64_t i = 0; i < n; ++i) {
        const uint8_t* e = b + kHeader + i * kEntry;
        const uint32_t slot = load_le<uint32_t>(e);
        if (slot >= kMaxSlots || (i && slot <= load_le<uint32_t>(e - kEntry)))
            return GW_ERR_FRAME_INDEX;
        const uint64_t fs = load_le<uint64_t>(e + 4);
        if (fs > SIZE_MAX - total) return GW_ERR_FRAME_LENGTH;
        total += fs;
    }
    if (total > SIZE_MAX - kTrailer) return GW_ERR_FRAME_LENGTH;
    total += kTrailer;
    if (size < total) return GW_ERR_FRAME_TRUNCATED;
    if (size > total) return GW_ERR_FRAME_TRAILING;
    if (cx.k().crc32c(0, b, size - kTrailer) != load_le<uint32_t>(b + size - kTrailer))
        return GW_ERR_FRAME_CHECKSUM;
    size_t off = static_cast<size_t>(dir_end);
    for (uint64_t i = 0; i < n; ++i) {
        const uint8_t* e = b + kHeader + i * kEntry;
        const size_t fs = static_cast<size_t>(load_le<uint64_t>(e + 4));
        frame::View v;
        const gw_status st = frame::open(cx, b + off, fs, true, &v);
        if (st != GW_OK) return st;
        if (i < capacity) out[i] = Entry{load_le<uint32_t>(e), off, fs};
        off += fs;
    }
    *count = static_cast<size_t>(n);
    return n <= capacity ? GW_OK : GW_ERR_BUFFER_TOO_SMALL;
}

Buffer::~Buffer() {
    for (uint32_t i = 0; i < slots_; ++i) cx_.alloc().release(slot_[i].data);
    cx_.alloc().release(slot_);
}

gw_status Buffer::init(const Backend& backend, size_t capacity, uint32_t slots) {
    cx_.bind(backend);
    slot_ = static_cast<Slot*>(cx_.alloc().allocate(slots * sizeof(Slot), alignof(Slot)));
    if (!slot_) return GW_ERR_OUT_OF_MEMORY;
    for (uint32_t i = 0; i < slots; ++i) new (&slot_[i]) Slot();
    slots_ = slots;
    capacity_ = capacity;
    return GW_OK;
}

gw_status Buffer::add(uint32_t slot, const uint8_t* frame, size_t size, int* flush) {
    std::lock_guard<std::mutex> lock(mu_);
    if (slot >= slots_) return GW_ERR_INVALID_ARGUMENT;
    Slot& s = slot_[slot];
    if (s.seen) return GW_ERR_SEQUENCE;  // once per round
    frame::View v;
    const gw_status st = frame::open(cx_, frame, size, true, &v);
    if (st != GW_OK) return st;
    if (s.cap < size) {  // the old copy is not needed: the new frame replaces it
        uint8_t* p = static_cast<uint8_t*>(cx_.alloc().allocate(size, 16));
        if (!p) return GW_ERR_OUT_OF_MEMORY;
        cx_.alloc().release(s.data);
        s.data = p;
        s.cap = size;
    }
    std::memcpy(s.data, frame, size);
    s.size = size;
    s.pending = s.seen = true;
    ++seen_;
    ++pending_count_;
    pending_bytes_ += size;
    *flush = pending_bytes_ >= capacity_ || seen_ == slots_;
    return GW_OK;
}

size_t Buffer::bundle_size_locked() const {
    return kHeader + pending_count_ * kEntry + pending_bytes_ + kTrailer;
}

size_t Buffer::bundle_size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return bundle_size_locked();
}

size_t Buffer::pending() const {
    std::lock_guard<std::mutex> lock(mu_);
    return pending_count_;
}

gw_status Buffer::flush(uint8_t* out, size_t capacity, size_t* written) {
    std::lock_guard<std::mutex> lock(mu_);
    const size_t total = bundle_size_locked();
    if (capacity < total) return GW_ERR_BUFFER_TOO_SMALL;
    std::memcpy(out, kMagic, 4);
    out[4] = kVersion;
    out[5] = out[6] = out[7] = 0;
    store_le<uint32_t>(out + 8, pending_count_);
    uint8_t* dir = out + kHeader;
    uint8_t* body = dir + pending_count_ * kEntry;
    for (uint32_t i = 0; i < slots_; ++i) {
        Slot& s = slot_[i];
        if (!s.pending) continue;
        store_le<uint32_t>(dir, i);
        store_le<uint64_t>(dir + 4, s.size);
        dir += kEntry;
        std::memcpy(body, s.data, s.size);
        body += s.size;
        s.pending = false;
    }
    store_le<uint32_t>(body, cx_.k().crc32c(0, out, total - kTrailer));
    *written = total;
    pending_count_ = 0;
    pending_bytes_ = 0;
    if (seen_ == slots_) {  // the round is complete: the next one begins
        for (uint32_t i = 0; i < slots_; ++i) slot_[i].seen = false;
        seen_ = 0;
    }
    return GW_OK;
}

}  // namespace gw::fusion
