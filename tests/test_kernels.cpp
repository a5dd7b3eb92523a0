// Every kernel of src/kernels on every SIMD target this CPU supports, compared
// bit for bit with the plain scalar reference in reference.hpp; plus the
// dispatch rules (table_for, set_target, the GW_SIMD environment variable).
//
// Inputs are copied into buffers of exactly their size (so AddressSanitizer
// sees any over-read) at a chosen misalignment; outputs go to buffers with
// guard bytes on both sides (so any write outside [0, n) is seen).
#include <gtest/gtest.h>

#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "kernels/kernels.hpp"
#include "kernels/tables.hpp"
#include "reference.hpp"

namespace {

namespace ref = gw::ref;
using gw::kern::EfCoef;
using gw::kern::Table;

const gw_simd_target kTargets[] = {GW_SIMD_SCALAR, GW_SIMD_SSE2, GW_SIMD_SSE4_2, GW_SIMD_AVX2,
                                   GW_SIMD_AVX512};

const size_t kLengths[] = {0,  1,  7,  8,   9,   15,  16,   17,     31,
                           33, 63, 64, 65, 127, 129, 1000, 1000003};
constexpr size_t kBig = 1000003;

// ---------------------------------------------------------------------------
// Which targets ran (printed at the end of the run)
// ---------------------------------------------------------------------------
std::set<int>& targets_run() {
    static std::set<int> s;
    return s;
}

class ReportTargets : public ::testing::Environment {
public:
    void TearDown() override {
        std::string ran, missing;
        for (gw_simd_target t : kTargets) {
            std::string& dst = targets_run().count(t) ? ran : missing;
            dst += std::string(dst.empty() ? "" : " ") + gw::kern::target_name(t);
        }
        std::printf("[ kernels  ] SIMD targets tested: %s\n", ran.empty() ? "(none)" : ran.c_str());
        std::printf("[ kernels  ] not supported here:  %s\n",
                    missing.empty() ? "(none)" : missing.c_str());
    }
};
[[maybe_unused]] ::testing::Environment* const g_report =
    ::testing::AddGlobalTestEnvironment(new ReportTargets);

// ---------------------------------------------------------------------------
// Bits and buffers
// ---------------------------------------------------------------------------
uint32_t fbits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
float from_bits(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
uint64_t dbits(double d) {
    uint64_t u;
    std::memcpy(&u, &d, 8);
    return u;
}

// Exactly `size` bytes, starting `misalign` bytes past a 64-byte boundary.
class Exact {
public:
    Exact(size_t size, size_t misalign) : size_(size) {
        base_ = static_cast<unsigned char*>(
            ::operator new(misalign + size + (size == 0 ? 1 : 0), std::align_val_t{64}));
        p_ = base_ + misalign;
    }
    Exact(const void* src, size_t size, size_t misalign) : Exact(size, misalign) {
        if (size != 0) std::memcpy(p_, src, size);
    }
    ~Exact() { ::operator delete(base_, std::align_val_t{64}); }
    Exact(const Exact&) = delete;
    Exact& operator=(const Exact&) = delete;

    unsigned char* data() { return p_; }
    float* f() { return reinterpret_cast<float*>(p_); }
    bool same_as(const void* src) const { return size_ == 0 || std::memcmp(p_, src, size_) == 0; }

private:
    unsigned char* base_ = nullptr;
    unsigned char* p_ = nullptr;
    size_t size_ = 0;
};

// `size` bytes at `misalign` past a 64-byte boundary, with 64+ guard bytes of
// a fixed pattern on each side; the interior starts as the same pattern.
class Guarded {
public:
    static constexpr unsigned char kFill = 0xA7;
    Guarded(size_t size, size_t misalign) : raw_(3 * 64 + size + misalign, kFill), size_(size) {
        const size_t pad = (64 - reinterpret_cast<uintptr_t>(raw_.data()) % 64) % 64;
        off_ = pad + 64 + misalign;
    }
    unsigned char* data() { return raw_.data() + off_; }
    float* f() { return reinterpret_cast<float*>(data()); }
    void fill_from(const void* src) {
        if (size_ != 0) std::memcpy(data(), src, size_);
    }
    ::testing::AssertionResult guards_intact() const {
        auto check = [&](size_t from, size_t to) -> ::testing::AssertionResult {
            for (size_t i = from; i < to; ++i)
                if (raw_[i] != kFill)
                    return ::testing::AssertionFailure()
                           << "byte at offset " << (long(i) - long(off_)) << " from the start of a "
                           << size_ << "-byte output was written";
            return ::testing::AssertionSuccess();
        };
        ::testing::AssertionResult before = check(0, off_);
        if (!before) return before;
        return check(off_ + size_, raw_.size());
    }

private:
    std::vector<unsigned char> raw_;
    size_t size_;
    size_t off_ = 0;
};

::testing::AssertionResult same_floats(const float* got, const float* want, size_t n) {
    if (n == 0 || std::memcmp(got, want, n * sizeof(float)) == 0)
        return ::testing::AssertionSuccess();
    for (size_t i = 0; i < n; ++i)
        if (fbits(got[i]) != fbits(want[i])) {
            char msg[160];
            std::snprintf(msg, sizeof msg, "element %zu: got %a (0x%08x), want %a (0x%08x)", i,
                          double(got[i]), unsigned(fbits(got[i])), double(want[i]),
                          unsigned(fbits(want[i])));
            return ::testing::AssertionFailure() << msg;
        }
    return ::testing::AssertionFailure() << "memcmp differs but no element does";
}

::testing::AssertionResult same_bytes(const void* got, const void* want, size_t n) {
    if (n == 0 || std::memcmp(got, want, n) == 0) return ::testing::AssertionSuccess();
    const auto* g = static_cast<const unsigned char*>(got);
    const auto* w = static_cast<const unsigned char*>(want);
    for (size_t i = 0; i < n; ++i)
        if (g[i] != w[i]) {
            char msg[96];
            std::snprintf(msg, sizeof msg, "byte %zu: got 0x%02x, want 0x%02x", i, g[i], w[i]);
            return ::testing::AssertionFailure() << msg;
        }
    return ::testing::AssertionFailure();
}

// ---------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------
enum Dist {
    kUniform,     // U(-1, 1)
    kNormal,      // N(0, 3^2)
    kCauchy,      // heavy-tailed
    kLogUniform,  // sign * 2^U(-140, 127): every binade, denormals to near FLT_MAX
    kMixedScale,  // sign * 2^U(-30, 30): double sums of these round at every step
    kRandomBits,  // any finite bit pattern
    kZeros,
    kNegZeros,
    kDenormals,
    kHuge,     // +-[FLT_MAX/2, FLT_MAX]
    kSpecial,  // boundary values (see special_values)
    kHalfTies, // exactly halfway between two fp16 or two bf16 values
    kNumDists
};
const char* const kDistNames[] = {"uniform",  "normal",    "cauchy", "loguniform",
                                  "mixedscale", "randombits", "zeros", "negzeros",
                                  "denormals", "huge",       "special", "halfties"};
static_assert(sizeof(kDistNames) / sizeof(kDistNames[0]) == kNumDists, "one name per Dist");

std::vector<float> special_values() {
    std::vector<float> v = {
        0.0f, 1.0f, 0.5f, 0.1f, 1.0f / 3.0f, FLT_MIN, std::nextafter(FLT_MIN, 0.0f),
        FLT_TRUE_MIN, FLT_MAX, std::nextafter(FLT_MAX, 0.0f),
        // fp16 range ends and rounding edges
        65504.0f, 65505.0f, std::nextafter(65520.0f, 0.0f), 65520.0f, 65520.0f + 0.0078125f,
        65536.0f, 1e5f, 1e10f, 3e38f, std::ldexp(1.0f, -14),
        std::nextafter(std::ldexp(1.0f, -14), 0.0f),
        std::ldexp(1.0f, -24), std::ldexp(1.0f, -25), std::ldexp(3.0f, -26), std::ldexp(1.0f, -26),
        std::ldexp(1023.0f, -24), std::ldexp(2047.0f, -25), 2049.0f, 2051.0f, 4097.0f,
        // bf16 rounding edges: ties to even, just above/below, and the top
        from_bits(0x3F808000), from_bits(0x3F818000), from_bits(0x3F808001), from_bits(0x3F807FFF),
        from_bits(0x7F7F0000), from_bits(0x7F7F7FFF), from_bits(0x7F7F8000), from_bits(0x7F7FFFFF),
        from_bits(0x00008000), from_bits(0x00018000), from_bits(0x007F8000), from_bits(0x007FFFFF)};
    const size_t n = v.size();
    for (size_t i = 0; i < n; ++i) v.push_back(-v[i]);
    return v;
}

float half_tie(std::mt19937_64& rng) {
    float lo, hi;
    if (rng() & 1) {  // fp16: any finite positive half and the next one up
        const uint16_t h = uint16_t(rng() % 0x7BFF);
        lo = ref::f16_to_f32(h);
        hi = ref::f16_to_f32(uint16_t(h + 1));
    } else {  // bf16
        const uint16_t h = uint16_t(rng() % 0x7F7F);
        lo = ref::bf16_to_f32(h);
        hi = ref::bf16_to_f32(uint16_t(h + 1));
    }
    const float mid = float((double(lo) + double(hi)) / 2);  // exact: one more bit
    return (rng() & 2) ? -mid : mid;
}

std::vector<float> generate(int dist, size_t n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> u01(0.0f, 1.0f);
    std::vector<float> v(n);
    static const std::vector<float> specials = special_values();
    for (size_t i = 0; i < n; ++i) {
        float x = 0.0f;
        switch (dist) {
        case kUniform: x = 2.0f * u01(rng) - 1.0f; break;
        case kNormal: x = 3.0f * std::normal_distribution<float>(0.0f, 1.0f)(rng); break;
        case kCauchy: x = std::cauchy_distribution<float>(0.0f, 1.0f)(rng); break;
        case kLogUniform: {
            const float e = -140.0f + 267.0f * u01(rng);
            x = std::exp2(e) * ((rng() & 1) ? -1.0f : 1.0f);
            break;
        }
        case kMixedScale: {
            const float e = -30.0f + 60.0f * u01(rng);
            x = std::exp2(e) * ((rng() & 1) ? -1.0f : 1.0f);
            break;
        }
        case kRandomBits: {
            uint32_t b;
            do b = uint32_t(rng()); while ((b & 0x7F800000u) == 0x7F800000u);
            x = from_bits(b);
            break;
        }
        case kZeros: x = 0.0f; break;
        case kNegZeros: x = -0.0f; break;
        case kDenormals: x = from_bits((uint32_t(rng()) & 0x807FFFFFu)); break;
        case kHuge: x = FLT_MAX * (0.5f + 0.5f * u01(rng)) * ((rng() & 1) ? -1.0f : 1.0f); break;
        case kSpecial: x = specials[rng() % specials.size()]; break;
        case kHalfTies: x = half_tie(rng); break;
        }
        if (!std::isfinite(x)) x = FLT_MAX;  // cauchy/exp2 extremes
        v[i] = x;
    }
    return v;
}

// Cached so the big inputs are generated once; `stream` gives independent inputs.
const std::vector<float>& input(int dist, size_t n, int stream) {
    static std::map<std::tuple<int, size_t, int>, std::vector<float>> cache;
    auto key = std::make_tuple(dist, n, stream);
    auto it = cache.find(key);
    if (it == cache.end()) {
        const uint64_t seed = 0x9E3779B97F4A7C15ull * uint64_t(dist + 1) ^ (uint64_t(n) << 20) ^
                              (uint64_t(stream) * 0xC2B2AE3D27D4EB4Full);
        it = cache.emplace(key, generate(dist, n, seed)).first;
    }
    return it->second;
}

std::vector<uint8_t> random_bytes(size_t n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<uint8_t> b(n);
    for (auto& x : b) x = uint8_t(rng());
    return b;
}

struct Case {
    size_t n;
    int dist;
    size_t fmis;  // float arrays: offset in floats (0 or 1)
    size_t bmis;  // byte payloads: offset in bytes (0..3)
};

// Every length with every distribution at several misalignments; the
// million-element length with a few distributions, misaligned.
const std::vector<Case>& cases() {
    static const std::vector<Case> all = [] {
        std::vector<Case> out;
        for (size_t n : kLengths) {
            if (n == kBig) {
                for (int d : {kNormal, kCauchy, kMixedScale, kRandomBits, kSpecial})
                    out.push_back({n, d, 1, 3});
                continue;
            }
            for (int d = 0; d < kNumDists; ++d)
                for (size_t k = 0; k < 4; ++k) out.push_back({n, d, k % 2, k});
        }
        return out;
    }();
    return all;
}

std::string describe(const Case& c) {
    return "n=" + std::to_string(c.n) + " dist=" + kDistNames[c.dist] +
           " float_misalign=" + std::to_string(c.fmis) + " byte_misalign=" + std::to_string(c.bmis);
}

// Runs body(case) for every case, traced, stopping at the first failing case.
template <class F>
void for_each_case(F body) {
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        body(c);
        if (::testing::Test::HasFailure()) return;
    }
}

// Half payload (little-endian u16) made from a float input with the reference.
std::vector<uint8_t> f16_payload(const std::vector<float>& x) {
    std::vector<uint8_t> p(2 * x.size() + 1);
    ref::f32_to_f16(x.data(), p.data(), x.size());
    p.resize(2 * x.size());
    return p;
}
std::vector<uint8_t> bf16_payload(const std::vector<float>& x) {
    std::vector<uint8_t> p(2 * x.size() + 1);
    ref::f32_to_bf16(x.data(), p.data(), x.size());
    p.resize(2 * x.size());
    return p;
}

// ---------------------------------------------------------------------------
// Fixture: one instance per target
// ---------------------------------------------------------------------------
class KernelTest : public ::testing::TestWithParam<gw_simd_target> {
protected:
    void SetUp() override {
        t_ = gw::kern::table_for(GetParam());
        if (t_ == nullptr) GTEST_SKIP() << gw::kern::target_name(GetParam()) << " not supported";
        targets_run().insert(GetParam());
    }
    const Table* t_ = nullptr;
};

std::string target_param_name(const ::testing::TestParamInfo<gw_simd_target>& info) {
    std::string s = gw::kern::target_name(info.param);
    for (char& c : s)
        if (c == '.') c = '_';
    return s;
}

// ---- reductions ----
TEST_P(KernelTest, SumAbs) {
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        const auto& x = input(c.dist, c.n, 0);
        Exact in(x.data(), 4 * c.n, 4 * c.fmis);
        const double got = t_->sum_abs(in.f(), c.n);
        const double want = ref::sum_abs(x.data(), c.n);
        EXPECT_EQ(dbits(got), dbits(want)) << got << " vs " << want;
        EXPECT_TRUE(std::isfinite(got));
        if (HasFailure()) return;
    }
}

