// Family "crc": CRC32C (Castagnoli, reflected, poly 0x82F63B78). Software
// slicing-by-8 for the scalar and SSE2 targets; the SSE4.2 crc32 instruction
// (three interleaved streams) for SSE4.2, AVX2 and AVX-512; folding with
// VPCLMULQDQ for long inputs on AVX2 and AVX-512 CPUs that have it, and with
// PCLMULQDQ where the crc32 instruction is slow (Zen 1/2). Table entries.
#pragma once

#include <algorithm>

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

#if defined(GW_KERN_XSIMD) && defined(__PCLMUL__) && defined(__SSE4_2__) && defined(__x86_64__)
// ---------------------------------------------------------------------------
// CRC32C by folding with carry-less multiplies. With VPCLMULQDQ the AVX-512
// target folds 4 x 128-bit lanes per register, 64 bytes per multiply pair
// against 8 per crc32 instruction, and the AVX2 target (Zen 3 has VPCLMULQDQ
// without AVX-512) 2 lanes, 32 bytes. Without it, one lane per PCLMULQDQ
// (crc32c_fold128), where the CPU's crc32 instruction is the slower of the
// two (cpu_crc_fold128).
//
// A 128-bit lane R, loaded little-endian, is the polynomial L x^64 + H (L its
// low 64 bits: the earlier bytes; bit i of a half is the coefficient of
// x^(63-i), the reflected order). Moving R D bits later in the message is
// multiplying by x^D mod P: L (x^(64+D) mod P) + H (x^D mod P), each a 64 x 32
// bit product. The reflected carry-less product of two halves is x A B, so the
// constants are x^(64+D-1) and x^(D-1) mod P. Folded down to one lane, the
// lane has the CRC of everything before it: two crc32 instructions from a
// zero register finish it, and the tail goes on with crc32.
// ---------------------------------------------------------------------------
// x^e mod P as the 64-bit half clmul takes: coefficient of x^d at bit 63 - d.
constexpr uint64_t crc_xpow(unsigned e) {
    uint64_t r = 1;  // not reflected: P = x^32 + 0x1EDC6F41
    for (unsigned i = 0; i < e; ++i) {
        r <<= 1;
        if (r >> 32) r ^= 0x11EDC6F41ull;
    }
    uint64_t out = 0;
    for (unsigned d = 0; d < 32; ++d)
        if ((r >> d) & 1) out |= uint64_t(1) << (63 - d);
    return out;
}
template <unsigned D>
struct CrcFoldK {
    static constexpr uint64_t lo = crc_xpow(64 + D - 1), hi = crc_xpow(D - 1);
};
constexpr size_t kCrcFoldMin = 512;  // below, the crc32 streams are as fast

// One 128-bit lane per register: four of them, 64 bytes a step. On Zen 1/2
// crc32 retires one per 3 cycles whatever the streams (5.5 GB/s at 2.4 GHz),
// and this fold 16 bytes per 2 multiplies (9.8 GB/s).
inline __m128i crc_fold128(__m128i x, __m128i k, __m128i y) {
    return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00),
                                       _mm_clmulepi64_si128(x, k, 0x11)),
                         y);
}
template <unsigned D>
inline __m128i crc_k128() {
    return _mm_set_epi64x(int64_t(CrcFoldK<D>::hi), int64_t(CrcFoldK<D>::lo));
}
// The CRC continued from lane r, which holds everything before the n bytes at p.
inline uint32_t crc32c_fold_finish(__m128i r, const unsigned char* p, size_t n) {
    uint64_t c = _mm_crc32_u64(0, uint64_t(_mm_cvtsi128_si64(r)));
    c = _mm_crc32_u64(c, uint64_t(_mm_extract_epi64(r, 1)));
    for (; n >= 8; n -= 8, p += 8) c = _mm_crc32_u64(c, load_le64(p));
    for (; n != 0; --n) c = _mm_crc32_u8(uint32_t(c), *p++);
    return ~uint32_t(c);
}
// n >= 64.
inline uint32_t crc32c_fold128(uint32_t crc, const unsigned char* p, size_t n) {
    const auto load = [](const unsigned char* q) {
        return _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    };
    // The starting register is the same as its xor into the first 4 bytes.
    __m128i x0 = _mm_xor_si128(load(p), _mm_cvtsi32_si128(int(~crc)));
    __m128i x1 = load(p + 16), x2 = load(p + 32), x3 = load(p + 48);
    const __m128i k512 = crc_k128<512>();
    for (p += 64, n -= 64; n >= 64; n -= 64, p += 64) {
        x0 = crc_fold128(x0, k512, load(p));
        x1 = crc_fold128(x1, k512, load(p + 16));
        x2 = crc_fold128(x2, k512, load(p + 32));
        x3 = crc_fold128(x3, k512, load(p + 48));
    }
    const __m128i k128 = crc_k128<128>();
    __m128i x = crc_fold128(crc_fold128(crc_fold128(x0, k128, x1), k128, x2), k128, x3);
    for (; n >= 16; n -= 16, p += 16) x = crc_fold128(x, k128, load(p));
    return crc32c_fold_finish(x, p, n);
}
#define GW_KERN_CRC_FOLD128 1

