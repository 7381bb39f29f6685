// neuromotor emulated boards: the board support the stock ports/qemu leaves out.
//
// - FPU enable (Cortex-M4F/M7): CPACR, before any float code runs.
// - On the Xtensa sim machine (device/port/qemu-xtensa) the "UART" is the simulator's
//   semihosting stdin/stdout and the tick counter the core's CCOUNT.
// - A 64-bit tick counter behind time.ticks_ms/us/cpu, sleep and time_ns
//   (MPS2: CMSDK APB timer0 at 25 MHz; RISC-V virt: CLINT mtime at 10 MHz).
// - A software receive ring between the UART and MicroPython, filled from the VM
//   hook, the idle loop and the stdio poll, so Ctrl-C raises KeyboardInterrupt in
//   a running program and select.poll(sys.stdin) works (mpremote mount).
// - Idle by WFI (MPS2) with the UART RX interrupt and a one-shot timer as wake-up
//   sources, interrupts masked by PRIMASK (the stock vector table has no entries
//   for external IRQs, so none is ever taken).
// - A littlefs on a RAM block device in otherwise unused RAM, mounted at / on
//   every (soft) reset; formatted only when no valid filesystem is found, so files
//   survive mpremote's soft reset and machine.reset() (a system reset keeps RAM).
//
// The stock port's functions are reached with the linker's --wrap (see
// qemuboard.mk): mp_semihosting_init (ARM) is the first call _start makes, so its
// wrapper does the early init; uart_rx_chr and mp_hal_stdio_poll are wrapped to
// go through the ring.

#include <string.h>

#include "py/runtime.h"
#include "py/mphal.h"
#include "py/stream.h"
#include "py/mperrno.h"
#include "shared/runtime/interrupt_char.h"
#include "extmod/vfs.h"
#include "extmod/vfs_lfs.h"
#include "uart.h"

#ifndef QEMUBOARD_IDLE_WFI
#define QEMUBOARD_IDLE_WFI (1)
#endif

#if defined(QEMU_SOC_MPS2)

// ---- MPS2 (AN386 Cortex-M4F, AN500 Cortex-M7) --------------------------------

typedef struct {
    volatile uint32_t CTRL;
    volatile uint32_t VALUE;
    volatile uint32_t RELOAD;
    volatile uint32_t INTSTATUS; // write 1 to clear
} cmsdk_timer_t;

typedef struct {
    volatile uint32_t DATA;
    volatile uint32_t STATE;
    volatile uint32_t CTRL;
    volatile uint32_t INTSTATUS; // write 1 to clear
} cmsdk_uart_t;

#define TIMER0 ((cmsdk_timer_t *)0x40000000)
#define TIMER1 ((cmsdk_timer_t *)0x40001000)
#define UART0 ((cmsdk_uart_t *)0x40004000)

#define TIMER_CTRL_EN (1u << 0)
#define TIMER_CTRL_IRQEN (1u << 3)
#define UART_STATE_RXFULL (1u << 1)
#define UART_CTRL_RXIRQEN (1u << 3)
#define UART_INT_RX (1u << 1)

// External interrupt numbers on QEMU's MPS2 AN385/AN386/AN500.
#define IRQ_UART0_RX (0)
#define IRQ_TIMER1 (9)

#define NVIC_ISER0 (*(volatile uint32_t *)0xE000E100)
#define NVIC_ICPR0 (*(volatile uint32_t *)0xE000E280)
#define SCB_CPACR (*(volatile uint32_t *)0xE000ED88)

#define QEMUBOARD_TICKS_HZ (25000000u)
#define QEMUBOARD_FS_BASE (0x20000000u) // ZBT SSRAM2/3, unused by the firmware
#define QEMUBOARD_FS_SIZE (2u * 1024u * 1024u)
#define QEMUBOARD_MCU_HZ (1000000000u) // -icount shift=0: one instruction per ns

static uint32_t ticks_last;
static uint64_t ticks_acc;

uint64_t qemuboard_ticks(void) {
    // 32-bit down-counter, extended to 64 bits; read at least every 171 s (the
    // idle loop and the VM hook do so far more often).
    uint32_t now = TIMER0->VALUE;
    ticks_acc += (uint32_t)(ticks_last - now);
    ticks_last = now;
    return ticks_acc;
}