TEST_P(KernelTest, SumSq) {
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        const auto& x = input(c.dist, c.n, 0);
        Exact in(x.data(), 4 * c.n, 4 * c.fmis);
        const double got = t_->sum_sq(in.f(), c.n);
        const double want = ref::sum_sq(x.data(), c.n);
        EXPECT_EQ(dbits(got), dbits(want)) << got << " vs " << want;
        EXPECT_TRUE(std::isfinite(got));  // FLT_MAX^2 * 1e6 fits in a double
        if (HasFailure()) return;
    }
}

TEST_P(KernelTest, SumOfHugeValuesStaysFinite) {
    std::vector<float> x(kBig, FLT_MAX);
    for (size_t i = 0; i < x.size(); i += 3) x[i] = -FLT_MAX;
    EXPECT_EQ(dbits(t_->sum_abs(x.data(), x.size())), dbits(ref::sum_abs(x.data(), x.size())));
    EXPECT_EQ(dbits(t_->sum_sq(x.data(), x.size())), dbits(ref::sum_sq(x.data(), x.size())));
    EXPECT_TRUE(std::isfinite(t_->sum_sq(x.data(), x.size())));
    EXPECT_EQ(t_->sum_abs(x.data(), 16), 16.0 * double(FLT_MAX));
}

