// Kernel family "ef" (src/kernels/ef.hpp) on every SIMD target, bit for bit
// against ref_ef.hpp: ef_combine, momentum_update; family "ef_sign"
// (src/kernels/ef_sign.hpp): ef_sum_abs_lanes, ef_sign_step, ef_sign_defer,
// ef_sign_blocks, scaled_sign_blocks.
#include "fixture.hpp"
#include "ref_ef.hpp"

#include <iterator>
#include <limits>

namespace gw::ktest {
namespace {

// ---- error feedback ----
const EfCoef kCoefs[] = {
    {0.9f, 1.0f, 0.9f, 1.0f, 1.0f},      // Nesterov (Alg. 4)
    {0.9f, 0.1f, 1.0f, 0.0f, 0.5f},      // signum-style momentum, lr change
    {0.0f, 0.0f, 0.0f, 1.0f, 0.7f},      // no momentum: p = g + r e (server's q)
    {0.37f, 1.3f, -0.2f, 2.5f, 1e-3f},   // arbitrary
    {0.0f, 0.0f, 0.0f, 1.0f, 0.0f},      // error feedback off
};

// The million-element cases are there for the vector bodies' long runs; every
// coefficient set, scale and buffer layout is covered at the short lengths.
// So at kBig only Nesterov and the arbitrary set run, with the first scale (a
// nonzero one), in place and into fresh buffers: a tenth of the time, which
// the sanitizer and qemu runs pay many times over.
bool thinned(const Case& c, size_t coef, size_t scale = 0, int mode = 0) {
    return c.n == kBig && (coef % 3 != 0 || scale != 0 || mode > 1);
}

// A case's g, m and e (input streams 0, 1, 2) and exact copies of them at
// the case's misalignment, which the kernels read.
struct EfInputs {
    const std::vector<float>& g;
    const std::vector<float>& m;
    const std::vector<float>& e;
    Exact gi, mi, ei;
    explicit EfInputs(const Case& c)
        : g(input(c.dist, c.n, 0)), m(input(c.dist, c.n, 1)), e(input(c.dist, c.n, 2)),
          gi(g.data(), 4 * c.n, 4 * c.fmis), mi(m.data(), 4 * c.n, 4 * c.fmis),
          ei(e.data(), 4 * c.n, 4 * c.fmis) {}
    bool unchanged() const {
        return gi.same_as(g.data()) && mi.same_as(m.data()) && ei.same_as(e.data());
    }
};

// A sign step's outputs and the m and e it reads: in place (the worker:
// e_out == e and m_out == m, filled from m and e), or fresh outputs beside
// read-only copies of m and e.
struct SignStepIo {
    Guarded bits, eo, mo;
    Exact mi, ei;
    bool in_place;
    SignStepIo(const Case& c, const std::vector<float>& m, const std::vector<float>& e, bool ip)
        : bits(ref::sign_bytes(c.n), c.bmis), eo(4 * c.n, 4 * c.fmis), mo(4 * c.n, 4 * c.fmis),
          mi(m.data(), 4 * c.n, 4 * c.fmis), ei(e.data(), 4 * c.n, 4 * c.fmis), in_place(ip) {
        if (in_place) {
            eo.fill_from(e.data());
            mo.fill_from(m.data());
        }
    }
    const float* m_in() { return in_place ? mo.f() : mi.f(); }
    const float* e_in() { return in_place ? eo.f() : ei.f(); }
    // Guards intact, and the inputs unchanged where they are not the outputs.
    bool intact(const std::vector<float>& m, const std::vector<float>& e) const {
        return bits.guards_intact() && eo.guards_intact() && mo.guards_intact() &&
               (in_place || (mi.same_as(m.data()) && ei.same_as(e.data())));
    }
};

TEST_P(KernelTest, EfCombine) {
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        EfInputs in(c);
        std::vector<float> want(c.n + 1);
        for (size_t ki = 0; ki < std::size(kCoefs); ++ki) {
            if (thinned(c, ki)) continue;
            const EfCoef& k = kCoefs[ki];
            Guarded p(4 * c.n, 4 * c.fmis);
            t_->ef_combine(in.gi.f(), in.mi.f(), in.ei.f(), k, p.f(), c.n);
            ref::ef_combine(in.g.data(), in.m.data(), in.e.data(), k, want.data(), c.n);
            EXPECT_TRUE(same_floats(p.f(), want.data(), c.n)) << "mu=" << k.mu << " r=" << k.r;
            EXPECT_TRUE(p.guards_intact());
            // The server passes one buffer as g, m and e.
            Guarded q(4 * c.n, 4 * c.fmis);
            t_->ef_combine(in.gi.f(), in.gi.f(), in.gi.f(), k, q.f(), c.n);
            ref::ef_combine(in.g.data(), in.g.data(), in.g.data(), k, want.data(), c.n);
            EXPECT_TRUE(same_floats(q.f(), want.data(), c.n)) << "g == m == e";
            EXPECT_TRUE(q.guards_intact());
        }
        EXPECT_TRUE(in.unchanged()) << "an input was modified";
        if (HasFailure()) return;
    }
}

TEST_P(KernelTest, MomentumUpdate) {
    const float coefs[][2] = {{0.9f, 1.0f}, {0.9f, 0.1f}, {0.0f, 1.0f}, {0.5f, -2.25f}};
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        const auto& g = input(c.dist, c.n, 0);
        const auto& m0 = input(c.dist, c.n, 1);
        Exact gi(g.data(), 4 * c.n, 4 * c.fmis);
        for (const auto& k : coefs) {
            Guarded m(4 * c.n, 4 * c.fmis);
            m.fill_from(m0.data());
            std::vector<float> want(m0);
            t_->momentum_update(m.f(), gi.f(), k[0], k[1], c.n);
            ref::momentum_update(want.data(), g.data(), k[0], k[1], c.n);
            EXPECT_TRUE(same_floats(m.f(), want.data(), c.n)) << "mu=" << k[0] << " kg=" << k[1];
            EXPECT_TRUE(m.guards_intact());
        }
        EXPECT_TRUE(gi.same_as(g.data()));
        if (HasFailure()) return;
    }
}

