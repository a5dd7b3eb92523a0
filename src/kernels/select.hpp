// Family "select": topk_select, exact top-k by magnitude, by radix selection
// on the 31-bit key bits(x) & 0x7FFFFFFF (never a sort). Scalar code, vector
// scans, table entry.
//
// The key is split into three digits, bits 30..20, 19..9 and 8..0. Level by
// level, a histogram of one digit over the elements that share the digits
// found so far gives the bin holding the k-th largest key, and how many of
// the k lie above it. The elements are read from x on the first level (all
// of x) and, while the current bin holds more than kCandidates elements, on
// the next levels too (a re-scan keeping only the current prefix: all-equal
// or few-distinct inputs); as soon as the bin fits, its keys are copied once
// into the candidate buffer and the remaining levels work there. After the
// last level the k-th largest key T and `need`, the number of elements equal
// to T to take (the first ones in index order), are exact. Each histogram
// also keeps the smallest and largest key it counted: when they are equal,
// that key is T and the remaining levels are skipped (all-equal input, few
// distinct values). A final forward pass writes the indices with key > T and
// the first `need` with key == T, which gives increasing order directly, and
// stops at the k-th. Passes over x: at most 4 (histogram, two filtered
// histograms, final pass); 3 when the first digit's bin fits the buffer.
//
// One pass instead (kernels.hpp, topk_sampled: n >= 2^22, k <= n/16, and
// the caller gave topk_scratch_bytes(n, k)): 64 evenly spaced runs of 1024
// keys (64K, 0.1% of x at n = 2^26) give, by nth_element, a key T_lo whose
// sample rank is 1.25 times the expected rank of the k-th largest plus three
// standard deviations, so the k-th largest key of x is above it with near
// certainty. One forward pass keeps (key, index) of every element with key
// >= T_lo (about 1.3k of them), the levels above run on those keys alone, and
// the result is written from the kept pairs, already in index order. If the
// sample misled (fewer than k kept, or more than the room for them: ties,
// adversarial order), the pass stops or its result is dropped. When it
// stopped for want of room (ties: all-equal or few-distinct inputs), the
// sample's own k-th largest key is tried as T: one counting pass gives the
// keys above it (G) and equal to it (E); if G < k <= G + E it is T, and the
// final pass (which stops at the k-th index) follows. Otherwise the passes
// above run: the same set either way.
//
// Chunk-sized inputs (kernels.hpp, topk_small: 1024 <= n <= 65536, k <= n/16),
// where four cleared 2048-bin histograms and a histogram of every element
// would cost more than the data: every 8th key is counted in one histogram
// of the first digit, whose bins from the top give a T_lo (a bin's lower
// edge) with 1.25 times the expected sample rank of the k-th largest plus
// three standard deviations above it; one pass keeps (key, index) of every
// element with key >= T_lo in the scratch, and the rest is the one-pass
// path's. Fewer than k kept, or more than fit (ties, adversarial order):
// the radix passes run.
//
// The vector targets compute histogram bins 4 vectors at a time (the junk
// bin for keys outside the prefix); when the prefix holds under 1/8 of x, and
// in the compaction and final passes, they instead compare 4 vectors of keys
// at once and skip the block when no lane matches (movemask from Ops<A>),
// handing matching lanes, in index order, to the scalar per-element steps.
// The result is a set defined by (key desc, index asc), so every target
// writes the same indices whatever path it takes.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>

#include "kernels/common.hpp"

