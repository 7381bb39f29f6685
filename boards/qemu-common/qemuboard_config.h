// neuromotor emulated boards: configuration on top of ports/qemu/mpconfigport.h.
//
// Selected with -DMP_CONFIGFILE='"qemuboard_config.h"' (see qemuboard.mk), so the
// MicroPython tree is used unmodified: we include the port's own configuration and
// then switch on what the stock qemu port leaves out (time, select, buffered stdio,
// a littlefs root filesystem, keyboard interrupts over the UART, idle via WFI).

#include <mpconfigport.h>

#ifndef __ASSEMBLER__
#include <stdint.h>
#endif

// `time` with ticks_ms/ticks_us/ticks_cpu/sleep*, backed by a hardware timer
// (CMSDK APB timer0 on MPS2, CLINT mtime on RISC-V virt). See qemuboard.c.
#undef MICROPY_PY_TIME
#define MICROPY_PY_TIME             (1)
#define MICROPY_PY_TIME_TIME_TIME_NS (1)
#define MICROPY_PY_TIME_INCLUDEFILE "qemuboard_time.c"

// `select` on sys.stdin (mpremote mount polls it) and sys.stdin.buffer.
#undef MICROPY_PY_SELECT
#define MICROPY_PY_SELECT           (1)
#undef MICROPY_PY_SYS_STDIO_BUFFER
#define MICROPY_PY_SYS_STDIO_BUFFER (1)

// Our own `machine` glue: machine.reset() resets the emulated MCU (RAM, and so the
// littlefs, survives) instead of exiting QEMU; machine.freq() reports the icount clock.
#undef MICROPY_PY_MACHINE_INCLUDEFILE
#define MICROPY_PY_MACHINE_INCLUDEFILE "qemuboard_machine.c"
#define MICROPY_PY_MACHINE_BARE_METAL_FUNCS (1)
#define MICROPY_PY_MACHINE_MEMX     (1)

// Modules the deploy/bench side relies on (hash checks, CRC of policy files).
#define MICROPY_PY_HASHLIB          (1)
#define MICROPY_PY_HASHLIB_SHA256   (1)
#define MICROPY_PY_BINASCII_CRC32   (1)
#define MICROPY_PY_OS_SYNC          (1)
#define MICROPY_PY_OS_UNAME         (1)

// Count the GC heap's blocks in use and keep their high-water mark (module nm_heap;
// needs device/port/patches/gc-peak-tracking.patch, which fetch_micropython.sh applies).
#define MICROPY_GC_PEAK_TRACKING    (1)

#ifndef __ASSEMBLER__
void qemuboard_init(void);
void qemuboard_wfe(uint32_t timeout_ms);
void qemuboard_vm_poll(void);
#endif

// Mount the RAM littlefs at / and add /lib to sys.path on every (soft) reset.
#define MICROPY_PORT_INIT_FUNC      qemuboard_init()

// Idle by waiting for an interrupt (UART RX or a one-shot timer) instead of
// spinning: an idle QEMU then does not burn a host core.
#define MICROPY_INTERNAL_WFE(TIMEOUT_MS) qemuboard_wfe(TIMEOUT_MS)

// Poll the UART from the VM every few backward jumps/returns, so Ctrl-C raises
// KeyboardInterrupt in a running program (as on real boards, where the UART IRQ
// does this), which mpremote relies on to stop a running program.
#define MICROPY_VM_HOOK_COUNT       (64)
#define MICROPY_VM_HOOK_INIT        static unsigned int vm_hook_divisor = MICROPY_VM_HOOK_COUNT;
#define MICROPY_VM_HOOK_POLL        if (--vm_hook_divisor == 0) { \
        vm_hook_divisor = MICROPY_VM_HOOK_COUNT; \
        qemuboard_vm_poll(); \
}
#define MICROPY_VM_HOOK_LOOP        MICROPY_VM_HOOK_POLL
#define MICROPY_VM_HOOK_RETURN      MICROPY_VM_HOOK_POLL