// Positions to plant a bad value in an array of n: ends, middle, the tail of
// every vector width, and the 4096-element chunk edges of the big arrays.
std::vector<size_t> plant_positions(size_t n) {
    std::vector<size_t> pos;
    if (n == 0) return pos;
    for (size_t p : {size_t(0), size_t(1), n / 2, n - 1, n - 2, n - 7, n - 8, n - 9, n - 15, n - 16,
                     n - 17, n - 33, n - 63, n - 65, size_t(4095), size_t(4096), size_t(8191),
                     size_t(8192), size_t(16383)})
        if (p < n) pos.push_back(p);
    return pos;
}

TEST_P(KernelTest, AllFinite) {
    const uint32_t bad[] = {0x7F800000u, 0xFF800000u, 0x7FC00000u, 0x7F800001u, 0xFFFFFFFFu,
                            0xFF800001u, 0x7FFFFFFFu};
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        std::vector<float> x = input(c.dist, c.n, 0);
        {
            Exact in(x.data(), 4 * c.n, 4 * c.fmis);
            EXPECT_EQ(t_->all_finite(in.f(), c.n), ref::all_finite(x.data(), c.n));
            EXPECT_TRUE(t_->all_finite(in.f(), c.n));
        }
        // Plant bad values for some of the cases only (it copies the input each time).
        if (c.fmis != 1 || (c.n == kBig && c.dist != kNormal)) continue;
        size_t k = 0;
        for (size_t p : plant_positions(c.n)) {
            const float saved = x[p];
            x[p] = from_bits(bad[k++ % (sizeof bad / sizeof bad[0])]);
            Exact in(x.data(), 4 * c.n, 4 * c.fmis);
            EXPECT_FALSE(t_->all_finite(in.f(), c.n)) << "bad value at " << p;
            EXPECT_FALSE(ref::all_finite(x.data(), c.n));
            x[p] = saved;
        }
        if (HasFailure()) return;
    }
}

// ---- error feedback ----
const EfCoef kCoefs[] = {
    {0.9f, 1.0f, 0.9f, 1.0f, 1.0f},      // Nesterov (Alg. 4)
    {0.9f, 0.1f, 1.0f, 0.0f, 0.5f},      // signum-style momentum, lr change
    {0.0f, 0.0f, 0.0f, 1.0f, 0.7f},      // no momentum: p = g + r e (server's q)
    {0.37f, 1.3f, -0.2f, 2.5f, 1e-3f},   // arbitrary
    {0.0f, 0.0f, 0.0f, 1.0f, 0.0f},      // error feedback off
};