namespace gw::kern {
namespace {

// Scratch layout (the caller provides kTopkScratchBytes, 64-byte aligned):
// 4 sub-histograms of kBins 32-bit counters (each with one junk bin at index
// kBins for non-matching elements, and padding; element i counts in
// sub-histogram i % 4, so no counter exceeds 2^30 for n <= 2^32), then the
// candidate keys (one slot of slack for branch-free compaction).
struct TopkLayout {
    static constexpr size_t kBins = 2048;           // 11-bit digits
    static constexpr size_t kStride = kBins + 16;   // one sub-histogram, in counters
    static constexpr size_t kSubs = 4;              // sub-histograms (no store-to-load chains)
    static constexpr size_t kCandidates = 65536;    // keys held for the refining levels
    static constexpr size_t kCandOffset = kSubs * kStride * sizeof(uint32_t);
    static constexpr size_t kBytes = kCandOffset + (kCandidates + 16) * sizeof(uint32_t);
};
static_assert(TopkLayout::kBytes <= kTopkScratchBytes, "kTopkScratchBytes too small");
static_assert(TopkLayout::kCandOffset % 64 == 0, "candidates 64-byte aligned");

// Candidates few enough for nth_element instead of the remaining levels.
constexpr size_t kTopkFewCandidates = 512;

// The three digits: (shift, width) of bits 30..20, 19..9, 8..0.
constexpr uint32_t kTopkShift[3] = {20, 9, 0};
constexpr uint32_t kTopkWidth[3] = {11, 11, 9};

inline uint32_t topk_key(float v) { return bits_of(v) & 0x7FFFFFFFu; }

// Which elements a histogram counts, and where: keys whose bits under pmask
// equal prefix count in bin (key >> shift) & bmask, the others in the junk
// bin. The first level counts every key (pmask = prefix = 0).
struct TopkFilter {
    uint32_t pmask, prefix, shift, bmask;
    bool match(uint32_t key) const { return (key & pmask) == prefix; }
    uint32_t bin(uint32_t key) const {
        return match(key) ? (key >> shift) & bmask : uint32_t(TopkLayout::kBins);
    }
};

// Smallest and largest key of the elements a histogram counted: when they
// are equal, that key is T and the remaining levels are skipped.
struct TopkRange {
    uint32_t lo = 0xFFFFFFFFu;
    uint32_t hi = 0;
    void add(uint32_t key) {
        lo = key < lo ? key : lo;
        hi = key > hi ? key : hi;
    }
};

// State of the final pass: indices written so far, and how many keys equal
// to T may still be taken.
struct TopkEmit {
    uint32_t* idx;
    size_t count;
    size_t k;
    uint32_t t;
    uint64_t eq_left;
};

template <class Arch>
struct Select;  // vector scans below; Select<ScalarArch> is the scalar code

template <>
struct Select<ScalarArch> {
    // ---- the per-element steps, over [i0, n) ----
    // Histogram of the first digit over every key, and their range.
    static void hist_all(const float* x, size_t i0, size_t n, uint32_t* sub, TopkRange& r) {
        constexpr size_t St = TopkLayout::kStride;
        size_t i = i0;
        for (; i + 4 <= n; i += 4) {
            unroll<4>([&](auto kk) {
                constexpr size_t K = decltype(kk)::value;
                const uint32_t key = topk_key(x[i + K]);
                ++sub[K * St + (key >> 20)];
                r.add(key);
            });
        }
        for (; i < n; ++i) {
            const uint32_t key = topk_key(x[i]);
            ++sub[(i & 3) * St + (key >> 20)];
            r.add(key);
        }
    }
    // Histogram of a later digit over the keys that match, and their range.
    // Few matches (sparse): a well-predicted branch; many: branch-free.
    static void hist_sparse(const float* x, size_t i0, size_t n, const TopkFilter& f,
                            uint32_t* sub, TopkRange& r) {
        for (size_t i = i0; i < n; ++i) {
            const uint32_t key = topk_key(x[i]);
            if (f.match(key)) {
                ++sub[(i & 3) * TopkLayout::kStride + ((key >> f.shift) & f.bmask)];
                r.add(key);
            }
        }
    }
    static void hist1(const float* x, size_t i, const TopkFilter& f, uint32_t* sub,
                      uint32_t& lo, uint32_t& hi) {
        // Branch-free (a match is unpredictable here): mask = all ones iff it matches.
        const uint32_t key = topk_key(x[i]);
        const uint32_t mask = 0u - uint32_t(f.match(key));
        const uint32_t junk = uint32_t(TopkLayout::kBins);
        ++sub[(i & 3) * TopkLayout::kStride + (junk ^ ((((key >> f.shift) & f.bmask) ^ junk) & mask))];
        const uint32_t klo = key | ~mask, khi = key & mask;
        lo = klo < lo ? klo : lo;
        hi = khi > hi ? khi : hi;
    }
    static void hist(const float* x, size_t i0, size_t n, const TopkFilter& f, uint32_t* sub,
                     TopkRange& r) {
        uint32_t lo[4] = {r.lo, r.lo, r.lo, r.lo}, hi[4] = {r.hi, r.hi, r.hi, r.hi};
        size_t i = i0;
        for (; i + 4 <= n; i += 4)
            unroll<4>([&](auto kk) {
                constexpr size_t K = decltype(kk)::value;
                hist1(x, i + K, f, sub, lo[K], hi[K]);
            });
        for (; i < n; ++i) hist1(x, i, f, sub, lo[0], hi[0]);
        for (size_t j = 0; j < 4; ++j) {
            r.lo = lo[j] < r.lo ? lo[j] : r.lo;
            r.hi = hi[j] > r.hi ? hi[j] : r.hi;
        }
    }
    // Appends the keys that match to cand[c..); returns the new c.
    static size_t compact(const float* x, size_t i0, size_t n, const TopkFilter& f,
                          uint32_t* cand, size_t c) {
        for (size_t i = i0; i < n; ++i) {
            const uint32_t key = topk_key(x[i]);
            cand[c] = key;  // cand has a slot of slack past the last match
            c += f.match(key);
        }
        return c;
    }
    // One element of the final pass; true when the k-th index is written.
    static bool emit1(const float* x, size_t i, TopkEmit& e) {
        const uint32_t key = topk_key(x[i]);
        if (key > e.t) {
            e.idx[e.count++] = uint32_t(i);
        } else if (key == e.t && e.eq_left != 0) {
            e.idx[e.count++] = uint32_t(i);
            --e.eq_left;
        }
        return e.count == e.k;
    }
    static void emit(const float* x, size_t i0, size_t n, TopkEmit& e) {
        for (size_t i = i0; i < n; ++i)
            if (emit1(x, i, e)) return;
    }
    // The one-pass path's kept pairs: key >= lo, at most cap of them.
    struct TopkKept {
        uint32_t* key;
        uint32_t* index;
        size_t count, cap;
        uint32_t lo;
        // Keeps element i if its key is >= lo; true when there is no room.
        bool keep1(const float* x, size_t i) {
            const uint32_t k = topk_key(x[i]);
            if (k < lo) return false;
            if (count == cap) return true;
            key[count] = k;
            index[count++] = uint32_t(i);
            return false;
        }
    };
    // How many keys are above t and equal to t.
    static void count(const float* x, size_t i0, size_t n, uint32_t t, uint64_t* above,
                      uint64_t* equal) {
        for (size_t i = i0; i < n; ++i) {
            const uint32_t key = topk_key(x[i]);
            *above += key > t;
            *equal += key == t;
        }
    }
    // False when the room ran out.
    static bool keep(const float* x, size_t i0, size_t n, TopkKept& kept) {
        for (size_t i = i0; i < n; ++i)
            if (kept.keep1(x, i)) return false;
        return true;
    }

