// Run-time choice of the kernel table. Compiled without -m flags.
//
// CPU detection is done here with cpuid/xgetbv rather than
// xsimd::available_architectures(): xsimd 8.1 reads the SSE2 bit from the
// wrong register, does not check that the OS saves YMM/ZMM state (XCR0), and
// knows nothing of AVX512VL or POPCNT, which our -m flags let the compiler use.
// On AArch64 NEON support comes from the kernel's HWCAP bits (getauxval).
#include <atomic>
#include <cstdlib>

#include "kernels/kernels.hpp"
#include "kernels/tables.hpp"
#include "util/rng.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define GW_KERN_X86 1
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#if __has_include(<asm/hwcap.h>)
#include <asm/hwcap.h>
#endif
#if !defined(HWCAP_FP)
#define HWCAP_FP (1UL << 0)  // the AArch64 Linux ABI's bits
#endif
#if !defined(HWCAP_ASIMD)
#define HWCAP_ASIMD (1UL << 1)
#endif
#endif

namespace gw::kern {
namespace {

bool name_is(const char* s, const char* name) {  // ASCII case-insensitive
    for (; *s != '\0' && *name != '\0'; ++s, ++name) {
        char c = *s;
        if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
        if (c != *name) return false;
    }
    return *s == '\0' && *name == '\0';
}

struct CpuSupport {
    bool sse2 = false, sse4_2 = false, avx2 = false, avx512 = false;
    bool vpclmulqdq = false;  // with avx2: the CRC's carry-less folding
    bool crc_fold128 = false;  // PCLMULQDQ folding instead of the crc32 instruction
    bool neon = false;
};

#if defined(GW_KERN_X86)
uint64_t read_xcr0() {
    uint32_t eax = 0, edx = 0;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return (uint64_t(edx) << 32) | eax;
}
#endif

CpuSupport detect_cpu() {
    CpuSupport s;
#if defined(GW_KERN_X86)
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return s;
    const auto bit = [](unsigned r, int i) { return ((r >> i) & 1u) != 0; };
    const bool sse2 = bit(d, 26);
    const bool sse3 = bit(c, 0), ssse3 = bit(c, 9), fma = bit(c, 12), sse41 = bit(c, 19),
               sse42 = bit(c, 20), popcnt = bit(c, 23), osxsave = bit(c, 27), avx = bit(c, 28),
               f16c = bit(c, 29);
    unsigned b7 = 0, c7 = 0;
    if (__get_cpuid_max(0, nullptr) >= 7) {
        unsigned a7 = 0, d7 = 0;
        __cpuid_count(7, 0, a7, b7, c7, d7);
    }
    const bool avx2 = bit(b7, 5), avx512f = bit(b7, 16), avx512dq = bit(b7, 17),
               avx512cd = bit(b7, 28), avx512bw = bit(b7, 30), avx512vl = bit(b7, 31);
    const uint64_t xcr0 = osxsave ? read_xcr0() : 0;
    const bool os_ymm = (xcr0 & 0x6) == 0x6;    // SSE + AVX state
    const bool os_zmm = (xcr0 & 0xE6) == 0xE6;  // + opmask, ZMM0-15 high, ZMM16-31

    s.sse2 = sse2;
    s.sse4_2 = s.sse2 && sse3 && ssse3 && sse41 && sse42 && popcnt;
    // The AVX2 and AVX-512 files are compiled with -mf16c (fp16 casts);
    // every CPU with AVX2 has F16C.
    s.avx2 = s.sse4_2 && avx && avx2 && f16c && os_ymm;
    // clang's -mavx512f also enables FMA, so require it too.
    s.avx512 = s.avx2 && fma && avx512f && avx512dq && avx512cd && avx512bw && avx512vl && os_zmm;
    const bool pclmul = bit(c, 1);
    s.vpclmulqdq = s.avx2 && pclmul && bit(c7, 10);  // VPCLMULQDQ
    // AMD family 17h (Zen 1, Zen+, Zen 2) and Hygon's 18h retire one crc32 per
    // 3 cycles however many streams run: a PCLMULQDQ fold is 1.75x faster
    // there. On Intel cores without VPCLMULQDQ the streams are as fast or
    // (Haswell, half-rate PCLMULQDQ) twice as fast, so they stay.
    unsigned a0 = 0, vb = 0, vc = 0, vd = 0;
    __get_cpuid(0, &a0, &vb, &vc, &vd);
    const bool amd = (vb == 0x68747541u && vd == 0x69746e65u && vc == 0x444d4163u) ||  // AuthenticAMD
                     (vb == 0x6f677948u && vd == 0x6e65476eu && vc == 0x656e6975u);    // HygonGenuine
    const unsigned family = ((a >> 8) & 0xF) == 0xF ? 0xF + ((a >> 20) & 0xFF) : (a >> 8) & 0xF;
    s.crc_fold128 = s.avx2 && pclmul && !s.vpclmulqdq && amd && (family == 0x17 || family == 0x18);
    // GW_CRC=pclmul: the 128-bit fold wherever PCLMULQDQ is (no wider fold);
    // GW_CRC=crc32: no folding. For tests and measurements; results are the same.
    if (const char* v = std::getenv("GW_CRC")) {
        if (name_is(v, "pclmul")) {
            s.crc_fold128 = s.avx2 && pclmul;
            s.vpclmulqdq = false;
        } else if (name_is(v, "crc32")) {
            s.crc_fold128 = s.vpclmulqdq = false;
        }
    }
#endif
#if defined(__aarch64__)
    // Advanced SIMD (and the FP unit it needs) is part of the AArch64 base
    // architecture, but the kernel reports it, and a kernel or emulator that
    // hides it (HWCAP without ASIMD) gets the scalar code.
#if defined(__linux__)
    const unsigned long hw = getauxval(AT_HWCAP);
    s.neon = (hw & HWCAP_FP) != 0 && (hw & HWCAP_ASIMD) != 0;
#else
    s.neon = true;  // no auxiliary vector: NEON is baseline
#endif
#endif
    return s;
}

[[maybe_unused]] const CpuSupport& cpu() {  // unused where only scalar is built
    static const CpuSupport s = detect_cpu();
    return s;
}

const Table* compiled_table(gw_simd_target target) {
    const Table* t = nullptr;
    bool ok = false;
    switch (target) {
    case GW_SIMD_SCALAR: t = &table_scalar; ok = true; break;
#if defined(GW_KERN_X86_TABLES)
    case GW_SIMD_SSE2: t = &table_sse2; ok = cpu().sse2; break;
    case GW_SIMD_SSE4_2: t = &table_sse4_2; ok = cpu().sse4_2; break;
    case GW_SIMD_AVX2: t = &table_avx2; ok = cpu().avx2; break;
    case GW_SIMD_AVX512: t = &table_avx512; ok = cpu().avx512; break;
#endif
#if defined(GW_KERN_NEON_TABLE)
    case GW_SIMD_NEON: t = &table_neon; ok = cpu().neon; break;
#endif
    default: return nullptr;  // another CPU family's target, or no target
    }
    return (ok && compiled_in(*t)) ? t : nullptr;
}

const Table* best_table() {
    static const gw_simd_target order[] = {GW_SIMD_AVX512, GW_SIMD_AVX2, GW_SIMD_SSE4_2,
                                           GW_SIMD_SSE2, GW_SIMD_NEON};
    for (gw_simd_target t : order)
        if (const Table* p = compiled_table(t)) return p;
    return &table_scalar;
}

// GW_SIMD=scalar|sse2|sse4.2|avx2|avx512|neon|auto; anything else, or a
// target the CPU (or this build's CPU family) lacks, silently means auto.
const Table* table_from_env() {
    const char* v = std::getenv("GW_SIMD");
    if (v == nullptr) return best_table();
    gw_simd_target t = GW_SIMD_AUTO;
    if (name_is(v, "scalar"))
        t = GW_SIMD_SCALAR;
    else if (name_is(v, "sse2"))
        t = GW_SIMD_SSE2;
    else if (name_is(v, "sse4.2") || name_is(v, "sse4_2") || name_is(v, "sse42"))
        t = GW_SIMD_SSE4_2;
    else if (name_is(v, "avx2"))
        t = GW_SIMD_AVX2;
    else if (name_is(v, "avx512"))
        t = GW_SIMD_AVX512;
    else if (name_is(v, "neon"))
        t = GW_SIMD_NEON;
    const Table* p = table_for(t);
    return p != nullptr ? p : best_table();
}

// Tables are constant-initialised statics, so relaxed ordering is enough.
std::atomic<const Table*> g_active{nullptr};

#if defined(__GNUC__)
__attribute__((noinline, cold))
#endif
const Table& init_active() {
    const Table* want = table_from_env();
    const Table* expected = nullptr;
    // Keep a table set concurrently by set_target().
    if (g_active.compare_exchange_strong(expected, want, std::memory_order_relaxed)) return *want;
    return *expected;
}

}  // namespace

const Table& active() {
    const Table* t = g_active.load(std::memory_order_relaxed);
    if (t != nullptr) return *t;
    return init_active();
}

const Table* table_for(gw_simd_target target) {
    if (target == GW_SIMD_AUTO) return best_table();
    return compiled_table(target);
}

gw_status set_target(gw_simd_target target) {
    const Table* t = table_for(target);
    if (t == nullptr) return GW_ERR_UNSUPPORTED;
    g_active.store(t, std::memory_order_relaxed);
    return GW_OK;
}

gw_simd_target active_target() { return active().target; }

bool cpu_has_vpclmulqdq() {
#if defined(GW_KERN_X86)
    return cpu().vpclmulqdq;
#else
    return false;
#endif
}

bool cpu_crc_fold128() {
#if defined(GW_KERN_X86)
    return cpu().crc_fold128;
#else
    return false;
#endif
}

const char* target_name(gw_simd_target target) {
    switch (target) {
    case GW_SIMD_AUTO: return "auto";
    case GW_SIMD_SCALAR: return "scalar";
    case GW_SIMD_SSE2: return "sse2";
    case GW_SIMD_SSE4_2: return "sse4.2";
    case GW_SIMD_AVX2: return "avx2";
    case GW_SIMD_AVX512: return "avx512";
    case GW_SIMD_NEON: return "neon";
    }
    return "unknown";
}

void rng_uniform(uint64_t seed, uint32_t step, uint32_t tensor, uint64_t first, float* out,
                 size_t n) {
    const Table& t = active();
    uint32_t words[kRngChunk];
    for (size_t done = 0; done < n;) {
        const size_t chunk = n - done < kRngChunk ? n - done : kRngChunk;
        t.rng_u32(seed, step, tensor, first + done, words, chunk);
        for (size_t i = 0; i < chunk; ++i) out[done + i] = u32_to_unit_float(words[i]);
        done += chunk;
    }
}

}  // namespace gw::kern