// ---- error feedback fused with the scaled sign ----
TEST_P(KernelTest, EfSumAbsLanes) {
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        EfInputs in(c);
        for (size_t ki = 0; ki < std::size(kCoefs); ++ki) {
            if (thinned(c, ki)) continue;
            const EfCoef& k = kCoefs[ki];
            // Lanes continue from what they hold (a tile after tiles).
            double got[16], want[16];
            for (int j = 0; j < 16; ++j) got[j] = want[j] = 0.25 * j - 1.0;
            t_->ef_sum_abs_lanes(in.gi.f(), in.mi.f(), in.ei.f(), k, c.n, got);
            ref::ef_sum_abs_lanes(in.g.data(), in.m.data(), in.e.data(), k, c.n, want);
            for (int j = 0; j < 16; ++j)
                EXPECT_EQ(dbits(got[j]), dbits(want[j])) << "lane " << j << " mu=" << k.mu;
            for (int j = 0; j < 16; ++j) got[j] = want[j] = 0.0;
            t_->ef_sum_abs_lanes(in.gi.f(), in.gi.f(), in.gi.f(), k, c.n, got);
            ref::ef_sum_abs_lanes(in.g.data(), in.g.data(), in.g.data(), k, c.n, want);
            for (int j = 0; j < 16; ++j) EXPECT_EQ(dbits(got[j]), dbits(want[j])) << "g == m == e";
        }
        EXPECT_TRUE(in.unchanged()) << "an input was modified";
        if (HasFailure()) return;
    }
}

