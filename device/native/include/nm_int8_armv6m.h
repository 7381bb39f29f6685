/* nm_q8_block_acc for ARMv6-M (Thumb-1).
 * Empty unless the core takes this path (NM_Q8_THUMB1); nm_int8_dense.h includes it. See
 * nm_int8.h for the layout and the pair order.
 */
#ifndef NM_INT8_ARMV6M_H
#define NM_INT8_ARMV6M_H

#include "nm_int8_layout.h"

#if NM_Q8_THUMB1

/* ARMv6-M (Cortex-M0/M0+, Thumb-1): LDRSB has no immediate offset, so C loads
 * each weight with its own address arithmetic (~6.4 instructions per
 * multiply-add). Here one word load fetches a row's 4 weights for the group,
 * SXTB / LSLS+ASRS / ASRS sign-extend each byte, and the 4 accumulators live
 * in high registers (ADD reaches them; MULS needs low ones): 65 instructions
 * per 16 multiply-adds and the loop's 4 once per two groups. The x words are pinned
 * to r2 < r3 so one LDMIA loads the group's two pair-order words in address
 * order. A last group with one real input (n_in = 4k + 1: 13, 17) multiplies
 * that input alone (19 instructions, not 68: the padding inputs are 0, so
 * their products add nothing). Integer sums in any order wrap to the portable
 * path's bits. */
#define NM_Q8_T1_ROW(off, a) \
    "ldr %[w], [%[p], #" off "]\n\t" \
    "sxtb %[t], %[w]\n\t" \
    "muls %[t], %[x0], %[t]\n\t" \
    "add %[" a "], %[t]\n\t" \
    "lsls %[t], %[w], #16\n\t" \
    "asrs %[t], %[t], #24\n\t" \
    "muls %[t], %[x1], %[t]\n\t" \
    "add %[" a "], %[t]\n\t" \
    "lsls %[t], %[w], #8\n\t" \
    "asrs %[t], %[t], #24\n\t" \
    "muls %[t], %[x2], %[t]\n\t" \
    "add %[" a "], %[t]\n\t" \
    "asrs %[w], %[w], #24\n\t" \
    "muls %[w], %[x3], %[w]\n\t" \
    "add %[" a "], %[w]\n\t"

#define NM_Q8_T1_GROUP(o0, o1, o2, o3) \
    "ldmia %[xp]!, {%[x2], %[x3]}\n\t"   /* x2 = x0 | x2 << 16, x3 = x1 | x3 << 16 */ \
    "sxth %[x0], %[x2]\n\t" \
    "asrs %[x2], %[x2], #16\n\t" \
    "sxth %[x1], %[x3]\n\t" \
    "asrs %[x3], %[x3], #16\n\t" \
    NM_Q8_T1_ROW(o0, "a0") \
    NM_Q8_T1_ROW(o1, "a1") \
    NM_Q8_T1_ROW(o2, "a2") \
    NM_Q8_T1_ROW(o3, "a3")

// Input 0 of the group at xp (pair order: the low half of its first word) alone.
#define NM_Q8_T1_ONE(off, a) \
    "ldr %[w], [%[p], #" off "]\n\t" \
    "sxtb %[w], %[w]\n\t" \
    "muls %[w], %[x0], %[w]\n\t" \
    "add %[" a "], %[w]\n\t"

