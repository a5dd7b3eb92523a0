// Family "ef_sign": the error-feedback combine fused with what the scaled-sign
// step does to its result p, so p is never stored, not even to a tile in
// cache: ef_sum_abs_lanes (pass 1: |p| into the 16 sum_abs lanes) and
// ef_sign_step (pass 2: sign bits, residual, momentum); ef_sign_defer (both
// in one pass, the residual left to the next read); ef_sign_blocks (fixed
// blocks in one pass, each block's residual settled while it is in L1). Per
// element the same operations as ef_combine followed by sum_abs_lanes /
// sign_pack_residual / momentum_update (kernels.hpp), so the same bits.
// scaled_sign_blocks is the same block close without the combine: the
// scaled-sign codec's encode of fixed blocks. Scalar code, vector body,
// table entries.
#pragma once

#include <cmath>

#include "kernels/ef.hpp"
#include "kernels/norms.hpp"
#include "kernels/sign.hpp"

namespace gw::kern {
namespace {

// The end of a block of p whose |p| sums to l1: the scale, then the bits
// and, if e is not null, the residual into e (ef_sign_blocks: in place, the
// same bits again).
template <class Arch>
bool close_block(double l1, size_t len, unsigned char* scale, uint8_t* bits, const float* p,
                 float* e) {
    if (!std::isfinite(l1)) return false;
    const float s = static_cast<float>(l1 / static_cast<double>(len));
    store_f32(scale, s);
    if (e)
        Sign<Arch>::sign_pack_residual(p, len, s, bits, e);
    else
        Sign<Arch>::sign_pack(p, len, bits);
    if (s == 0.0f) std::memset(bits, 0, (len + 7) / 8);  // the canonical zero block
    return true;
}

template <class Arch>
struct EfSign;  // vector body below; EfSign<ScalarArch> is the scalar code

template <>
struct EfSign<ScalarArch> {
    using E = Ef<ScalarArch>;
    // i0 must be a multiple of 16 (lane i0 % 16 == 0).
    static void sum_abs_range(const float* g, const float* m, const float* e, EfCoef c,
                              size_t i0, size_t n, double* lanes) {
        for (size_t i = i0; i < n; ++i) {
            float m1;
            const float p = E::combine(g[i], m[i], e[i], c, &m1);
            lanes[i & 15] += double(float_of(bits_of(p) & 0x7FFFFFFFu));  // |p|
        }
    }
    static void ef_sum_abs_lanes(const float* g, const float* m, const float* e, EfCoef c,
                                 size_t n, double* lanes) {
        sum_abs_range(g, m, e, c, 0, n, lanes);
    }

    // i0 must be a multiple of 8. Writes bytes i0/8 .. ceil(n/8)-1.
    static void sign_step_range(const float* g, const float* m, const float* e, EfCoef c,
                                float s, size_t i0, size_t n, uint8_t* bits, float* e_out,
                                float* m_out) {
        const float neg = -s;
        for (size_t i = i0; i < n; i += 8) {
            const size_t k_end = (n - i < 8) ? n - i : 8;
            unsigned b = 0;
            for (size_t k = 0; k < k_end; ++k) {
                float m1;
                const float p = E::combine(g[i + k], m[i + k], e[i + k], c, &m1);
                const bool lt = p < 0.0f;
                b |= unsigned(lt) << k;
                if (e_out) e_out[i + k] = p - (lt ? neg : s);
                if (m_out) m_out[i + k] = m1;
            }
            bits[i >> 3] = uint8_t(b);
        }
    }
    static void ef_sign_step(const float* g, const float* m, const float* e, EfCoef c, float s,
                             size_t n, uint8_t* bits, float* e_out, float* m_out) {
        sign_step_range(g, m, e, c, s, 0, n, bits, e_out, m_out);
    }

