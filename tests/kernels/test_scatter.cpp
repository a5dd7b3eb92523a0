// Kernel family "scatter" (src/kernels/scatter.hpp) on every SIMD target, bit
// for bit against ref_scatter.hpp: gather, scatter_add, scatter_zero and
// scatter_sub_div, at position sets of several densities and at null
// positions (0..k-1), on misaligned buffers with guards around every output;
// gap_indices, gap_byte_sum, gap_scatter_add and gap_expand on gap planes
// of every width, and the cursor writer (expand_*) fed in calls of every size.
#include <algorithm>
#include <random>

#include "fixture.hpp"
#include "ref_scatter.hpp"

namespace gw::ktest {
namespace {

// Strictly increasing positions in [0, n): a share `density` of them, and
// always the last element when n > 0 and density is 1.
std::vector<uint32_t> positions(size_t n, double density, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<uint32_t> idx;
    for (size_t i = 0; i < n; ++i)
        if (density >= 1.0 || std::uniform_real_distribution<double>(0, 1)(rng) < density)
            idx.push_back(static_cast<uint32_t>(i));
    return idx;
}

struct Sets {
    std::vector<uint32_t> idx;
    bool null;  // the kernels get nullptr: positions 0..k-1
};

std::vector<Sets> sets_for(size_t n) {
    std::vector<Sets> out;
    for (double d : {0.0, 0.01, 0.3, 1.0}) out.push_back({positions(n, d, n * 7 + 1), false});
    std::vector<uint32_t> all(n / 2);
    out.push_back({all, true});  // the first half, by null positions
    return out;
}

TEST_P(KernelTest, GatherAndScatterAdd) {
    const float alphas[] = {1.0f, -0.25f, 3.0f};
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        const auto& x = input(c.dist, c.n, 0);
        const auto& v0 = input(c.dist, c.n, 1);
        for (const Sets& s : sets_for(c.n)) {
            const size_t k = s.idx.size();
            const uint32_t* idx = s.null ? nullptr : s.idx.data();
            Guarded out(4 * k, 4 * c.fmis);
            std::vector<float> want(k);
            t_->gather(x.data(), idx, k, out.f());
            ref::gather(x.data(), idx, k, want.data());
            EXPECT_TRUE(same_floats(out.f(), want.data(), k)) << "gather, k=" << k;
            EXPECT_TRUE(out.guards_intact());
            for (float a : alphas) {
                Guarded acc(4 * c.n, 4 * c.fmis);
                acc.fill_from(x.data());
                std::vector<float> wacc(x);
                t_->scatter_add(v0.data(), idx, k, a, acc.f());
                ref::scatter_add(v0.data(), idx, k, a, wacc.data());
                EXPECT_TRUE(same_floats(acc.f(), wacc.data(), c.n)) << "scatter_add, k=" << k;
                EXPECT_TRUE(acc.guards_intact());
            }
        }
        if (HasFailure()) return;
    }
}

TEST_P(KernelTest, ScatterZeroAndSubDiv) {
    const float divisors[] = {1.0f, 3.0f, 16.0f, 1e-30f};
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        const auto& x = input(c.dist, c.n, 0);
        const auto& s0 = input(c.dist, c.n, 1);
        for (const Sets& s : sets_for(c.n)) {
            const size_t k = s.idx.size();
            const uint32_t* idx = s.null ? nullptr : s.idx.data();
            Guarded a(4 * c.n, 4 * c.fmis);
            a.fill_from(x.data());
            std::vector<float> wa(x);
            t_->scatter_zero(idx, k, a.f());
            ref::scatter_zero(idx, k, wa.data());
            EXPECT_TRUE(same_floats(a.f(), wa.data(), c.n)) << "scatter_zero, k=" << k;
            EXPECT_TRUE(a.guards_intact());
            for (float d : divisors) {
                Guarded y(4 * c.n, 4 * c.fmis);
                y.fill_from(x.data());
                std::vector<float> wy(x);
                const bool got = t_->scatter_sub_div(y.f(), idx, s0.data(), k, d);
                const bool want = ref::scatter_sub_div(wy.data(), idx, s0.data(), k, d);
                EXPECT_EQ(got, want) << "scatter_sub_div, k=" << k << " d=" << d;
                // Refused: x untouched (the reference left wy as x too).
                EXPECT_TRUE(same_floats(y.f(), wy.data(), c.n)) << "scatter_sub_div, k=" << k;
                EXPECT_TRUE(y.guards_intact());
            }
        }
        if (HasFailure()) return;
    }
}