NM_INLINE const int8_t *nm_q8_block_acc(int32_t *a, const int16_t *x, const int8_t *w, size_t ng, int one) {
    const size_t full = ng - (one != 0);
    const int16_t *end = x + NM_Q8_GROUP * full;
    register uint32_t x2 __asm__ ("r2"), x3 __asm__ ("r3");
    uint32_t x0, x1, wv, t = full & 1;
    __asm__ volatile (
        ".syntax unified\n\t"                  // GCC hands Thumb-1 inline asm over in divided syntax
        // Two groups a pass are 264 bytes: past a conditional branch's reach, so each
        // long jump is an unconditional B behind a short conditional one.
        "cmp %[xp], %[end]\n\t"
        "bne 1f\n\t"
        "b 3f\n"
        "1:\n\t"
        "cmp %[t], #0\n\t"
        "beq 2f\n\t"
        NM_Q8_T1_GROUP("0", "4", "8", "12")
        "adds %[p], #16\n\t"
        "cmp %[xp], %[end]\n\t"
        "bne 2f\n\t"
        "b 3f\n"
        "2:\n\t"
        NM_Q8_T1_GROUP("0", "4", "8", "12")
        NM_Q8_T1_GROUP("16", "20", "24", "28")
        "adds %[p], #32\n\t"
        "cmp %[xp], %[end]\n\t"
        "beq 3f\n\t"
        "b 2b\n"
        "3:\n\t"
        ".syntax divided"
        : [p] "+l" (w), [xp] "+l" (x), [a0] "+h" (a[0]), [a1] "+h" (a[1]), [a2] "+h" (a[2]), [a3] "+h" (a[3]),
          [x0] "=&l" (x0), [x1] "=&l" (x1), [x2] "=&l" (x2), [x3] "=&l" (x3), [w] "=&l" (wv), [t] "+&l" (t)
        : [end] "h" (end)
        : "cc", "memory");
    if (one) {
        __asm__ volatile (
            ".syntax unified\n\t"
            "ldr %[x0], [%[xp]]\n\t"
            "sxth %[x0], %[x0]\n\t"
            NM_Q8_T1_ONE("0", "a0")
            NM_Q8_T1_ONE("4", "a1")
            NM_Q8_T1_ONE("8", "a2")
            NM_Q8_T1_ONE("12", "a3")
            "adds %[p], #16\n\t"
            ".syntax divided"
            : [p] "+l" (w), [a0] "+h" (a[0]), [a1] "+h" (a[1]), [a2] "+h" (a[2]), [a3] "+h" (a[3]),
              [x0] "=&l" (x0), [w] "=&l" (wv)
            : [xp] "l" (x)
            : "cc", "memory");
    }
    return w;
}

/* Requantisation of a block's 4 accumulators a[0..3] (rows 4k..4k+3) into y in pair
 * order, for multipliers whose low 16 bits are zero (the exporter rounds every large
 * multiplier so): nm_q8_mulhr is then ah * mh + ((al * mh + 2^15) >> 16) (the 16-bit
 * partial products with ml = 0; al * mh + 2^15 cannot overflow), two MULS instead of
 * four, and the requantisation's shift, rounding and clamp follow in registers (~18
 * instructions per row where GCC's inlined C takes ~34). round = r = 0 when the layer
 * has no shift; lo is the clamp's lower end (0 after relu). */
#define NM_Q8_T1_REQ(ao, yo) \
    "ldr %[v], [%[a], #" ao "]\n\t" \
    "ldr %[m], [%[mp], #" ao "]\n\t" \
    "asrs %[m], %[m], #16\n\t" \
    "asrs %[h], %[v], #16\n\t" \
    "muls %[h], %[m], %[h]\n\t" \
    "uxth %[v], %[v]\n\t" \
    "muls %[v], %[m], %[v]\n\t" \
    "add %[v], %[half]\n\t" \
    "asrs %[v], %[v], #16\n\t" \
    "adds %[v], %[v], %[h]\n\t" \
    "add %[v], %[rnd]\n\t" \
    "asrs %[v], %[v], %[r]\n\t" \
    "cmp %[v], %[lo]\n\t" \
    "bge 1f\n\t" \
    "mov %[v], %[lo]\n" \
    "1:\n\t" \
    "cmp %[v], %[hi]\n\t" \
    "ble 2f\n\t" \
    "mov %[v], %[hi]\n" \
    "2:\n\t" \
    "strh %[v], [%[y], #" yo "]\n\t"

NM_INLINE void nm_q8_t1_requant4(int16_t *y, const int32_t *a, const int32_t *mult, int32_t round, int32_t r,
    int32_t lo) {
    uint32_t v, h, m;
    __asm__ volatile (
        ".syntax unified\n\t"
        NM_Q8_T1_REQ("0", "0")
        NM_Q8_T1_REQ("8", "2")
        NM_Q8_T1_REQ("4", "4")
        NM_Q8_T1_REQ("12", "6")
        ".syntax divided"
        : [v] "=&l" (v), [h] "=&l" (h), [m] "=&l" (m)
        : [y] "l" (y), [a] "l" (a), [mp] "l" (mult), [r] "l" (r), [rnd] "h" (round), [lo] "h" (lo),
          [hi] "h" ((int32_t)NM_Q8_AMAX), [half] "h" ((int32_t)0x8000)
        : "cc", "memory");
}
#define NM_Q8_T1_REQUANT4 1

#endif // NM_Q8_THUMB1

#endif // NM_INT8_ARMV6M_H