    // The passes over x the driver makes; the vector targets provide their own.
    struct Scan {
        static void hist_all(const float* x, size_t n, uint32_t* sub, TopkRange& r) {
            Select::hist_all(x, 0, n, sub, r);
        }
        static void hist(const float* x, size_t n, const TopkFilter& f, bool sparse,
                         uint32_t* sub, TopkRange& r) {
            if (sparse)
                Select::hist_sparse(x, 0, n, f, sub, r);
            else
                Select::hist(x, 0, n, f, sub, r);
        }
        static size_t compact(const float* x, size_t n, const TopkFilter& f, uint32_t* cand) {
            return Select::compact(x, 0, n, f, cand, 0);
        }
        static void emit(const float* x, size_t n, TopkEmit& e) { Select::emit(x, 0, n, e); }
        static bool keep(const float* x, size_t n, TopkKept& kept) {
            return Select::keep(x, 0, n, kept);
        }
        static void count(const float* x, size_t n, uint32_t t, uint64_t* above, uint64_t* equal) {
            Select::count(x, 0, n, t, above, equal);
        }
    };

    // ---- the driver ----
    // The k-th largest key T and how many keys equal to T are taken (rem),
    // digit by digit: over x, or over the ncand keys in cand when `compacted`
    // (which the levels narrow in place).
    template <class Sc>
    static void threshold(const float* x, size_t n, size_t k, uint32_t* sub, uint32_t* cand,
                          bool compacted, size_t ncand, uint32_t* t, uint64_t* rem_out) {
        constexpr size_t S = TopkLayout::kStride;
        uint64_t rem = k;                       // rank of the wanted key among those with the prefix
        uint64_t group = compacted ? ncand : n;  // how many keys have the prefix
        TopkFilter f{0, 0, 0, 0};
        for (int level = 0; level < 3; ++level) {
            if (compacted && ncand <= kTopkFewCandidates) {
                // Few keys left: nth_element costs less than clearing and
                // scanning a histogram. T is the rem-th largest of them.
                std::nth_element(cand, cand + (rem - 1), cand + ncand, std::greater<uint32_t>());
                // The keys above T all lie before it; rem - their count are equal to T.
                const uint32_t kth = cand[rem - 1];
                uint64_t above = 0;
                for (size_t j = 0; j + 1 < rem; ++j) above += cand[j] > kth;
                *t = kth;
                *rem_out = rem - above;
                return;
            }
            f.shift = kTopkShift[level];
            f.bmask = (1u << kTopkWidth[level]) - 1;
            // Histogram of this digit over the keys with the prefix (f.pmask
            // covers the digits found so far), and their smallest and largest.
            TopkRange r;
            size_t nsub = TopkLayout::kSubs;
            if (compacted) {
                nsub = 1;
                std::memset(sub, 0, S * sizeof *sub);
                for (size_t j = 0; j < ncand; ++j) {
                    ++sub[(cand[j] >> f.shift) & f.bmask];
                    r.add(cand[j]);
                }
            } else {
                std::memset(sub, 0, TopkLayout::kSubs * S * sizeof *sub);
                if (level == 0)
                    Sc::hist_all(x, n, sub, r);
                else
                    Sc::hist(x, n, f, group * 8 < n, sub, r);
            }
            if (r.lo == r.hi) {  // one key left (all equal, few distinct values)
                f.prefix = r.lo;
                break;
            }
            // The bin holding the rem-th largest, from the largest key's bin
            // down (the bins above it are empty), and its count.
            uint32_t b = (r.hi >> f.shift) & f.bmask;
            uint64_t count = 0;
            for (;; --b) {
                count = 0;
                for (size_t s = 0; s < nsub; ++s) count += sub[s * S + b];
                if (count >= rem || b == 0) break;
                rem -= count;
            }
            group = count;
            f.prefix |= b << f.shift;
            f.pmask |= f.bmask << f.shift;
            if (level == 2) break;
            // Narrow the candidates to the bin, or copy its keys out of x
            // once they fit.
            if (compacted) {
                size_t c = 0;
                for (size_t j = 0; j < ncand; ++j) {
                    const uint32_t key = cand[j];
                    cand[c] = key;
                    c += f.match(key);
                }
                ncand = c;
            } else if (count <= TopkLayout::kCandidates) {
                ncand = Sc::compact(x, n, f, cand);
                compacted = true;
            }
        }
        *t = f.prefix;
        *rem_out = rem;
    }

