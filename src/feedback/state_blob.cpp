#include "feedback/state_blob.hpp"

#include <cstring>

#include "kernels/kernels.hpp"
#include "util/bytes.hpp"

namespace gw::blob {

namespace {
constexpr uint8_t kMagic[4] = {'G', 'W', 'S', 'T'};
}

Writer::Writer(uint8_t* out, Kind kind) : out_(out), pos_(0) {
    std::memcpy(out_, kMagic, 4);
    pos_ = 4;
    u16(kVersion);
    u16(kind);
}
void Writer::u8(uint8_t v) { out_[pos_++] = v; }
void Writer::u16(uint16_t v) { store_le(out_ + pos_, v), pos_ += 2; }
void Writer::u32(uint32_t v) { store_le(out_ + pos_, v), pos_ += 4; }
void Writer::u64(uint64_t v) { store_le(out_ + pos_, v), pos_ += 8; }
void Writer::f32(float v) { store_le(out_ + pos_, v), pos_ += 4; }
void Writer::floats(const float* v, uint64_t n) {
    if (n) std::memcpy(out_ + pos_, v, n * sizeof(float));
    pos_ += n * sizeof(float);
}
size_t Writer::finish() {
    u32(kern::active().crc32c(0, out_, pos_));
    return pos_;
}

Reader::Reader(const void* blob, size_t size, Kind kind)
    : data_(static_cast<const uint8_t*>(blob)), end_(0), pos_(kHeaderSize), status_(GW_OK) {
    if (size == 0) {
        status_ = GW_ERR_STATE_CORRUPT;
    } else if (std::memcmp(data_, kMagic, size < 4 ? size : 4) != 0) {
        status_ = GW_ERR_STATE_MAGIC;
    } else if (size < kHeaderSize + kTrailerSize) {
        status_ = GW_ERR_STATE_CORRUPT;
    } else if (load_le<uint16_t>(data_ + 4) != kVersion) {
        status_ = GW_ERR_STATE_VERSION;
    } else if (kern::active().crc32c(0, data_, size - kTrailerSize) !=
               load_le<uint32_t>(data_ + size - kTrailerSize)) {
        status_ = GW_ERR_STATE_CHECKSUM;
    } else if (load_le<uint16_t>(data_ + 6) != kind) {
        status_ = GW_ERR_STATE_MISMATCH;
    }
    end_ = size >= kTrailerSize ? size - kTrailerSize : 0;
}

const uint8_t* Reader::take(size_t n) {
    if (status_ != GW_OK) return nullptr;
    if (end_ - pos_ < n) {
        status_ = GW_ERR_STATE_CORRUPT;
        return nullptr;
    }
    const uint8_t* p = data_ + pos_;
    pos_ += n;
    return p;
}
uint8_t Reader::u8() {
    const uint8_t* p = take(1);
    return p ? *p : 0;
}
uint16_t Reader::u16() {
    const uint8_t* p = take(2);
    return p ? load_le<uint16_t>(p) : 0;
}
uint32_t Reader::u32() {
    const uint8_t* p = take(4);
    return p ? load_le<uint32_t>(p) : 0;
}
uint64_t Reader::u64() {
    const uint8_t* p = take(8);
    return p ? load_le<uint64_t>(p) : 0;
}
float Reader::f32() {
    const uint8_t* p = take(4);
    return p ? load_le<float>(p) : 0.0f;
}
const uint8_t* Reader::floats(uint64_t n) {
    if (n > SIZE_MAX / sizeof(float)) {
        if (status_ == GW_OK) status_ = GW_ERR_STATE_CORRUPT;
        return nullptr;
    }
    return take(static_cast<size_t>(n * sizeof(float)));
}
gw_status Reader::finish() {
    if (status_ == GW_OK && pos_ != end_) status_ = GW_ERR_STATE_CORRUPT;
    return status_;
}

}  // namespace gw::blob
