/* nm_q8_block_acc for ARMv6-M (Thumb-1).
 * Included by nm_int8.h only; see it for the layout and the pair order.
 */
#ifndef NM_INT8_ARMV6M_H
#define NM_INT8_ARMV6M_H

/* ARMv6-M (Cortex-M0/M0+, Thumb-1): LDRSB has no immediate offset, so C loads
 * each weight with its own address arithmetic (~6.4 instructions per
 * multiply-add). Here one word load fetches a row's 4 weights for the group,
 * SXTB / LSLS+ASRS / ASRS sign-extend each byte, and the 4 accumulators live
 * in high registers (ADD reaches them; MULS needs low ones): 68 instructions
 * per 16 multiply-adds. The x words are pinned to r2 < r3 so one LDMIA loads
 * the group's two pair-order words in address order. Integer sums in any
 * order wrap to the portable path's bits. */
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

NM_INLINE const int8_t *nm_q8_block_acc(int32_t *a, const int16_t *x, const int8_t *w, size_t ng) {
    const int16_t *end = x + NM_Q8_GROUP * ng;
    register uint32_t x2 __asm__ ("r2"), x3 __asm__ ("r3");
    uint32_t x0, x1, wv, t;
    __asm__ volatile (
        ".syntax unified\n"                    // GCC hands Thumb-1 inline asm over in divided syntax
        "1:\n\t"
        "ldmia %[xp]!, {%[x2], %[x3]}\n\t"   // x2 = x0 | x2 << 16, x3 = x1 | x3 << 16
        "sxth %[x0], %[x2]\n\t"
        "asrs %[x2], %[x2], #16\n\t"
        "sxth %[x1], %[x3]\n\t"
        "asrs %[x3], %[x3], #16\n\t"
        NM_Q8_T1_ROW("0", "a0")
        NM_Q8_T1_ROW("4", "a1")
        NM_Q8_T1_ROW("8", "a2")
        NM_Q8_T1_ROW("12", "a3")
        "adds %[p], #16\n\t"
        "cmp %[xp], %[end]\n\t"
        "bne 1b\n"
        ".syntax divided"
        : [p] "+l" (w), [xp] "+l" (x), [a0] "+h" (a[0]), [a1] "+h" (a[1]), [a2] "+h" (a[2]), [a3] "+h" (a[3]),
          [x0] "=&l" (x0), [x1] "=&l" (x1), [x2] "=&l" (x2), [x3] "=&l" (x3), [w] "=&l" (wv), [t] "=&l" (t)
        : [end] "h" (end)
        : "cc", "memory");
    return w;
}

#endif // NM_INT8_ARMV6M_H
