// The console of the Xtensa sim machine, under the UART interface that
// boards/qemu-common/qemuboard.c builds on (there: an MPS2 or 16550 UART; here the
// simulator's semihosting stdin and stdout).
#ifndef NM_QEMU_XTENSA_UART_H
#define NM_QEMU_XTENSA_UART_H
#include <stddef.h>

#define UART_RX_NO_CHAR (-1)

void uart_init(void);
int uart_rx_chr(void);
void uart_tx_strn(const char *buf, size_t len);
#endif