static inline int hw_rx_ready(void) {
    return (UART0->STATE & UART_STATE_RXFULL) != 0;
}

static inline int hw_rx_read(void) {
    return UART0->DATA & 0xff;
}

void __real_mp_semihosting_init(void);
void __wrap_mp_semihosting_init(void) {
    // Full access to CP10/CP11: the FPU. Must happen before any float instruction.
    #if defined(__ARM_FP)
    SCB_CPACR |= 0xfu << 20;
    __asm volatile ("dsb\n isb" ::: "memory");
    #endif
    // Interrupts stay masked: pending ones only wake WFI.
    __asm volatile ("cpsid i" ::: "memory");
    TIMER0->CTRL = 0;
    TIMER0->RELOAD = 0xffffffffu;
    TIMER0->VALUE = 0xffffffffu;
    ticks_last = 0xffffffffu;
    ticks_acc = 0;
    TIMER0->CTRL = TIMER_CTRL_EN;
    TIMER1->CTRL = 0;
    TIMER1->INTSTATUS = 1;
    NVIC_ICPR0 = (1u << IRQ_UART0_RX) | (1u << IRQ_TIMER1);
    NVIC_ISER0 = (1u << IRQ_UART0_RX) | (1u << IRQ_TIMER1);
    __real_mp_semihosting_init();
}

void __real_uart_init(void);
void __wrap_uart_init(void) {
    __real_uart_init();
    UART0->CTRL |= UART_CTRL_RXIRQEN;
}

// Sleep until a character arrives or `max_ticks` timer ticks pass (0: no timeout).
static void hw_idle(uint32_t max_ticks) {
    UART0->INTSTATUS = UART_INT_RX;
    if (max_ticks) {
        TIMER1->CTRL = 0;
        TIMER1->INTSTATUS = 1;
        TIMER1->RELOAD = max_ticks;
        TIMER1->VALUE = max_ticks;
        TIMER1->CTRL = TIMER_CTRL_EN | TIMER_CTRL_IRQEN;
    }
    NVIC_ICPR0 = (1u << IRQ_UART0_RX) | (1u << IRQ_TIMER1);
    #if QEMUBOARD_IDLE_WFI
    if (!hw_rx_ready()) {
        __asm volatile ("wfi" ::: "memory");
    }
    #endif
    TIMER1->CTRL = 0;
    TIMER1->INTSTATUS = 1;
}

#elif defined(QEMU_SOC_VIRT)

// ---- RISC-V virt --------------------------------------------------------------

typedef struct {
    volatile uint8_t RBR_THR;
    volatile uint8_t IER;
    volatile uint8_t IIR_FCR;
    volatile uint8_t LCR;
    volatile uint8_t MCR;
    volatile uint8_t LSR;
} ns16550_t;

#define UART0 ((ns16550_t *)0x10000000)
#define UART_LSR_DR (0x01)
#define CLINT_MTIME_LO (*(volatile uint32_t *)0x0200bff8)
#define CLINT_MTIME_HI (*(volatile uint32_t *)0x0200bffc)

#define QEMUBOARD_TICKS_HZ (10000000u)
#define QEMUBOARD_FS_BASE (0x81000000u) // 16 MiB into the 128 MiB of RAM, unused
#define QEMUBOARD_FS_SIZE (2u * 1024u * 1024u)
#define QEMUBOARD_MCU_HZ (1000000000u)

uint64_t qemuboard_ticks(void) {
    uint32_t hi, lo;
    do {
        hi = CLINT_MTIME_HI;
        lo = CLINT_MTIME_LO;
    } while (hi != CLINT_MTIME_HI);
    return ((uint64_t)hi << 32) | lo;
}

static inline int hw_rx_ready(void) {
    return (UART0->LSR & UART_LSR_DR) != 0;
}

static inline int hw_rx_read(void) {
    return UART0->RBR_THR;
}

