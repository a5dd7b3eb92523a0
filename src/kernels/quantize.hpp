// Family "quantize": the stochastic grid quantizer behind the quant, QSGD,
// TernGrad and sparse-quant codecs (docs/algorithms.md s.5), max_abs_key,
// and the Philox stream those codecs draw from (rng_u32, W blocks at once).
// Scalar code, vector body, table entries. The arithmetic is the one stated
// in kernels.hpp; every step is exact or a single IEEE operation, so every
// target gives the same codes and residuals.
#pragma once

#include "kernels/common.hpp"
#include "util/bytes.hpp"
#include "util/rng.hpp"

namespace gw::kern {
namespace {

template <class Arch>
struct Quantize;  // vector body below; Quantize<ScalarArch> is the scalar code

template <>
struct Quantize<ScalarArch> {
    // src/util/rng.cpp is the reference (and the scalar target): an ordinary
    // external function, so sharing it between arch files is safe.
    static void rng_u32(uint64_t seed, uint32_t step, uint32_t tensor, uint64_t first,
                        uint32_t* out, size_t n) {
        gw::rng_u32(seed, step, tensor, first, out, n);
    }

    static uint32_t max_abs_key_range(const float* x, size_t i0, size_t n, uint32_t m) {
        for (size_t i = i0; i < n; ++i) {
            const uint32_t k = bits_of(x[i]) & 0x7FFFFFFFu;
            m = k > m ? k : m;
        }
        return m;
    }
    static uint32_t max_abs_key(const float* x, size_t n) { return max_abs_key_range(x, 0, n, 0); }

    // Grid index of x (see kernels.hpp): t, floor, stochastic step, clamp.
    static float index_of(float x, float delta, float lo, float hi, bool pair, uint32_t w) {
        float t = x / delta;
        if (pair) t = (t + 1.0f) * 0.5f;
        const float f = __builtin_floorf(t);
        const float r = t - f;
        const float u = float(w >> 8) * 0x1.0p-24f;
        float c = f + (u < r ? 1.0f : 0.0f);
        c = c < lo ? lo : c;
        return c > hi ? hi : c;
    }
    static float value_of(float c, float delta, bool pair) {
        return (pair ? c * 2.0f - 1.0f : c) * delta;
    }
    static void stoch_round_range(const float* x, size_t i0, size_t n, float delta, int32_t lo,
                                  int32_t hi, bool pair, const uint32_t* words, uint32_t* codes,
                                  float* residual) {
        const float flo = float(lo), fhi = float(hi);
        for (size_t i = i0; i < n; ++i) {
            const float c = index_of(x[i], delta, flo, fhi, pair, words[i]);
            codes[i] = uint32_t(int32_t(c - flo));
            if (residual) residual[i] = x[i] - value_of(c, delta, pair);
        }
    }
    static void stoch_round(const float* x, size_t n, float delta, int32_t lo, int32_t hi,
                            bool pair, const uint32_t* words, uint32_t* codes, float* residual) {
        stoch_round_range(x, 0, n, delta, lo, hi, pair, words, codes, residual);
    }