// Gap planes of `count` gaps whose bytes reach plane `top` (0..3), inside a
// payload whose planes are `stride` bytes apart, the chunk `first` bytes in.
std::vector<uint8_t> gap_planes(size_t stride, size_t first, size_t count, int top,
                                uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<uint8_t> p(4 * stride, 0);
    const uint32_t mask = top == 3 ? 0xFFFFFFFFu : (1u << (8 * (top + 1))) - 1;
    // Gaps of the top plane stay small enough that the indices fit in u32.
    const uint64_t budget = (uint64_t(1) << 32) - 1 - count;
    uint64_t used = 0;
    for (size_t j = 0; j < count; ++j) {
        uint32_t g = uint32_t(rng()) & mask;
        if (rng() % 4 == 0) g = 0;  // runs of adjacent indices
        if (used + g > budget / 2) g = 0;
        used += g;
        for (int b = 0; b < 4; ++b) p[b * stride + first + j] = uint8_t(g >> (8 * b));
    }
    return p;
}

TEST_P(KernelTest, GapIndices) {
    const size_t counts[] = {0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 100, 256, 1000};
    for (size_t count : counts)
        for (int top = 0; top < 4; ++top)
            for (size_t mis = 0; mis < 4; ++mis) {
                const size_t first = mis * 5, stride = count + first + mis;
                const auto planes = gap_planes(stride, first, count, top, count * 16 + top * 4 + mis);
                for (uint64_t next : {uint64_t(0), uint64_t(1), uint64_t(123456789)}) {
                    SCOPED_TRACE("count=" + std::to_string(count) + " top=" + std::to_string(top) +
                                 " misalign=" + std::to_string(mis) + " next=" + std::to_string(next));
                    // next + the gaps stays below 2^32 (gap_planes keeps under half of it).
                    Exact in(planes.data(), planes.size(), mis);
                    Guarded got(4 * count, 4 * (mis % 2));
                    std::vector<uint32_t> want(count);
                    const uint64_t g = t_->gap_indices(in.data() + first, stride, count, next,
                                                       reinterpret_cast<uint32_t*>(got.data()));
                    const uint64_t w = ref::gap_indices(planes.data() + first, stride, count, next,
                                                        want.data());
                    EXPECT_EQ(g, w);
                    EXPECT_TRUE(count == 0 || std::memcmp(got.data(), want.data(), 4 * count) == 0);
                    EXPECT_TRUE(got.guards_intact());
                }
                if (HasFailure()) return;
            }
}

// A payload's gap planes and little-endian values of value dtype vdt.
struct Payload {
    std::vector<uint8_t> planes, values;
    Payload(const std::vector<uint32_t>& idx, const float* v, gw_dtype vdt) {
        const size_t k = idx.size(), vs = vdt == GW_DTYPE_F32 ? 4 : 2;
        planes.resize(4 * k);
        values.resize(vs * k);
        for (size_t j = 0; j < k; ++j) {
            const uint32_t gap = idx[j] - (j ? idx[j - 1] + 1 : 0);
            uint32_t bits;
            std::memcpy(&bits, &v[j], 4);
            if (vdt == GW_DTYPE_F16) bits = ref::f32_to_f16(v[j]);
            if (vdt == GW_DTYPE_BF16) bits = ref::f32_to_bf16(v[j]);
            for (size_t b = 0; b < 4; ++b) {
                planes[b * k + j] = uint8_t(gap >> (8 * b));
                if (b < vs) values[vs * j + b] = uint8_t(bits >> (8 * b));
            }
        }
    }
};
constexpr gw_dtype kValueDtypes[] = {GW_DTYPE_F32, GW_DTYPE_F16, GW_DTYPE_BF16};