// A sign step's expected outputs, and the checks of one run against them.
struct SignWant {
    size_t n, nb;
    std::vector<uint8_t> bits;
    std::vector<float> e, m;
    explicit SignWant(size_t n_)
        : n(n_), nb(ref::sign_bytes(n_)), bits(nb + 1), e(n_ + 1), m(n_ + 1) {}
    void expect(SignStepIo& io, const EfInputs& in, bool with_e, bool with_m, int mode) const {
        EXPECT_TRUE(same_bytes(io.bits.data(), bits.data(), nb)) << "mode " << mode;
        EXPECT_TRUE(padding_clear(io.bits.data(), n));
        if (with_e) {
            EXPECT_TRUE(same_floats(io.eo.f(), e.data(), n)) << "mode " << mode;
        }
        if (with_m) {
            EXPECT_TRUE(same_floats(io.mo.f(), m.data(), n)) << "mode " << mode;
        }
        EXPECT_TRUE(io.intact(in.m, in.e)) << "a guard or an input was written";
    }
};

TEST_P(KernelTest, EfSignStep) {
    const float scales[] = {0.3125f, 3.0e38f};
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        EfInputs in(c);
        SignWant want(c.n);
        for (size_t ki = 0; ki < std::size(kCoefs); ++ki)
            for (size_t si = 0; si < std::size(scales); ++si) {
                if (thinned(c, ki, si)) continue;
                const EfCoef& k = kCoefs[ki];
                const float s = scales[si];
                SCOPED_TRACE("mu=" + std::to_string(k.mu) + " s=" + std::to_string(s));
                ref::ef_sign_step(in.g.data(), in.m.data(), in.e.data(), k, s, c.n, want.bits.data(),
                                  want.e.data(), want.m.data());
                // In place (the worker: e_out == e, m_out == m), then each
                // output alone into its own buffer (m and e read-only).
                for (int mode = 0; mode < 4; ++mode) {
                    if (thinned(c, ki, si, mode)) continue;
                    const bool with_e = mode != 2, with_m = mode != 1;
                    SignStepIo io(c, in.m, in.e, mode == 0);
                    t_->ef_sign_step(in.gi.f(), io.m_in(), io.e_in(), k, s, c.n, io.bits.data(),
                                     with_e ? io.eo.f() : nullptr, with_m ? io.mo.f() : nullptr);
                    want.expect(io, in, with_e, with_m, mode);
                }
                if (HasFailure()) return;
            }
        EXPECT_TRUE(in.unchanged()) << "an input was modified";
    }
}

// The one-pass step with its residual deferred: settled by sp (0 too) from
// e, in place (the worker) and into fresh buffers, lanes continuing.
TEST_P(KernelTest, EfSignDefer) {
    const float pendings[] = {0.3125f, 0.0f, 3.0e38f};
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        EfInputs in(c);
        SignWant want(c.n);
        for (size_t ki = 0; ki < std::size(kCoefs); ++ki)
            for (size_t si = 0; si < std::size(pendings); ++si) {
                if (thinned(c, ki, si)) continue;
                const EfCoef& k = kCoefs[ki];
                const float sp = pendings[si];
                SCOPED_TRACE("mu=" + std::to_string(k.mu) + " sp=" + std::to_string(sp));
                double want_lanes[16];
                for (int j = 0; j < 16; ++j) want_lanes[j] = 0.25 * j - 1.0;
                ref::ef_sign_defer(in.g.data(), in.m.data(), in.e.data(), k, sp, c.n, want.bits.data(),
                                   want.e.data(), want.m.data(), want_lanes);
                for (int mode = 0; mode < 3; ++mode) {  // in place; fresh; no momentum out
                    if (thinned(c, ki, si, mode)) continue;
                    const bool with_m = mode != 2;
                    SignStepIo io(c, in.m, in.e, mode == 0);
                    double got[16];
                    for (int j = 0; j < 16; ++j) got[j] = 0.25 * j - 1.0;
                    t_->ef_sign_defer(in.gi.f(), io.m_in(), io.e_in(), k, sp, c.n, io.bits.data(),
                                      io.eo.f(), with_m ? io.mo.f() : nullptr, got);
                    want.expect(io, in, true, with_m, mode);
                    for (int j = 0; j < 16; ++j)
                        EXPECT_EQ(dbits(got[j]), dbits(want_lanes[j])) << "lane " << j << " mode " << mode;
                }
                if (HasFailure()) return;
            }
        EXPECT_TRUE(in.unchanged()) << "an input was modified";
    }
}

