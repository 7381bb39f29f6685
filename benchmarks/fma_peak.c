/*
 * fma_peak.c - this core's FP32 multiply-add throughput, for benchmarks/arithmetic_bound.py
 * (which compiles it at run time: gcc -O2 -march=native).
 *
 * Each kernel keeps CHAINS accumulators and updates each with one fused multiply-add
 * per iteration. The chains are independent, so with CHAINS >= FMA latency x FMA pipes
 * the pipes never wait for a result and the time is the throughput. A few chain
 * counts per width show where that happens. The 256-bit (AVX2 + FMA) and 512-bit
 * (AVX-512F) kernels run the same count of lanes x iterations, so their rates compare
 * the widths directly (a core that splits 512-bit operations into two 256-bit ones
 * gives both the same FLOP/s).
 *
 * The clock comes from a chain of dependent integer additions: one cycle each on
 * x86-64 cores, so additions per second is cycles per second.
 *
 * Every kernel runs `reps` times; the fastest counts (a shared machine only ever
 * slows a repetition down). Output, one line per kernel:
 *     name lanes chains products_per_rep flops_per_rep best_seconds
 * (lanes: products per instruction; a multiply-add is 2 FLOPs, a multiply 1)
 * and "clock adds_per_rep best_seconds" first and last (the faster one counts: the clock
 * may still be rising at the start).
 */
#include <immintrin.h>
#ifndef __FMA__
#error "the FP32 peak needs a CPU with FMA (compiled with -march=native)"
#endif
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// The result of every kernel goes here, so that no loop is dead code.
static volatile float sink;

// FMA: acc = acc * a + b converges to b / (1 - a): no overflow, no subnormals.
#define KERNEL(NAME, VEC, SET1, FMA, ADD, CVT, CHAINS) KERNEL_A(NAME, VEC, SET1, FMA, ADD, CVT, CHAINS, 0.999f)
#define KERNEL_A(NAME, VEC, SET1, FMA, ADD, CVT, CHAINS, A)                   \
    static void NAME(long iters) {                                             \
        const VEC a = SET1(A), b = SET1(1e-3f);                               \
        VEC acc[CHAINS];                                                       \
        for (int c = 0; c < CHAINS; c++) {                                     \
            acc[c] = SET1((float)c);                                           \
        }                                                                      \
        for (long i = 0; i < iters; i++) {                                     \
            _Pragma("GCC unroll 32")                                           \
            for (int c = 0; c < CHAINS; c++) {                                 \
                acc[c] = FMA(acc[c], a, b);                                    \
            }                                                                  \
        }                                                                      \
        VEC s = acc[0];                                                        \
        for (int c = 1; c < CHAINS; c++) {                                     \
            s = ADD(s, acc[c]);                                                \
        }                                                                      \
        sink = CVT(s);                                                         \
    }

KERNEL(fma256_1, __m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps, _mm256_cvtss_f32, 1)
KERNEL(fma256_4, __m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps, _mm256_cvtss_f32, 4)
KERNEL(fma256_8, __m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps, _mm256_cvtss_f32, 8)
KERNEL(fma256_12, __m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps, _mm256_cvtss_f32, 12)
#ifdef __AVX512F__
KERNEL(fma512_4, __m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps, _mm512_cvtss_f32, 4)
KERNEL(fma512_8, __m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps, _mm512_cvtss_f32, 8)
KERNEL(fma512_12, __m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps, _mm512_cvtss_f32, 12)
KERNEL(fma512_24, __m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps, _mm512_cvtss_f32, 24)
#endif

// Multiplications alone, to show that splitting a multiply-add into a multiply and an
// addition does not get more products per cycle. a = 1 + 2^-23: acc grows by a factor
// of e per 8.4M iterations, far from overflow (and 1 would be folded away).
#define MUL256(x, a, b) ((void)(b), _mm256_mul_ps(x, a))
KERNEL_A(mul256_12, __m256, _mm256_set1_ps, MUL256, _mm256_add_ps, _mm256_cvtss_f32, 12, 1.00000012f)
#ifdef __AVX512F__
#define MUL512(x, a, b) ((void)(b), _mm512_mul_ps(x, a))
KERNEL_A(mul512_12, __m512, _mm512_set1_ps, MUL512, _mm512_add_ps, _mm512_cvtss_f32, 12, 1.00000012f)
#endif