    // i0 must be a multiple of 8. e is settled first: e - (e < 0 ? -sp : sp).
    static void defer_range(const float* g, const float* m, const float* e, EfCoef c, float sp,
                            size_t i0, size_t n, uint8_t* bits, float* e_out, float* m_out,
                            double* lanes) {
        const float neg = -sp;
        for (size_t i = i0; i < n; i += 8) {
            const size_t k_end = (n - i < 8) ? n - i : 8;
            unsigned b = 0;
            for (size_t k = 0; k < k_end; ++k) {
                const float ev = e[i + k];
                const float et = ev - (ev < 0.0f ? neg : sp);
                float m1;
                const float p = E::combine(g[i + k], m[i + k], et, c, &m1);
                b |= unsigned(p < 0.0f) << k;
                e_out[i + k] = p;
                if (m_out) m_out[i + k] = m1;
                lanes[(i + k) & 15] += double(float_of(bits_of(p) & 0x7FFFFFFFu));
            }
            bits[i >> 3] = uint8_t(b);
        }
    }
    static void ef_sign_defer(const float* g, const float* m, const float* e, EfCoef c, float sp,
                              size_t n, uint8_t* bits, float* e_out, float* m_out, double* lanes) {
        defer_range(g, m, e, c, sp, 0, n, bits, e_out, m_out, lanes);
    }

    static bool ef_sign_blocks(const float* g, const float* m, const float* e, EfCoef c,
                               size_t d, size_t n, uint8_t* bits, unsigned char* scales,
                               float* e_out, float* m_out) {
        for (size_t i = 0, b = 0; i < n; i += d, ++b) {
            const size_t len = std::min(d, n - i);
            double lanes[16] = {};
            defer_range(g + i, m + i, e + i, c, 0.0f, 0, len, bits + i / 8, e_out + i,
                        m_out ? m_out + i : nullptr, lanes);
            if (!close_block<ScalarArch>(Norms<ScalarArch>::fold16(lanes), len, scales + 4 * b,
                                         bits + i / 8, e_out + i, e_out + i))
                return false;
        }
        return true;
    }

    static bool scaled_sign_blocks(const float* x, size_t d, size_t n, uint8_t* bits,
                                   unsigned char* scales, float* e) {
        for (size_t i = 0, b = 0; i < n; i += d, ++b) {
            const size_t len = std::min(d, n - i);
            double lanes[16] = {};
            Norms<ScalarArch>::sum_abs_range(x + i, 0, len, lanes);
            if (!close_block<ScalarArch>(Norms<ScalarArch>::fold16(lanes), len, scales + 4 * b,
                                         bits + i / 8, x + i, e ? e + i : nullptr))
                return false;
        }
        return true;
    }
};

#if defined(GW_KERN_XSIMD)
template <class Arch>
struct EfSign : VecBase<Arch> {
    using B = VecBase<Arch>;
    using S = EfSign<ScalarArch>;
    using typename B::BF;
    using typename B::F;
    using typename B::O;
    using B::loadf;
    using B::W;
    using E = Ef<Arch>;
    using Coef = typename E::Coef;

    // Norms::sum_lanes and Sign::sign_pack_residual with p computed in
    // registers.
    static void ef_sum_abs_lanes(const float* g, const float* m, const float* e, EfCoef c,
                                 size_t n, double* lanes) {
        const Coef k(c);
        const size_t i = B::template add_lanes16<false>(n, lanes, [&](size_t j) {
            F m1;
            return F(xsimd::abs(E::combine(loadf(g + j), loadf(m + j), loadf(e + j), k, m1)));
        }, g, m, e);
        S::sum_abs_range(g, m, e, c, i, n, lanes);
    }

    // The residual and momentum stores only where asked for (e_out, m_out may
    // equal e, m: every vector is loaded before it is stored).
    template <bool WithE, bool WithM>
    static size_t sign_step_body(const float* g, const float* m, const float* e, EfCoef c,
                                 float s, size_t n, uint8_t* bits, float* e_out, float* m_out) {
        const Coef k(c);
        const F zero(0.0f), pos(s), neg(-s);
        return B::pack_bits(n, bits, [&](size_t j) {
            F m1;
            const F p = E::combine(loadf(g + j), loadf(m + j), loadf(e + j), k, m1);
            const BF lt = p < zero;
            if constexpr (WithE) (p - xsimd::select(lt, neg, pos)).store_unaligned(e_out + j);
            if constexpr (WithM) m1.store_unaligned(m_out + j);
            return O::movemask(lt);
        });
    }
    static void ef_sign_step(const float* g, const float* m, const float* e, EfCoef c, float s,
                             size_t n, uint8_t* bits, float* e_out, float* m_out) {
        size_t i;
        if (e_out && m_out)
            i = sign_step_body<true, true>(g, m, e, c, s, n, bits, e_out, m_out);
        else if (e_out)
            i = sign_step_body<true, false>(g, m, e, c, s, n, bits, e_out, m_out);
        else if (m_out)
            i = sign_step_body<false, true>(g, m, e, c, s, n, bits, e_out, m_out);
        else
            i = sign_step_body<false, false>(g, m, e, c, s, n, bits, e_out, m_out);
        S::sign_step_range(g, m, e, c, s, i, n, bits, e_out, m_out);
    }

