// Family "crc": CRC32C (Castagnoli, reflected, poly 0x82F63B78). Software
// slicing-by-8 for the scalar and SSE2 targets; the SSE4.2 crc32 instruction
// (three interleaved streams) for SSE4.2, AVX2 and AVX-512. Table entries.
#pragma once

#include "kernels/common.hpp"

namespace gw::kern {
namespace {

// ---------------------------------------------------------------------------
// CRC32C, software: slicing-by-8
// ---------------------------------------------------------------------------
constexpr uint32_t kCrc32cPoly = 0x82F63B78u;

struct CrcSlice8 {
    uint32_t t[8][256];
};
constexpr CrcSlice8 make_crc_slice8() {
    CrcSlice8 s{};
    for (uint32_t i = 0; i < 256; ++i) {
        uint32_t c = i;
        for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (kCrc32cPoly & (0u - (c & 1u)));
        s.t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i)
        for (int k = 1; k < 8; ++k) s.t[k][i] = (s.t[k - 1][i] >> 8) ^ s.t[0][s.t[k - 1][i] & 0xFF];
    return s;
}
constexpr CrcSlice8 kCrcSlice8 = make_crc_slice8();

inline uint32_t crc32c_sw(uint32_t crc, const void* data, size_t n) {
    const auto& t = kCrcSlice8.t;
    const unsigned char* p = static_cast<const unsigned char*>(data);
    uint32_t c = ~crc;
    while (n != 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
        c = t[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
        --n;
    }
    while (n >= 8) {
        const uint32_t lo = load_le32(p) ^ c;
        const uint32_t hi = load_le32(p + 4);
        c = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^
            t[3][hi & 0xFF] ^ t[2][(hi >> 8) & 0xFF] ^ t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n != 0) {
        c = t[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
        --n;
    }
    return ~c;
}

#if defined(GW_KERN_XSIMD) && defined(__SSE4_2__) && defined(__x86_64__)
// ---------------------------------------------------------------------------
// CRC32C with the SSE4.2 crc32 instruction: three interleaved streams,
// combined with "shift by N zero bytes" tables (after M. Adler's crc32c.c).
// ---------------------------------------------------------------------------
constexpr size_t kCrcLong = 8192;
constexpr size_t kCrcShort = 256;

struct CrcShift {
    uint32_t t[4][256];
};
constexpr uint32_t gf2_times(const uint32_t* mat, uint32_t vec) {
    uint32_t sum = 0;
    for (int i = 0; vec != 0; ++i, vec >>= 1)
        if (vec & 1u) sum ^= mat[i];
    return sum;
}
constexpr void gf2_square(uint32_t* sq, const uint32_t* mat) {
    for (int i = 0; i < 32; ++i) sq[i] = gf2_times(mat, mat[i]);
}
// Table applying `len` (a power of two) zero bytes to a raw CRC register.
constexpr CrcShift make_crc_shift(size_t len) {
    uint32_t odd[32] = {};
    uint32_t even[32] = {};
    odd[0] = kCrc32cPoly;  // operator for one zero bit
    for (int i = 1; i < 32; ++i) odd[i] = 1u << (i - 1);
    gf2_square(even, odd);  // 2 bits
    gf2_square(odd, even);  // 4 bits
    const uint32_t* op = nullptr;
    for (;;) {
        gf2_square(even, odd);  // 8, 32, ... bits: 1, 4, ... bytes
        len >>= 1;
        if (len == 0) {
            op = even;
            break;
        }
        gf2_square(odd, even);
        len >>= 1;
        if (len == 0) {
            op = odd;
            break;
        }
    }
    CrcShift s{};
    for (uint32_t i = 0; i < 256; ++i)
        for (int k = 0; k < 4; ++k) s.t[k][i] = gf2_times(op, i << (8 * k));
    return s;
}
constexpr CrcShift kCrcShiftLong = make_crc_shift(kCrcLong);
constexpr CrcShift kCrcShiftShort = make_crc_shift(kCrcShort);

inline uint32_t crc_shift(const CrcShift& s, uint32_t c) {
    return s.t[0][c & 0xFF] ^ s.t[1][(c >> 8) & 0xFF] ^ s.t[2][(c >> 16) & 0xFF] ^ s.t[3][c >> 24];
}

template <size_t Len>
inline const unsigned char* crc_3way(uint64_t& c0, const unsigned char* p, const CrcShift& s) {
    uint64_t c1 = 0, c2 = 0;
    const unsigned char* const end = p + Len;
    do {
        c0 = _mm_crc32_u64(c0, load_le64(p));
        c1 = _mm_crc32_u64(c1, load_le64(p + Len));
        c2 = _mm_crc32_u64(c2, load_le64(p + 2 * Len));
        p += 8;
    } while (p < end);
    c0 = crc_shift(s, uint32_t(c0)) ^ uint32_t(c1);
    c0 = crc_shift(s, uint32_t(c0)) ^ uint32_t(c2);
    return p + 2 * Len;
}

inline uint32_t crc32c_hw(uint32_t crc, const void* data, size_t n) {
    const unsigned char* p = static_cast<const unsigned char*>(data);
    uint64_t c0 = uint32_t(~crc);
    while (n != 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
        c0 = _mm_crc32_u8(uint32_t(c0), *p++);
        --n;
    }
    for (; n >= 3 * kCrcLong; n -= 3 * kCrcLong) p = crc_3way<kCrcLong>(c0, p, kCrcShiftLong);
    for (; n >= 3 * kCrcShort; n -= 3 * kCrcShort) p = crc_3way<kCrcShort>(c0, p, kCrcShiftShort);
    for (; n >= 8; n -= 8, p += 8) c0 = _mm_crc32_u64(c0, load_le64(p));
    for (; n != 0; --n) c0 = _mm_crc32_u8(uint32_t(c0), *p++);
    return ~uint32_t(c0);
}
#endif  // __SSE4_2__ && __x86_64__

template <class Arch>
struct Crc;  // vector targets below; Crc<ScalarArch> is the software code

template <>
struct Crc<ScalarArch> {
    static uint32_t crc32c(uint32_t crc, const void* data, size_t n) {
        return crc32c_sw(crc, data, n);
    }
};

#if defined(GW_KERN_XSIMD)
// SSE2 has no crc32 instruction; every later target does (and its arch
// file is compiled with -msse4.2 or more, so crc32c_hw exists there).
template <class Arch>
struct Crc {
    static uint32_t crc32c(uint32_t crc, const void* data, size_t n) {
#if defined(__SSE4_2__) && defined(__x86_64__)
        if constexpr (!std::is_same_v<Arch, xsimd::sse2>) return crc32c_hw(crc, data, n);
#endif
        return crc32c_sw(crc, data, n);
    }
};
#endif  // GW_KERN_XSIMD

template <class Arch>
constexpr void crc_entries(Table& t) {
    t.crc32c = &Crc<Arch>::crc32c;
}

}  // namespace
}  // namespace gw::kern