    // Revision 2 (kernels.hpp): the low 16 bits of the tie word decide when
    // the byte equals q, so P(up) is revision 1's exactly.
    static bool tie_up(const StreamAt& at, uint64_t i, float rest) {
        const uint32_t w = rng_word(at.seed, at.step, at.tensor, kTieWord + at.first + i);
        return float(w & 0xFFFFu) < rest;
    }
    // A tie (byte == q) the vector code wrote rounded down: x again, its
    // tie word, and the lane rewritten without a branch on the outcome.
    static void settle_tie(float x, float delta, int32_t lo, int32_t hi, bool pair,
                           const StreamAt& at, uint64_t i, uint32_t* codes, float* residual) {
        float t = x / delta;
        if (pair) t = (t + 1.0f) * 0.5f;
        const float f = __builtin_floorf(t);
        const float g = (t - f) * 256.0f;
        const float flo = float(lo), fhi = float(hi);
        float c = f + (tie_up(at, i, (g - __builtin_floorf(g)) * 65536.0f) ? 1.0f : 0.0f);
        c = c < flo ? flo : (c > fhi ? fhi : c);
        codes[i] = uint32_t(int32_t(c - flo));
        if (residual) residual[i] = x - value_of(c, delta, pair);
    }
    static float index_of8(float x, float delta, float lo, float hi, bool pair, uint8_t b,
                           const StreamAt& at, uint64_t i) {
        float t = x / delta;
        if (pair) t = (t + 1.0f) * 0.5f;
        const float f = __builtin_floorf(t);
        const float g = (t - f) * 256.0f;
        const float q = __builtin_floorf(g);
        const float fb = float(b);
        const bool up = fb < q || (fb == q && tie_up(at, i, (g - q) * 65536.0f));
        float c = f + (up ? 1.0f : 0.0f);
        c = c < lo ? lo : c;
        return c > hi ? hi : c;
    }
    static void stoch_round8_range(const float* x, size_t i0, size_t n, float delta, int32_t lo,
                                   int32_t hi, bool pair, const uint8_t* bytes,
                                   const StreamAt& at, uint32_t* codes, float* residual) {
        const float flo = float(lo), fhi = float(hi);
        for (size_t i = i0; i < n; ++i) {
            const float c = index_of8(x[i], delta, flo, fhi, pair, bytes[i], at, i);
            codes[i] = uint32_t(int32_t(c - flo));
            if (residual) residual[i] = x[i] - value_of(c, delta, pair);
        }
    }
    static void stoch_round8(const float* x, size_t n, float delta, int32_t lo, int32_t hi,
                             bool pair, const uint8_t* bytes, const StreamAt& at, uint32_t* codes,
                             float* residual) {
        stoch_round8_range(x, 0, n, delta, lo, hi, pair, bytes, at, codes, residual);
    }
    // Bit packing (kernels.hpp's pack_codes / unpack_codes): plain loops,
    // compiled for each target, whose compiler vectorizes them for its ISA.
    // Codes of W bits (1, 2 or 4), 8 / W per byte, with constant shifts.
    template <unsigned W>
    static void unpack_small(const uint8_t* in, size_t c, uint32_t* codes) {
        constexpr unsigned per = 8 / W, mask = (1u << W) - 1;
        const size_t full = c / per;
        for (size_t j = 0; j < full; ++j)
            for (unsigned k = 0; k < per; ++k) codes[j * per + k] = (in[j] >> (k * W)) & mask;
        for (size_t i = full * per; i < c; ++i)
            codes[i] = (in[full] >> ((i - full * per) * W)) & mask;
    }

    // The same, packing: constant shifts let the compiler vectorize the loop.
    template <unsigned W>
    static void pack_small(const uint32_t* codes, size_t c, uint8_t* out) {
        constexpr unsigned per = 8 / W;
        const size_t full = c / per;
        for (size_t j = 0; j < full; ++j) {
            uint32_t b = 0;
            for (unsigned k = 0; k < per; ++k) b |= codes[j * per + k] << (k * W);
            out[j] = static_cast<uint8_t>(b);
        }
        if (c % per) {
            uint32_t b = 0;
            for (unsigned k = 0; k < c % per; ++k) b |= codes[full * per + k] << (k * W);
            out[full] = static_cast<uint8_t>(b);
        }
    }