// f(case, k, value dtype, payload) for every case's position sets (not the
// null ones) as payloads of each wire dtype, until a failure.
template <class F>
void for_each_payload(F&& f) {
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        const auto& v0 = input(c.dist, c.n, 1);
        for (const Sets& s : sets_for(c.n)) {
            if (s.null) continue;
            for (gw_dtype vdt : kValueDtypes)
                f(c, s.idx.size(), vdt, Payload(s.idx, v0.data(), vdt));
        }
        if (::testing::Test::HasFailure()) return;
    }
}

// A payload walked by one kernel: the same sums as the reference, the values
// and planes at every byte offset (sets past kAhead and past the kernel's
// 64-entry blocks and 128-entry ring reach every edge of its lookahead and of
// the 16-bit values' widening).
TEST_P(KernelTest, GapScatterAdd) {
    for_each_payload([&](const Case& c, size_t k, gw_dtype vdt, const Payload& pl) {
        const auto& x = input(c.dist, c.n, 0);
        for (float a : {1.0f, -0.25f}) {
            std::vector<float> wacc(x);
            ref::gap_scatter_add(pl.planes.data(), k, pl.values.data(), vdt, a, wacc.data());
            for (size_t mis : {size_t(0), size_t(1), size_t(3)}) {
                Exact p(pl.planes.data(), pl.planes.size(), mis);
                Exact v(pl.values.data(), pl.values.size(), mis ^ 2);
                Guarded acc(4 * c.n, 4 * c.fmis);
                acc.fill_from(x.data());
                t_->gap_scatter_add(p.data(), k, v.data(), vdt, a, acc.f());
                EXPECT_TRUE(same_floats(acc.f(), wacc.data(), c.n))
                    << "k=" << k << " dtype=" << vdt << " misalign=" << mis << " alpha=" << a;
                EXPECT_TRUE(acc.guards_intact());
            }
        }
    });
}

// The payload decoded over zeros: every element of out written (the guarded
// buffer starts as a fill pattern).
TEST_P(KernelTest, GapExpand) {
    for_each_payload([&](const Case& c, size_t k, gw_dtype vdt, const Payload& pl) {
        std::vector<float> want(c.n);
        ref::gap_expand(pl.planes.data(), k, pl.values.data(), vdt, want.data(), c.n);
        Exact p(pl.planes.data(), pl.planes.size(), 1);
        Exact v(pl.values.data(), pl.values.size(), 3);
        Guarded out(4 * c.n, 4 * c.fmis);
        t_->gap_expand(p.data(), k, v.data(), vdt, out.f(), c.n);
        EXPECT_TRUE(same_floats(out.f(), want.data(), c.n)) << "k=" << k << " dtype=" << vdt;
        EXPECT_TRUE(out.guards_intact());
    });
}

// Outputs of 16 MiB and more take the streamed path on x86 (kStreamBytes).
// Positions with entries in the unaligned head and tail, runs of consecutive
// entries across vector edges and lone entries in long runs of zeros.
std::vector<uint32_t> streamed_positions(size_t n) {
    std::vector<uint32_t> all;
    for (uint32_t i = 0; i < 40; ++i) all.push_back(i);
    for (uint32_t i = 100; i < 180; ++i) all.push_back(i);
    for (uint32_t i = 300; i < n - 40; i += 97 + i % 5) all.push_back(i);
    for (uint32_t i = uint32_t(n - 40); i < n; ++i) all.push_back(i);
    return all;
}
constexpr size_t kStreamedN = (size_t(16) << 20) / 4 + 37;