TEST_P(KernelTest, EfCombine) {
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        const auto& g = input(c.dist, c.n, 0);
        const auto& m = input(c.dist, c.n, 1);
        const auto& e = input(c.dist, c.n, 2);
        Exact gi(g.data(), 4 * c.n, 4 * c.fmis), mi(m.data(), 4 * c.n, 4 * c.fmis),
            ei(e.data(), 4 * c.n, 4 * c.fmis);
        std::vector<float> want(c.n + 1);
        for (const EfCoef& k : kCoefs) {
            Guarded p(4 * c.n, 4 * c.fmis);
            t_->ef_combine(gi.f(), mi.f(), ei.f(), k, p.f(), c.n);
            ref::ef_combine(g.data(), m.data(), e.data(), k, want.data(), c.n);
            EXPECT_TRUE(same_floats(p.f(), want.data(), c.n)) << "mu=" << k.mu << " r=" << k.r;
            EXPECT_TRUE(p.guards_intact());
            // The server passes one buffer as g, m and e.
            Guarded q(4 * c.n, 4 * c.fmis);
            t_->ef_combine(gi.f(), gi.f(), gi.f(), k, q.f(), c.n);
            ref::ef_combine(g.data(), g.data(), g.data(), k, want.data(), c.n);
            EXPECT_TRUE(same_floats(q.f(), want.data(), c.n)) << "g == m == e";
            EXPECT_TRUE(q.guards_intact());
        }
        EXPECT_TRUE(gi.same_as(g.data()) && mi.same_as(m.data()) && ei.same_as(e.data()))
            << "an input was modified";
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

// ---- sign bits ----
::testing::AssertionResult padding_clear(const uint8_t* bits, size_t n) {
    if (n % 8 == 0) return ::testing::AssertionSuccess();
    const unsigned last = bits[n / 8];
    if ((last >> (n % 8)) == 0) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "unused high bits of the last byte set: 0x" << std::hex
                                         << last;
}

TEST_P(KernelTest, SignPack) {
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        const auto& x = input(c.dist, c.n, 0);
        const size_t nb = ref::sign_bytes(c.n);
        Exact in(x.data(), 4 * c.n, 4 * c.fmis);
        Guarded bits(nb, c.bmis);
        std::vector<uint8_t> want(nb + 1);
        t_->sign_pack(in.f(), c.n, bits.data());
        ref::sign_pack(x.data(), c.n, want.data());
        EXPECT_TRUE(same_bytes(bits.data(), want.data(), nb));
        EXPECT_TRUE(padding_clear(bits.data(), c.n));
        EXPECT_TRUE(bits.guards_intact());
        if (HasFailure()) return;
    }
}

TEST_P(KernelTest, SignOfZeroIsPlus) {
    const float x[9] = {0.0f, -0.0f, FLT_TRUE_MIN, -FLT_TRUE_MIN, 1.0f, -1.0f, 0.0f, -0.0f, -0.0f};
    uint8_t bits[2] = {0xFF, 0xFF};
    t_->sign_pack(x, 9, bits);
    EXPECT_EQ(bits[0], 0x28);  // only -denormal (bit 3) and -1 (bit 5)
    EXPECT_EQ(bits[1], 0x00);
}

TEST_P(KernelTest, SignPackResidual) {
    const float scales[] = {1.0f, 0.3125f, 1e-30f, 3.0e38f};
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        const auto& x = input(c.dist, c.n, 0);
        const size_t nb = ref::sign_bytes(c.n);
        Exact in(x.data(), 4 * c.n, 4 * c.fmis);
        std::vector<uint8_t> want_bits(nb + 1);
        std::vector<float> want_e(c.n + 1);
        for (float s : scales) {
            SCOPED_TRACE("s=" + std::to_string(s));
            ref::sign_pack_residual(x.data(), c.n, s, want_bits.data(), want_e.data());
            {  // separate residual buffer
                Guarded bits(nb, c.bmis), e(4 * c.n, 4 * c.fmis);
                t_->sign_pack_residual(in.f(), c.n, s, bits.data(), e.f());
                EXPECT_TRUE(same_bytes(bits.data(), want_bits.data(), nb));
                EXPECT_TRUE(padding_clear(bits.data(), c.n));
                EXPECT_TRUE(same_floats(e.f(), want_e.data(), c.n));
                EXPECT_TRUE(bits.guards_intact());
                EXPECT_TRUE(e.guards_intact());
            }
            {  // in place: e == x
                Guarded bits(nb, c.bmis), xe(4 * c.n, 4 * c.fmis);
                xe.fill_from(x.data());
                t_->sign_pack_residual(xe.f(), c.n, s, bits.data(), xe.f());
                EXPECT_TRUE(same_bytes(bits.data(), want_bits.data(), nb)) << "e == x";
                EXPECT_TRUE(same_floats(xe.f(), want_e.data(), c.n)) << "e == x";
                EXPECT_TRUE(bits.guards_intact());
                EXPECT_TRUE(xe.guards_intact());
            }
        }
        EXPECT_TRUE(in.same_as(x.data()));
        if (HasFailure()) return;
    }
}

// Sign bit payloads for a case: packed from the input (zeros -> all clear,
// -0 -> all clear too) or random bytes, with junk in the unused high bits of
// the last byte, which decoding must ignore.
std::vector<uint8_t> bits_for(const Case& c) {
    const size_t nb = ref::sign_bytes(c.n);
    std::vector<uint8_t> b;
    if (c.dist == kUniform || c.dist == kRandomBits || c.dist == kCauchy) {
        b = random_bytes(nb, 77 + c.n * 31 + uint64_t(c.dist));
    } else {
        b.assign(nb + 1, 0);
        ref::sign_pack(input(c.dist, c.n, 0).data(), c.n, b.data());
        b.resize(nb);
    }
    if (c.n % 8 != 0) b[nb - 1] = uint8_t(b[nb - 1] | (0xFF << (c.n % 8)));
    return b;
}

TEST_P(KernelTest, SignUnpack) {
    const float scales[] = {1.0f, -0.75f, 0.0f, 2.5e-3f};
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        const std::vector<uint8_t> b = bits_for(c);
        Exact in(b.data(), b.size(), c.bmis);
        std::vector<float> want(c.n + 1);
        for (float s : scales) {
            Guarded out(4 * c.n, 4 * c.fmis);
            t_->sign_unpack(in.data(), c.n, s, out.f());
            ref::sign_unpack(b.data(), c.n, s, want.data());
            EXPECT_TRUE(same_floats(out.f(), want.data(), c.n)) << "s=" << s;
            EXPECT_TRUE(out.guards_intact());
        }
        if (HasFailure()) return;
    }
}

