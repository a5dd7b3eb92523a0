#include "feedback/state_blob.hpp"

namespace gw::blob {

namespace {
constexpr uint8_t kMagic[4] = {'G', 'W', 'S', 'T'};
}  // namespace

size_t type_width(uint8_t t) {
    switch (t) {
        case kU8: case kBytes: return 1;
        case kU32: case kF32: case kF32s: return 4;
        case kU64: return 8;
    }
    return 0;
}

gw_status check_header(const kern::Table& kt, const uint8_t* b, size_t size, uint16_t* kind,
                       uint32_t* fields) {
    if (size == 0) return GW_ERR_STATE_CORRUPT;
    if (std::memcmp(b, kMagic, size < 4 ? size : 4) != 0) return GW_ERR_STATE_MAGIC;
    if (size < kHeaderSize + kTrailerSize) return GW_ERR_STATE_CORRUPT;
    if (load_le<uint16_t>(b + 4) != kVersion) return GW_ERR_STATE_VERSION;
    if (kt.crc32c(0, b, size - kTrailerSize) != load_le<uint32_t>(b + size - kTrailerSize))
        return GW_ERR_STATE_CHECKSUM;
    *kind = load_le<uint16_t>(b + 6);
    *fields = load_le<uint32_t>(b + 8);
    return GW_OK;
}

Writer::Writer(const kern::Table& kt, uint8_t* out, Kind kind) : kt_(kt), out_(out) {
    std::memcpy(out_, kMagic, 4);
    store_le<uint16_t>(out_ + 4, kVersion);
    store_le<uint16_t>(out_ + 6, kind);
}

uint8_t* Writer::header(uint16_t id, Type type, uint64_t count, size_t bytes) {
    store_le<uint16_t>(out_ + pos_, id);
    out_[pos_ + 2] = type;
    out_[pos_ + 3] = 0;
    store_le<uint64_t>(out_ + pos_ + 4, count);
    uint8_t* data = out_ + pos_ + kFieldHeader;
    pos_ += kFieldHeader + bytes;
    ++fields_;
    return data;
}

void Writer::field(uint16_t id, Type type, uint64_t count, const void* data, size_t bytes) {
    uint8_t* at = header(id, type, count, bytes);
    if (bytes) std::memcpy(at, data, bytes);
}

size_t Writer::finish() {
    store_le<uint32_t>(out_ + 8, fields_);
    store_le<uint32_t>(out_ + pos_, kt_.crc32c(0, out_, pos_));
    return pos_ + kTrailerSize;
}

Reader::Reader(const kern::Table& kt, const void* blob, size_t size, Kind kind, bool commit)
    : data_(static_cast<const uint8_t*>(blob)), commit_(commit) {
    uint16_t got = 0;
    status_ = check_header(kt, data_, size, &got, &fields_left_);
    if (status_ == GW_OK && got != kind) status_ = GW_ERR_STATE_MISMATCH;
    if (status_ == GW_OK) end_ = size - kTrailerSize;
    else fields_left_ = 0;
}

const uint8_t* Reader::field(uint16_t id, Type type, uint64_t count) {
    if (status_ != GW_OK) return nullptr;
    if (fields_left_ == 0 || end_ - pos_ < kFieldHeader) {
        fail(GW_ERR_STATE_CORRUPT);
        return nullptr;
    }
    const uint8_t* h = data_ + pos_;
    const uint64_t got = load_le<uint64_t>(h + 4);
    if (load_le<uint16_t>(h) != id || h[2] != type || h[3] != 0) {
        fail(GW_ERR_STATE_CORRUPT);
        return nullptr;
    }
    // A well-formed field of another size is a blob of another configuration.
    const size_t width = type_width(type);
    if (got > (end_ - pos_ - kFieldHeader) / width) {
        fail(GW_ERR_STATE_CORRUPT);
        return nullptr;
    }
    if (got != count) {
        fail(GW_ERR_STATE_MISMATCH);
        return nullptr;
    }
    pos_ += kFieldHeader;
    const uint8_t* p = data_ + pos_;
    pos_ += static_cast<size_t>(got * width);
    --fields_left_;
    return p;
}

gw_status Reader::finish() {
    if (status_ == GW_OK && (pos_ != end_ || fields_left_ != 0)) status_ = GW_ERR_STATE_CORRUPT;
    return status_;
}

}  // namespace gw::blob