#define UART_IER_RX (0x01)
#define IRQ_UART0 (10)
#define PLIC_PRIORITY(irq) (*(volatile uint32_t *)(0x0c000000u + 4u * (irq)))
#define PLIC_ENABLE_CTX0 (*(volatile uint32_t *)0x0c002000u)   // hart 0, M mode
#define PLIC_THRESHOLD_CTX0 (*(volatile uint32_t *)0x0c200000u)
#define PLIC_CLAIM_CTX0 (*(volatile uint32_t *)0x0c200004u)
#define CLINT_MTIMECMP_LO (*(volatile uint32_t *)0x02004000u)
#define CLINT_MTIMECMP_HI (*(volatile uint32_t *)0x02004004u)
#define MIE_MTIE (1u << 7)
#define MIE_MEIE (1u << 11)

// "No timer": far ahead but not UINT64_MAX, which overflows QEMU 7.2's deadline
// arithmetic into a timer that fires continuously (an idle QEMU then spins).
#define MTIMECMP_OFF() (qemuboard_ticks() + (1ull << 40))

static void mtimecmp_set(uint64_t t) {
    CLINT_MTIMECMP_HI = 0xffffffffu; // no spurious match while the halves change
    CLINT_MTIMECMP_LO = (uint32_t)t;
    CLINT_MTIMECMP_HI = (uint32_t)(t >> 32);
}

// _entry_point calls uart_init after the stock trap table setup (which enables
// mstatus.MIE). We mask interrupts globally again and enable the UART RX (through
// the PLIC) and machine-timer interrupts only as WFI wake-up sources.
void __real_uart_init(void);
void __wrap_uart_init(void) {
    __real_uart_init();
    __asm volatile ("csrci mstatus, 8" ::: "memory");
    mtimecmp_set(MTIMECMP_OFF());
    UART0->IER = UART_IER_RX;
    PLIC_PRIORITY(IRQ_UART0) = 1;
    PLIC_THRESHOLD_CTX0 = 0;
    PLIC_ENABLE_CTX0 = 1u << IRQ_UART0;
    __asm volatile ("csrs mie, %0" :: "r" (MIE_MTIE | MIE_MEIE) : "memory");
}

static void hw_idle(uint32_t max_ticks) {
    #if QEMUBOARD_IDLE_WFI
    if (max_ticks) {
        mtimecmp_set(qemuboard_ticks() + max_ticks);
    }
    if (!hw_rx_ready()) {
        __asm volatile ("wfi" ::: "memory");
    }
    mtimecmp_set(MTIMECMP_OFF());
    uint32_t id = PLIC_CLAIM_CTX0;
    if (id) {
        PLIC_CLAIM_CTX0 = id;
    }
    #else
    (void)max_ticks;
    #endif
}

#elif defined(QEMU_SOC_XTENSA_SIM)

// ---- Xtensa sim machine (de233_fpu), device/port/qemu-xtensa ------------------------

#include "xtensa_sim.h"

#define QEMUBOARD_TICKS_HZ XTENSA_SIM_CCOUNT_HZ
#define QEMUBOARD_FS_BASE (0x01000000u) // 16 MiB into the 128 MiB of RAM, above the firmware
#define QEMUBOARD_FS_SIZE (2u * 1024u * 1024u)
#define QEMUBOARD_MCU_HZ (1000000000u)

static uint32_t ticks_last;
static uint64_t ticks_acc;

uint64_t qemuboard_ticks(void) {
    // CCOUNT (32 bits) extended to 64; wraps every 107 s of guest time.
    uint32_t now = xtensa_ccount();
    ticks_acc += (uint32_t)(now - ticks_last);
    ticks_last = now;
    return ticks_acc;
}

static inline int hw_rx_ready(void) {
    return xtensa_sim_rx_ready();
}

static inline int hw_rx_read(void) {
    return xtensa_sim_rx_read();
}

// The console input is the only wake-up source (no timer interrupt is set up): an
// indefinite idle waits in QEMU for input (in slices of 10 ms of host time, the
// caller polling again); a bounded one returns at once and the caller polls the tick
// counter.
static void hw_idle(uint32_t max_ticks) {
    if (max_ticks == 0 && QEMUBOARD_IDLE_WFI) {
        xtensa_sim_rx_wait();
    }
}

