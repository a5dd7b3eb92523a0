// SIMD kernels: pure functions on spans, one table per target, chosen at run
// time. Every target must produce bit-identical results to the scalar
// reference in tests/reference.hpp; docs/kernels.md states the exact
// arithmetic (operation order, reduction order) that makes that possible.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gradwire_types.h"

namespace gw::kern {

// Coefficients of the fused error-feedback combine (see ef_combine).
// A decoded sparse output being written in index order (expand_begin /
// expand_add / expand_end): where the writer is, and the vector it is building.
struct ExpandCursor {
    size_t n, head, body_end, pos, open;
    bool stream;
    alignas(64) float buf[16];
};

struct EfCoef {
    float mu;  // momentum decay
    float kg;  // gradient weight inside the momentum
    float nu;  // momentum weight in p
    float kp;  // gradient weight in p
    float r;   // residual rescale lr_{t-1}/lr_t (0 when error feedback is off)
};

// Bytes of scratch topk_select needs, whatever n: four 2048-bin histograms
// and a buffer of up to 65536 candidate keys (see src/kernels/select.hpp).
constexpr size_t kTopkScratchBytes = 304 * 1024;

// Decoded outputs of this many bytes and more are far larger than the
// caches: the decodes write them with streaming stores where the target has
// them (common.hpp's Stream), and in index order.
constexpr size_t kStreamBytes = size_t(16) << 20;

// Most bit fields one sign_accumulate_n call takes.
constexpr size_t kSignAccumulateMax = 8;

// topk_select's one-pass path (select.hpp): for n >= 2^22 and k <= n/16 a
// sample of x gives a threshold below the k-th largest key, one pass keeps
// the (key, index) of every element above it, and the exact selection runs
// on those. It needs room for kTopkCandidates(n, k) of them (12 bytes each).
constexpr size_t kTopkSampledMinN = size_t(1) << 22;
constexpr size_t topk_candidates(size_t n, size_t k) { return 2 * k + 64 * (n >> 16) + 65536; }
constexpr bool topk_sampled(size_t n, size_t k) {
    return n >= kTopkSampledMinN && k >= 1 && k <= n / 16;
}
// topk_select's small path (select.hpp): for 1024 <= n <= 65536 and k <= n/16
// a sample of every 8th key gives the threshold of the one-pass path, whose
// kept pairs fit in kTopkScratchBytes.
constexpr bool topk_small(size_t n, size_t k) {
    return n >= 1024 && n <= 65536 && k >= 1 && k <= n / 16;
}
// Scratch for the fastest topk_select on (n, k): kTopkScratchBytes, plus the
// candidates when the one-pass path applies.
constexpr size_t topk_scratch_bytes(size_t n, size_t k) {
    return topk_sampled(n, k) ? kTopkScratchBytes + 12 * topk_candidates(n, k) : kTopkScratchBytes;
}

// Words per rng_u32 call for callers that draw the stream a chunk at a time:
// a multiple of 8 (codes start on a byte boundary) and of the widest step
// of every target's vector stream (three groups of W blocks: 48, 96, 192 words),
// so no word of a chunk falls to the narrower or scalar code.
constexpr size_t kRngChunk = 768;

// Where element 0 of a call lies in the Philox stream (seed, step, tensor).
struct StreamAt {
    uint64_t seed;
    uint32_t step, tensor;
    uint64_t first;
};
// Word kTieWord + e of a stream settles element e's rounding when its byte
// cannot (stoch_round8): far above any word the bytes of n < 2^60 elements use.
constexpr uint64_t kTieWord = uint64_t(1) << 62;

struct Table {
    gw_simd_target target;

    // Fixed reduction order, whatever the vector width: element i is added
    // (in double) to lane i % 16 in increasing i; then lanes are folded
    // lane[j] += lane[j + s] for s = 8, 4, 2, 1; the result is lane[0].
    double (*sum_abs)(const float* x, size_t n);  // sum |x_i|
    double (*sum_sq)(const float* x, size_t n);   // sum x_i^2 (x_i^2 exact in double)
    // sum_abs before the fold: |x_i| added (in double, increasing i) to
    // lanes[i % 16]. Summing a long vector in pieces whose starts are
    // multiples of 16, then folding, gives sum_abs of the whole, bit for bit.
    void (*sum_abs_lanes)(const float* x, size_t n, double* lanes);

