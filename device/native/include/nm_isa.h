/*
 * nm_isa.h - the target: compiler attributes, the instruction-set paths the kernels
 * take (FMA, the 4-lane NM_SIMD4 of SSE2 or WebAssembly SIMD, AVX2+FMA) and the
 * run-time choice among them (nm_isa, nm_isa_set).
 */
#ifndef NM_ISA_H
#define NM_ISA_H

#include <stddef.h>
#include <stdint.h>

#include "nm_kernels_wasm.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(NM_NO_AVX2)
#include <immintrin.h>
#endif

#if defined(__GNUC__)
#define NM_INLINE static inline __attribute__((always_inline))
#else
#define NM_INLINE static inline
#endif

// Views of float buffers as 32-bit words (bit tests, int8 payloads inside float-aligned
// buffers) that the compiler must not assume are distinct from the floats.
#if defined(__GNUC__)
typedef int32_t nm_i32a __attribute__((may_alias));
typedef uint32_t nm_u32a __attribute__((may_alias));
typedef float nm_f32a __attribute__((may_alias));
#else
typedef int32_t nm_i32a;
typedef uint32_t nm_u32a;
typedef float nm_f32a;
#endif

#if defined(__ARM_FEATURE_FMA) && defined(__ARM_FP) && (__ARM_FP & 4)
#define NM_FMA 1
#define NM_MADD(a, b, c) __builtin_fmaf((a), (b), (c))   // vfma.f32
#else
#define NM_FMA 0
#define NM_MADD(a, b, c) ((a) * (b) + (c))
#endif

#if defined(__SSE2__) && defined(__GNUC__)
#define NM_SIMD4 1
typedef float nm_v4 __attribute__((vector_size(16)));
typedef float nm_v4u __attribute__((vector_size(16), aligned(4), may_alias));
#define NM_LOAD4(p) (*(const nm_v4u *)(p))
#define NM_STORE4(p, v) (*(nm_v4u *)(p) = (v))
#elif !defined(__wasm_simd128__)  // nm_kernels_wasm.h defines it there
#define NM_SIMD4 0
#endif

// x86-64 with AVX2+FMA at run time (cpuid): 8-wide fused multiply-adds.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(NM_NO_AVX2)
#define NM_AVX2 1
#else
#define NM_AVX2 0
#endif

#if NM_AVX2
// Compiled for AVX2+FMA whatever the build's flags: taken only when cpuid says so.
#define NM_AVX2_FN static inline __attribute__((target("avx2,fma")))
#define NM_AVX2_INLINE static inline __attribute__((target("avx2,fma"), always_inline))
#endif

/* Instruction-set paths. Auto picks the best the CPU has; a caller may force
 * a lower one (tests check every path against NumPy). */
enum {
    NM_ISA_AUTO = 0,
    NM_ISA_SCALAR = 1,
    NM_ISA_SSE2 = 2,
    NM_ISA_AVX2 = 3,
};

// 0 until first use. Natmods cannot relocate to static BSS, so there it is global.
#if defined(MICROPY_ENABLE_DYNRUNTIME)
int nm_isa_current;
#else
static int nm_isa_current;
#endif

// volatile: an asm with outputs and no side effects may be moved or repeated, and a cpuid
// moved into a hot loop costs a trap to the hypervisor each time in a virtual machine.
static inline int nm_isa_best(void) {
    #if NM_AVX2
    uint32_t a, b, c, d;
    __asm__ __volatile__ ("cpuid" : "=a" (a), "=b" (b), "=c" (c), "=d" (d) : "a" (1), "c" (0));
    const uint32_t need = (1u << 12) | (1u << 27) | (1u << 28); // FMA, OSXSAVE, AVX
    if ((c & need) == need) {
        uint32_t lo, hi;
        __asm__ __volatile__ ("xgetbv" : "=a" (lo), "=d" (hi) : "c" (0));
        __asm__ __volatile__ ("cpuid" : "=a" (a), "=b" (b), "=c" (c), "=d" (d) : "a" (7), "c" (0));
        if ((lo & 6) == 6 && (b & (1u << 5))) { // OS saves ymm; AVX2
            return NM_ISA_AVX2;
        }
    }
    #endif
    return NM_SIMD4 ? NM_ISA_SSE2 : NM_ISA_SCALAR;
}

static inline int nm_isa(void) {
    if (nm_isa_current == NM_ISA_AUTO) {
        nm_isa_current = nm_isa_best();
    }
    return nm_isa_current;
}

// Force a path (NM_ISA_AUTO: best available). Returns 0 if unavailable here.
static inline int nm_isa_set(int isa) {
    int best = nm_isa_best();
    if (isa == NM_ISA_AUTO) {
        isa = best;
    }
    if (isa < NM_ISA_SCALAR || isa > best || (isa == NM_ISA_SSE2 && !NM_SIMD4)) {
        return 0;
    }
    nm_isa_current = isa;
    return 1;
}

#endif // NM_ISA_H
