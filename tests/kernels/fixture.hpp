// Shared fixture of the kernel tests (tests/kernels/test_<family>.cpp): the
// per-target parameterisation (every compiled+supported target, compared bit
// for bit with the plain scalar reference of its family, ref_<family>.hpp),
// the inputs, and the buffers.
//
// Inputs are copied into buffers of exactly their size (so AddressSanitizer
// sees any over-read) at a chosen misalignment; outputs go to buffers with
// guard bytes on both sides (so any write outside [0, n) is seen).
//
// Everything here is in namespace gw::ktest (not anonymous): the fixture
// class must be one type in every file of the test_kernels binary, and the
// input cache is shared. fixture.cpp instantiates the suite for the targets.
#pragma once

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <new>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/kernels.hpp"
#include "ref_half.hpp"  // half_tie() makes fp16/bf16 midpoints

namespace gw::ktest {

namespace ref = gw::ref;
using gw::kern::EfCoef;
using gw::kern::Table;

// Every target of every CPU family: those another family's build lacks are
// reported as not supported (and skipped), never silently dropped.
const gw_simd_target kTargets[] = {GW_SIMD_SCALAR, GW_SIMD_SSE2,   GW_SIMD_SSE4_2,
                                   GW_SIMD_AVX2,   GW_SIMD_AVX512, GW_SIMD_NEON};

const size_t kLengths[] = {0,  1,  7,  8,   9,   15,  16,   17,     31,
                           33, 63, 64, 65, 127, 129, 1000, 1000003};
constexpr size_t kBig = 1000003;

// Targets that ran at least one test (fixture.cpp prints them at the end).
inline std::set<int>& targets_run() {
    static std::set<int> s;
    return s;
}

// ---------------------------------------------------------------------------
// Bits and buffers
// ---------------------------------------------------------------------------
inline uint32_t fbits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
inline float from_bits(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
inline uint64_t dbits(double d) {
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

inline ::testing::AssertionResult same_floats(const float* got, const float* want, size_t n) {
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

// Unused high bits of a sign field's last byte are 0.
inline ::testing::AssertionResult padding_clear(const uint8_t* bits, size_t n) {
    if (n % 8 == 0) return ::testing::AssertionSuccess();
    const unsigned last = bits[n / 8];
    if ((last >> (n % 8)) == 0) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "unused high bits of the last byte set: 0x" << std::hex
                                         << last;
}

inline ::testing::AssertionResult same_bytes(const void* got, const void* want, size_t n) {
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

inline std::vector<float> special_values() {
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

inline float half_tie(std::mt19937_64& rng) {
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

inline std::vector<float> generate(int dist, size_t n, uint64_t seed) {
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
inline const std::vector<float>& input(int dist, size_t n, int stream) {
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

inline std::vector<uint8_t> random_bytes(size_t n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<uint8_t> b(n);
    for (auto& x : b) x = uint8_t(rng());
    return b;
}

// No NaN or Inf (inputs callers would refuse before these kernels run).
inline bool finite_all(const std::vector<float>& x) {
    for (float v : x)
        if (!std::isfinite(v)) return false;
    return true;
}

struct Case {
    size_t n;
    int dist;
    size_t fmis;  // float arrays: offset in floats (0 or 1)
    size_t bmis;  // byte payloads: offset in bytes (0..3)
};

// Every length with every distribution at several misalignments; the
// million-element length with a few distributions, misaligned.
inline const std::vector<Case>& cases() {
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

inline std::string describe(const Case& c) {
    return "n=" + std::to_string(c.n) + " dist=" + kDistNames[c.dist] +
           " float_misalign=" + std::to_string(c.fmis) + " byte_misalign=" + std::to_string(c.bmis);
}

// Runs body(case) for every case, traced, stopping at the first failing case.
template <class F>
inline void for_each_case(F body) {
    for (const Case& c : cases()) {
        SCOPED_TRACE(describe(c));
        body(c);
        if (::testing::Test::HasFailure()) return;
    }
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

inline std::string target_param_name(const ::testing::TestParamInfo<gw_simd_target>& info) {
    std::string s = gw::kern::target_name(info.param);
    for (char& c : s)
        if (c == '.') c = '_';
    return s;
}

// Positions to plant a bad value in an array of n: ends, middle, the tail of
// every vector width, and the 4096-element chunk edges of the big arrays.
inline std::vector<size_t> plant_positions(size_t n) {
    std::vector<size_t> pos;
    if (n == 0) return pos;
    for (size_t p : {size_t(0), size_t(1), n / 2, n - 1, n - 2, n - 7, n - 8, n - 9, n - 15, n - 16,
                     n - 17, n - 33, n - 63, n - 65, size_t(4095), size_t(4096), size_t(8191),
                     size_t(8192), size_t(16383)})
        if (p < n) pos.push_back(p);
    return pos;
}

}  // namespace gw::ktest