    // True iff no element is NaN or +-Inf.
    bool (*all_finite)(const float* x, size_t n);
    // True iff every one of the n little-endian float32 values at `in` (any
    // byte alignment) is finite, nonzero and of magnitude >= min_mag (finite,
    // >= 0): the values a sparse encoder may have stored.
    bool (*all_kept)(const void* in, size_t n, float min_mag);

    // m1 = mu*m + kg*g;  p = (nu*m1 + kp*g) + r*e
    // evaluated exactly as: t1=mu*m; t2=kg*g; m1=t1+t2; t3=nu*m1; t4=kp*g;
    // t5=t3+t4; t6=r*e; p=t5+t6   (float, no FMA). m is not written.
    void (*ef_combine)(const float* g, const float* m, const float* e, EfCoef c, float* p,
                       size_t n);
    // m = mu*m + kg*g  (t1=mu*m; t2=kg*g; m=t1+t2)
    void (*momentum_update)(float* m, const float* g, float mu, float kg, size_t n);
    // ef_combine fused with the scaled-sign step's use of p, p never stored
    // (src/kernels/ef_sign.hpp). ef_sum_abs_lanes: |p_i| into lanes as
    // sum_abs_lanes(p) adds it. ef_sign_step: the bits of sign_pack(p); if
    // e_out, e_out[i] = p_i - (p_i < 0 ? -s : s) (sign_pack_residual); if
    // m_out, m_out[i] = m1_i (momentum_update). e_out may equal e, m_out m.
    void (*ef_sum_abs_lanes)(const float* g, const float* m, const float* e, EfCoef c, size_t n,
                             double* lanes);
    void (*ef_sign_step)(const float* g, const float* m, const float* e, EfCoef c, float s,
                         size_t n, uint8_t* bits, float* e_out, float* m_out);
    // Both in one pass for a step whose scale comes last (one block per
    // tensor, its residual deferred): e is first settled, e_i - (e_i < 0 ?
    // -sp : sp) (sign_pack_residual's; sp = 0 changes nothing); then p from
    // it, the bits of sign_pack(p), e_out[i] = p_i, m_out[i] = m1_i if m_out,
    // and |p_i| into lanes as sum_abs_lanes(p) adds it. e_out may equal e,
    // m_out m.
    void (*ef_sign_defer)(const float* g, const float* m, const float* e, EfCoef c, float sp,
                          size_t n, uint8_t* bits, float* e_out, float* m_out, double* lanes);
    // A fixed-block step in one pass, n elements in blocks of d (a multiple of
    // 16; the last may be shorter): per block ef_sign_defer with sp = 0 and
    // its own zeroed lanes, the scale s = fold(lanes) / len (sum_abs's fold,
    // the division in double, then to float) written little-endian at
    // scales + 4 b, then sign_pack_residual(p, len, s) over e_out and, if s
    // == 0, the block's bits zeroed. False at the first block whose sum is
    // not finite (the blocks before it written). e_out may equal e, m_out m.
    bool (*ef_sign_blocks)(const float* g, const float* m, const float* e, EfCoef c, size_t d,
                           size_t n, uint8_t* bits, unsigned char* scales, float* e_out,
                           float* m_out);
    // The scaled-sign codec's encode of fixed blocks in one pass, n elements
    // in blocks of d (a multiple of 8; the last may be shorter): per block
    // s = sum_abs(x_b) / len (the division in double, then to float) written
    // little-endian at scales + 4 b, then sign_pack(x_b) or, if e is not
    // null, sign_pack_residual(x_b, s) into e_b, and if s == 0 the block's
    // bits zeroed. False at the first block whose sum is not finite (the
    // blocks before it written). e may equal x.
    bool (*scaled_sign_blocks)(const float* x, size_t d, size_t n, uint8_t* bits,
                               unsigned char* scales, float* e);

