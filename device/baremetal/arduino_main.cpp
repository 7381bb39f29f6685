// Real-board glue of the bare-metal timing program (the platformio.ini environments
// teensy41, esp32, esp32c3, stm32f405, stm32h743): the cycle counter, the clock and
// the serial line for nm_baremetal.c, which runs once every two seconds.
#include <Arduino.h>

extern "C" {
int nm_baremetal_main(void);
uint32_t nm_port_cycles(void);
uint32_t nm_port_clock_hz(void);
void nm_port_write(const char *line);
}

uint32_t nm_port_cycles(void) {
#if defined(ARDUINO_ARCH_ESP32)
    return ESP.getCycleCount(); // CCOUNT on Xtensa, the cycle CSR on RISC-V
#else
    return *(volatile uint32_t *)0xE0001004u; // DWT->CYCCNT
#endif
}

uint32_t nm_port_clock_hz(void) {
    return (uint32_t)F_CPU;
}

void nm_port_write(const char *line) {
    Serial.print(line);
    Serial.print("\n");
}

void setup() {
    Serial.begin(115200);
#if !defined(ARDUINO_ARCH_ESP32)
    *(volatile uint32_t *)0xE000EDFCu |= 1u << 24;   // CoreDebug->DEMCR: TRCENA
    *(volatile uint32_t *)0xE0001FB0u = 0xC5ACCE55u; // DWT->LAR: unlock (Cortex-M7)
    *(volatile uint32_t *)0xE0001004u = 0;           // DWT->CYCCNT
    *(volatile uint32_t *)0xE0001000u |= 1u;         // DWT->CTRL: CYCCNTENA
#endif
}

void loop() {
    nm_baremetal_main();
    delay(2000);
}
