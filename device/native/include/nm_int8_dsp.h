/* nm_q8_block_acc for ARMv7E-M: SXTB16 + SMLAD.
 * Included by nm_int8.h only; see it for the layout and the pair order.
 */
#ifndef NM_INT8_DSP_H
#define NM_INT8_DSP_H

// Two rows' words for one group: a += (w0,w2)·(x0,x2) + (w1,w3)·(x1,x3) per row.
#define NM_Q8_ROWS2(a0, a1) \
    "ldrd %[w0], %[w1], [%[p]], #8\n\t" \
    "sxtb16 %[t], %[w0]\n\t" \
    "sxtb16 %[w0], %[w0], ror #8\n\t" \
    "smlad %[" a0 "], %[t], %[x02], %[" a0 "]\n\t" \
    "smlad %[" a0 "], %[w0], %[x13], %[" a0 "]\n\t" \
    "sxtb16 %[t], %[w1]\n\t" \
    "sxtb16 %[w1], %[w1], ror #8\n\t" \
    "smlad %[" a1 "], %[t], %[x02], %[" a1 "]\n\t" \
    "smlad %[" a1 "], %[w1], %[x13], %[" a1 "]\n\t"

NM_INLINE void nm_q8_group_dsp(int32_t *a, const int8_t **p, uint32_t x02, uint32_t x13) {
    uint32_t w0, w1, t;
    __asm__ (
        NM_Q8_ROWS2("a0", "a1")
        NM_Q8_ROWS2("a2", "a3")
        : [p] "+r" (*p), [a0] "+r" (a[0]), [a1] "+r" (a[1]), [a2] "+r" (a[2]), [a3] "+r" (a[3]),
          [w0] "=&r" (w0), [w1] "=&r" (w1), [t] "=&r" (t)
        : [x02] "r" (x02), [x13] "r" (x13), "m" (*(const int8_t (*)[16]) * p));
}

// Four groups per iteration with the loop in the same asm block: GCC would otherwise
// spill the loop bound (4 accumulators, 3 pointers/counters and 5 temporaries fill
// the core registers), ~1.22 instructions per multiply-add.
NM_INLINE const int8_t *nm_q8_block_acc(int32_t *a, const int16_t *x, const int8_t *w, size_t ng) {
    const nm_u32a *xp = (const nm_u32a *)x;
    size_t n4 = ng / 4;
    if (n4) {
        uint32_t w0, w1, t, x02, x13;
        __asm__ volatile (
            "1:\n\t"
            "ldrd %[x02], %[x13], [%[xp]], #8\n\t"
            NM_Q8_ROWS2("a0", "a1")
            NM_Q8_ROWS2("a2", "a3")
            "ldrd %[x02], %[x13], [%[xp]], #8\n\t"
            NM_Q8_ROWS2("a0", "a1")
            NM_Q8_ROWS2("a2", "a3")
            "ldrd %[x02], %[x13], [%[xp]], #8\n\t"
            NM_Q8_ROWS2("a0", "a1")
            NM_Q8_ROWS2("a2", "a3")
            "ldrd %[x02], %[x13], [%[xp]], #8\n\t"
            NM_Q8_ROWS2("a0", "a1")
            NM_Q8_ROWS2("a2", "a3")
            "subs %[n], %[n], #1\n\t"
            "bne 1b"
            : [p] "+r" (w), [xp] "+r" (xp), [n] "+r" (n4),
              [a0] "+r" (a[0]), [a1] "+r" (a[1]), [a2] "+r" (a[2]), [a3] "+r" (a[3]),
              [w0] "=&r" (w0), [w1] "=&r" (w1), [t] "=&r" (t), [x02] "=&r" (x02), [x13] "=&r" (x13)
            :
            : "cc", "memory");
    }
    for (size_t g = 0; g < (ng & 3); g++, xp += 2) {
        nm_q8_group_dsp(a, &w, xp[0], xp[1]);
    }
    return w;
}

#endif // NM_INT8_DSP_H