    // Sign bits: bit (i & 7) of byte (i >> 3) is 1 iff x[i] < 0 (so sign(0) =
    // sign(-0) = +1). Writes ceil(n/8) bytes; unused high bits of the last
    // byte are 0. `bits` may be unaligned.
    void (*sign_pack)(const float* x, size_t n, uint8_t* bits);
    // sign_pack, and e[i] = x[i] - (x[i] < 0 ? -s : s). e may equal x.
    void (*sign_pack_residual)(const float* x, size_t n, float s, uint8_t* bits, float* e);
    // out[i] = bit_i ? -s : s
    void (*sign_unpack)(const uint8_t* bits, size_t n, float s, float* out);
    // sign_unpack over blocks of d elements (d a multiple of 8; the last
    // block may be shorter): the bits run on across blocks, block b's s is
    // the little-endian float at scales + 4 b.
    void (*sign_unpack_blocks)(const uint8_t* bits, const unsigned char* scales, size_t d,
                               size_t n, float* out);
    // acc[i] = acc[i] + (bit_i ? -v : v)
    void (*sign_accumulate)(const uint8_t* bits, size_t n, float v, float* acc);
    // sign_accumulate of m <= kSignAccumulateMax bit fields in order, in one
    // pass: acc[i] = (...(acc[i] + q_0[i]) + ...) + q_{m-1}[i], q_j[i] =
    // bit_i(bits[j]) ? -v[j] : v[j]; the same bits as m calls in turn.
    void (*sign_accumulate_n)(const uint8_t* const* bits, const float* v, size_t m, size_t n,
                              float* acc);
    // sign_accumulate_n over blocks of d elements (d a multiple of 8; the
    // last block may be shorter): field j's bits run on across blocks from
    // bits[j], and block b's value is alpha * (the little-endian float at
    // scales[j] + 4 b), the product rounded to float as accumulate's. m <=
    // kSignAccumulateMax.
    void (*sign_accumulate_blocks)(const uint8_t* const* bits, const unsigned char* const* scales,
                                   float alpha, size_t m, size_t d, size_t n, float* acc);

    // acc[i] = acc[i] + alpha * x[i]   (t = alpha*x; acc = acc + t). x may be unaligned.
    void (*axpy)(float alpha, const void* x, float* acc, size_t n);

    // Half / bfloat16 casts. Encoding rounds to nearest even and saturates
    // finite values to +-max finite (so error feedback keeps the excess);
    // inputs are finite. Payload pointers may be unaligned (little-endian).
    void (*f32_to_f16)(const float* x, void* out, size_t n);
    void (*f16_to_f32)(const void* in, float* out, size_t n);
    void (*f16_accumulate)(const void* in, float alpha, float* acc, size_t n);  // acc += alpha*h
    bool (*f16_all_finite)(const void* in, size_t n);  // no exponent-all-ones values
    void (*f32_to_bf16)(const float* x, void* out, size_t n);
    void (*bf16_to_f32)(const void* in, float* out, size_t n);
    void (*bf16_accumulate)(const void* in, float alpha, float* acc, size_t n);
    bool (*bf16_all_finite)(const void* in, size_t n);
    // Encode with error feedback, one pass: y = e + alpha*x (t = alpha*x;
    // y = e + t), out = f32_to_f16(y), e = y - f16_to_f32(out), element by
    // element while y is finite; returns the index of the first NaN / Inf y
    // (n if none): it and the elements after it are not written. x, e and
    // out do not overlap.
    size_t (*f16_ef_cast)(const float* x, float alpha, float* e, void* out, size_t n);
    size_t (*bf16_ef_cast)(const float* x, float alpha, float* e, void* out, size_t n);
    // The encoders' output for any x, and whether every x is finite, from one
    // read of x (the codecs' check and cast in one pass).
    bool (*f16_encode_finite)(const float* x, void* out, size_t n);
    bool (*bf16_encode_finite)(const float* x, void* out, size_t n);
    // encode_finite, and *crc = the CRC32C continued from *crc over the 2n
    // bytes written (both unspecified when false). Outputs beyond the caches
    // may be written with streaming stores.
    bool (*f16_encode_finite_crc)(const float* x, void* out, size_t n, uint32_t* crc);
    bool (*bf16_encode_finite_crc)(const float* x, void* out, size_t n, uint32_t* crc);
    // The check and decode of a payload in one read of it: out = decode(in),
    // *crc = the CRC32C continued from *crc over in's 2n bytes, whether every
    // element is finite. The CRC is exact either way (a corrupted frame is
    // reported as such); out is unspecified when false. Outputs beyond the
    // caches may be written with streaming stores. out may be null: the check
    // and the CRC alone (decode_accumulate's check before acc is touched).
    bool (*f16_decode_finite_crc)(const void* in, float* out, size_t n, uint32_t* crc);
    bool (*bf16_decode_finite_crc)(const void* in, float* out, size_t n, uint32_t* crc);
    // The identity payload in one read of x: out = x as little-endian
    // float32 (4n bytes), *crc continued over them, whether every x is finite
    // (out and *crc unspecified when false). Outputs beyond the caches may be
    // written with streaming stores.
    bool (*f32_copy_finite_crc)(const float* x, void* out, size_t n, uint32_t* crc);
    // Its decode in one read: out = the floats of in's 4n little-endian
    // bytes, *crc continued over those bytes (exact either way), whether
    // every value is finite (out unspecified when false). Outputs beyond the
    // caches may be written with streaming stores.
    bool (*le32_copy_finite_crc)(const void* in, float* out, size_t n, uint32_t* crc);

