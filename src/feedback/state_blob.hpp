// Checkpoint blobs (docs/wire-format.md, "State blobs"), format 2:
//   magic "GWST" | u16 version | u16 kind | u32 field count |
//   fields: u16 id | u8 type | u8 0 | u64 count | count elements |
//   u32 CRC32C of all before it
// Every field names itself (id, type, count), so a tool can read any blob
// without the handle, e.g. to re-shard server slices (offset, length, total
// are fields) or carry worker residuals to another worker count.
//
// A state machine lists its fields once, in `template <class V> void
// fields(V& v, Scalars& s)`; Sizer, Writer and Reader walk that list, so the
// bound, the save and the load cannot drift apart. Loading runs the list
// twice: a checking pass that changes nothing, then a committing pass.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "gradwire_types.h"
#include "kernels/kernels.hpp"
#include "util/bytes.hpp"

namespace gw::blob {

constexpr uint16_t kVersion = 2;
enum Kind : uint16_t { kWorker = 1, kServer = 2, kCltk = 3, kLags = 4, kFusion = 5, kAsylpgMaster = 6,
                     kAsylpgWorker = 7 };
enum Type : uint8_t { kU8 = 1, kU32 = 2, kU64 = 3, kF32 = 4, kBytes = 5, kF32s = 6 };
constexpr size_t kHeaderSize = 12, kFieldHeader = 12, kTrailerSize = 4;

template <class T> struct TypeOf;
template <> struct TypeOf<uint8_t> { static constexpr Type value = kU8; };
template <> struct TypeOf<uint32_t> { static constexpr Type value = kU32; };
template <> struct TypeOf<uint64_t> { static constexpr Type value = kU64; };
template <> struct TypeOf<float> { static constexpr Type value = kF32; };

size_t type_width(uint8_t type);  // bytes per element; 0 for an unknown type
// Magic, size, version and checksum, in the loader's order (docs/wire-format.md);
// GW_OK with the blob's kind and field count.
gw_status check_header(const kern::Table& kt, const uint8_t* blob, size_t size, uint16_t* kind,
                       uint32_t* fields);

// Bytes of a blob.
class Sizer {
  public:
    template <class T> void config(uint16_t, T) { add(sizeof(T)); }
    void config_bytes(uint16_t, const uint8_t*, size_t n) { add(n); }
    template <class T> void scalar(uint16_t, T&) { add(sizeof(T)); }
    void floats(uint16_t, float*, uint64_t n) { add(n * sizeof(float)); }
    size_t total() const { return kHeaderSize + size_ + kTrailerSize; }

  private:
    void add(uint64_t bytes) { size_ += kFieldHeader + bytes; }
    size_t size_ = 0;
};

class Writer {
  public:
    Writer(const kern::Table& kt, uint8_t* out, Kind kind);
    template <class T> void config(uint16_t id, T v) {
        uint8_t le[sizeof v];
        store_le<T>(le, v);
        field(id, TypeOf<T>::value, 1, le, sizeof le);
    }
    void config_bytes(uint16_t id, const uint8_t* p, size_t n) { field(id, kBytes, n, p, n); }
    template <class T> void scalar(uint16_t id, T& v) { config(id, v); }
    void floats(uint16_t id, float* v, uint64_t n) {
        f32_to_le(header(id, kF32s, n, n * sizeof(float)), v, n);
    }
    // Any field as raw little-endian bytes (re-sharding copies fields through).
    void field(uint16_t id, Type type, uint64_t count, const void* data, size_t bytes);
    size_t finish();  // appends count and checksum; returns bytes written

  private:
    // Writes a field's header, reserves its `bytes`; returns where they go.
    uint8_t* header(uint16_t id, Type type, uint64_t count, size_t bytes);
    const kern::Table& kt_;
    uint8_t* out_;
    size_t pos_ = kHeaderSize;
    uint32_t fields_ = 0;
};

class Reader {
  public:
    // Checks magic, version, kind, checksum and field count up front.
    Reader(const kern::Table& kt, const void* blob, size_t size, Kind kind, bool commit);
    gw_status status() const { return status_; }

    template <class T> void config(uint16_t id, T want) {
        T got;
        if (const uint8_t* p = field(id, TypeOf<T>::value, 1)) {
            got = load_le<T>(p);
            if (std::memcmp(&got, &want, sizeof got) != 0) fail(GW_ERR_STATE_MISMATCH);
        }
    }
    void config_bytes(uint16_t id, const uint8_t* want, size_t n) {
        if (const uint8_t* p = field(id, kBytes, n))
            if (n && std::memcmp(p, want, n) != 0) fail(GW_ERR_STATE_MISMATCH);
    }
    template <class T> void scalar(uint16_t id, T& v) {
        if (const uint8_t* p = field(id, TypeOf<T>::value, 1)) v = load_le<T>(p);
    }
    // Vectors must be finite; copied only in the committing pass.
    void floats(uint16_t id, float* v, uint64_t n) {
        const uint8_t* p = field(id, kF32s, n);
        if (!p) return;
        if (!commit_ && !floats_finite_le(p, n)) fail(GW_ERR_STATE_CORRUPT);
        if (commit_) f32_from_le(v, p, n);
    }
    // GW_OK only if every field was present and the body is fully consumed.
    gw_status finish();
    void fail(gw_status st) {
        if (status_ == GW_OK) status_ = st;
    }

  private:
    const uint8_t* field(uint16_t id, Type type, uint64_t count);
    const uint8_t* data_;
    size_t end_ = 0, pos_ = kHeaderSize;
    uint32_t fields_left_ = 0;
    bool commit_;
    gw_status status_ = GW_OK;
};

// The three walks of a machine's field list.
template <class M> size_t save_bound(const M& m) {
    Sizer s;
    auto sc = m.scalars();
    const_cast<M&>(m).fields(s, sc);
    return s.total();
}
template <class M> size_t save(const M& m, void* out) {
    Writer w(m.context().k(), static_cast<uint8_t*>(out), M::kBlobKind);
    auto sc = m.scalars();
    const_cast<M&>(m).fields(w, sc);
    return w.finish();
}
// Check everything (the machine's own invariants included), then commit.
template <class M> gw_status load(M& m, const void* blob, size_t size) {
    auto staged = m.scalars();
    Reader check(m.context().k(), blob, size, M::kBlobKind, false);
    m.fields(check, staged);
    gw_status st = check.finish();
    if (st != GW_OK) return st;
    if (!m.scalars_valid(staged)) return GW_ERR_STATE_CORRUPT;
    Reader commit(m.context().k(), blob, size, M::kBlobKind, true);
    m.fields(commit, staged);
    st = commit.finish();
    if (st == GW_OK) m.set_scalars(staged);
    return st;
}

}  // namespace gw::blob