// The payload on the streamed path, and with no entries at all, with out at
// every float offset of a 64-byte line.
TEST_P(KernelTest, GapExpandStreamed) {
    const size_t n = kStreamedN;
    const std::vector<uint32_t> all = streamed_positions(n);
    std::vector<float> v0(all.size());
    for (size_t j = 0; j < v0.size(); ++j) v0[j] = float(j % 1000) * 0.125f - 60.0f;
    for (const std::vector<uint32_t>& idx : {all, std::vector<uint32_t>{}}) {
        for (gw_dtype vdt : kValueDtypes) {
            const Payload pl(idx, v0.data(), vdt);
            std::vector<float> want(n);
            ref::gap_expand(pl.planes.data(), idx.size(), pl.values.data(), vdt, want.data(), n);
            for (size_t fmis : {size_t(0), size_t(1), size_t(7), size_t(15)}) {
                Guarded out(4 * n, 4 * fmis);
                t_->gap_expand(pl.planes.data(), idx.size(), pl.values.data(), vdt, out.f(), n);
                EXPECT_TRUE(same_floats(out.f(), want.data(), n))
                    << "k=" << idx.size() << " dtype=" << vdt << " float_misalign=" << fmis;
                EXPECT_TRUE(out.guards_intact());
            }
        }
    }
}

// expand_begin / expand_add / expand_end with the entries split into calls of
// every size from 0 up (edges inside vectors, and across the prefetch's
// kAhead): the cases' position sets, and the streamed path's.
TEST_P(KernelTest, ExpandInCalls) {
    const auto check = [&](const std::vector<uint32_t>& idx, const float* v, size_t n,
                           size_t fmis) {
        std::vector<float> want(n);
        ref::expand(idx.data(), v, idx.size(), want.data(), n);
        for (size_t step : {size_t(1), size_t(5), size_t(33), size_t(256)}) {
            Guarded out(4 * n, 4 * fmis);
            kern::ExpandCursor cur;
            t_->expand_begin(out.f(), n, &cur);
            for (size_t j = 0, call = 0; j < idx.size(); ++call) {
                const size_t c = std::min(idx.size() - j, call % 3 == 2 ? 0 : step + call % 7);
                t_->expand_add(idx.data() + j, v + j, c, out.f(), &cur);
                j += c;
            }
            t_->expand_end(out.f(), &cur);
            EXPECT_TRUE(same_floats(out.f(), want.data(), n))
                << "k=" << idx.size() << " step=" << step << " float_misalign=" << fmis;
            EXPECT_TRUE(out.guards_intact());
        }
    };
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        const auto& v0 = input(c.dist, c.n, 1);
        for (const Sets& s : sets_for(c.n))
            if (!s.null) check(s.idx, v0.data(), c.n, c.fmis);
        if (HasFailure()) return;
    }
    const std::vector<uint32_t> all = streamed_positions(kStreamedN);
    std::vector<float> v0(all.size());
    for (size_t j = 0; j < v0.size(); ++j) v0[j] = float(j % 999) * 0.25f - 3.0f;
    for (size_t fmis : {size_t(0), size_t(3), size_t(15)}) check(all, v0.data(), kStreamedN, fmis);
}

TEST_P(KernelTest, GapByteSum) {
    std::mt19937_64 rng(7);
    for (size_t n : {size_t(0), size_t(1), size_t(31), size_t(32), size_t(63), size_t(64),
                     size_t(65), size_t(200), size_t(4099), size_t(1) << 20})
        for (size_t mis = 0; mis < 4; ++mis) {
            std::vector<uint8_t> v(n);
            for (auto& b : v) b = uint8_t(rng() % 3 == 0 ? 0xFF : rng());
            Exact in(v.data(), n, mis);
            EXPECT_EQ(t_->gap_byte_sum(in.data(), n), ref::gap_byte_sum(v.data(), n))
                << "n=" << n << " misalign=" << mis;
        }
}

}  // namespace
}  // namespace gw::ktest
