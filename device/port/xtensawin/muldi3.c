/*
 * __muldi3, the low 64 bits of a 64-bit product, for xtensawin natmods: clang calls it
 * for (int64_t)a * b (the int8 kernels' requantisation) because the modules are built
 * without MUL32_HIGH (MULUH/MULSH), which QEMU's de233_fpu core lacks, and a natmod
 * links no libgcc. Only 32-bit multiplies of 16-bit halves (MULL), none wider:
 *   a * b mod 2^64 = al*bl + ((al*bh + ah*bl) mod 2^32) * 2^32
 *   al*bl = l*l + (l*h + h*l) * 2^16 + h*h * 2^32   (16-bit halves of al and bl)
 */
#include <stdint.h>

int64_t __muldi3(int64_t a, int64_t b);

static uint64_t nm_umul32x32(uint32_t a, uint32_t b) {
    const uint32_t a0 = a & 0xFFFF, a1 = a >> 16, b0 = b & 0xFFFF, b1 = b >> 16;
    const uint32_t ll = a0 * b0, lh = a0 * b1, hl = a1 * b0, hh = a1 * b1;
    const uint32_t mid = (ll >> 16) + (lh & 0xFFFF) + (hl & 0xFFFF); // < 3 * 2^16
    const uint32_t lo = (mid << 16) | (ll & 0xFFFF);
    const uint32_t hi = hh + (lh >> 16) + (hl >> 16) + (mid >> 16);
    return ((uint64_t)hi << 32) | lo;
}

int64_t __muldi3(int64_t a, int64_t b) {
    const uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    const uint32_t al = (uint32_t)ua, ah = (uint32_t)(ua >> 32);
    const uint32_t bl = (uint32_t)ub, bh = (uint32_t)(ub >> 32);
    const uint64_t lo = nm_umul32x32(al, bl);
    const uint32_t hi = (uint32_t)(lo >> 32) + al * bh + ah * bl;
    return (int64_t)(((uint64_t)hi << 32) | (uint32_t)lo);
}
