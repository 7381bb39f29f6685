/* Calls the variadic callees with known arguments and prints, one line per call,
 * `<name> <hex word> ...`: what the callee read (tests/boards/test_xtensawin_varargs.py
 * knows what was passed). */
#include <stddef.h>
#include "nm_port.h"
#include "nm_varargs.h"

void nm_varargs_run(void);

static void write_str(const char *s) {
    size_t n = 0;
    while (s[n]) {
        n++;
    }
    nm_port_write(s, n);
}

static void report(const char *name) {
    static const char hex[] = "0123456789abcdef";
    write_str(name);
    for (int i = 0; i < nm_va_count; i++) {
        char word[17];
        for (int k = 0; k < 16; k++) {
            word[k] = hex[(nm_va_log[i] >> (60 - 4 * k)) & 0xf];
        }
        word[16] = '\0';
        write_str(" ");
        write_str(word);
    }
    write_str("\n");
    nm_va_count = 0;
}

static int marker;

void nm_varargs_run(void) {
    nm_va_ints(8, 1, 2, 3, 4, 5, 6, 7, 8);
    report("ints8");
    nm_va_ints(3, -1, 2, -3);
    report("ints3");
    nm_va_kinds("iiiiiii", 10, 20, 30, 40, 50, 60, 70);
    report("kinds_ints7");
    nm_va_kinds("dididiL", 1.5, 2, -2.25, 3, 1e300, 4, 0x123456789abcdef0LL);
    report("kinds_mixed");
    nm_va_kinds("iLdiLd", 7, -2LL, 0.1, 8, 1LL << 40, -3.5);
    report("kinds_pairs");
    nm_va_kinds("pupi", (void *)&marker, 0xdeadbeefu, (void *)0, 9);
    report("kinds_pointers");
    nm_va_after_double(6.25, "iddi", 11, 1.0, 2.0, 12);
    report("after_double");
    nm_va_named5(1, 2, 3, 4, "iidL", 21, 22, 4.5, 99LL);
    report("named5");
    nm_va_named5(1, 2, 3, 4, "dii", 8.5, 31, 32);
    report("named5_double");
    nm_va_named6(1, 2, 3, 4, 5, "idL", 41, -0.5, 77LL);
    report("named6");
    nm_va_named7(1, 2, 3, 4, 5, 6, "iid", 51, 52, 3.0);
    report("named7");
    nm_va_twice("idi", 61, 2.5, 62);
    report("twice");
    write_str("marker ");
    char word[9];
    uintptr_t m = (uintptr_t)&marker;
    for (int k = 0; k < 8; k++) {
        word[k] = "0123456789abcdef"[(m >> (28 - 4 * k)) & 0xf];
    }
    word[8] = '\0';
    write_str(word);
    write_str("\ndone\n");
    nm_port_exit(0);
}
