// Family "copy_crc": the identity codec's encode and gw_decode's decode in
// one read. The payload is float32 as little-endian bytes; the kernels copy
// it (x to payload, or payload to out), test that every value is finite and
// continue the payload's CRC32C, instead of a finiteness pass, a copy and a
// CRC pass over memory (encode: 1.8x at 1M on Zen 4, 3.1x at 16M, where the
// payload is streamed). Table entries.
#pragma once

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/common.hpp"
#include "kernels/crc.hpp"
#include "kernels/norms.hpp"

namespace gw::kern {
namespace {

template <class Arch>
struct CopyCrc {
    // out[0..4n) = x as little-endian float32, *crc continued over those
    // bytes; false if any x is NaN or Inf (out and *crc unspecified then).
    static bool run(const float* x, void* out, size_t n, uint32_t* crc) {
#if defined(GW_KERN_CRC_FOLD) && defined(GW_KERN_XSIMD)
        if constexpr (std::is_same_v<Arch, xsimd::avx512bw>)
            if (cpu_has_vpclmulqdq()) return fold(x, ubytes(out), n, crc);
#endif
        return tiles(x, ubytes(out), n, crc);
    }
    // util/bytes.hpp's f32_to_le, kept here: kernel helpers live in this
    // anonymous namespace, so no copy compiled with AVX-512 flags can stand
    // in for another target's (common.hpp, load_f32).
    static void copy_le(const float* x, unsigned char* o, size_t n) {
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        for (size_t i = 0; i < n; ++i) {
            const uint32_t u = __builtin_bswap32(bits_of(x[i]));
            std::memcpy(o + 4 * i, &u, 4);
        }
#else
        if (n != 0) std::memcpy(o, x, 4 * n);
#endif
    }
    // out[0..n) = the floats of in's 4n little-endian bytes, *crc continued
    // over those bytes (exact either way: a corrupted frame must read as
    // one); false if any is NaN or Inf (out unspecified then).
    static bool run_from_le(const void* in, float* out, size_t n, uint32_t* crc) {
#if defined(GW_KERN_CRC_FOLD) && defined(GW_KERN_XSIMD)
        if constexpr (std::is_same_v<Arch, xsimd::avx512bw>)
            if (cpu_has_vpclmulqdq()) return fold_from_le(cbytes(in), out, n, crc);
#endif
        return tiles_from_le(cbytes(in), out, n, crc);
    }
    static void copy_from_le(const unsigned char* p, float* out, size_t n) {
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        for (size_t i = 0; i < n; ++i) out[i] = float_of(load_le32(p + 4 * i));
#else
        if (n != 0) std::memcpy(out, p, 4 * n);
#endif
    }
    // 4 KiB tiles: the copy, then the target's finiteness test on the
    // copied floats (the payload's may be misaligned) and the CRC, from L1.
    static bool tiles_from_le(const unsigned char* p, float* out, size_t n, uint32_t* crc) {
        constexpr size_t kTile = 1024;
        bool ok = true;
        for (size_t i = 0; i < n; i += kTile) {
            const size_t c = std::min(kTile, n - i);
            copy_from_le(p + 4 * i, out + i, c);
            ok = Norms<Arch>::all_finite(out + i, c) && ok;
            *crc = Crc<Arch>::crc32c(*crc, p + 4 * i, 4 * c);
        }
        return ok;
    }
    // 4 KiB tiles: the target's finiteness test, then the copy and the CRC
    // from L1.
    static bool tiles(const float* x, unsigned char* o, size_t n, uint32_t* crc) {
        constexpr size_t kTile = 1024;
        bool ok = true;
        for (size_t i = 0; i < n; i += kTile) {
            const size_t c = std::min(kTile, n - i);
            ok = Norms<Arch>::all_finite(x + i, c) && ok;
            copy_le(x + i, o + 4 * i, c);
            *crc = Crc<Arch>::crc32c(*crc, o + 4 * i, 4 * c);
        }
        return ok;
    }
#if defined(GW_KERN_CRC_FOLD) && defined(GW_KERN_XSIMD)
    // 64 floats at a time (fold_payload): one vfpclassps per vector, and the
    // CRC folded from the loaded registers.
    static bool fold(const float* x, unsigned char* o, size_t n, uint32_t* crc) {
        __mmask16 bad = 0;
        const bool ok = fold_payload<4>(
            o, n, crc,
            [&](size_t j, __m512i* z) {
                for (size_t r = 0; r < 4; ++r) {
                    const __m512 v = _mm512_loadu_ps(x + j + 16 * r);
                    bad |= _mm512_fpclass_ps_mask(v, kFpclassNanInf);
                    z[r] = _mm512_castps_si512(v);
                }
            },
            [&](size_t i0, size_t i1) {
                copy_le(x + i0, o + 4 * i0, i1 - i0);
                return Norms<ScalarArch>::all_finite(x + i0, i1 - i0);
            });
        return ok && bad == 0;
    }
    // The same loop the other way (x86 is little-endian: the payload's bytes
    // are the floats, and the CRC of the stored registers is the payload's).
    static bool fold_from_le(const unsigned char* p, float* out, size_t n, uint32_t* crc) {
        __mmask16 bad = 0;
        const bool ok = fold_payload<4>(
            ubytes(out), n, crc,
            [&](size_t j, __m512i* z) {
                for (size_t r = 0; r < 4; ++r) {
                    z[r] = _mm512_loadu_si512(p + 4 * j + 64 * r);
                    in_register(z[r]);
                    bad |= _mm512_fpclass_ps_mask(_mm512_castsi512_ps(z[r]), kFpclassNanInf);
                }
            },
            [&](size_t i0, size_t i1) {
                copy_from_le(p + 4 * i0, out + i0, i1 - i0);
                return Norms<ScalarArch>::all_finite(out + i0, i1 - i0);
            });
        return ok && bad == 0;
    }
#endif
};

template <class Arch>
constexpr void copy_crc_entries(Table& t) {
    t.f32_copy_finite_crc = &CopyCrc<Arch>::run;
    t.le32_copy_finite_crc = &CopyCrc<Arch>::run_from_le;
}

}  // namespace
}  // namespace gw::kern
