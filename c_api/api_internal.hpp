// Shared by the files of the extern "C" layer (c_api/*.cpp): the codec spec
// handle and the argument checks every call makes the same way.
#pragma once

#include <cstdint>
#include <cstring>

#include <new>

#include "codecs/codec.hpp"
#include "gradwire.h"
#include "util/bytes.hpp"

struct gw_codec_spec {
    gw::CodecParams p;
};

namespace gw::api {

// Every option struct version from 1 to the current one is known.
inline bool known_version(unsigned int v, unsigned int current) { return v >= 1 && v <= current; }

// Fill a versioned struct with its INIT value, keeping the caller's version.
// A caller built against version 1 has a struct of v1_bytes only (the
// fields before the first one version 2 added): nothing past it is written.
template <class T>
inline gw_status init_versioned(T* s, unsigned int version, unsigned int current, const T& init,
                                size_t v1_bytes = sizeof(T)) {
    if (!s) return GW_ERR_NULL_POINTER;
    if (!known_version(version, current)) return GW_ERR_OPTIONS_VERSION;
    std::memcpy(static_cast<void*>(s), &init, version == 1 ? v1_bytes : sizeof(T));
    s->version = version;
    return GW_OK;
}

// True if [a, a+an) and [b, b+bn) share a byte.
inline bool overlaps(const void* a, size_t an, const void* b, size_t bn) {
    if (!a || !b || an == 0 || bn == 0) return false;
    const uintptr_t x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
    return x < y + bn && y < x + an;
}

inline bool valid_dtype(const gw_dtype& d) {
    const int v = gw::enum_value(d);
    return v == GW_DTYPE_F32 || v == GW_DTYPE_F16 || v == GW_DTYPE_BF16;
}
inline size_t dtype_size(gw_dtype d) { return d == GW_DTYPE_F32 ? 4 : 2; }

// Length in bytes of n elements of dtype (n <= GW_MAX_ELEMENTS, so no overflow).
inline size_t span_bytes(uint64_t n, size_t width) { return static_cast<size_t>(n * width); }

// Out-of-range target values from C become 7: inside the C++ enum's value
// range (so the cast is defined) but no target, so callees reject it.
inline gw_simd_target checked_target(const gw_simd_target& t) {
    const int v = gw::enum_value(t);
    return static_cast<gw_simd_target>(v >= GW_SIMD_AUTO && v <= GW_SIMD_NEON ? v : 7);
}

inline const gw::Codec* checked_codec(const gw_codec_id& id) {
    const int v = gw::enum_value(id);
    return v > 0 ? gw::codec_for(static_cast<unsigned>(v)) : nullptr;
}

}  // namespace gw::api