    // The one-pass path (see the top of this file); false if the sample misled.
    template <class Sc>
    static bool sampled(const float* x, size_t n, size_t k, uint32_t* idx, unsigned char* base) {
        uint32_t* sub = reinterpret_cast<uint32_t*>(base);
        uint32_t* sample = reinterpret_cast<uint32_t*>(base + TopkLayout::kCandOffset);
        constexpr size_t kRuns = 64, kRun = 1024, kS = kRuns * kRun;
        static_assert(kS <= TopkLayout::kCandidates, "the sample fits the candidate buffer");
        for (size_t b = 0; b < kRuns; ++b) {
            const size_t at = (n - kRun) / (kRuns - 1) * b;
            for (size_t j = 0; j < kRun; ++j) sample[b * kRun + j] = topk_key(x[at + j]);
        }
        const double expect = double(k) * double(kS) / double(n);
        size_t rank = size_t(1.25 * expect + 3.0 * std::sqrt(expect) + 16.0);  // from the top, >= 16
        if (rank > kS) rank = kS;
        std::nth_element(sample, sample + (kS - rank), sample + kS);
        const size_t cap = topk_candidates(n, k);
        uint32_t* key = reinterpret_cast<uint32_t*>(base + kTopkScratchBytes);
        TopkKept kept{key, key + cap, 0, cap, sample[kS - rank]};
        if (!Sc::keep(x, n, kept)) {
            // No room: ties. The sample's k-th largest key, if x agrees, is T.
            const size_t at = size_t((double(k) * double(kS) + double(n) - 1) / double(n));
            std::nth_element(sample, sample + (kS - at), sample + kS);
            const uint32_t t = sample[kS - at];
            uint64_t above = 0, equal = 0;
            Sc::count(x, n, t, &above, &equal);
            if (!(above < k && k <= above + equal)) return false;
            TopkEmit e{idx, 0, k, t, k - above};
            Sc::emit(x, n, e);
            return true;
        }
        if (kept.count < k) return false;
        from_kept<Sc>(k, sub, kept, key + 2 * cap, idx);
        return true;
    }

