/*
 * __muldi3, the low 64 bits of a 64-bit product, for the lx106: GCC calls it for
 * (int64_t)a * b (the int8 kernels' requantisation), and Debian's lx106 libgcc leaves it
 * out with the ROM routines. GCC's own is C in libgcc2.c, which builds only inside a GCC
 * build tree; this is the same schoolbook identity over lib1funcs.S's __umulsidi3:
 *   a * b mod 2^64 = al*bl + ((al*bh + ah*bl) mod 2^32) * 2^32
 */
#include <stdint.h>

uint64_t __umulsidi3(uint32_t a, uint32_t b);
int64_t __muldi3(int64_t a, int64_t b);

int64_t __muldi3(int64_t a, int64_t b) {
    const uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    const uint32_t al = (uint32_t)ua, ah = (uint32_t)(ua >> 32);
    const uint32_t bl = (uint32_t)ub, bh = (uint32_t)(ub >> 32);
    const uint64_t lo = __umulsidi3(al, bl);
    const uint32_t hi = (uint32_t)(lo >> 32) + al * bh + ah * bl;
    return (int64_t)(((uint64_t)hi << 32) | (uint32_t)lo);
}
