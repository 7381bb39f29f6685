// Console over the sim machine's semihosting stdin/stdout (see uart.h).
#include "uart.h"
#include "xtensa_sim.h"

void uart_init(void) {
}

int uart_rx_chr(void) {
    return xtensa_sim_rx_ready() ? xtensa_sim_rx_read() : UART_RX_NO_CHAR;
}

void uart_tx_strn(const char *buf, size_t len) {
    xtensa_sim_write(buf, len);
}
