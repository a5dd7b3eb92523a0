// Little-endian loads and stores at any alignment (the wire is little-endian).
#pragma once

#include <cstdint>
#include <cstring>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "gradwire currently assumes a little-endian host (payload kernels copy bytes as is)"
#endif

namespace gw {

template <class T>
inline T load_le(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

template <class T>
inline void store_le(uint8_t* p, T v) {
    std::memcpy(p, &v, sizeof v);
}

// True if none of the n little-endian float32 values at p (any alignment) is
// NaN or Inf. Chunks without an early exit inside, so the compiler vectorizes them.
inline bool floats_finite_le(const uint8_t* p, uint64_t n) {
    for (uint64_t i = 0; i < n; i += 1024) {
        const uint64_t c = n - i < 1024 ? n - i : 1024;
        uint32_t bad = 0;
        for (uint64_t j = 0; j < c; ++j)
            bad |= uint32_t((load_le<uint32_t>(p + 4 * (i + j)) & 0x7F800000u) == 0x7F800000u);
        if (bad) return false;
    }
    return true;
}

// The integer in a caller's enum object. C callers may store any int in an
// enum field or argument; loading it as the C++ enum type would be undefined
// when it is out of range, so boundary code reads enums through this.
template <class E>
inline int enum_value(const E& e) {
    static_assert(sizeof(E) == sizeof(int), "C enums are int-sized here");
    int v;
    std::memcpy(&v, &e, sizeof v);
    return v;
}

inline uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

}  // namespace gw