// Half the chains multiply-add, half multiply: if the multiplies ran on pipes of their
// own, this would reach more products per cycle than either alone.
static void fmamul256_12(long iters) {
    const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(1e-3f), m = _mm256_set1_ps(1.00000012f);
    __m256 acc[12];
    for (int c = 0; c < 12; c++) {
        acc[c] = _mm256_set1_ps((float)c);
    }
    for (long i = 0; i < iters; i++) {
        _Pragma("GCC unroll 32")
        for (int c = 0; c < 12; c += 2) {
            acc[c] = _mm256_fmadd_ps(acc[c], a, b);
            acc[c + 1] = _mm256_mul_ps(acc[c + 1], m);
        }
    }
    __m256 sum = acc[0];
    for (int c = 1; c < 12; c++) {
        sum = _mm256_add_ps(sum, acc[c]);
    }
    sink = _mm256_cvtss_f32(sum);
}

#ifdef __AVX512BF16__
// Not FP32: bfloat16 pairs multiplied and added into FP32 lanes, 32 multiply-adds per
// instruction, for the reduced-precision ceiling. acc grows by 2 x 2^-10 per iteration.
static void bf16dot512_12(long iters) {
    const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80), b = (__m512bh)_mm512_set1_epi16(0x3a80);
    __m512 acc[12];
    for (int c = 0; c < 12; c++) {
        acc[c] = _mm512_setzero_ps();
    }
    for (long i = 0; i < iters; i++) {
        _Pragma("GCC unroll 32")
        for (int c = 0; c < 12; c++) {
            acc[c] = _mm512_dpbf16_ps(acc[c], a, b);
        }
    }
    __m512 s = acc[0];
    for (int c = 1; c < 12; c++) {
        s = _mm512_add_ps(s, acc[c]);
    }
    sink = _mm512_cvtss_f32(s);
}
#endif

// 100 dependent one-cycle additions per iteration.
static void clock_chain(long iters) {
    long x = 0;
    for (long i = 0; i < iters; i++) {
        __asm__ volatile(
            ".rept 100\n\t"
            "add $1, %0\n\t"
            ".endr"
            : "+r"(x));
    }
    sink = (float)x;
}

static double best_of(void (*fn)(long), long iters, int reps) {
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        const double t0 = now();
        fn(iters);
        const double t = now() - t0;
        best = t < best ? t : best;
    }
    return best;
}

typedef struct {
    const char *name;
    void (*fn)(long);
    int lanes, chains;
    double flops_per_product; // 2 for a multiply-add, 1 for a multiply
} kernel;

int main(int argc, char **argv) {
    // arguments: multiply-adds per repetition of every kernel, repetitions
    const double madds = argc > 1 ? atof(argv[1]) : 2e7;
    const int reps = argc > 2 ? atoi(argv[2]) : 30;
    if (madds < 1e4 || reps < 1) {
        fprintf(stderr, "usage: fma_peak [multiply-adds per repetition >= 1e4] [repetitions >= 1]\n");
        return 2;
    }
    const kernel ks[] = {
        {"fma256", fma256_1, 8, 1, 2}, {"fma256", fma256_4, 8, 4, 2}, {"fma256", fma256_8, 8, 8, 2},
        {"fma256", fma256_12, 8, 12, 2}, {"mul256", mul256_12, 8, 12, 1}, {"fma+mul256", fmamul256_12, 8, 12, 1.5},
#ifdef __AVX512F__
        {"fma512", fma512_4, 16, 4, 2}, {"fma512", fma512_8, 16, 8, 2}, {"fma512", fma512_12, 16, 12, 2},
        {"fma512", fma512_24, 16, 24, 2}, {"mul512", mul512_12, 16, 12, 1},
#endif
#ifdef __AVX512BF16__
        {"bf16dot512", bf16dot512_12, 32, 12, 2},
#endif
    };
    // about as many cycles per repetition as a multiply-add kernel at 16 per cycle
    const long clock_iters = (long)(madds / 16.0 / 100.0) + 1;
    printf("clock %.0f %.9g\n", 100.0 * (double)clock_iters, best_of(clock_chain, clock_iters, reps));
    for (size_t k = 0; k < sizeof(ks) / sizeof(ks[0]); k++) {
        // the single chain is latency-bound: fewer iterations keep its time near the others'
        const long iters = (long)(madds / ks[k].lanes / ks[k].chains / (ks[k].chains == 1 ? 4 : 1));
        const double products = (double)iters * ks[k].lanes * ks[k].chains;
        printf("%s %d %d %.0f %.0f %.9g\n", ks[k].name, ks[k].lanes, ks[k].chains, products,
            ks[k].flops_per_product * products, best_of(ks[k].fn, iters, reps));
    }
    printf("clock %.0f %.9g\n", 100.0 * (double)clock_iters, best_of(clock_chain, clock_iters, reps));
    return 0;
}