TEST_P(KernelTest, SignAccumulate) {
    const float values[] = {1.0f, 0.5f, -3.0f, 1e-20f};
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        const std::vector<uint8_t> b = bits_for(c);
        const auto& acc0 = input(c.dist, c.n, 1);
        Exact in(b.data(), b.size(), c.bmis);
        for (float v : values) {
            Guarded acc(4 * c.n, 4 * c.fmis);
            acc.fill_from(acc0.data());
            std::vector<float> want(acc0);
            t_->sign_accumulate(in.data(), c.n, v, acc.f());
            ref::sign_accumulate(b.data(), c.n, v, want.data());
            EXPECT_TRUE(same_floats(acc.f(), want.data(), c.n)) << "v=" << v;
            EXPECT_TRUE(acc.guards_intact());
        }
        if (HasFailure()) return;
    }
}

// ---- axpy ----
TEST_P(KernelTest, Axpy) {
    const float alphas[] = {1.0f, -0.5f, 0.1f, 0.0f, 3.0e3f};
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        const auto& x = input(c.dist, c.n, 0);
        const auto& acc0 = input(c.dist, c.n, 1);
        Exact in(x.data(), 4 * c.n, c.bmis);  // a float payload at any byte offset
        for (float a : alphas) {
            Guarded acc(4 * c.n, 4 * c.fmis);
            acc.fill_from(acc0.data());
            std::vector<float> want(acc0);
            t_->axpy(a, in.data(), acc.f(), c.n);
            ref::axpy(a, x.data(), want.data(), c.n);
            EXPECT_TRUE(same_floats(acc.f(), want.data(), c.n)) << "alpha=" << a;
            EXPECT_TRUE(acc.guards_intact());
        }
        if (HasFailure()) return;
    }
}

// ---- fp16 / bf16 ----
enum class Half { F16, Bf16 };

void check_encode(const Table& t, Half kind, const std::vector<float>& x, size_t fmis,
                  size_t bmis) {
    const size_t n = x.size();
    Exact in(x.data(), 4 * n, 4 * fmis);
    Guarded out(2 * n, bmis);
    std::vector<uint8_t> want(2 * n + 1);
    if (kind == Half::F16) {
        t.f32_to_f16(in.f(), out.data(), n);
        ref::f32_to_f16(x.data(), want.data(), n);
    } else {
        t.f32_to_bf16(in.f(), out.data(), n);
        ref::f32_to_bf16(x.data(), want.data(), n);
    }
    ::testing::AssertionResult same = same_bytes(out.data(), want.data(), 2 * n);
    if (!same) {  // name the input element
        for (size_t i = 0; i < n; ++i)
            if (std::memcmp(out.data() + 2 * i, want.data() + 2 * i, 2) != 0) {
                ADD_FAILURE() << "element " << i << ": input " << std::hexfloat << x[i] << " (0x"
                              << std::hex << fbits(x[i]) << ") encodes to 0x"
                              << (out.data()[2 * i] | (out.data()[2 * i + 1] << 8)) << ", want 0x"
                              << (want[2 * i] | (want[2 * i + 1] << 8));
                break;
            }
    }
    EXPECT_TRUE(same);
    EXPECT_TRUE(out.guards_intact());
}

TEST_P(KernelTest, F32ToF16) {
    for_each_case([&](const Case& c) { check_encode(*t_, Half::F16, input(c.dist, c.n, 0), c.fmis, c.bmis); });
}

TEST_P(KernelTest, F32ToBf16) {
    for_each_case([&](const Case& c) { check_encode(*t_, Half::Bf16, input(c.dist, c.n, 0), c.fmis, c.bmis); });
}

// Every finite value of the format, the midpoints to the next value (ties),
// one float ulp either side of each midpoint, both signs.
std::vector<float> rounding_edges(Half kind) {
    std::vector<float> v;
    const uint16_t top = kind == Half::F16 ? 0x7BFF : 0x7F7F;
    auto value = [&](uint32_t h) -> double {
        if (h > top)  // one step beyond the largest finite value
            return kind == Half::F16 ? 65536.0 : std::ldexp(1.0, 128);
        return kind == Half::F16 ? ref::f16_to_f32(uint16_t(h)) : ref::bf16_to_f32(uint16_t(h));
    };
    for (uint32_t h = 0; h <= top; ++h) {
        const float lo = float(value(h));
        const float mid = float((value(h) + value(h + 1)) / 2);
        for (float f : {lo, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, FLT_MAX)}) {
            v.push_back(f);
            v.push_back(-f);
        }
    }
    for (float f : {FLT_MAX, 1e38f, 1e20f, 1e10f, 70000.0f, 65536.0f, FLT_TRUE_MIN, FLT_MIN}) {
        v.push_back(f);
        v.push_back(-f);
    }
    return v;
}

TEST_P(KernelTest, F32ToF16RoundingEdges) {
    static const std::vector<float> x = rounding_edges(Half::F16);
    check_encode(*t_, Half::F16, x, 1, 3);
    // Saturation, spelled out.
    const float sat[] = {65504.0f, 65519.0f, 65520.0f, 1e10f, FLT_MAX, -65520.0f, -FLT_MAX};
    uint16_t h[7];
    t_->f32_to_f16(sat, h, 7);
    for (int i = 0; i < 5; ++i) EXPECT_EQ(h[i], 0x7BFF) << sat[i];
    for (int i = 5; i < 7; ++i) EXPECT_EQ(h[i], 0xFBFF) << sat[i];
}

TEST_P(KernelTest, F32ToBf16RoundingEdges) {
    static const std::vector<float> x = rounding_edges(Half::Bf16);
    check_encode(*t_, Half::Bf16, x, 0, 1);
    const float sat[] = {from_bits(0x7F7F8000), FLT_MAX, -FLT_MAX};
    uint16_t h[3];
    t_->f32_to_bf16(sat, h, 3);
    EXPECT_EQ(h[0], 0x7F7F);
    EXPECT_EQ(h[1], 0x7F7F);
    EXPECT_EQ(h[2], 0xFF7F);
}

void check_decode(const Table& t, Half kind, const std::vector<uint8_t>& payload, size_t fmis,
                  size_t bmis) {
    const size_t n = payload.size() / 2;
    Exact in(payload.data(), payload.size(), bmis);
    Guarded out(4 * n, 4 * fmis);
    std::vector<float> want(n + 1);
    if (kind == Half::F16) {
        t.f16_to_f32(in.data(), out.f(), n);
        ref::f16_to_f32(payload.data(), want.data(), n);
    } else {
        t.bf16_to_f32(in.data(), out.f(), n);
        ref::bf16_to_f32(payload.data(), want.data(), n);
    }
    EXPECT_TRUE(same_floats(out.f(), want.data(), n));
    EXPECT_TRUE(out.guards_intact());
}

