// Single-precision functions that MicroPython's lib/libm expects from the C library
// (picolibc's are built for the call0 ABI and are not linked).
#include <stdint.h>

#include "float_bits.h"

float fabsf(float x);
float copysignf(float x, float y);
float nanf(const char *tag);
int __finitef(float x);

float fabsf(float x) {
    return float_of(bits_of(x) & 0x7fffffffu);
}

float copysignf(float x, float y) {
    return float_of((bits_of(x) & 0x7fffffffu) | (bits_of(y) & 0x80000000u));
}

float nanf(const char *tag) {
    (void)tag;
    return float_of(0x7fc00000u);
}

int __finitef(float x) {
    return (bits_of(x) & 0x7f800000u) != 0x7f800000u;
}