#else
#error "qemuboard: unsupported SoC"
#endif

// ---- receive ring -----------------------------------------------------------------

#define RX_RING_SIZE (512)
static uint8_t rx_ring[RX_RING_SIZE];
static volatile uint16_t rx_head, rx_tail;

static void rx_drain(void) {
    while (hw_rx_ready()) {
        uint16_t next = (rx_head + 1) % RX_RING_SIZE;
        if (next == rx_tail) {
            // Ring full: leave the byte in the UART; QEMU holds the rest back.
            break;
        }
        int c = hw_rx_read();
        if (c == mp_interrupt_char) {
            // Like a real board's UART IRQ: Ctrl-C in a running program raises
            // KeyboardInterrupt and is not delivered as data.
            mp_sched_keyboard_interrupt();
            continue;
        }
        rx_ring[rx_head] = (uint8_t)c;
        rx_head = next;
    }
}

static inline int rx_available(void) {
    return rx_head != rx_tail;
}

void qemuboard_vm_poll(void) {
    rx_drain();
}

// The stock mp_hal_stdin_rx_chr loops on uart_rx_chr until it returns a char.
int __real_uart_rx_chr(void);
int __wrap_uart_rx_chr(void) {
    rx_drain();
    if (rx_available()) {
        int c = rx_ring[rx_tail];
        rx_tail = (rx_tail + 1) % RX_RING_SIZE;
        return c;
    }
    // Nothing yet: deliver a pending KeyboardInterrupt/scheduled callbacks, then idle.
    mp_handle_pending(true);
    hw_idle(0);
    return -1;
}

uintptr_t __wrap_mp_hal_stdio_poll(uintptr_t poll_flags) {
    uintptr_t ret = 0;
    rx_drain();
    if ((poll_flags & MP_STREAM_POLL_RD) && rx_available()) {
        ret |= MP_STREAM_POLL_RD;
    }
    if (poll_flags & MP_STREAM_POLL_WR) {
        ret |= MP_STREAM_POLL_WR;
    }
    return ret;
}

// ---- time ------------------------------------------------------------------------

#define TICKS_PER_US (QEMUBOARD_TICKS_HZ / 1000000u)
#define TICKS_PER_MS (QEMUBOARD_TICKS_HZ / 1000u)

mp_uint_t mp_hal_ticks_ms(void) {
    return (mp_uint_t)(qemuboard_ticks() / TICKS_PER_MS);
}

mp_uint_t mp_hal_ticks_us(void) {
    return (mp_uint_t)(qemuboard_ticks() / TICKS_PER_US);
}

mp_uint_t mp_hal_ticks_cpu(void) {
    return (mp_uint_t)qemuboard_ticks();
}

uint64_t mp_hal_time_ns(void) {
    // No RTC: nanoseconds since reset.
    return qemuboard_ticks() * (1000000000u / QEMUBOARD_TICKS_HZ);
}

void mp_hal_delay_us(mp_uint_t us) {
    uint64_t start = qemuboard_ticks();
    uint64_t span = (uint64_t)us * TICKS_PER_US;
    while (qemuboard_ticks() - start < span) {
    }
}

void qemuboard_wfe(uint32_t timeout_ms) {
    rx_drain();
    if (rx_available()) {
        return;
    }
    uint32_t max_ticks = 0;
    if (timeout_ms != (uint32_t)-1) {
        if (timeout_ms == 0) {
            return;
        }
        if (timeout_ms > 1000) {
            timeout_ms = 1000;
        }
        max_ticks = timeout_ms * TICKS_PER_MS;
    }
    hw_idle(max_ticks);
    rx_drain();
}

void mp_hal_delay_ms(mp_uint_t ms) {
    uint64_t start = qemuboard_ticks();
    uint64_t span = (uint64_t)ms * TICKS_PER_MS;
    for (;;) {
        uint64_t elapsed = qemuboard_ticks() - start;
        if (elapsed >= span) {
            break;
        }
        mp_event_handle_nowait();
        uint64_t left = span - elapsed;
        if (left > 1000u * TICKS_PER_MS) {
            left = 1000u * TICKS_PER_MS;
        }
        hw_idle((uint32_t)left);
        rx_drain();
    }
}