    static void pack_codes(const uint32_t* codes, size_t c, unsigned width, uint8_t* out) {
        // Widths that divide a byte or fill two: whole bytes, no bit buffer.
        if (width == 8) {
            for (size_t i = 0; i < c; ++i) out[i] = static_cast<uint8_t>(codes[i]);
            return;
        }
        if (width == 16) {
            for (size_t i = 0; i < c; ++i)
                store_le<uint16_t>(out + 2 * i, static_cast<uint16_t>(codes[i]));
            return;
        }
        if (width == 1) return pack_small<1>(codes, c, out);
        if (width == 2) return pack_small<2>(codes, c, out);
        if (width == 4) return pack_small<4>(codes, c, out);
        uint64_t buf = 0;
        unsigned have = 0;
        for (size_t i = 0; i < c; ++i) {
            buf |= uint64_t(codes[i]) << have;
            have += width;
            while (have >= 8) {
                *out++ = static_cast<uint8_t>(buf);
                buf >>= 8;
                have -= 8;
            }
        }
        if (have) *out = static_cast<uint8_t>(buf);
    }

    static void unpack_codes(const uint8_t* in, size_t c, unsigned width, uint32_t* codes) {
        if (width == 8) {
            for (size_t i = 0; i < c; ++i) codes[i] = in[i];
            return;
        }
        if (width == 16) {
            for (size_t i = 0; i < c; ++i) codes[i] = load_le<uint16_t>(in + 2 * i);
            return;
        }
        if (width == 1) return unpack_small<1>(in, c, codes);
        if (width == 2) return unpack_small<2>(in, c, codes);
        if (width == 4) return unpack_small<4>(in, c, codes);
        const uint64_t mask = (uint64_t(1) << width) - 1;
        uint64_t buf = 0;
        unsigned have = 0;
        for (size_t i = 0; i < c; ++i) {
            while (have < width) {
                buf |= uint64_t(*in++) << have;
                have += 8;
            }
            codes[i] = static_cast<uint32_t>(buf & mask);
            buf >>= width;
            have -= width;
        }
    }

    static void dequant_range(const uint32_t* codes, size_t i0, size_t n, float delta, int32_t lo,
                              bool pair, float* out) {
        for (size_t i = i0; i < n; ++i)
            out[i] = value_of(float(int32_t(codes[i]) + lo), delta, pair);
    }
    static void dequant(const uint32_t* codes, size_t n, float delta, int32_t lo, bool pair,
                        float* out) {
        dequant_range(codes, 0, n, delta, lo, pair, out);
    }
    static void dequant_acc_range(const uint32_t* codes, size_t i0, size_t n, float delta,
                                  int32_t lo, bool pair, float alpha, float* acc) {
        for (size_t i = i0; i < n; ++i) {
            const float t = alpha * value_of(float(int32_t(codes[i]) + lo), delta, pair);
            acc[i] = acc[i] + t;
        }
    }
    static void dequant_accumulate(const uint32_t* codes, size_t n, float delta, int32_t lo,
                                   bool pair, float alpha, float* acc) {
        dequant_acc_range(codes, 0, n, delta, lo, pair, alpha, acc);
    }
};

#if defined(GW_KERN_XSIMD)
template <class Arch>
struct Quantize : VecBase<Arch> {
    using B = VecBase<Arch>;
    using S = Quantize<ScalarArch>;
    using typename B::F;
    using typename B::I;
    using typename B::O;
    using B::elementwise;
    using B::loadf;
    using B::W;

    static I loadi(const uint32_t* p) {
        return I::load_unaligned(reinterpret_cast<const int32_t*>(p));
    }
    static void storei(const I& v, uint32_t* p) {
        v.store_unaligned(reinterpret_cast<int32_t*>(p));
    }

    alignas(64) static constexpr int32_t kIota[16] = {0, 1, 2,  3,  4,  5,  6,  7,
                                                      8, 9, 10, 11, 12, 13, 14, 15};

