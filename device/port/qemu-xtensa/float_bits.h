// A float's bits and back, for the port's soft-float helpers (divsf3.c, libm_extra.c).
#ifndef QEMU_XTENSA_FLOAT_BITS_H
#define QEMU_XTENSA_FLOAT_BITS_H

#include <stdint.h>
#include <string.h>

static inline uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

static inline float float_of(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

#endif // QEMU_XTENSA_FLOAT_BITS_H
