// Console of the Xtensa sim port. uart_rx_chr and mp_hal_stdio_poll are reached
// through the linker's --wrap: boards/qemu-common/qemuboard.c puts its receive ring
// (Ctrl-C, select on stdin) in front of them, as on the other emulated boards.
#include "py/mphal.h"
#include "uart.h"

uintptr_t mp_hal_stdio_poll(uintptr_t poll_flags) {
    (void)poll_flags;
    return 0;
}

int mp_hal_stdin_rx_chr(void) {
    for (;;) {
        int c = uart_rx_chr();
        if (c >= 0) {
            return c;
        }
    }
}

mp_uint_t mp_hal_stdout_tx_strn(const char *str, size_t len) {
    uart_tx_strn(str, len);
    return len;
}