    // The k indices from kept pairs (every element with key >= some T_lo, at
    // least k of them, in index order): T and rem among the kept keys (a
    // copy in work: the levels narrow it), then the pairs in order.
    template <class Sc>
    static void from_kept(size_t k, uint32_t* sub, const TopkKept& kept, uint32_t* work,
                          uint32_t* idx) {
        std::memcpy(work, kept.key, kept.count * sizeof *work);
        uint32_t t = 0;
        uint64_t eq_left = 0;
        threshold<Sc>(nullptr, 0, k, sub, work, true, kept.count, &t, &eq_left);
        size_t out = 0;
        for (size_t j = 0; out < k; ++j) {
            if (kept.key[j] > t) {
                idx[out++] = kept.index[j];
            } else if (kept.key[j] == t && eq_left != 0) {
                idx[out++] = kept.index[j];
                --eq_left;
            }
        }
    }

    // The small path (see the top of this file); false if the sample misled.
    template <class Sc>
    static bool small(const float* x, size_t n, size_t k, uint32_t* idx, unsigned char* base) {
        constexpr size_t kStep = 8, kCap = TopkLayout::kCandidates / 3;
        uint32_t* sub = reinterpret_cast<uint32_t*>(base);
        std::memset(sub, 0, TopkLayout::kStride * sizeof *sub);
        uint32_t hi = 0;
        for (size_t i = 0; i + kStep <= n; i += kStep) {
            const uint32_t key = topk_key(x[i]);
            ++sub[key >> kTopkShift[0]];
            hi = key > hi ? key : hi;
        }
        const double expect = double(k) / double(kStep);
        const uint64_t rank = uint64_t(1.25 * expect + 3.0 * std::sqrt(expect) + 2.0);
        uint64_t above = 0;
        uint32_t b = hi >> kTopkShift[0];
        for (;; --b) {
            above += sub[b];
            if (above >= rank || b == 0) break;
        }
        uint32_t* key = reinterpret_cast<uint32_t*>(base + TopkLayout::kCandOffset);
        TopkKept kept{key, key + kCap, 0, kCap, b << kTopkShift[0]};
        if (!Sc::keep(x, n, kept) || kept.count < k) return false;
        from_kept<Sc>(k, sub, kept, key + 2 * kCap, idx);
        return true;
    }

    template <class Sc>
    static void run(const float* x, size_t n, size_t k, uint32_t* idx, void* scratch,
                    size_t scratch_bytes) {
        if (k == 0) return;
        if (k == n) {
            for (size_t i = 0; i < n; ++i) idx[i] = uint32_t(i);
            return;
        }
        unsigned char* base = static_cast<unsigned char*>(scratch);
        if (topk_sampled(n, k) && scratch_bytes >= topk_scratch_bytes(n, k) &&
            sampled<Sc>(x, n, k, idx, base))
            return;
        if (topk_small(n, k) && small<Sc>(x, n, k, idx, base)) return;
        uint32_t* sub = reinterpret_cast<uint32_t*>(base);
        uint32_t* cand = reinterpret_cast<uint32_t*>(base + TopkLayout::kCandOffset);
        uint32_t t = 0;
        uint64_t rem = 0;
        threshold<Sc>(x, n, k, sub, cand, false, 0, &t, &rem);
        // t is the k-th largest key T; rem of the keys equal to T are taken.
        TopkEmit e{idx, 0, k, t, rem};
        Sc::emit(x, n, e);
    }