    // One vector of the defer pass at j, e already settled (ev): p and m1
    // stored, |p| widened into the lane pair lo, hi; returns p's sign mask.
    template <bool WithM, class D>
    static uint32_t defer_vec(const float* g, const float* m, const F& ev, const Coef& k,
                              size_t j, float* e_out, float* m_out, D& lo, D& hi) {
        F m1;
        const F p = E::combine(loadf(g + j), loadf(m + j), ev, k, m1);
        p.store_unaligned(e_out + j);
        if constexpr (WithM) m1.store_unaligned(m_out + j);
        D a, b;
        O::widen(F(xsimd::abs(p)), a, b);
        lo = lo + a;
        hi = hi + b;
        return uint32_t(O::movemask(p < F(0.0f)));
    }

    // pack_bits's 64-element words with the |p| sum of add_lanes16: element
    // j + K W goes to lanes of accumulator pair 2 (K mod 16/W), in order.
    template <bool WithM>
    static size_t defer_body(const float* g, const float* m, const float* e, EfCoef c, float sp,
                             size_t n, uint8_t* bits, float* e_out, float* m_out, double* lanes) {
        using D = typename B::D;
        constexpr size_t NA = 16 / D::size;
        const Coef k(c);
        const F zero(0.0f), pos(sp), neg(-sp);
        D acc[NA];
        for (size_t a = 0; a < NA; ++a) acc[a] = D::load_unaligned(lanes + a * D::size);
        size_t i = 0;
        for (; i + 64 <= n; i += 64) {
            // Its stores are to lines it has just read (e, m) or small (bits),
            // so it reads ahead as the read-only loops do (docs/performance.md).
            B::prefetch_ahead(g, i, 64);
            B::prefetch_ahead(m, i, 64);
            B::prefetch_ahead(e, i, 64);
            uint64_t word = 0;
            unroll<64 / W>([&](auto kk) {
                constexpr size_t K = decltype(kk)::value;
                constexpr size_t A = 2 * (K % (16 / W));
                const size_t j = i + K * W;
                const F ev = loadf(e + j);
                const uint64_t lt = defer_vec<WithM>(g, m, ev - xsimd::select(ev < zero, neg, pos),
                                                     k, j, e_out, m_out, acc[A], acc[A + 1]);
                word |= lt << (K * W);
            });
            std::memcpy(bits + i / 8, &word, 8);  // little-endian host (common.hpp)
        }
        for (size_t a = 0; a < NA; ++a) acc[a].store_unaligned(lanes + a * D::size);
        return i;
    }
    static void ef_sign_defer(const float* g, const float* m, const float* e, EfCoef c, float sp,
                              size_t n, uint8_t* bits, float* e_out, float* m_out, double* lanes) {
        const size_t i = m_out ? defer_body<true>(g, m, e, c, sp, n, bits, e_out, m_out, lanes)
                               : defer_body<false>(g, m, e, c, sp, n, bits, e_out, m_out, lanes);
        S::defer_range(g, m, e, c, sp, i, n, bits, e_out, m_out, lanes);
    }

    // Blocks of d elements, each with 16 double lanes from zero in registers:
    // step(j, acc) adds elements [j, j + 16) (and writes what it writes), tail(i,
    // j, len, lanes) the rest of a block of a length not a multiple of 16 from
    // lanes in memory, then close(i, b, len, l1) with the block's |.| sum;
    // false as soon as a close is. A 64-element block costs a few vectors and
    // one fold rather than two table calls.
    template <class Step, class Tail, class Close>
    static bool each_block(size_t d, size_t n, Step&& step, Tail&& tail, Close&& close) {
        using D = typename B::D;
        constexpr size_t NA = 16 / D::size;
        for (size_t i = 0, b = 0; i < n; i += d, ++b) {
            const size_t len = std::min(d, n - i);
            D acc[NA];
            for (size_t a = 0; a < NA; ++a) acc[a] = D(0.0);
            size_t j = i;
            for (; j + 16 <= i + len; j += 16) step(j, acc);
            double l1;
            if (j == i + len) {
                l1 = B::fold_acc(acc);
            } else {
                alignas(64) double lanes[16];
                for (size_t a = 0; a < NA; ++a) acc[a].store_unaligned(lanes + a * D::size);
                tail(i, j, len, lanes);
                l1 = Norms<ScalarArch>::fold16(lanes);
            }
            if (!close(i, b, len, l1)) return false;
        }
        return true;
    }