#if defined(__VPCLMULQDQ__)

#if defined(__AVX512F__)
template <unsigned D>
inline __m512i crc_k() {
    return _mm512_set_epi64(int64_t(CrcFoldK<D>::hi), int64_t(CrcFoldK<D>::lo),
                            int64_t(CrcFoldK<D>::hi), int64_t(CrcFoldK<D>::lo),
                            int64_t(CrcFoldK<D>::hi), int64_t(CrcFoldK<D>::lo),
                            int64_t(CrcFoldK<D>::hi), int64_t(CrcFoldK<D>::lo));
}
// x moved D bits later (k = crc_k<D>), xor y.
inline __m512i crc_fold(__m512i x, __m512i k, __m512i y) {
    return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00),
                                     _mm512_clmulepi64_epi128(x, k, 0x11), y, 0x96);
}

// The folding state over a message handed over 256 bytes at a time, as four
// registers (memory here; a conversion's output registers in half.hpp).
struct CrcFold {
    __m512i x0, x1, x2, x3;
    // The first 256 bytes, after the CRC crc of everything before them.
    [[gnu::always_inline]] void start(uint32_t crc, __m512i a, __m512i b, __m512i c, __m512i d) {
        // The starting register is the same as its xor into the first 4 bytes.
        x0 = _mm512_xor_si512(a, _mm512_zextsi128_si512(_mm_cvtsi32_si128(int(~crc))));
        x1 = b;
        x2 = c;
        x3 = d;
    }
    [[gnu::always_inline]] void step(__m512i a, __m512i b, __m512i c, __m512i d) {
        const __m512i k2048 = crc_k<2048>();
        x0 = crc_fold(x0, k2048, a);
        x1 = crc_fold(x1, k2048, b);
        x2 = crc_fold(x2, k2048, c);
        x3 = crc_fold(x3, k2048, d);
    }
    // The CRC of the whole message, whose last n bytes are at p.
    [[gnu::always_inline]] uint32_t finish(const unsigned char* p, size_t n) const {
        const auto load = [](const unsigned char* q) { return _mm512_loadu_si512(q); };
        const __m512i k512 = crc_k<512>();
        __m512i x = crc_fold(crc_fold(crc_fold(x0, k512, x1), k512, x2), k512, x3);
        for (; n >= 64; n -= 64, p += 64) x = crc_fold(x, k512, load(p));
        // Lanes 0, 1, 2 moved 384, 256, 128 bits onto lane 3.
        const __m512i k = _mm512_set_epi64(0, 0, int64_t(CrcFoldK<128>::hi),
                                           int64_t(CrcFoldK<128>::lo), int64_t(CrcFoldK<256>::hi),
                                           int64_t(CrcFoldK<256>::lo), int64_t(CrcFoldK<384>::hi),
                                           int64_t(CrcFoldK<384>::lo));
        const __m512i m = _mm512_xor_si512(_mm512_clmulepi64_epi128(x, k, 0x00),
                                           _mm512_clmulepi64_epi128(x, k, 0x11));
        __m128i r = _mm_xor_si128(_mm512_extracti64x2_epi64(x, 3), _mm512_castsi512_si128(m));
        r = _mm_xor_si128(r, _mm_xor_si128(_mm512_extracti64x2_epi64(m, 1),
                                           _mm512_extracti64x2_epi64(m, 2)));
        return crc32c_fold_finish(r, p, n);
    }
};