    static void topk_select(const float* x, size_t n, size_t k, uint32_t* idx, void* scratch,
                            size_t scratch_bytes) {
        run<Scan>(x, n, k, idx, scratch, scratch_bytes);
    }
};

#if defined(GW_KERN_XSIMD)
template <class Arch>
struct Select : VecBase<Arch> {
    using B = VecBase<Arch>;
    using S = Select<ScalarArch>;
    using typename B::BI;
    using typename B::I;
    using typename B::O;
    using B::loadf;
    using B::W;

    static I c32(uint32_t v) { return I(static_cast<int32_t>(v)); }
    static I key_of(const float* p) {
        return xsimd::bitwise_cast<I>(loadf(p)) & I(0x7FFFFFFF);
    }

    // Folds the lanes of a running min / max of keys into r. A lane that saw
    // no key holds the start values 2^31 - 1 (min) and -1 or 0 (max); those
    // are skipped or harmless (a finite float's key is below 2^31 - 2^23).
    static void add_range(const I& lo, const I& hi, TopkRange& r) {
        alignas(64) int32_t l[W], h[W];
        lo.store_aligned(l);
        hi.store_aligned(h);
        for (size_t j = 0; j < W; ++j) {
            if (l[j] != 0x7FFFFFFF && uint32_t(l[j]) < r.lo) r.lo = uint32_t(l[j]);
            if (h[j] != -1 && uint32_t(h[j]) > r.hi) r.hi = uint32_t(h[j]);
        }
    }

    // Calls hit(i), in increasing i, for every i < n whose key's lane is set
    // in pred(keys), 4 vectors at a time; a block with no lane set costs 4
    // compares. Stops when hit returns true (sets `stop`). Returns where the
    // scalar tail starts.
    template <class Pred, class Hit>
    static size_t scan(const float* x, size_t n, Pred&& pred, Hit&& hit, bool& stop) {
        size_t i = 0;
        for (; i + 4 * W <= n; i += 4 * W) {
            B::prefetch_ahead(x, i, 4 * W);
            uint64_t m = 0;
            unroll<4>([&](auto kk) {
                constexpr size_t K = decltype(kk)::value;
                m |= uint64_t(O::movemask_i(pred(key_of(x + i + K * W)))) << (K * W);
            });
            while (m != 0) {
                const size_t j = i + size_t(__builtin_ctzll(m));
                m &= m - 1;
                if (hit(j)) {
                    stop = true;
                    return i;
                }
            }
        }
        return i;
    }

