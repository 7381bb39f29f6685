/* The variadic callees of nm_varargs.h: each logs what va_arg reads. */
#include "nm_varargs.h"

uint64_t nm_va_log[NM_VA_LOG_MAX];
int nm_va_count;

static void put(uint64_t v) {
    if (nm_va_count < NM_VA_LOG_MAX) {
        nm_va_log[nm_va_count++] = v;
    }
}

static void read_kinds(const char *kinds, va_list ap) {
    for (; *kinds; kinds++) {
        switch (*kinds) {
            case 'i':
                put((uint64_t)(int64_t)va_arg(ap, int));
                break;
            case 'u':
                put(va_arg(ap, unsigned));
                break;
            case 'L':
                put((uint64_t)va_arg(ap, long long));
                break;
            case 'd': {
                union { double d; uint64_t u; } bits = { .d = va_arg(ap, double) };
                put(bits.u);
                break;
            }
            case 'p':
                put((uintptr_t)va_arg(ap, void *));
                break;
        }
    }
}

void nm_va_ints(int n, ...) {
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) {
        put((uint64_t)(int64_t)va_arg(ap, int));
    }
    va_end(ap);
}

void nm_va_kinds(const char *kinds, ...) {
    va_list ap;
    va_start(ap, kinds);
    read_kinds(kinds, ap);
    va_end(ap);
}

void nm_va_after_double(double x, const char *kinds, ...) {
    union { double d; uint64_t u; } bits = { .d = x };
    put(bits.u);
    va_list ap;
    va_start(ap, kinds);
    read_kinds(kinds, ap);
    va_end(ap);
}

void nm_va_named5(int a, int b, int c, int d, const char *kinds, ...) {
    put((uint64_t)(a + b + c + d));
    va_list ap;
    va_start(ap, kinds);
    read_kinds(kinds, ap);
    va_end(ap);
}

void nm_va_named6(int a, int b, int c, int d, int e, const char *kinds, ...) {
    put((uint64_t)(a + b + c + d + e));
    va_list ap;
    va_start(ap, kinds);
    read_kinds(kinds, ap);
    va_end(ap);
}

void nm_va_named7(int a, int b, int c, int d, int e, int f, const char *kinds, ...) {
    put((uint64_t)(a + b + c + d + e + f));
    va_list ap;
    va_start(ap, kinds);
    read_kinds(kinds, ap);
    va_end(ap);
}

void nm_va_twice(const char *kinds, ...) {
    va_list ap, again;
    va_start(ap, kinds);
    va_copy(again, ap);
    read_kinds(kinds, ap);
    read_kinds(kinds, again);
    va_end(again);
    va_end(ap);
}