// A payload of n elements of E bytes written by a vector loop 256 bytes at a
// time, its CRC (continued from *crc) folded from the same registers: the
// encode kernels' shared frame. block(j, z) fills z[0..4) with the bytes of
// elements j.. (256 / E of them; the caller keeps their finiteness: a mask
// returned from here made the fp16 loop 1.1x slower); range(i0, i1) writes
// elements i0..i1 one by one (the head and the tail) and returns whether they
// were finite, which fold_payload returns. Outputs of kStreamBytes and more
// are written with streaming stores (the lines are not read before they are
// written; the CRC does not need them in cache) after plain ones up to a
// 64-byte line.
// Keeps loaded vectors in registers: GCC would otherwise fold each use of
// one into a load of its own (bf16's encode read every x vector three times),
// and where x comes from L3 the extra loads waiting on the same lines cut how
// far ahead the core runs: 1.4x slower at 4M elements on Zen 5.
template <class... V>
[[gnu::always_inline]] inline void in_register(V&... v) {
    ([&v] { asm("" : "+v"(v)); }(), ...);
}
constexpr int kFpclassNanInf = 0x99;  // vfpclassps categories: QNaN, +Inf, -Inf, SNaN
template <size_t E, class Block, class Range>
[[gnu::always_inline]] inline bool fold_payload(unsigned char* o, size_t n, uint32_t* crc,
                                                Block&& block, Range&& range) {
    // Inlined into each caller, with the first block peeled: as a call of
    // its own the callback's captures (x, the finiteness mask) were reloaded
    // and stored after every payload store (a char store may alias them) and
    // the fold's registers went through the stack, 1.3x slower on Zen 5.
    const uintptr_t at = reinterpret_cast<uintptr_t>(o);
    const bool stream = E * n >= kStreamBytes && at % E == 0;
    const size_t head = stream ? std::min(n, (64 - at % 64) % 64 / E) : 0;
    bool ok = range(size_t(0), head);
    const uint32_t c = crc32c_hw(*crc, o, E * head);
    constexpr size_t kPer = 256 / E;
    size_t j = head;
    if (n - j < kPer) {
        ok = range(j, n) && ok;
        *crc = crc32c_hw(c, o + E * j, E * (n - j));
        return ok;
    }
    const auto put = [&](size_t at_j, const __m512i* z) {
        for (size_t r = 0; r < 4; ++r) {
            unsigned char* q = o + E * at_j + 64 * r;
            if (stream)
                _mm512_stream_si512(reinterpret_cast<__m512i*>(q), z[r]);
            else
                _mm512_storeu_si512(q, z[r]);
        }
    };
    CrcFold f;
    {
        __m512i z[4];
        block(j, z);
        put(j, z);
        f.start(c, z[0], z[1], z[2], z[3]);
    }
    for (j += kPer; n - j >= kPer; j += kPer) {
        __m512i z[4];
        block(j, z);
        put(j, z);
        f.step(z[0], z[1], z[2], z[3]);
    }
    if (stream) _mm_sfence();  // streamed lines are ordered before later stores
    ok = range(j, n) && ok;
    *crc = f.finish(o + E * j, E * (n - j));
    return ok;
}

