// Family "sign": sign_pack, sign_pack_residual, sign_unpack,
// sign_unpack_blocks (fixed blocks, a scale each), sign_accumulate,
// sign_accumulate_n (many fields), sign_accumulate_blocks (many fields of
// fixed blocks, a scale each) (bit (i & 7) of byte (i >> 3) is 1 iff x[i] <
// 0). Scalar code, vector body (movemask / expand from Ops<A>), table entries.
#pragma once

#include "kernels/common.hpp"

namespace gw::kern {
namespace {

template <class Arch>
struct Sign;  // vector body below; Sign<ScalarArch> is the scalar code

template <>
struct Sign<ScalarArch> {
    // i0 must be a multiple of 8. Writes bytes i0/8 .. ceil(n/8)-1.
    static void sign_pack_range(const float* x, size_t i0, size_t n, uint8_t* bits) {
        for (size_t i = i0; i < n; i += 8) {
            const size_t k_end = (n - i < 8) ? n - i : 8;
            unsigned b = 0;
            for (size_t k = 0; k < k_end; ++k) b |= unsigned(x[i + k] < 0.0f) << k;
            bits[i >> 3] = uint8_t(b);
        }
    }
    static void sign_pack(const float* x, size_t n, uint8_t* bits) {
        sign_pack_range(x, 0, n, bits);
    }

    static void sign_pack_residual_range(const float* x, size_t i0, size_t n, float s,
                                         uint8_t* bits, float* e) {
        const float neg = -s;
        for (size_t i = i0; i < n; i += 8) {
            const size_t k_end = (n - i < 8) ? n - i : 8;
            unsigned b = 0;
            for (size_t k = 0; k < k_end; ++k) {
                const float xi = x[i + k];
                const bool lt = xi < 0.0f;
                b |= unsigned(lt) << k;
                e[i + k] = xi - (lt ? neg : s);
            }
            bits[i >> 3] = uint8_t(b);
        }
    }
    static void sign_pack_residual(const float* x, size_t n, float s, uint8_t* bits, float* e) {
        sign_pack_residual_range(x, 0, n, s, bits, e);
    }

    static void sign_unpack_range(const uint8_t* bits, size_t i0, size_t n, float s, float* out) {
        const float neg = -s;
        size_t i = i0;
        for (; i < n && (i & 7) != 0; ++i) out[i] = ((bits[i >> 3] >> (i & 7)) & 1u) ? neg : s;
        const uint32_t sb = bits_of(s);  // -s is s with the sign bit flipped
        for (; i + 8 <= n; i += 8) {        // a byte at a time (vectorizable)
            const uint32_t b = bits[i >> 3];
            for (unsigned k = 0; k < 8; ++k) out[i + k] = float_of(sb ^ (((b >> k) & 1u) << 31));
        }
        for (; i < n; ++i) out[i] = ((bits[i >> 3] >> (i & 7)) & 1u) ? neg : s;
    }
    static void sign_unpack(const uint8_t* bits, size_t n, float s, float* out) {
        sign_unpack_range(bits, 0, n, s, out);
    }
    static void sign_unpack_blocks(const uint8_t* bits, const unsigned char* scales, size_t d,
                                   size_t n, float* out) {
        for (size_t i = 0, b = 0; i < n; i += d, ++b)
            sign_unpack_range(bits + i / 8, 0, std::min(d, n - i), load_f32(scales + 4 * b),
                              out + i);
    }