TEST_P(KernelTest, F16ToF32) {
    for_each_case([&](const Case& c) { check_decode(*t_, Half::F16, f16_payload(input(c.dist, c.n, 0)), c.fmis, c.bmis); });
}

TEST_P(KernelTest, Bf16ToF32) {
    for_each_case([&](const Case& c) { check_decode(*t_, Half::Bf16, bf16_payload(input(c.dist, c.n, 0)), c.fmis, c.bmis); });
}

// All 65536 bit patterns. Finite values and infinities must match the
// reference; NaNs must stay NaN and be bit-identical to the scalar target.
void check_decode_all_patterns(const Table& t, Half kind) {
    std::vector<uint8_t> payload(2 * 65536);
    for (uint32_t h = 0; h < 65536; ++h) {
        payload[2 * h] = uint8_t(h);
        payload[2 * h + 1] = uint8_t(h >> 8);
    }
    const Table& scalar = *gw::kern::table_for(GW_SIMD_SCALAR);
    std::vector<float> got(65536), sc(65536);
    auto run = [&](const Table& tb, float* out) {
        if (kind == Half::F16)
            tb.f16_to_f32(payload.data() + 0, out, 65536);
        else
            tb.bf16_to_f32(payload.data() + 0, out, 65536);
    };
    run(t, got.data());
    run(scalar, sc.data());
    for (uint32_t h = 0; h < 65536; ++h) {
        const float want =
            kind == Half::F16 ? ref::f16_to_f32(uint16_t(h)) : ref::bf16_to_f32(uint16_t(h));
        if (std::isnan(want)) {
            EXPECT_TRUE(std::isnan(got[h])) << "pattern 0x" << std::hex << h;
            EXPECT_EQ(fbits(got[h]), fbits(sc[h])) << "pattern 0x" << std::hex << h;
        } else {
            EXPECT_EQ(fbits(got[h]), fbits(want)) << "pattern 0x" << std::hex << h;
        }
        if (::testing::Test::HasFailure()) return;
    }
}

TEST_P(KernelTest, F16ToF32AllPatterns) { check_decode_all_patterns(*t_, Half::F16); }
TEST_P(KernelTest, Bf16ToF32AllPatterns) { check_decode_all_patterns(*t_, Half::Bf16); }

TEST_P(KernelTest, HalfRoundTrip) {
    // Every finite half / bfloat16 decodes and re-encodes to itself.
    for (Half kind : {Half::F16, Half::Bf16}) {
        std::vector<uint16_t> h;
        for (uint32_t v = 0; v < 65536; ++v) {
            const bool special =
                kind == Half::F16 ? ((v >> 10) & 0x1F) == 0x1F : ((v >> 7) & 0xFF) == 0xFF;
            if (!special) h.push_back(uint16_t(v));
        }
        std::vector<float> f(h.size());
        std::vector<uint16_t> back(h.size());
        if (kind == Half::F16) {
            t_->f16_to_f32(h.data(), f.data(), h.size());
            t_->f32_to_f16(f.data(), back.data(), f.size());
        } else {
            t_->bf16_to_f32(h.data(), f.data(), h.size());
            t_->f32_to_bf16(f.data(), back.data(), f.size());
        }
        EXPECT_TRUE(same_bytes(back.data(), h.data(), 2 * h.size()));
    }
}

void check_half_accumulate(const Table& t, Half kind, const Case& c) {
    const auto& x = input(c.dist, c.n, 0);
    const std::vector<uint8_t> payload = kind == Half::F16 ? f16_payload(x) : bf16_payload(x);
    const auto& acc0 = input(c.dist, c.n, 1);
    Exact in(payload.data(), payload.size(), c.bmis);
    for (float alpha : {1.0f, -0.25f, 0.3f}) {
        Guarded acc(4 * c.n, 4 * c.fmis);
        acc.fill_from(acc0.data());
        std::vector<float> want(acc0);
        if (kind == Half::F16) {
            t.f16_accumulate(in.data(), alpha, acc.f(), c.n);
            ref::f16_accumulate(payload.data(), alpha, want.data(), c.n);
        } else {
            t.bf16_accumulate(in.data(), alpha, acc.f(), c.n);
            ref::bf16_accumulate(payload.data(), alpha, want.data(), c.n);
        }
        EXPECT_TRUE(same_floats(acc.f(), want.data(), c.n)) << "alpha=" << alpha;
        EXPECT_TRUE(acc.guards_intact());
    }
}

TEST_P(KernelTest, F16Accumulate) {
    for_each_case([&](const Case& c) { check_half_accumulate(*t_, Half::F16, c); });
}

TEST_P(KernelTest, Bf16Accumulate) {
    for_each_case([&](const Case& c) { check_half_accumulate(*t_, Half::Bf16, c); });
}

void check_half_all_finite(const Table& t, Half kind, const Case& c) {
    const auto& x = input(c.dist, c.n, 0);
    std::vector<uint8_t> payload = kind == Half::F16 ? f16_payload(x) : bf16_payload(x);
    auto kernel = [&](const void* p) {
        return kind == Half::F16 ? t.f16_all_finite(p, c.n) : t.bf16_all_finite(p, c.n);
    };
    auto reference = [&](const void* p) {
        return kind == Half::F16 ? ref::f16_all_finite(p, c.n) : ref::bf16_all_finite(p, c.n);
    };
    {
        Exact in(payload.data(), payload.size(), c.bmis);
        EXPECT_TRUE(kernel(in.data()));
        EXPECT_TRUE(reference(payload.data()));
    }
    if (c.fmis != 1 || (c.n == kBig && c.dist != kNormal)) return;  // plant once per (n, dist)
    const uint16_t bad16[] = {0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFFFF, 0x7FFF};
    const uint16_t badbf[] = {0x7F80, 0xFF80, 0x7FC0, 0x7F81, 0xFFFF, 0x7FFF};
    const uint16_t near16[] = {0x7BFF, 0xFBFF, 0x3C00, 0x0400};  // finite, exponent almost all ones
    const uint16_t nearbf[] = {0x7F7F, 0xFF7F, 0x3F80, 0x0080};
    const uint16_t* bad = kind == Half::F16 ? bad16 : badbf;
    const uint16_t* near = kind == Half::F16 ? near16 : nearbf;
    size_t k = 0;
    for (size_t p : plant_positions(c.n)) {
        const uint8_t b0 = payload[2 * p], b1 = payload[2 * p + 1];
        ref::put_u16(payload.data(), p, bad[k % 6]);
        {
            Exact in(payload.data(), payload.size(), c.bmis);
            EXPECT_FALSE(kernel(in.data()))
                << "bad value 0x" << std::hex << bad[k % 6] << " at " << std::dec << p;
            EXPECT_FALSE(reference(payload.data()));
        }
        ref::put_u16(payload.data(), p, near[k % 4]);
        {
            Exact in(payload.data(), payload.size(), c.bmis);
            EXPECT_TRUE(kernel(in.data()))
                << "finite 0x" << std::hex << near[k % 4] << " at " << std::dec << p;
        }
        payload[2 * p] = b0;
        payload[2 * p + 1] = b1;
        ++k;
    }
}