// Fixed blocks in one pass, every block size the fused path allows at these
// lengths (multiples of 16, the last block shorter, one block for all), in
// place (the worker), into fresh buffers and without momentum out. A block
// whose sum is not finite (Huge inputs overflow p) must be reported where
// the reference reports it.
TEST_P(KernelTest, EfSignBlocks) {
    const size_t sizes[] = {16, 64, 256, 16384};
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        EfInputs in(c);
        SignWant want(c.n);
        for (size_t ki = 0; ki < std::size(kCoefs); ++ki)
            for (size_t di = 0; di < std::size(sizes); ++di) {
                if (thinned(c, ki, di % 2)) continue;
                const EfCoef& k = kCoefs[ki];
                const size_t d = sizes[di], nb = (c.n + d - 1) / d;
                SCOPED_TRACE("mu=" + std::to_string(k.mu) + " d=" + std::to_string(d));
                std::vector<uint8_t> want_scales(4 * nb + 1);
                const bool want_ok =
                    ref::ef_sign_blocks(in.g.data(), in.m.data(), in.e.data(), k, d, c.n,
                                        want.bits.data(), want_scales.data(), want.e.data(),
                                        want.m.data());
                for (int mode = 0; mode < 3; ++mode) {  // in place; fresh; no momentum out
                    if (thinned(c, ki, di % 2, mode)) continue;
                    const bool with_m = mode != 2;
                    SignStepIo io(c, in.m, in.e, mode == 0);
                    Guarded scales(4 * nb, c.bmis);
                    const bool ok = t_->ef_sign_blocks(in.gi.f(), io.m_in(), io.e_in(), k, d, c.n,
                                                       io.bits.data(), scales.data(), io.eo.f(),
                                                       with_m ? io.mo.f() : nullptr);
                    ASSERT_EQ(ok, want_ok) << "mode " << mode;
                    EXPECT_TRUE(scales.guards_intact());
                    if (!ok) continue;
                    want.expect(io, in, true, with_m, mode);
                    EXPECT_TRUE(same_bytes(scales.data(), want_scales.data(), 4 * nb)) << mode;
                }
                if (HasFailure()) return;
            }
        EXPECT_TRUE(in.unchanged()) << "an input was modified";
    }
}

// A block whose mean |p| rounds to a zero scale although p holds a negative
// subnormal: its bits must be zeroed (the canonical zero block), its
// residual is p itself; the next block is untouched by it.
TEST_P(KernelTest, EfSignBlocksZeroScale) {
    const size_t n = 96, d = 64;
    std::vector<float> g(n, 0.0f), m(n, 0.0f), e(n, 0.0f);
    g[5] = -std::numeric_limits<float>::denorm_min();
    for (size_t i = d; i < n; ++i) g[i] = (i % 3 ? 1.0f : -2.0f);
    const EfCoef k = kCoefs[0];
    std::vector<float> we(n), wm(n), ge(e), gm(m);
    std::vector<uint8_t> wb(n / 8), ws(8), gb(n / 8, 0xAA), gs(8, 0xAA);
    ASSERT_TRUE(ref::ef_sign_blocks(g.data(), m.data(), e.data(), k, d, n, wb.data(), ws.data(),
                                    we.data(), wm.data()));
    ASSERT_TRUE(t_->ef_sign_blocks(g.data(), gm.data(), ge.data(), k, d, n, gb.data(), gs.data(),
                                   ge.data(), gm.data()));
    EXPECT_EQ(ws[0] | ws[1] | ws[2] | ws[3], 0) << "the first block's scale is zero";
    EXPECT_TRUE(we[5] < 0.0f) << "its residual is p";
    EXPECT_EQ(wb[0] | wb[1] | wb[2] | wb[3] | wb[4] | wb[5] | wb[6] | wb[7], 0);
    EXPECT_NE(wb[8] | wb[9] | wb[10] | wb[11], 0);
    EXPECT_TRUE(same_bytes(gb.data(), wb.data(), wb.size()));
    EXPECT_TRUE(same_bytes(gs.data(), ws.data(), ws.size()));
    EXPECT_TRUE(same_floats(ge.data(), we.data(), n));
    EXPECT_TRUE(same_floats(gm.data(), wm.data(), n));
}

