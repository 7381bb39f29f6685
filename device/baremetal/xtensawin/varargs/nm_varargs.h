/* Variadic calls under the ESP32's windowed ABI, compiled by clang-22 with our
 * <stdarg.h> (device/port/xtensawin/include): the callees (nm_varargs_callee.c) read
 * their variadic arguments by a kinds string and log each as a 64-bit word; the caller
 * (nm_varargs_run.c, another translation unit, so every call is a real call) prints
 * the log for tests/boards/test_xtensawin_varargs.py to compare with what it passed.
 *   kinds: 'i' int, 'u' unsigned, 'L' long long, 'd' double, 'p' pointer */
#ifndef NM_VARARGS_H
#define NM_VARARGS_H
#include <stdarg.h>
#include <stdint.h>

#define NM_VA_LOG_MAX 32
extern uint64_t nm_va_log[NM_VA_LOG_MAX];
extern int nm_va_count;

// n ints after the count: 1..8 fill a3..a7 and then the stack
void nm_va_ints(int n, ...);
// the kinds string names the rest; doubles and long longs take even register pairs
void nm_va_kinds(const char *kinds, ...);
// a double named argument (a2 unused, a4/a5) ahead of the variadic ones
void nm_va_after_double(double x, const char *kinds, ...);
// five named words: one variadic register (a7) left
void nm_va_named5(int a, int b, int c, int d, const char *kinds, ...);
// six named words: every variadic argument on the stack
void nm_va_named6(int a, int b, int c, int d, int e, const char *kinds, ...);
// seven named words: the last named one on the stack too
void nm_va_named7(int a, int b, int c, int d, int e, int f, const char *kinds, ...);
// the same arguments read twice: through va_copy and through a va_list handed on
void nm_va_twice(const char *kinds, ...);
#endif