    // defer_body's step by 16 elements (sp = 0 settles nothing: e - (+-0) is
    // e), then the block's scale and residual while it is in L1.
    template <bool WithM>
    static bool blocks_body(const float* g, const float* m, const float* e, EfCoef c, size_t d,
                            size_t n, uint8_t* bits, unsigned char* scales, float* e_out,
                            float* m_out) {
        const Coef k(c);
        return each_block(
            d, n,
            [&](size_t j, auto& acc) {
                B::prefetch_ahead(g, j, 16);
                B::prefetch_ahead(m, j, 16);
                B::prefetch_ahead(e, j, 16);
                uint32_t word = 0;
                unroll<16 / W>([&](auto kk) {
                    constexpr size_t K = decltype(kk)::value;
                    const size_t q = j + K * W;
                    word |= defer_vec<WithM>(g, m, loadf(e + q), k, q, e_out, m_out, acc[2 * K],
                                             acc[2 * K + 1])
                            << (K * W);
                });
                const uint16_t w16 = uint16_t(word);
                std::memcpy(bits + j / 8, &w16, 2);  // little-endian host (common.hpp)
            },
            [&](size_t i, size_t j, size_t len, double* lanes) {
                S::defer_range(g + i, m + i, e + i, c, 0.0f, j - i, len, bits + i / 8, e_out + i,
                               WithM ? m_out + i : nullptr, lanes);
            },
            [&](size_t i, size_t b, size_t len, double l1) {
                return close_block<Arch>(l1, len, scales + 4 * b, bits + i / 8, e_out + i,
                                         e_out + i);
            });
    }
    static bool ef_sign_blocks(const float* g, const float* m, const float* e, EfCoef c,
                               size_t d, size_t n, uint8_t* bits, unsigned char* scales,
                               float* e_out, float* m_out) {
        return m_out ? blocks_body<true>(g, m, e, c, d, n, bits, scales, e_out, m_out)
                     : blocks_body<false>(g, m, e, c, d, n, bits, scales, e_out, m_out);
    }

    // Norms::sum_lanes per block, then the block's close while it is in L1:
    // x is read from memory once where the codec's two passes read it twice.
    static bool scaled_sign_blocks(const float* x, size_t d, size_t n, uint8_t* bits,
                                   unsigned char* scales, float* e) {
        using D = typename B::D;
        return each_block(
            d, n,
            [&](size_t j, auto& acc) {
                B::prefetch_ahead(x, j, 16);
                unroll<16 / W>([&](auto kk) {
                    constexpr size_t K = decltype(kk)::value;
                    D lo, hi;
                    O::widen(F(xsimd::abs(loadf(x + j + K * W))), lo, hi);
                    acc[2 * K] = acc[2 * K] + lo;
                    acc[2 * K + 1] = acc[2 * K + 1] + hi;
                });
            },
            [&](size_t i, size_t j, size_t len, double* lanes) {
                Norms<ScalarArch>::sum_abs_range(x + i, j - i, len, lanes);
            },
            [&](size_t i, size_t b, size_t len, double l1) {
                return close_block<Arch>(l1, len, scales + 4 * b, bits + i / 8, x + i,
                                         e ? e + i : nullptr);
            });
    }
};
#endif  // GW_KERN_XSIMD

template <class Arch>
constexpr void ef_sign_entries(Table& t) {
    using K = EfSign<Arch>;
    t.ef_sum_abs_lanes = &K::ef_sum_abs_lanes;
    t.ef_sign_step = &K::ef_sign_step;
    t.ef_sign_defer = &K::ef_sign_defer;
    t.ef_sign_blocks = &K::ef_sign_blocks;
    t.scaled_sign_blocks = &K::scaled_sign_blocks;
}

}  // namespace
}  // namespace gw::kern
