// Checkpoint blobs of the state machines (docs/wire-format.md, "State blobs"):
//   magic "GWST" | u16 blob version | u16 kind | body | u32 CRC32C of all before it
// The body is written and read field by field with bounds checks; a reader
// never reads past the blob and reports the first problem it finds.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gradwire.h"

namespace gw::blob {

constexpr uint16_t kVersion = 1;
enum Kind : uint16_t { kWorker = 1, kServer = 2 };
constexpr size_t kHeaderSize = 8, kTrailerSize = 4;

class Writer {
  public:
    Writer(uint8_t* out, Kind kind);
    void u8(uint8_t v);
    void u16(uint16_t v);
    void u32(uint32_t v);
    void u64(uint64_t v);
    void f32(float v);
    void floats(const float* v, uint64_t n);
    // Append the checksum; returns total bytes written.
    size_t finish();

  private:
    uint8_t* out_;
    size_t pos_;
};

class Reader {
  public:
    // Checks magic, version, kind and checksum; status() tells the outcome.
    Reader(const void* blob, size_t size, Kind kind);
    gw_status status() const { return status_; }
    uint8_t u8();
    uint16_t u16();
    uint32_t u32();
    uint64_t u64();
    float f32();
    // Pointer to n floats inside the blob (unaligned; copy with memcpy), or
    // nullptr (and status GW_ERR_STATE_CORRUPT) if the blob is too short.
    const uint8_t* floats(uint64_t n);
    // GW_OK only if every field was present and the body is fully consumed.
    gw_status finish();

  private:
    const uint8_t* take(size_t n);
    const uint8_t* data_;
    size_t end_;  // end of the body (before the checksum)
    size_t pos_;
    gw_status status_;
};

}  // namespace gw::blob