    // CRC32C (Castagnoli, reflected, poly 0x82F63B78), continuing from `crc`
    // (pass 0 to start; pre/post inversion handled inside).
    uint32_t (*crc32c)(uint32_t crc, const void* data, size_t n);

    // Exact top-k by magnitude: the k elements of x[0..n) with the largest |x_i|
    // (compared as the key bits(x_i) & 0x7FFFFFFF, which orders finite floats by
    // magnitude; -0 and +0 tie), ties broken toward the lower index. x is finite.
    // Writes their indices in increasing order to idx[0..k). k <= n <= 2^32.
    // scratch: `scratch_bytes` >= kTopkScratchBytes bytes, 64-byte aligned,
    // owned by the caller; topk_scratch_bytes(n, k) enables the one-pass path.
    void (*topk_select)(const float* x, size_t n, size_t k, uint32_t* idx, void* scratch,
                        size_t scratch_bytes);

    // Indices of the elements with |x_i| >= t (key(x_i) >= key(t), the key of
    // topk_select), in increasing order: the first min(count, cap) go to idx;
    // returns count. x is finite, t finite and >= 0.
    size_t (*threshold_select)(const float* x, size_t n, float t, uint32_t* idx, size_t cap);

    // Words first..first+n of the Philox4x32-10 stream (seed, step, tensor),
    // exactly gw::rng_u32 (src/util/rng.hpp), several counters per instruction.
    void (*rng_u32)(uint64_t seed, uint32_t step, uint32_t tensor, uint64_t first, uint32_t* out,
                    size_t n);

    // Largest |x_i| as the key bits(x_i) & 0x7FFFFFFF (exact, any order): a
    // key >= 0x7F800000 means a NaN or Inf is present.
    uint32_t (*max_abs_key)(const float* x, size_t n);

    // Stochastic rounding onto the grid {lo..hi} * delta (docs/algorithms.md
    // s.5), with words[i] the random word of element i, exactly as:
    //   t = x/delta; pair: t = (t + 1)*0.5; f = floor(t); r = t - f;
    //   u = float(w >> 8) * 2^-24; c = f + (u < r ? 1 : 0); c = min(max(c, lo), hi)
    //   codes[i] = c - lo;  residual[i] = x - v(c)   (if residual is non-null)
    // with v(c) = c*delta, or for a pair grid (two levels +-delta, lo = 0,
    // hi = 1) v(c) = (c*2 - 1)*delta. delta > 0 and |x/delta| <= max(|lo|,|hi|).
    // residual may equal x.
    void (*stoch_round)(const float* x, size_t n, float delta, int32_t lo, int32_t hi, bool pair,
                        const uint32_t* words, uint32_t* codes, float* residual);
    // Rule revision 2 of that rounding: the same probability of rounding up,
    // ceil(r * 2^24) * 2^-24, from one byte b = bytes[i] per element (r as above):
    //   g = r * 256; q = floor(g);
    //   up = b < q, or b == q and float(w & 0xFFFF) < (g - q) * 65536,
    //   w = word kTieWord + at.first + i of the stream (drawn only on b == q);
    //   c = f + (up ? 1 : 0) clamped; codes and residual as above.
    void (*stoch_round8)(const float* x, size_t n, float delta, int32_t lo, int32_t hi, bool pair,
                         const uint8_t* bytes, const StreamAt& at, uint32_t* codes,
                         float* residual);
    // codes[0..c) of `width` bits each (1..16, each < 2^width) LSB first into
    // ceil(c * width / 8) bytes (the last byte's unused bits 0), and back.
    void (*pack_codes)(const uint32_t* codes, size_t c, unsigned width, uint8_t* out);
    void (*unpack_codes)(const uint8_t* in, size_t c, unsigned width, uint32_t* codes);
    // out[i] = v(codes[i] + lo);  acc[i] = acc[i] + alpha * v(codes[i] + lo)
    void (*dequant)(const uint32_t* codes, size_t n, float delta, int32_t lo, bool pair,
                    float* out);
    void (*dequant_accumulate)(const uint32_t* codes, size_t n, float delta, int32_t lo, bool pair,
                               float alpha, float* acc);