// The codec's encode of fixed blocks in one call, every distribution (Huge
// blocks' sums stay finite in double), blocks of 8, 24 (not multiples of
// 16: part of their sum is the scalar tail's), 16, 64 and 1000 elements
// and one block of all n; without a
// residual, into a fresh one and in place (e == x). Then a NaN or an Inf in
// one block: false, and the blocks before it as the reference wrote them.
TEST_P(KernelTest, ScaledSignBlocks) {
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        const auto& x = input(c.dist, c.n, 0);
        for (size_t d : {size_t(8), size_t(16), size_t(24), size_t(64), size_t(1000), c.n}) {
            if (d == 0 || (c.n == kBig && d < 64)) continue;
            const size_t nb = (c.n + d - 1) / d, nbytes = ref::sign_bytes(c.n);
            std::vector<uint8_t> wb(nbytes + 1), ws(4 * nb + 1);
            std::vector<float> we(c.n + 1);
            ASSERT_TRUE(ref::scaled_sign_blocks(x.data(), d, c.n, wb.data(), ws.data(), we.data()));
            for (int mode = 0; mode < 3; ++mode) {  // no residual; fresh; in place
                Exact in(x.data(), 4 * c.n, 4 * c.fmis);
                Guarded bits(nbytes, c.bmis), scales(4 * nb, (c.bmis + 1) % 4),
                    e(4 * c.n, 4 * c.fmis);
                float* eo = mode == 0 ? nullptr : mode == 1 ? e.f() : in.f();
                ASSERT_TRUE(t_->scaled_sign_blocks(in.f(), d, c.n, bits.data(), scales.data(), eo));
                EXPECT_TRUE(same_bytes(bits.data(), wb.data(), nbytes)) << "d=" << d << " "
                                                                        << mode;
                EXPECT_TRUE(padding_clear(bits.data(), c.n));
                EXPECT_TRUE(same_bytes(scales.data(), ws.data(), 4 * nb)) << "d=" << d << " "
                                                                           << mode;
                // the residual, in e or over x; x itself unchanged otherwise
                const float* want_x = mode == 2 ? we.data() : x.data();
                EXPECT_TRUE(same_floats(in.f(), want_x, c.n)) << "d=" << d << " " << mode;
                if (mode == 1) {
                    EXPECT_TRUE(same_floats(e.f(), we.data(), c.n)) << "d=" << d;
                }
                EXPECT_TRUE(bits.guards_intact() && scales.guards_intact() && e.guards_intact());
            }
            if (c.n >= 2 * d) {  // a non-finite value in the second block
                for (float bad : {std::numeric_limits<float>::quiet_NaN(),
                                  -std::numeric_limits<float>::infinity()}) {
                    std::vector<float> y(x);
                    y[d + (c.n - d) % d / 2] = bad;
                    Exact in(y.data(), 4 * c.n, 4 * c.fmis);
                    Guarded bits(nbytes, c.bmis), scales(4 * nb, c.bmis), e(4 * c.n, 4 * c.fmis);
                    EXPECT_FALSE(
                        t_->scaled_sign_blocks(in.f(), d, c.n, bits.data(), scales.data(), e.f()));
                    EXPECT_TRUE(same_bytes(bits.data(), wb.data(), d / 8)) << "d=" << d;
                    EXPECT_TRUE(same_bytes(scales.data(), ws.data(), 4)) << "d=" << d;
                    EXPECT_TRUE(same_floats(e.f(), we.data(), d)) << "d=" << d;
                }
            }
            if (HasFailure()) return;
        }
    }
}

}  // namespace
}  // namespace gw::ktest