    // Philox4x32-10 on W counters at once (util/rng.hpp): block b gives words
    // 4b..4b+3 of the stream. Three groups of W blocks go through the rounds
    // together (one group's ten rounds are a chain of dependent multiplies),
    // then single groups; partial blocks at either end, the last < W blocks,
    // and groups whose low counter word would wrap go to the scalar code.
    static void rng_u32(uint64_t seed, uint32_t step, uint32_t tensor, uint64_t first,
                        uint32_t* out, size_t n) {
        size_t j = 0;
        if (first & 3) {
            j = 4 - size_t(first & 3);
            if (j > n) j = n;
            S::rng_u32(seed, step, tensor, first, out, j);
        }
        uint64_t block = (first + j) >> 2;
        while (n - j >= 12 * W) philox_groups<3>(seed, step, tensor, block, out, j);
        while (n - j >= 4 * W) philox_groups<1>(seed, step, tensor, block, out, j);
        if (j < n) S::rng_u32(seed, step, tensor, block * 4, out + j, n - j);
    }

    // G groups of W blocks from `block` into out + j; advances both.
    template <size_t G>
    static void philox_groups(uint64_t seed, uint32_t step, uint32_t tensor, uint64_t& block,
                              uint32_t* out, size_t& j) {
        if (uint32_t(block) > 0xFFFFFFFFu - uint32_t(G * W - 1)) {
            S::rng_u32(seed, step, tensor, block * 4, out + j, 4 * G * W);
        } else {
            // Counters built in registers: lanes stored and reloaded as a vector
            // stall store forwarding.
            const I lo = I(int32_t(uint32_t(block))) + I::load_aligned(kIota),
                    hi(int32_t(uint32_t(block >> 32)));
            I c[G][4];
            for (size_t g = 0; g < G; ++g) {
                c[g][0] = lo + I(int32_t(g * W));
                c[g][1] = hi;
                c[g][2] = I(static_cast<int32_t>(step));
                c[g][3] = I(static_cast<int32_t>(tensor));
            }
            uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
            for (int round = 0; round < 10; ++round) {
                const I vk0 = I(int32_t(k0)), vk1 = I(int32_t(k1));
                for (size_t g = 0; g < G; ++g) {
                    I h0, l0, h1, l1;
                    O::mulhilo(c[g][0], 0xD2511F53u, h0, l0);
                    O::mulhilo(c[g][2], 0xCD9E8D57u, h1, l1);
                    c[g][0] = h1 ^ c[g][1] ^ vk0;
                    c[g][1] = l1;
                    c[g][2] = h0 ^ c[g][3] ^ vk1;
                    c[g][3] = l0;
                }
                k0 += 0x9E3779B9u;
                k1 += 0xBB67AE85u;
            }
            for (size_t g = 0; g < G; ++g)
                store_blocks(c[g][0], c[g][1], c[g][2], c[g][3], out + j + 4 * W * g);
        }
        j += 4 * G * W;
        block += G * W;
    }

    // Lane l of c0..c3 is block l's words 0..3; out gets them block by block.
    // zip_lo / zip_hi interleave within each 128-bit lane on every x86 target
    // (unpacklo / unpackhi; on NEON zip1 / zip2 of the one 128-bit register),
    // so 128-bit lane q of v_w holds block 4q + w.
    static void store_blocks(const I& c0, const I& c1, const I& c2, const I& c3, uint32_t* out) {
        using L = xsimd::batch<int64_t, Arch>;
        const L a = xsimd::bitwise_cast<L>(xsimd::zip_lo(c0, c1)),
                b = xsimd::bitwise_cast<L>(xsimd::zip_lo(c2, c3)),
                c = xsimd::bitwise_cast<L>(xsimd::zip_hi(c0, c1)),
                d = xsimd::bitwise_cast<L>(xsimd::zip_hi(c2, c3));
        alignas(64) uint32_t v[4][W];
        xsimd::zip_lo(a, b).store_aligned(reinterpret_cast<int64_t*>(v[0]));
        xsimd::zip_hi(a, b).store_aligned(reinterpret_cast<int64_t*>(v[1]));
        xsimd::zip_lo(c, d).store_aligned(reinterpret_cast<int64_t*>(v[2]));
        xsimd::zip_hi(c, d).store_aligned(reinterpret_cast<int64_t*>(v[3]));
        for (size_t q = 0; q < W / 4; ++q)
            for (size_t w = 0; w < 4; ++w) std::memcpy(out + 16 * q + 4 * w, v[w] + 4 * q, 16);
    }