TEST_P(KernelTest, F16AllFinite) {
    for_each_case([&](const Case& c) { check_half_all_finite(*t_, Half::F16, c); });
}

TEST_P(KernelTest, Bf16AllFinite) {
    for_each_case([&](const Case& c) { check_half_all_finite(*t_, Half::Bf16, c); });
}

// ---- CRC32C ----
TEST_P(KernelTest, Crc32cKnownAnswer) {
    const char* s = "123456789";
    EXPECT_EQ(t_->crc32c(0, s, 9), 0xE3069283u);
    EXPECT_EQ(ref::crc32c(0, s, 9), 0xE3069283u);
    EXPECT_EQ(t_->crc32c(0, s, 0), 0u);
    EXPECT_EQ(t_->crc32c(0x12345678u, s, 0), 0x12345678u);
    // RFC 3720 B.4: 32 bytes of zeros, of 0xFF, and 0..31.
    uint8_t buf[32];
    std::memset(buf, 0, 32);
    EXPECT_EQ(t_->crc32c(0, buf, 32), 0x8A9136AAu);
    std::memset(buf, 0xFF, 32);
    EXPECT_EQ(t_->crc32c(0, buf, 32), 0x62A8AB43u);
    for (int i = 0; i < 32; ++i) buf[i] = uint8_t(i);
    EXPECT_EQ(t_->crc32c(0, buf, 32), 0x46DD794Eu);
}

TEST_P(KernelTest, Crc32cMatchesBitwiseReference) {
    std::vector<size_t> lengths;
    for (size_t n = 0; n <= 72; ++n) lengths.push_back(n);
    for (size_t n : {100, 255, 256, 767, 768, 769, 1000, 3 * 8192 - 1, 3 * 8192, 3 * 8192 + 1,
                     3 * 8192 + 3 * 256 + 13, 6 * 8192 + 777, 100000, 1000003})
        lengths.push_back(n);
    const std::vector<uint8_t> data = random_bytes(1000003 + 8, 12345);
    for (size_t n : lengths) {
        for (size_t mis = 0; mis < 8; ++mis) {
            if (n > 1000 && mis % 5 != 0) continue;
            Exact in(data.data() + mis, n, mis);
            for (uint32_t init : {0u, 0xDEADBEEFu}) {
                EXPECT_EQ(t_->crc32c(init, in.data(), n), ref::crc32c(init, data.data() + mis, n))
                    << "n=" << n << " misalign=" << mis << " init=" << init;
            }
        }
        if (HasFailure()) return;
    }
}

TEST_P(KernelTest, Crc32cSplitsCompose) {
    const std::vector<uint8_t> data = random_bytes(100000, 999);
    const uint32_t whole = t_->crc32c(0, data.data(), data.size());
    EXPECT_EQ(whole, ref::crc32c(0, data.data(), data.size()));
    std::mt19937 rng(7);
    std::vector<size_t> cuts = {0, 1, 7, 8, 9, 255, 256, 24575, 24576, 24577, 50000, 99999, 100000};
    for (int i = 0; i < 30; ++i) cuts.push_back(rng() % data.size());
    for (size_t cut : cuts) {
        const uint32_t a = t_->crc32c(0, data.data(), cut);
        EXPECT_EQ(t_->crc32c(a, data.data() + cut, data.size() - cut), whole) << "cut at " << cut;
    }
    // Byte by byte, and three pieces.
    uint32_t c = 0;
    for (size_t i = 0; i < 300; ++i) c = t_->crc32c(c, data.data() + i, 1);
    EXPECT_EQ(c, t_->crc32c(0, data.data(), 300));
    c = t_->crc32c(0, data.data(), 1000);
    c = t_->crc32c(c, data.data() + 1000, 30000);
    c = t_->crc32c(c, data.data() + 31000, data.size() - 31000);
    EXPECT_EQ(c, whole);
}

TEST_P(KernelTest, TableIsComplete) {
    EXPECT_EQ(t_->target, GetParam());
    const Table& t = *t_;
    EXPECT_TRUE(t.sum_abs && t.sum_sq && t.all_finite && t.ef_combine && t.momentum_update &&
                t.sign_pack && t.sign_pack_residual && t.sign_unpack && t.sign_accumulate &&
                t.axpy && t.f32_to_f16 && t.f16_to_f32 && t.f16_accumulate && t.f16_all_finite &&
                t.f32_to_bf16 && t.bf16_to_f32 && t.bf16_accumulate && t.bf16_all_finite &&
                t.crc32c);
}

INSTANTIATE_TEST_SUITE_P(Targets, KernelTest, ::testing::ValuesIn(kTargets), target_param_name);

// ---------------------------------------------------------------------------
// Dispatch
// ---------------------------------------------------------------------------
TEST(KernelDispatch, TargetNames) {
    EXPECT_STREQ(gw::kern::target_name(GW_SIMD_AUTO), "auto");
    EXPECT_STREQ(gw::kern::target_name(GW_SIMD_SCALAR), "scalar");
    EXPECT_STREQ(gw::kern::target_name(GW_SIMD_SSE2), "sse2");
    EXPECT_STREQ(gw::kern::target_name(GW_SIMD_SSE4_2), "sse4.2");
    EXPECT_STREQ(gw::kern::target_name(GW_SIMD_AVX2), "avx2");
    EXPECT_STREQ(gw::kern::target_name(GW_SIMD_AVX512), "avx512");
    EXPECT_STREQ(gw::kern::target_name(static_cast<gw_simd_target>(6)), "unknown");
    EXPECT_STREQ(gw::kern::target_name(static_cast<gw_simd_target>(7)), "unknown");
}