// ---- RAM block device and filesystem -----------------------------------------

#define FS_BLOCK_SIZE (4096u)

typedef struct _qemuboard_ramdisk_obj_t {
    mp_obj_base_t base;
} qemuboard_ramdisk_obj_t;

static uint8_t *ramdisk_addr(mp_obj_t block_in, mp_obj_t offset_in, size_t len) {
    mp_int_t block = mp_obj_get_int(block_in);
    mp_int_t offset = offset_in == MP_OBJ_NULL ? 0 : mp_obj_get_int(offset_in);
    if (block < 0 || offset < 0) {
        return NULL;
    }
    uint64_t start = (uint64_t)block * FS_BLOCK_SIZE + (uint64_t)offset;
    if (start + len > QEMUBOARD_FS_SIZE) {
        return NULL;
    }
    return (uint8_t *)(uintptr_t)(QEMUBOARD_FS_BASE + (uint32_t)start);
}

static mp_obj_t ramdisk_readblocks(size_t n_args, const mp_obj_t *args) {
    mp_buffer_info_t bufinfo;
    mp_get_buffer_raise(args[2], &bufinfo, MP_BUFFER_WRITE);
    uint8_t *src = ramdisk_addr(args[1], n_args == 4 ? args[3] : MP_OBJ_NULL, bufinfo.len);
    if (src == NULL) {
        return MP_OBJ_NEW_SMALL_INT(-MP_EIO);
    }
    memcpy(bufinfo.buf, src, bufinfo.len);
    return MP_OBJ_NEW_SMALL_INT(0);
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(ramdisk_readblocks_obj, 3, 4, ramdisk_readblocks);

static mp_obj_t ramdisk_writeblocks(size_t n_args, const mp_obj_t *args) {
    mp_buffer_info_t bufinfo;
    mp_get_buffer_raise(args[2], &bufinfo, MP_BUFFER_READ);
    uint8_t *dest = ramdisk_addr(args[1], n_args == 4 ? args[3] : MP_OBJ_NULL, bufinfo.len);
    if (dest == NULL) {
        return MP_OBJ_NEW_SMALL_INT(-MP_EIO);
    }
    memcpy(dest, bufinfo.buf, bufinfo.len);
    return MP_OBJ_NEW_SMALL_INT(0);
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(ramdisk_writeblocks_obj, 3, 4, ramdisk_writeblocks);

static mp_obj_t ramdisk_ioctl(mp_obj_t self_in, mp_obj_t op_in, mp_obj_t arg_in) {
    (void)self_in;
    (void)arg_in;
    switch (mp_obj_get_int(op_in)) {
        case MP_BLOCKDEV_IOCTL_BLOCK_COUNT:
            return MP_OBJ_NEW_SMALL_INT(QEMUBOARD_FS_SIZE / FS_BLOCK_SIZE);
        case MP_BLOCKDEV_IOCTL_BLOCK_SIZE:
            return MP_OBJ_NEW_SMALL_INT(FS_BLOCK_SIZE);
        case MP_BLOCKDEV_IOCTL_INIT:
        case MP_BLOCKDEV_IOCTL_DEINIT:
        case MP_BLOCKDEV_IOCTL_SYNC:
        case MP_BLOCKDEV_IOCTL_BLOCK_ERASE:
            return MP_OBJ_NEW_SMALL_INT(0);
        default:
            return mp_const_none;
    }
}
static MP_DEFINE_CONST_FUN_OBJ_3(ramdisk_ioctl_obj, ramdisk_ioctl);

static const mp_rom_map_elem_t ramdisk_locals_dict_table[] = {
    { MP_ROM_QSTR(MP_QSTR_readblocks), MP_ROM_PTR(&ramdisk_readblocks_obj) },
    { MP_ROM_QSTR(MP_QSTR_writeblocks), MP_ROM_PTR(&ramdisk_writeblocks_obj) },
    { MP_ROM_QSTR(MP_QSTR_ioctl), MP_ROM_PTR(&ramdisk_ioctl_obj) },
};
static MP_DEFINE_CONST_DICT(ramdisk_locals_dict, ramdisk_locals_dict_table);

static MP_DEFINE_CONST_OBJ_TYPE(
    qemuboard_ramdisk_type,
    MP_QSTR_RAMBlockDev,
    MP_TYPE_FLAG_NONE,
    locals_dict, &ramdisk_locals_dict
    );

static const qemuboard_ramdisk_obj_t qemuboard_ramdisk_obj = {{&qemuboard_ramdisk_type}};

static mp_obj_t make_lfs2(mp_obj_t bdev) {
    return MP_OBJ_TYPE_GET_SLOT(&mp_type_vfs_lfs2, make_new)(&mp_type_vfs_lfs2, 1, 0, &bdev);
}

static void qemuboard_mount_root(void) {
    mp_obj_t bdev = MP_OBJ_FROM_PTR(&qemuboard_ramdisk_obj);
    mp_obj_t vfs;
    nlr_buf_t nlr;
    if (nlr_push(&nlr) == 0) {
        vfs = make_lfs2(bdev);
        nlr_pop();
    } else {
        // Create a filesystem only where there is none yet (first boot after QEMU
        // started: the RAM is zero). littlefs survives resets mid-write, so a mount
        // failure with a superblock present is reported, never "repaired" by mkfs.
        const uint8_t *base = (const uint8_t *)(uintptr_t)QEMUBOARD_FS_BASE;
        if (memcmp(base + 8, "littlefs", 8) == 0 || memcmp(base + FS_BLOCK_SIZE + 8, "littlefs", 8) == 0) {
            nlr_raise(MP_OBJ_FROM_PTR(nlr.ret_val));
        }
        mp_obj_t mkfs = mp_load_attr(MP_OBJ_FROM_PTR(&mp_type_vfs_lfs2), MP_QSTR_mkfs);
        mp_call_function_1(mkfs, bdev);
        vfs = make_lfs2(bdev);
    }
    mp_obj_t args[2] = { vfs, MP_OBJ_NEW_QSTR(MP_QSTR__slash_) };
    mp_vfs_mount(2, args, (mp_map_t *)&mp_const_empty_map);
    MP_STATE_VM(vfs_cur) = MP_STATE_VM(vfs_mount_table);
}

void qemuboard_init(void) {
    nlr_buf_t nlr;
    if (nlr_push(&nlr) == 0) {
        qemuboard_mount_root();
        mp_obj_list_append(mp_sys_path, mp_obj_new_str("/lib", 4));
        nlr_pop();
    } else {
        mp_printf(&mp_plat_print, "qemuboard: could not mount the filesystem (to start afresh: "
            "os.VfsLfs2.mkfs(qemuboard.bdev), then soft reset): ");
        mp_obj_print_exception(&mp_plat_print, MP_OBJ_FROM_PTR(nlr.ret_val));
    }
}

// ---- the `qemuboard` module ----------------------------------------------------

static const mp_rom_map_elem_t qemuboard_module_globals_table[] = {
    { MP_ROM_QSTR(MP_QSTR___name__), MP_ROM_QSTR(MP_QSTR_qemuboard) },
    { MP_ROM_QSTR(MP_QSTR_bdev), MP_ROM_PTR(&qemuboard_ramdisk_obj) },
    // time.ticks_cpu() counts at this rate.
    { MP_ROM_QSTR(MP_QSTR_TICKS_CPU_HZ), MP_ROM_INT(QEMUBOARD_TICKS_HZ) },
    // Under -icount shift=0 one guest instruction takes 1 ns of guest time.
    { MP_ROM_QSTR(MP_QSTR_INSTRUCTIONS_PER_US), MP_ROM_INT(QEMUBOARD_MCU_HZ / 1000000u) },
};
static MP_DEFINE_CONST_DICT(qemuboard_module_globals, qemuboard_module_globals_table);

const mp_obj_module_t qemuboard_module = {
    .base = { &mp_type_module },
    .globals = (mp_obj_dict_t *)&qemuboard_module_globals,
};

MP_REGISTER_MODULE(MP_QSTR_qemuboard, qemuboard_module);
