// Little-endian loads and stores at any alignment (the wire is little-endian).
// On a little-endian host each helper is a plain unaligned load, store or
// memcpy (the byte order is a compile-time constant, so the swap branch is
// not even compiled); on a big-endian host every value is byte-swapped.
// Integers, float and double alike: floating-point values travel as their
// IEEE bit patterns in the integer of the same width.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if !defined(__BYTE_ORDER__) || \
    (__BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__ && __BYTE_ORDER__ != __ORDER_BIG_ENDIAN__)
#error "gradwire needs a little-endian or big-endian host (__BYTE_ORDER__)"
#endif

namespace gw {

constexpr bool kHostLittleEndian = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;

namespace detail {
template <size_t N> struct UintOf;
template <> struct UintOf<1> { using type = uint8_t; };
template <> struct UintOf<2> { using type = uint16_t; };
template <> struct UintOf<4> { using type = uint32_t; };
template <> struct UintOf<8> { using type = uint64_t; };
inline uint8_t bswap(uint8_t v) { return v; }
inline uint16_t bswap(uint16_t v) { return __builtin_bswap16(v); }
inline uint32_t bswap(uint32_t v) { return __builtin_bswap32(v); }
inline uint64_t bswap(uint64_t v) { return __builtin_bswap64(v); }
}  // namespace detail

template <class T>
inline T load_le(const uint8_t* p) {
    static_assert(std::is_trivially_copyable_v<T>, "plain values only");
    T v;
    if constexpr (kHostLittleEndian || sizeof(T) == 1) {
        std::memcpy(&v, p, sizeof v);
    } else {
        typename detail::UintOf<sizeof(T)>::type u;
        std::memcpy(&u, p, sizeof u);
        u = detail::bswap(u);
        std::memcpy(&v, &u, sizeof v);
    }
    return v;
}

template <class T>
inline void store_le(uint8_t* p, T v) {
    static_assert(std::is_trivially_copyable_v<T>, "plain values only");
    if constexpr (kHostLittleEndian || sizeof(T) == 1) {
        std::memcpy(p, &v, sizeof v);
    } else {
        typename detail::UintOf<sizeof(T)>::type u;
        std::memcpy(&u, &v, sizeof u);
        u = detail::bswap(u);
        std::memcpy(p, &u, sizeof u);
    }
}

// n host floats to n little-endian float32 at p (any alignment), and back:
// one memcpy on a little-endian host. The ranges must not overlap.
inline void f32_to_le(uint8_t* p, const float* x, size_t n) {
    if constexpr (kHostLittleEndian) {
        if (n) std::memcpy(p, x, n * sizeof(float));
    } else {
        for (size_t i = 0; i < n; ++i) store_le<float>(p + 4 * i, x[i]);
    }
}
inline void f32_from_le(float* x, const uint8_t* p, size_t n) {
    if constexpr (kHostLittleEndian) {
        if (n) std::memcpy(x, p, n * sizeof(float));
    } else {
        for (size_t i = 0; i < n; ++i) x[i] = load_le<float>(p + 4 * i);
    }
}

// Whether any of the c little-endian float32 values at p is NaN or Inf.
inline bool any_nonfinite_le(const uint8_t* p, uint64_t c) {
    uint32_t bad = 0;
    for (uint64_t j = 0; j < c; ++j)
        bad |= uint32_t((load_le<uint32_t>(p + 4 * j) & 0x7F800000u) == 0x7F800000u);
    return bad != 0;
}

// True if none of the n little-endian float32 values at p (any alignment) is
// NaN or Inf. Chunks of a fixed length without an early exit inside: GCC's -O2
// cost model vectorizes only a loop whose trip count it knows (with a
// variable one this ran one element per cycle, 3x the time of an axpy).
inline bool floats_finite_le(const uint8_t* p, uint64_t n) {
    constexpr uint64_t kChunk = 1024;
    uint64_t i = 0;
    for (; n - i >= kChunk; i += kChunk)
        if (any_nonfinite_le(p + 4 * i, kChunk)) return false;
    return !any_nonfinite_le(p + 4 * i, n - i);
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
