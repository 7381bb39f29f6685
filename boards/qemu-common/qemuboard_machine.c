// neuromotor emulated boards: port part of the `machine` module.
// Included by extmod/modmachine.c through MICROPY_PY_MACHINE_INCLUDEFILE
// (set in qemuboard_config.h); never compiled on its own.

#include <stdlib.h>
#include "py/mphal.h"
#if defined(QEMU_SOC_XTENSA_SIM)
#include "xtensa_sim.h"
#endif

static void mp_machine_idle(void) {
    mp_event_wait_ms(1);
}

static mp_obj_t mp_machine_unique_id(void) {
    static const char id[] = "neuromotor-qemu";
    return mp_obj_new_bytes((const byte *)id, sizeof(id) - 1);
}

static mp_obj_t mp_machine_get_freq(void) {
    // Guest instructions per second of guest time under -icount shift=0.
    return mp_obj_new_int_from_uint(1000000000u);
}

static void mp_machine_set_freq(size_t n_args, const mp_obj_t *args) {
    (void)n_args;
    (void)args;
    mp_raise_NotImplementedError(MP_ERROR_TEXT("emulated board: freq is fixed by -icount"));
}

static void mp_machine_lightsleep(size_t n_args, const mp_obj_t *args) {
    if (n_args == 0) {
        for (;;) {
            mp_event_wait_indefinite();
        }
    }
    mp_hal_delay_ms(mp_obj_get_int(args[0]));
}

#if defined(QEMU_SOC_MPS2)
#define SCB_AIRCR (*(volatile uint32_t *)0xE000ED0C)
#endif

NORETURN static void mp_machine_reset(void) {
    #if defined(QEMU_SOC_MPS2)
    // SYSRESETREQ: QEMU resets the whole machine; RAM (and our littlefs in it) is
    // kept, the firmware is reloaded and boots again.
    __asm volatile ("dsb" ::: "memory");
    SCB_AIRCR = (0x5fau << 16) | (1u << 2);
    __asm volatile ("dsb" ::: "memory");
    for (;;) {
    }
    #elif defined(QEMU_SOC_VIRT)
    // The virt machine's SiFive test device: FINISHER_RESET resets the machine
    // (RAM kept), like SYSRESETREQ on MPS2.
    *(volatile uint32_t *)0x100000 = 0x7777;
    for (;;) {
    }
    #elif defined(QEMU_SOC_XTENSA_SIM)
    // No reset device: restart from the reset vector (RAM, and so the littlefs, kept).
    xtensa_sim_reset();
    #else
    exit(0);
    #endif
}

NORETURN static void mp_machine_deepsleep(size_t n_args, const mp_obj_t *args) {
    (void)n_args;
    (void)args;
    mp_machine_reset();
}

static mp_int_t mp_machine_reset_cause(void) {
    return 0;
}