    static void sign_accumulate_range(const uint8_t* bits, size_t i0, size_t n, float v,
                                      float* acc) {
        const float neg = -v;
        size_t i = i0;
        for (; i < n && (i & 7) != 0; ++i)
            acc[i] = acc[i] + (((bits[i >> 3] >> (i & 7)) & 1u) ? neg : v);
        const uint32_t vb = bits_of(v);
        for (; i + 8 <= n; i += 8) {
            const uint32_t b = bits[i >> 3];
            for (unsigned k = 0; k < 8; ++k)
                acc[i + k] = acc[i + k] + float_of(vb ^ (((b >> k) & 1u) << 31));
        }
        for (; i < n; ++i) acc[i] = acc[i] + (((bits[i >> 3] >> (i & 7)) & 1u) ? neg : v);
    }
    static void sign_accumulate(const uint8_t* bits, size_t n, float v, float* acc) {
        sign_accumulate_range(bits, 0, n, v, acc);
    }
    // Elements are independent: field after field over [i0, n) is the same
    // per-element order as field after field over everything.
    static void sign_accumulate_n_range(const uint8_t* const* bits, const float* v, size_t m,
                                        size_t i0, size_t n, float* acc) {
        for (size_t j = 0; j < m; ++j) sign_accumulate_range(bits[j], i0, n, v[j], acc);
    }
    static void sign_accumulate_n(const uint8_t* const* bits, const float* v, size_t m, size_t n,
                                  float* acc) {
        sign_accumulate_n_range(bits, v, m, 0, n, acc);
    }
    // Block blk's fields and values, its first element i: bits[j] + i / 8,
    // alpha * its scale. (The block's index is counted, not i / d: a 64-bit
    // division per block was a tenth of a 64-element block's time.)
    static void block_fields(const uint8_t* const* bits, const unsigned char* const* scales,
                             float alpha, size_t m, size_t i, size_t blk, const uint8_t** b,
                             float* v) {
        for (size_t j = 0; j < m; ++j) {
            b[j] = bits[j] + i / 8;
            v[j] = alpha * load_f32(scales[j] + 4 * blk);  // what accumulate adds
        }
    }
    static void sign_accumulate_blocks(const uint8_t* const* bits,
                                       const unsigned char* const* scales, float alpha, size_t m,
                                       size_t d, size_t n, float* acc) {
        for (size_t i = 0, blk = 0; i < n; i += d, ++blk) {
            const uint8_t* b[kSignAccumulateMax];
            float v[kSignAccumulateMax];
            block_fields(bits, scales, alpha, m, i, blk, b, v);
            sign_accumulate_n_range(b, v, m, 0, std::min(d, n - i), acc + i);
        }
    }
};

#if defined(GW_KERN_XSIMD)
template <class Arch>
struct Sign : VecBase<Arch> {
    using B = VecBase<Arch>;
    using S = Sign<ScalarArch>;
    using typename B::BF;
    using typename B::F;
    using typename B::O;
    using B::loadf;
    using B::W;

    // Groups of G elements (G/8 whole bytes) after the 64-element main loop (pack_bits').
    static constexpr size_t G = W < 8 ? 8 : W;

    static void sign_pack(const float* x, size_t n, uint8_t* bits) {
        const F zero(0.0f);
        const size_t i =
            B::pack_bits(n, bits, [&](size_t j) { return O::movemask(loadf(x + j) < zero); });
        S::sign_pack_range(x, i, n, bits);
    }

    static void sign_pack_residual(const float* x, size_t n, float s, uint8_t* bits, float* e) {
        const F zero(0.0f), pos(s), neg(-s);
        const size_t i = B::pack_bits(n, bits, [&](size_t j) {  // e may alias x: load, then store
            const F v = loadf(x + j);
            const BF lt = v < zero;
            (v - xsimd::select(lt, neg, pos)).store_unaligned(e + j);
            return O::movemask(lt);
        });
        S::sign_pack_residual_range(x, i, n, s, bits, e);
    }

    // out/acc from sign bits; reads only bytes [0, ceil(n/8)).
    template <class Store>
    static size_t unpack_loop(const uint8_t* bits, size_t n, Store&& store) {
        size_t i = 0;
        for (; i + 64 <= n; i += 64) {
            uint64_t word;
            std::memcpy(&word, bits + i / 8, 8);
            unroll<64 / W>([&](auto kk) {
                constexpr size_t K = decltype(kk)::value;
                store(i + K * W, O::expand(uint32_t(word >> (K * W))));
            });
        }
        for (; i + G <= n; i += G) {
            uint32_t word = 0;
            std::memcpy(&word, bits + i / 8, G / 8);
            unroll<G / W>([&](auto kk) {
                constexpr size_t K = decltype(kk)::value;
                store(i + K * W, O::expand(word >> (K * W)));
            });
        }
        return i;
    }

    static void sign_unpack(const uint8_t* bits, size_t n, float s, float* out) {
        const F pos(s), neg(-s);
        const size_t i = unpack_loop(bits, n, [&](size_t j, const BF& m) {
            xsimd::select(m, neg, pos).store_unaligned(out + j);
        });
        S::sign_unpack_range(bits, i, n, s, out);
    }
    // Inlined per block: a 64-element block is one pass of unpack_loop's
    // first loop, where a table call per block cost as much again.
    static void sign_unpack_blocks(const uint8_t* bits, const unsigned char* scales, size_t d,
                                   size_t n, float* out) {
        for (size_t i = 0, b = 0; i < n; i += d, ++b)
            sign_unpack(bits + i / 8, std::min(d, n - i), load_f32(scales + 4 * b), out + i);
    }