gw_simd_target best_supported() {
    gw_simd_target best = GW_SIMD_SCALAR;
    for (gw_simd_target t : kTargets)
        if (gw::kern::table_for(t) != nullptr) best = t;  // kTargets is in increasing order
    return best;
}

TEST(KernelDispatch, TableFor) {
    std::string supported;
    for (gw_simd_target t : kTargets) {
        const Table* tb = gw::kern::table_for(t);
        if (tb != nullptr) {
            EXPECT_EQ(tb->target, t);
            supported += std::string(" ") + gw::kern::target_name(t);
        }
    }
    std::printf("[ kernels  ] supported on this machine:%s\n", supported.c_str());
    ASSERT_NE(gw::kern::table_for(GW_SIMD_SCALAR), nullptr);
    ASSERT_NE(gw::kern::table_for(GW_SIMD_AUTO), nullptr);
    EXPECT_EQ(gw::kern::table_for(GW_SIMD_AUTO)->target, best_supported());
    EXPECT_EQ(gw::kern::table_for(GW_SIMD_AUTO), gw::kern::table_for(best_supported()));
    EXPECT_EQ(gw::kern::table_for(static_cast<gw_simd_target>(6)), nullptr);
    EXPECT_EQ(gw::kern::table_for(static_cast<gw_simd_target>(7)), nullptr);
#if defined(__x86_64__)
    EXPECT_NE(gw::kern::table_for(GW_SIMD_SSE2), nullptr);  // part of x86-64
#endif
    // The tables dispatch returns are the ones the arch files define.
    EXPECT_EQ(gw::kern::table_for(GW_SIMD_SCALAR), &gw::kern::table_scalar);
    if (const Table* t = gw::kern::table_for(GW_SIMD_AVX2)) {
        EXPECT_EQ(t, &gw::kern::table_avx2);
    }
}

TEST(KernelDispatch, SetTarget) {
    for (gw_simd_target t : kTargets) {
        SCOPED_TRACE(gw::kern::target_name(t));
        const Table* tb = gw::kern::table_for(t);
        if (tb == nullptr) {
            const gw_simd_target before = gw::kern::active_target();
            EXPECT_EQ(gw::kern::set_target(t), GW_ERR_UNSUPPORTED);
            EXPECT_EQ(gw::kern::active_target(), before);
            continue;
        }
        ASSERT_EQ(gw::kern::set_target(t), GW_OK);
        EXPECT_EQ(gw::kern::active_target(), t);
        EXPECT_EQ(&gw::kern::active(), tb);
        EXPECT_EQ(gw::kern::active().crc32c(0, "123456789", 9), 0xE3069283u);
    }
    // Out-of-range values are not a target this build has.
    ASSERT_EQ(gw::kern::set_target(GW_SIMD_SCALAR), GW_OK);
    EXPECT_EQ(gw::kern::set_target(static_cast<gw_simd_target>(6)), GW_ERR_UNSUPPORTED);
    EXPECT_EQ(gw::kern::set_target(static_cast<gw_simd_target>(7)), GW_ERR_UNSUPPORTED);
    EXPECT_EQ(gw::kern::active_target(), GW_SIMD_SCALAR);
    // AUTO picks the best and reports it by its real name.
    ASSERT_EQ(gw::kern::set_target(GW_SIMD_AUTO), GW_OK);
    EXPECT_EQ(gw::kern::active_target(), best_supported());
    EXPECT_EQ(&gw::kern::active(), gw::kern::table_for(GW_SIMD_AUTO));
}

// The lazy choice from GW_SIMD happens once per process, so each case runs in
// a fresh process: "threadsafe" death tests re-execute the test binary.
TEST(KernelDispatchDeathTest, EnvironmentVariable) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    const gw_simd_target best = best_supported();
    auto supported_or_best = [&](gw_simd_target t) {
        return gw::kern::table_for(t) != nullptr ? t : best;
    };
    struct EnvCase {
        const char* value;  // nullptr: unset
        gw_simd_target want;
    };
    const EnvCase env_cases[] = {
        {nullptr, best},
        {"auto", best},
        {"scalar", GW_SIMD_SCALAR},
        {"sse2", supported_or_best(GW_SIMD_SSE2)},
        {"sse4.2", supported_or_best(GW_SIMD_SSE4_2)},
        {"avx2", supported_or_best(GW_SIMD_AVX2)},
        {"avx512", supported_or_best(GW_SIMD_AVX512)},
        {"SCALAR", GW_SIMD_SCALAR},
        {"bogus", best},
        {"", best},
        {"avx5120", best},
    };
    for (const EnvCase& c : env_cases) {
        if (c.value != nullptr)
            setenv("GW_SIMD", c.value, 1);
        else
            unsetenv("GW_SIMD");
        EXPECT_EXIT(std::_Exit(gw::kern::active_target() == c.want ? 0 : 1),
                    ::testing::ExitedWithCode(0), "")
            << "GW_SIMD=" << (c.value ? c.value : "(unset)") << " should select "
            << gw::kern::target_name(c.want);
    }
    // set_target overrides the environment, and sticks.
    setenv("GW_SIMD", "avx2", 1);
    EXPECT_EXIT(std::_Exit((gw::kern::set_target(GW_SIMD_SCALAR) == GW_OK &&
                            gw::kern::active_target() == GW_SIMD_SCALAR)
                               ? 0
                               : 1),
                ::testing::ExitedWithCode(0), "");
    unsetenv("GW_SIMD");
}

TEST(KernelDispatchDeathTest, ConcurrentFirstUse) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    unsetenv("GW_SIMD");
    EXPECT_EXIT(
        {
            std::atomic<bool> go{false};
            const Table* seen[8] = {};
            std::vector<std::thread> threads;
            for (int i = 0; i < 8; ++i)
                threads.emplace_back([&, i] {
                    while (!go.load()) {
                    }
                    seen[i] = &gw::kern::active();
                });
            go.store(true);
            for (auto& th : threads) th.join();
            bool ok = true;
            for (const Table* s : seen) ok = ok && s == gw::kern::table_for(GW_SIMD_AUTO);
            std::_Exit(ok ? 0 : 1);
        },
        ::testing::ExitedWithCode(0), "");
}

}  // namespace