    struct Scan {
        static void hist_all(const float* x, size_t n, uint32_t* sub, TopkRange& r) {
            constexpr size_t St = TopkLayout::kStride;
            I lo(0x7FFFFFFF), hi(0);  // keys are < 2^31: signed compares order them
            alignas(64) int32_t bins[4 * W];
            size_t i = 0;
            for (; i + 4 * W <= n; i += 4 * W) {
                B::prefetch_ahead(x, i, 4 * W);
                unroll<4>([&](auto kk) {
                    constexpr size_t K = decltype(kk)::value;
                    const I key = key_of(x + i + K * W);
                    (key >> 20).store_aligned(bins + K * W);
                    lo = O::blend(key < lo, key, lo);
                    hi = O::blend(key > hi, key, hi);
                });
                for (size_t j = 0; j < 4 * W; j += 4) {
                    ++sub[bins[j]];
                    ++sub[St + bins[j + 1]];
                    ++sub[2 * St + bins[j + 2]];
                    ++sub[3 * St + bins[j + 3]];
                }
            }
            add_range(lo, hi, r);
            S::hist_all(x, i, n, sub, r);
        }
        // Few matches (sparse): skip the blocks without one, count the
        // matches one by one. Many: bins of 4 vectors computed at once (the
        // junk bin for keys that do not match), then counted; the key range
        // kept in vector registers.
        static void hist(const float* x, size_t n, const TopkFilter& f, bool sparse,
                         uint32_t* sub, TopkRange& r) {
            constexpr size_t St = TopkLayout::kStride;
            if (sparse) {
                const I pm = c32(f.pmask), pre = c32(f.prefix);
                bool stop = false;
                const size_t i = scan(
                    x, n, [&](const I& key) { return (key & pm) == pre; },
                    [&](size_t j) {
                        const uint32_t key = topk_key(x[j]);
                        ++sub[(j & 3) * St + ((key >> f.shift) & f.bmask)];
                        r.add(key);
                        return false;
                    },
                    stop);
                S::hist_sparse(x, i, n, f, sub, r);
                return;
            }
            const I pm = c32(f.pmask), pre = c32(f.prefix), bm = c32(f.bmask);
            const I junk = c32(TopkLayout::kBins), big = c32(0x7FFFFFFFu), none(-1);
            const int32_t shift = static_cast<int32_t>(f.shift);
            I lo = big, hi = none;  // keys are < 2^31: signed compares order them
            alignas(64) int32_t bins[4 * W];
            size_t i = 0;
            for (; i + 4 * W <= n; i += 4 * W) {
                B::prefetch_ahead(x, i, 4 * W);
                unroll<4>([&](auto kk) {
                    constexpr size_t K = decltype(kk)::value;
                    const I key = key_of(x + i + K * W);
                    const BI m = (key & pm) == pre;
                    O::blend(m, (key >> shift) & bm, junk).store_aligned(bins + K * W);
                    const I klo = O::blend(m, key, big), khi = O::blend(m, key, none);
                    lo = O::blend(klo < lo, klo, lo);
                    hi = O::blend(khi > hi, khi, hi);
                });
                for (size_t j = 0; j < 4 * W; j += 4) {
                    ++sub[bins[j]];
                    ++sub[St + bins[j + 1]];
                    ++sub[2 * St + bins[j + 2]];
                    ++sub[3 * St + bins[j + 3]];
                }
            }
            add_range(lo, hi, r);
            S::hist(x, i, n, f, sub, r);
        }
        static size_t compact(const float* x, size_t n, const TopkFilter& f, uint32_t* cand) {
            const I pm = c32(f.pmask), pre = c32(f.prefix);
            size_t c = 0;
            bool stop = false;
            const size_t i = scan(
                x, n, [&](const I& key) { return (key & pm) == pre; },
                [&](size_t j) {
                    cand[c++] = topk_key(x[j]);
                    return false;
                },
                stop);
            return S::compact(x, i, n, f, cand, c);
        }
        static void emit(const float* x, size_t n, TopkEmit& e) {
            const I below(static_cast<int32_t>(e.t) - 1);  // key >= T; T - 1 >= -1
            bool stop = false;
            const size_t i = scan(
                x, n, [&](const I& key) { return key > below; },
                [&](size_t j) { return S::emit1(x, j, e); }, stop);
            if (!stop) S::emit(x, i, n, e);
        }
        static void count(const float* x, size_t n, uint32_t t, uint64_t* above,
                          uint64_t* equal) {
            // Per-lane counts in 32 bits, folded every 2^20 blocks (no overflow).
            const I tv = c32(t), one(1), zero(0);
            size_t i = 0;
            while (i + W <= n) {
                I a(0), e(0);
                const size_t stop = std::min(n - (n - i) % W, i + (size_t(1) << 20) * W);
                for (; i < stop; i += W) {
                    if (i % 16 == 0) B::prefetch_ahead(x, i, 16);  // once per 64 bytes
                    const I key = key_of(x + i);
                    a = a + O::blend(key > tv, one, zero);
                    e = e + O::blend(key == tv, one, zero);
                }
                alignas(64) int32_t la[W], le[W];
                a.store_aligned(la);
                e.store_aligned(le);
                for (size_t j = 0; j < W; ++j) {
                    *above += uint32_t(la[j]);
                    *equal += uint32_t(le[j]);
                }
            }
            S::count(x, i, n, t, above, equal);
        }
        static bool keep(const float* x, size_t n, typename S::TopkKept& kept) {
            const I below(static_cast<int32_t>(kept.lo) - 1);  // key >= lo; lo - 1 >= -1
            bool stop = false;
            const size_t i = scan(
                x, n, [&](const I& key) { return key > below; },
                [&](size_t j) { return kept.keep1(x, j); }, stop);
            return !stop && S::keep(x, i, n, kept);
        }
    };

    static void topk_select(const float* x, size_t n, size_t k, uint32_t* idx, void* scratch,
                            size_t scratch_bytes) {
        S::template run<Scan>(x, n, k, idx, scratch, scratch_bytes);
    }
};
#endif  // GW_KERN_XSIMD

template <class Arch>
constexpr void select_entries(Table& t) {
    t.topk_select = &Select<Arch>::topk_select;
}

}  // namespace
}  // namespace gw::kern