    static void sign_accumulate(const uint8_t* bits, size_t n, float v, float* acc) {
        const F pos(v), neg(-v);
        const size_t i = unpack_loop(bits, n, [&](size_t j, const BF& m) {
            (loadf(acc + j) + xsimd::select(m, neg, pos)).store_unaligned(acc + j);
        });
        S::sign_accumulate_range(bits, i, n, v, acc);
    }

    // Each vector of acc is loaded once, takes its m terms in field order,
    // and is stored once.
    static void sign_accumulate_n(const uint8_t* const* bits, const float* v, size_t m, size_t n,
                                  float* acc) {
        with_m(m, [&](auto mm) {
            const size_t i = accumulate_n_body<decltype(mm)::value>(bits, v, n, acc);
            S::sign_accumulate_n_range(bits, v, m, i, n, acc);
        });
    }
    static void sign_accumulate_blocks(const uint8_t* const* bits,
                                       const unsigned char* const* scales, float alpha, size_t m,
                                       size_t d, size_t n, float* acc) {
        with_m(m, [&](auto mm) {
            for (size_t i = 0, blk = 0; i < n; i += d, ++blk) {
                const size_t len = std::min(d, n - i);
                const uint8_t* b[kSignAccumulateMax];
                float v[kSignAccumulateMax];
                S::block_fields(bits, scales, alpha, m, i, blk, b, v);
                const size_t k = accumulate_n_body<decltype(mm)::value>(b, v, len, acc + i);
                if (k < len) S::sign_accumulate_n_range(b, v, m, k, len, acc + i);
            }
        });
    }

  private:
    // f(Idx<m>{}) for m in 1..kSignAccumulateMax: the field count a constant,
    // so the fields' values stay in registers (a runtime count kept them on
    // the stack, and a 64-element block paid a reload per vector: 2x).
    template <class Fn>
    static void with_m(size_t m, Fn&& f) {
        static_assert(kSignAccumulateMax == 8, "one case per count");
        switch (m) {
        case 1: return f(Idx<1>{});
        case 2: return f(Idx<2>{});
        case 3: return f(Idx<3>{});
        case 4: return f(Idx<4>{});
        case 5: return f(Idx<5>{});
        case 6: return f(Idx<6>{});
        case 7: return f(Idx<7>{});
        case 8: return f(Idx<8>{});
        default: return;  // m == 0: nothing to add
        }
    }
    // 64 elements at a time, then groups of G (a 64-element block is one
    // pass of the first loop, a 16- or 32-element one of the second).
    template <size_t M>
    static size_t accumulate_n_body(const uint8_t* const* bits, const float* v, size_t n,
                                    float* acc) {
        F pos[M], neg[M];
        for (size_t j = 0; j < M; ++j) {
            pos[j] = F(v[j]);
            neg[j] = F(-v[j]);
        }
        size_t i = 0;
        for (; i + 64 <= n; i += 64) {
            uint64_t word[M];
            for (size_t j = 0; j < M; ++j) std::memcpy(&word[j], bits[j] + i / 8, 8);
            unroll<64 / W>([&](auto kk) {
                constexpr size_t K = decltype(kk)::value;
                F a = loadf(acc + i + K * W);
                for (size_t j = 0; j < M; ++j)
                    a = a + xsimd::select(O::expand(uint32_t(word[j] >> (K * W))), neg[j], pos[j]);
                a.store_unaligned(acc + i + K * W);
            });
        }
        for (; i + G <= n; i += G) {
            uint32_t word[M] = {};
            for (size_t j = 0; j < M; ++j) std::memcpy(&word[j], bits[j] + i / 8, G / 8);
            unroll<G / W>([&](auto kk) {
                constexpr size_t K = decltype(kk)::value;
                F a = loadf(acc + i + K * W);
                for (size_t j = 0; j < M; ++j)
                    a = a + xsimd::select(O::expand(word[j] >> (K * W)), neg[j], pos[j]);
                a.store_unaligned(acc + i + K * W);
            });
        }
        return i;
    }
};
#endif  // GW_KERN_XSIMD

template <class Arch>
constexpr void sign_entries(Table& t) {
    using K = Sign<Arch>;
    t.sign_pack = &K::sign_pack;
    t.sign_pack_residual = &K::sign_pack_residual;
    t.sign_unpack = &K::sign_unpack;
    t.sign_unpack_blocks = &K::sign_unpack_blocks;
    t.sign_accumulate = &K::sign_accumulate;
    t.sign_accumulate_n = &K::sign_accumulate_n;
    t.sign_accumulate_blocks = &K::sign_accumulate_blocks;
}

}  // namespace
}  // namespace gw::kern