    static uint32_t max_abs_key(const float* x, size_t n) {
        // Keys are below 2^31, so the signed max is the unsigned one.
        const I mask(0x7FFFFFFF);
        I m(0);
        const size_t i = elementwise(n, [&](size_t j) {
            m = xsimd::max(m, xsimd::bitwise_cast<I>(loadf(x + j)) & mask);
        });
        alignas(64) int32_t lanes[W];
        m.store_aligned(lanes);
        uint32_t r = 0;
        for (size_t k = 0; k < W; ++k) r = uint32_t(lanes[k]) > r ? uint32_t(lanes[k]) : r;
        return S::max_abs_key_range(x, i, n, r);
    }

    template <bool Pair>
    static F index_of(const F& xv, const F& dv, const F& flo, const F& fhi, const I& w) {
        F t = O::div(xv, dv);
        if constexpr (Pair) t = (t + F(1.0f)) * F(0.5f);
        const F f = O::floor(t);
        const F r = t - f;
        const F u = xsimd::to_float((w >> 8) & I(0x00FFFFFF)) * F(0x1.0p-24f);
        const F c = f + xsimd::select(u < r, F(1.0f), F(0.0f));
        return xsimd::min(xsimd::max(c, flo), fhi);
    }
    template <bool Pair>
    static F value_of(const F& c, const F& dv) {
        if constexpr (Pair) return (c * F(2.0f) - F(1.0f)) * dv;
        return c * dv;
    }

    template <bool Pair>
    static size_t stoch_round_impl(const float* x, size_t n, float delta, int32_t lo, int32_t hi,
                                   const uint32_t* words, uint32_t* codes, float* residual) {
        const F dv(delta), flo(static_cast<float>(lo)), fhi(static_cast<float>(hi));
        if (residual)
            return elementwise(n, [&](size_t j) {
                const F xv = loadf(x + j);
                const F c = index_of<Pair>(xv, dv, flo, fhi, loadi(words + j));
                storei(xsimd::to_int(c - flo), codes + j);
                (xv - value_of<Pair>(c, dv)).store_unaligned(residual + j);
            });
        return elementwise(n, [&](size_t j) {
            const F c = index_of<Pair>(loadf(x + j), dv, flo, fhi, loadi(words + j));
            storei(xsimd::to_int(c - flo), codes + j);
        });
    }
    static void stoch_round(const float* x, size_t n, float delta, int32_t lo, int32_t hi,
                            bool pair, const uint32_t* words, uint32_t* codes, float* residual) {
        const size_t i = pair ? stoch_round_impl<true>(x, n, delta, lo, hi, words, codes, residual)
                              : stoch_round_impl<false>(x, n, delta, lo, hi, words, codes, residual);
        S::stoch_round_range(x, i, n, delta, lo, hi, pair, words, codes, residual);
    }

