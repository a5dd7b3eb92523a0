// Kernel family "select" (src/kernels/select.hpp) on every SIMD target,
// against ref_select.hpp (nth_element on (key desc, index asc)): topk_select
// on every input distribution of the fixture, ties, all-equal and
// few-distinct inputs (which force the re-scan paths), one huge value, zeros
// and -0, denormals, k from 0 to n, n from 1 to ~1e6, misaligned x; inputs
// ordered to defeat shortcuts, and the one-pass path.
#include "fixture.hpp"
#include "ref_select.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string_view>
#include <tuple>

namespace gw::ktest {
namespace {

using gw::kern::kTopkScratchBytes;

// Scratch of exactly kTopkScratchBytes at a 64-byte boundary (so ASan sees
// any access past it), filled with garbage once and then reused: it holds
// whatever the previous call left, as a caller's would.
void* topk_scratch() {
    static Exact* s = [] {
        Exact* e = new Exact(kTopkScratchBytes, 0);
        std::memset(e->data(), 0xA5, kTopkScratchBytes);
        return e;
    }();
    return s->data();
}

// ref::topk_select(x, k), computed once for all targets when x is large (the
// reference's sort costs the sanitizer and qemu runs far more than the
// kernels); keyed by x's bytes, so equal inputs built anew per target hit.
const std::vector<uint32_t>& reference_for(const std::vector<float>& x, size_t k) {
    static std::map<std::tuple<size_t, size_t, size_t>, std::vector<uint32_t>> large;
    static std::vector<uint32_t> small;
    if (x.size() < 65536) return small = ref::topk_select(x.data(), x.size(), k);
    const size_t h = std::hash<std::string_view>()(
        std::string_view(reinterpret_cast<const char*>(x.data()), 4 * x.size()));
    auto key = std::make_tuple(x.size(), k, h);
    auto it = large.find(key);
    if (it == large.end()) it = large.emplace(key, ref::topk_select(x.data(), x.size(), k)).first;
    return it->second;
}

// Runs topk_select on x (copied to an exact-size buffer `fmis` floats past a
// 64-byte boundary) and compares the k indices with the reference; the
// output has guard bytes on both sides, so k == 0 must write nothing.
// With scratch_bytes above kTopkScratchBytes, a fresh exact-size scratch of
// garbage (the one-pass path's room).
::testing::AssertionResult check_topk(const Table& t, const std::vector<float>& x, size_t k,
                                      size_t fmis, size_t scratch_bytes = kTopkScratchBytes) {
    const size_t n = x.size();
    Exact in(x.data(), 4 * n, 4 * fmis);
    Guarded out(4 * k, 0);
    std::unique_ptr<Exact> big;
    void* scratch = topk_scratch();
    if (scratch_bytes > kTopkScratchBytes) {
        big.reset(new Exact(scratch_bytes, 0));
        std::memset(big->data(), 0x5A, scratch_bytes);
        scratch = big->data();
    }
    t.topk_select(in.f(), n, k, reinterpret_cast<uint32_t*>(out.data()), scratch, scratch_bytes);
    const std::vector<uint32_t>& want = reference_for(x, k);
    std::vector<uint32_t> got(k);
    if (k != 0) std::memcpy(got.data(), out.data(), 4 * k);
    for (size_t j = 0; j < k; ++j)
        if (got[j] != want[j]) {
            auto show = [&](uint32_t i) {
                if (i >= n) return std::string("(out of range)");
                char b[64];
                std::snprintf(b, sizeof b, "(x=%a key=0x%08x)", double(x[i]),
                              unsigned(ref::topk_key(x[i])));
                return std::string(b);
            };
            return ::testing::AssertionFailure()
                   << "n=" << n << " k=" << k << " misalign=" << fmis << ": idx[" << j
                   << "] = " << got[j] << " " << show(got[j]) << ", want " << want[j] << " "
                   << show(want[j]);
        }
    ::testing::AssertionResult guards = out.guards_intact();
    if (!guards) return guards << " (n=" << n << " k=" << k << ")";
    if (!in.same_as(x.data())) return ::testing::AssertionFailure() << "x was modified";
    return ::testing::AssertionSuccess();
}

// k = 0, 1, 2, n-1, n, and the given fractions of n (at least 1), each <= n.
std::vector<size_t> ks_for(size_t n, std::initializer_list<double> fractions) {
    std::vector<size_t> ks = {0, 1, 2, n - 1, n};
    for (double f : fractions) ks.push_back(std::max<size_t>(1, size_t(double(n) * f)));
    std::vector<size_t> out;
    for (size_t k : ks)
        if (k <= n && std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
    return out;
}

// Every distribution of the fixture at the small lengths (n = 0 is not a
// valid call with k = n-1, so it only gets k = 0).
TEST_P(KernelTest, TopkSelect) {
    for_each_case([&](const Case& c) {
        if (c.n == kBig) return;  // TopkSelectLarge
        const auto& x = input(c.dist, c.n, 0);
        const std::vector<size_t> ks =
            c.n == 0 ? std::vector<size_t>{0} : ks_for(c.n, {0.01, 0.1, 0.5});
        for (size_t k : ks) EXPECT_TRUE(check_topk(*t_, x, k, c.fmis));
    });
}

// Large n, k from 0.01% to 10% and the ends.
TEST_P(KernelTest, TopkSelectLarge) {
    for (size_t n : {size_t(4097), size_t(65537), size_t(2 * 65536 + 7), kBig}) {
        for (int d : {kNormal, kCauchy, kLogUniform, kRandomBits, kSpecial, kDenormals, kHalfTies,
                      kZeros}) {
            if (n == kBig && (d == kLogUniform || d == kHalfTies || d == kZeros)) continue;  // time
            SCOPED_TRACE(std::string("dist=") + kDistNames[d]);
            const auto& x = input(d, n, 0);
            for (size_t k : ks_for(n, {0.0001, 0.001, 0.01, 0.1}))
                EXPECT_TRUE(check_topk(*t_, x, k, n % 4));
            if (HasFailure()) return;
        }
    }
}

std::vector<float> from_set(size_t n, std::initializer_list<float> values, uint64_t seed) {
    std::mt19937_64 rng(seed);
    const std::vector<float> v(values);
    std::vector<float> x(n);
    for (float& f : x) f = v[rng() % v.size()];
    return x;
}

// Few distinct values: the bin of the k-th key holds most of x at every
// level, so the selection re-scans x with a prefix filter (4 passes).
TEST_P(KernelTest, TopkSelectFewDistinct) {
    for (size_t n : {size_t(17), size_t(1000), size_t(100003), kBig}) {
        const std::vector<std::vector<float>> inputs = {
            from_set(n, {0.0f, 1.0f, -1.0f}, 1 + n),
            from_set(n, {0.0f, -0.0f}, 2 + n),
            from_set(n, {1.0f, -1.0f, 2.0f, -2.0f, 0.5f, 0.0f, -0.0f}, 3 + n),
            from_set(n, {FLT_TRUE_MIN, -FLT_TRUE_MIN, 2 * FLT_TRUE_MIN, FLT_MIN}, 4 + n),
        };
        for (size_t s = 0; s < inputs.size(); ++s) {
            SCOPED_TRACE("value set " + std::to_string(s));
            for (size_t k : ks_for(n, {0.0001, 0.01, 0.1, 0.3, 0.34, 0.5, 0.9}))
                EXPECT_TRUE(check_topk(*t_, inputs[s], k, s % 2));
            if (HasFailure()) return;
        }
    }
}

TEST_P(KernelTest, TopkSelectAllEqual) {
    for (size_t n : {size_t(1), size_t(5), size_t(64), size_t(1000), size_t(65536),
                     size_t(65537), kBig}) {
        for (float v : {1.0f, -2.5f, 0.0f, -0.0f, FLT_MAX, FLT_TRUE_MIN}) {
            SCOPED_TRACE("value " + std::to_string(v));
            const std::vector<float> x(n, v);
            for (size_t k : ks_for(n, {0.0001, 0.01, 0.33}))
                EXPECT_TRUE(check_topk(*t_, x, k, 1));
            if (HasFailure()) return;
        }
    }
    // +0 and -0 alternate: they tie, so the first k indices win.
    std::vector<float> z(1001);
    for (size_t i = 0; i < z.size(); ++i) z[i] = (i % 2) ? -0.0f : 0.0f;
    for (size_t k : {size_t(1), size_t(2), size_t(500), size_t(1000)})
        EXPECT_TRUE(check_topk(*t_, z, k, 0));
}

// One value far above the rest, anywhere (the first-digit histogram has one
// element in its top bin and everything else far below).
TEST_P(KernelTest, TopkSelectOneHuge) {
    for (size_t n : {size_t(9), size_t(1000), kBig}) {
        const std::vector<float>& base = input(kNormal, n, 1);
        for (size_t p : {size_t(0), n / 2, n - 1}) {
            for (float huge : {FLT_MAX, -FLT_MAX, 1e30f, -3.0e20f}) {
                if (n == kBig && (huge == -FLT_MAX || huge == 1e30f)) continue;  // time
                std::vector<float> x = base;
                x[p] = huge;
                SCOPED_TRACE("huge at " + std::to_string(p));
                for (size_t k : ks_for(n, {0.001, 0.01}))
                    EXPECT_TRUE(check_topk(*t_, x, k, 0));
                if (HasFailure()) return;
            }
        }
    }
    // One huge value in an all-equal array.
    std::vector<float> x(100003, 1.0f);
    x[77777] = 1e9f;
    for (size_t k : {size_t(1), size_t(2), size_t(50000)}) EXPECT_TRUE(check_topk(*t_, x, k, 3));
}

// Distinct values in a narrow range: the first digit's bin is too big for
// the candidate buffer (a re-scan at level 2), and in [1, 1 + 2^-12) the
// second digit's bin is too (a re-scan at level 3) although keys are distinct.
TEST_P(KernelTest, TopkSelectNarrowRange) {
    for (float width : {1.0f, 0x1p-12f, 0x1p-20f}) {
        for (size_t n : {size_t(300001), size_t(150000)}) {
            std::mt19937_64 rng(n + size_t(width * 1e6f));
            std::uniform_real_distribution<float> u(0.0f, width);
            std::vector<float> x(n);
            for (float& f : x) f = ((rng() & 1) ? -1.0f : 1.0f) * (1.0f + u(rng));
            SCOPED_TRACE("width " + std::to_string(width) + " n=" + std::to_string(n));
            for (size_t k : ks_for(n, {0.0001, 0.01, 0.1, 0.5}))
                EXPECT_TRUE(check_topk(*t_, x, k, 2));
            if (HasFailure()) return;
        }
    }
}

// n from 1 to 200 (every vector-width remainder) with every k, misaligned.
TEST_P(KernelTest, TopkSelectEveryK) {
    for (size_t n = 1; n <= 200; ++n) {
        std::vector<float> x = from_set(n, {0.0f, 1.0f, -1.0f, 2.0f, 0.25f}, n);
        if (n % 3 == 0) x = input(kNormal, n, 2);
        for (size_t k = 0; k <= n; ++k) EXPECT_TRUE(check_topk(*t_, x, k, n % 4));
        if (HasFailure()) return;
    }
}

// Chunk-sized inputs (the small path: 1024 <= n <= 65536, k <= n/16) in
// orders that defeat shortcuts: magnitudes falling, rising, rising in runs,
// three keys in a cycle, normal, and large values only where the path
// samples (every 8th), so that fewer than k are kept for large k and the
// radix passes run; k up to n/8 + 1.
TEST_P(KernelTest, TopkSelectSmallOrders) {
    for (size_t n : {size_t(64), size_t(1024), size_t(4096), size_t(4099), size_t(65536)}) {
        std::vector<float> rising(n), falling(n), runs(n), ties(n), sampled_high(n);
        const std::vector<float>& noise = input(kNormal, n, 5);
        for (size_t i = 0; i < n; ++i) {
            rising[i] = (i % 2 ? -1.0f : 1.0f) * float(i + 1);
            falling[i] = float(n - i) * 0.5f;
            runs[i] = float(i % 512) + noise[i];
            ties[i] = float((i * 7) % 5) - 2.0f;  // keys 0, 1, 2, each many times
            sampled_high[i] = i % 8 == 0 ? 10.0f + noise[i] : 0.01f * noise[i];
        }
        const std::vector<std::pair<const char*, const std::vector<float>*>> inputs = {
            {"rising", &rising}, {"falling", &falling}, {"runs", &runs}, {"ties", &ties},
            {"normal", &noise}, {"sampled_high", &sampled_high}};
        for (const auto& in : inputs) {
            SCOPED_TRACE(std::string(in.first) + " n=" + std::to_string(n));
            for (size_t k : {size_t(1), size_t(7), n / 100 + 1, n / 16, n / 8, n / 8 + 1})
                EXPECT_TRUE(check_topk(*t_, *in.second, k, k % 4));
            if (HasFailure()) return;
        }
    }
}

// The one-pass path (n >= 2^22, k <= n/16, room for its candidates) on
// inputs where the sample is right (normal, sorted magnitudes), where ties
// overflow the room (all equal, few distinct: the sample's k-th key is
// checked by counting and taken), and where the sample misses every large
// value (they sit between the sampled runs: fewer than k are kept, or the
// count refutes the guessed tie, and the passes of the general path run). The
// inputs and references are computed once for all targets.
using NamedInputs = std::vector<std::pair<const char*, std::vector<float>>>;
constexpr size_t kOnePassN = kern::kTopkSampledMinN + 37;

NamedInputs one_pass_inputs() {
    const size_t n = kOnePassN;
    std::vector<float> sorted = input(kNormal, n, 3);
    std::sort(sorted.begin(), sorted.end(),
              [](float a, float b) { return std::fabs(a) < std::fabs(b); });
    std::vector<float> hidden = input(kNormal, n, 4);
    const size_t stride = (n - 1024) / 63;  // the sampled runs start at multiples of it
    std::vector<float> hidden_ties(n, 1.0f);  // ties, and the sample misses what is above them
    for (size_t i = 0; i < n; ++i)
        if (i % stride >= 1024 && i % 97 == 0) {
            hidden[i] *= 1000.0f;
            hidden_ties[i] = 2.0f + float(i % 5);
        }
    return {{"normal", input(kNormal, n, 2)},
            {"sorted", sorted},
            {"hidden", hidden},
            {"hidden_ties", hidden_ties},
            {"all_equal", std::vector<float>(n, -1.5f)},
            {"few_distinct", from_set(n, {0.0f, 1.0f, -2.0f, 0.5f}, 9)}};
}

TEST_P(KernelTest, TopkSelectOnePass) {
    const size_t n = kOnePassN;
    static const NamedInputs inputs = one_pass_inputs();
    for (size_t d = 0; d < inputs.size(); ++d) {
        SCOPED_TRACE(inputs[d].first);
        const std::vector<float>& x = inputs[d].second;
        for (size_t k : {size_t(1), size_t(100), n / 1000, n / 100, n / 16})
            EXPECT_TRUE(check_topk(*t_, x, k, d % 3, kern::topk_scratch_bytes(n, k)));
        if (HasFailure()) return;
    }
}

// The two references agree (nth_element vs a stable sort).
TEST(KernelSelectReference, NthElementMatchesStableSort) {
    for (size_t n : {size_t(1), size_t(2), size_t(17), size_t(1000), size_t(20000)}) {
        for (int d : {kNormal, kSpecial, kZeros, kNegZeros, kHalfTies}) {
            const auto& x = input(d, n, 0);
            for (size_t k : ks_for(n, {0.01, 0.1, 0.5}))
                EXPECT_EQ(ref::topk_select(x.data(), n, k),
                          ref::topk_select_stable_sort(x.data(), n, k))
                    << "n=" << n << " k=" << k << " dist=" << kDistNames[d];
        }
    }
}

}  // namespace
}  // namespace gw::ktest