// n >= kCrcFoldMin.
inline uint32_t crc32c_fold(uint32_t crc, const unsigned char* p, size_t n) {
    const auto load = [](const unsigned char* q) { return _mm512_loadu_si512(q); };
    CrcFold f;
    f.start(crc, load(p), load(p + 64), load(p + 128), load(p + 192));
    for (p += 256, n -= 256; n >= 256; n -= 256, p += 256)
        f.step(load(p), load(p + 64), load(p + 128), load(p + 192));
    return f.finish(p, n);
}
#define GW_KERN_CRC_FOLD 1
#elif defined(__AVX2__)
// The same fold over 256-bit registers: four of them, 128 bytes a step, so
// that the multiplies' latency (4 cycles on Zen 3) hides behind the other
// three registers' (AVX2 has 16 vector registers: no more, beside a caller's).
template <unsigned D>
inline __m256i crc_k256() {
    return _mm256_set_epi64x(int64_t(CrcFoldK<D>::hi), int64_t(CrcFoldK<D>::lo),
                             int64_t(CrcFoldK<D>::hi), int64_t(CrcFoldK<D>::lo));
}
inline __m256i crc_fold256(__m256i x, __m256i k, __m256i y) {
    return _mm256_xor_si256(_mm256_xor_si256(_mm256_clmulepi64_epi128(x, k, 0x00),
                                             _mm256_clmulepi64_epi128(x, k, 0x11)),
                            y);
}
// n >= kCrcFoldMin.
inline uint32_t crc32c_fold256(uint32_t crc, const unsigned char* p, size_t n) {
    const auto load = [](const unsigned char* q) {
        return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
    };
    // The starting register is the same as its xor into the first 4 bytes.
    __m256i x0 = _mm256_xor_si256(load(p), _mm256_zextsi128_si256(_mm_cvtsi32_si128(int(~crc))));
    __m256i x1 = load(p + 32), x2 = load(p + 64), x3 = load(p + 96);
    const __m256i k1024 = crc_k256<1024>();
    for (p += 128, n -= 128; n >= 128; n -= 128, p += 128) {
        x0 = crc_fold256(x0, k1024, load(p));
        x1 = crc_fold256(x1, k1024, load(p + 32));
        x2 = crc_fold256(x2, k1024, load(p + 64));
        x3 = crc_fold256(x3, k1024, load(p + 96));
    }
    const __m256i k256 = crc_k256<256>();
    __m256i x = crc_fold256(crc_fold256(crc_fold256(x0, k256, x1), k256, x2), k256, x3);
    for (; n >= 32; n -= 32, p += 32) x = crc_fold256(x, k256, load(p));
    // Lane 0 moved 128 bits onto lane 1; then as the AVX-512 fold finishes.
    return crc32c_fold_finish(crc_fold128(_mm256_castsi256_si128(x), crc_k128<128>(),
                                          _mm256_extracti128_si256(x, 1)),
                              p, n);
}
#define GW_KERN_CRC_FOLD256 1
#endif  // __AVX512F__, __AVX2__
#endif  // __VPCLMULQDQ__
#endif  // __PCLMUL__

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
#if defined(__AVX512F__) && defined(__VPCLMULQDQ__) && defined(__SSE4_2__) && defined(__x86_64__)
        if constexpr (std::is_same_v<Arch, xsimd::avx512bw>)
            if (n >= kCrcFoldMin && cpu_has_vpclmulqdq())
                return crc32c_fold(crc, static_cast<const unsigned char*>(data), n);
#endif
#if defined(GW_KERN_CRC_FOLD256)
        if constexpr (std::is_same_v<Arch, xsimd::avx2>)
            if (n >= kCrcFoldMin && cpu_has_vpclmulqdq())
                return crc32c_fold256(crc, static_cast<const unsigned char*>(data), n);
#endif
#if defined(GW_KERN_CRC_FOLD128)
        if (n >= kCrcFoldMin && cpu_crc_fold128())
            return crc32c_fold128(crc, static_cast<const unsigned char*>(data), n);
#endif
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