    // Revision 2: every lane decided by its byte, except where the byte
    // equals q (1 in 256). Those lanes are written rounded down and their
    // masks kept; each run of kTieRun elements is then settled lane by lane.
    // No branch or call in the vector loop (a call would spill every vector
    // register); in place (residual == x) the run's x is kept for the ties.
    static constexpr size_t kTieRun = 256;
    template <bool Pair>
    static size_t stoch_round8_impl(const float* x, size_t n, float delta, int32_t lo,
                                    int32_t hi, const uint8_t* bytes, const StreamAt& at,
                                    uint32_t* codes, float* residual) {
        const F dv(delta), flo(static_cast<float>(lo)), fhi(static_cast<float>(hi));
        const bool keep = residual == x;
        alignas(64) float saved[kTieRun];
        uint32_t masks[kTieRun / 4];
        size_t done = 0;
        while (n - done >= W) {
            const size_t run = n - done < kTieRun ? n - done : kTieRun;
            const size_t got = elementwise(run, [&](size_t jj) {
                const size_t j = done + jj;
                const F xv = loadf(x + j);
                F t = O::div(xv, dv);
                if constexpr (Pair) t = (t + F(1.0f)) * F(0.5f);
                const F f = O::floor(t);
                const F g = (t - f) * F(256.0f);
                const F q = O::floor(g);
                const F fb = xsimd::to_float(O::load_u8(bytes + j));
                const F c = xsimd::min(
                    xsimd::max(f + xsimd::select(fb < q, F(1.0f), F(0.0f)), flo), fhi);
                masks[jj / W] = O::movemask(fb == q);
                storei(xsimd::to_int(c - flo), codes + j);
                if (residual) {
                    if (keep) xv.store_aligned(saved + jj);
                    (xv - value_of<Pair>(c, dv)).store_unaligned(residual + j);
                }
            });
            const float* xs = keep ? saved : x + done;
            for (size_t v = 0; v < got / W; ++v)
                for (uint32_t m = masks[v]; m; m &= m - 1) {
                    const size_t jj = v * W + unsigned(__builtin_ctz(m));
                    S::settle_tie(xs[jj], delta, lo, hi, Pair, at, done + jj, codes, residual);
                }
            done += got;
            if (got < run) break;  // fewer than W left: the scalar code's
        }
        return done;
    }
    static void stoch_round8(const float* x, size_t n, float delta, int32_t lo, int32_t hi,
                             bool pair, const uint8_t* bytes, const StreamAt& at, uint32_t* codes,
                             float* residual) {
        const size_t i =
            pair ? stoch_round8_impl<true>(x, n, delta, lo, hi, bytes, at, codes, residual)
                 : stoch_round8_impl<false>(x, n, delta, lo, hi, bytes, at, codes, residual);
        S::stoch_round8_range(x, i, n, delta, lo, hi, pair, bytes, at, codes, residual);
    }

    template <bool Pair, class Fn>
    static size_t dequant_impl(const uint32_t* codes, size_t n, float delta, int32_t lo, Fn&& fn) {
        const F dv(delta);
        const I ilo(lo);
        return elementwise(n, [&](size_t j) {
            fn(j, value_of<Pair>(xsimd::to_float(loadi(codes + j) + ilo), dv));
        });
    }
    static void dequant(const uint32_t* codes, size_t n, float delta, int32_t lo, bool pair,
                        float* out) {
        auto put = [&](size_t j, const F& v) { v.store_unaligned(out + j); };
        const size_t i = pair ? dequant_impl<true>(codes, n, delta, lo, put)
                              : dequant_impl<false>(codes, n, delta, lo, put);
        S::dequant_range(codes, i, n, delta, lo, pair, out);
    }
    static void dequant_accumulate(const uint32_t* codes, size_t n, float delta, int32_t lo,
                                   bool pair, float alpha, float* acc) {
        const F va(alpha);
        auto add = [&](size_t j, const F& v) {
            const F t = va * v;
            (loadf(acc + j) + t).store_unaligned(acc + j);
        };
        const size_t i = pair ? dequant_impl<true>(codes, n, delta, lo, add)
                              : dequant_impl<false>(codes, n, delta, lo, add);
        S::dequant_acc_range(codes, i, n, delta, lo, pair, alpha, acc);
    }
};
#endif  // GW_KERN_XSIMD

template <class Arch>
constexpr void quantize_entries(Table& t) {
    using K = Quantize<Arch>;
    t.rng_u32 = &K::rng_u32;
    t.max_abs_key = &K::max_abs_key;
    t.stoch_round = &K::stoch_round;
    t.stoch_round8 = &K::stoch_round8;
    // The scalar struct's loops, compiled for this target.
    t.pack_codes = &Quantize<ScalarArch>::pack_codes;
    t.unpack_codes = &Quantize<ScalarArch>::unpack_codes;
    t.dequant = &K::dequant;
    t.dequant_accumulate = &K::dequant_accumulate;
}

}  // namespace
}  // namespace gw::kern