    // The keep test of random sparsification over n <= kRngChunk elements:
    // with p_j = min(1, a_j), a_j = |double(x_j)| * scale (one double multiply),
    // element j stays iff p_j > 0 and double(words[j]) < p_j * 2^32. The kept
    // j, increasing, go to sel[0..count); returns count. x is finite.
    size_t (*random_keep)(const float* x, size_t n, double scale, const uint32_t* words,
                          uint32_t* sel);

    // Indexed access at k positions idx[0..k) (strictly increasing, each < n),
    // or at 0..k-1 when idx is null (src/kernels/scatter.hpp):
    //   gather:       out[j] = x[idx[j]]
    //   scatter_add:  t = alpha * v[j]; acc[idx[j]] = acc[idx[j]] + t
    //   scatter_zero: a[idx[j]] = 0
    //   scatter_sub_div: q = s[j] / d; x[idx[j]] = x[idx[j]] - q, but only if
    //     every result is finite (checked first: false, x untouched, if not).
    void (*gather)(const float* x, const uint32_t* idx, size_t k, float* out);
    void (*scatter_add)(const float* v, const uint32_t* idx, size_t k, float alpha, float* acc);
    void (*scatter_zero)(const uint32_t* idx, size_t k, float* a);
    bool (*scatter_sub_div)(float* x, const uint32_t* idx, const float* s, size_t k, float d);
    // The gap planes of sparse payloads (docs/wire-format.md): byte b of gap j
    // is planes[b * stride + j]. gap_indices: for j < count, next += gap_j;
    // idx[j] = next; next += 1; returns next. The caller has checked that every
    // index is below 2^32 (gap_byte_sum). gap_byte_sum: the sum of p[0..n) (exact).
    uint64_t (*gap_indices)(const uint8_t* planes, size_t stride, size_t count, uint64_t next,
                            uint32_t* idx);
    uint64_t (*gap_byte_sum)(const uint8_t* p, size_t n);
    // A whole payload's entries added in: idx = gap_indices(planes, count,
    // count, 0) and v[j] the little-endian value of value_dtype (F32, or F16 /
    // BF16 widened as f16_to_f32 / bf16_to_f32 do) at values + j * its size
    // (any alignment); then as scatter_add(v, idx, count, alpha, acc).
    void (*gap_scatter_add)(const uint8_t* planes, size_t count, const void* values,
                            gw_dtype value_dtype, float alpha, float* acc);
    // The same payload decoded: out[0..n) = 0, then out[idx_j] = v_j (every
    // index below n, checked by the caller).
    void (*gap_expand)(const uint8_t* planes, size_t count, const void* values,
                       gw_dtype value_dtype, float* out, size_t n);
    // Any sparse output written in index order: expand_begin(out, n, cur),
    // expand_add(idx, v, k, out, cur) for entries at strictly increasing
    // positions below n across all calls, then expand_end(out, cur). Then
    // out[0..n) = 0 but out[idx_j] = v_j; before expand_end it is undefined.
    void (*expand_begin)(float* out, size_t n, ExpandCursor* cur);
    void (*expand_add)(const uint32_t* idx, const float* v, size_t k, float* out,
                       ExpandCursor* cur);
    void (*expand_end)(float* out, ExpandCursor* cur);
};

// The table of the active target (GW_SIMD env var at first use, or set by
// gw_simd_set_target). Cheap: one relaxed atomic load.
const Table& active();
// Table of a specific target, or nullptr if not compiled in or not supported by this CPU.
const Table* table_for(gw_simd_target target);
// Set the active target (GW_SIMD_AUTO = best supported). Returns GW_ERR_UNSUPPORTED if unavailable.
gw_status set_target(gw_simd_target target);
gw_simd_target active_target();
const char* target_name(gw_simd_target target);
// The crc family's folding, chosen once from the CPU and GW_CRC (docs/kernels.md):
// cpu_has_vpclmulqdq, the AVX2 and AVX-512 tables' wide folds; cpu_crc_fold128,
// their 128-bit PCLMULQDQ fold (CPUs whose crc32 instruction is slow, without
// VPCLMULQDQ). Every choice gives the same CRC.
bool cpu_has_vpclmulqdq();
bool cpu_crc_fold128();

// Floats in [0, 1) of the stream (seed, step, tensor) from element `first`
// (u32_to_unit_float of each word): the active target's rng_u32, a stack
// chunk at a time, so no allocation.
void rng_uniform(uint64_t seed, uint32_t step, uint32_t tensor, uint64_t first, float* out,
                 size_t n);

}  // namespace gw::kern
