// Start-up, REPL loop and GC root scan of the Xtensa sim port.
// device/baremetal/xtensawin/start.S sets the register windows, stack and FPU up and
// calls nm_start.
#include <string.h>

#include "py/compile.h"
#include "py/runtime.h"
#include "py/stackctrl.h"
#include "py/gc.h"
#include "py/persistentcode.h"
#include "shared/runtime/pyexec.h"
#include "xtensa_sim.h"

#if MICROPY_HEAP_SIZE <= 0
#error MICROPY_HEAP_SIZE must be a positive integer.
#endif

static uint32_t gc_heap[MICROPY_HEAP_SIZE / sizeof(uint32_t)];
static mp_obj_t pystack[MICROPY_PYSTACK_BYTES / sizeof(mp_obj_t)];

// From the linker script: .data's VMA and its load image (copied at every start, so
// a restart from the reset vector sees pristine initial values), .bss, stack top.
extern uint32_t _sdata, _edata, _sidata, _sbss, _ebss, _estack;

static void run(void) {
    mp_stack_ctrl_init();
    mp_stack_set_limit(MICROPY_STACK_BYTES - 4096);
    gc_init(gc_heap, (char *)gc_heap + sizeof(gc_heap));
    for (;;) {
        mp_pystack_init(pystack, pystack + MP_ARRAY_SIZE(pystack));
        mp_init();
        MP_STATE_PORT(nm_native_code) = MP_OBJ_NULL;
        for (;;) {
            if (pyexec_mode_kind == PYEXEC_MODE_RAW_REPL) {
                if (pyexec_raw_repl() != 0) {
                    break;
                }
            } else {
                if (pyexec_friendly_repl() != 0) {
                    break;
                }
            }
        }
        mp_printf(&mp_plat_print, "MPY: soft reboot\n");
        gc_sweep_all();
        mp_deinit();
    }
}

void nm_start(void) {
    memcpy(&_sdata, &_sidata, (char *)&_edata - (char *)&_sdata);
    memset(&_sbss, 0, (char *)&_ebss - (char *)&_sbss);
    run();
}

void gc_collect(void) {
    gc_collect_start();
    // The windowed ABI keeps callers' registers in the register file until a window
    // overflow writes them out: spill them all, then scan the stack, which now holds
    // them (a caller's a0..a3 sit in the 16 bytes below its callee's stack pointer).
    xtensa_spill_windows();
    uintptr_t sp;
    __asm__ volatile ("mov %0, a1" : "=r" (sp));
    void **from = (void **)(sp - 16);
    gc_collect_root(from, ((uintptr_t)&_estack - (uintptr_t)from) / sizeof(void *));
    gc_collect_end();
}

// Machine code loaded from .mpy files stays where the loader put it, in the GC heap.
// A natmod's functions point into the middle of its block, which the GC does not
// trace, so such a block is kept in a root list (as MicroPython does for ports that
// leave MP_PLAT_COMMIT_EXEC undefined). Defining that hook hands the relocation of
// natmod code (reloc) to the port too.
MP_REGISTER_ROOT_POINTER(mp_obj_t nm_native_code);

void *nm_commit_exec(void *buf, size_t len, void *reloc) {
    if (reloc != NULL) {
        mp_native_relocate(reloc, buf, (uintptr_t)buf);
        if (MP_STATE_PORT(nm_native_code) == MP_OBJ_NULL) {
            MP_STATE_PORT(nm_native_code) = mp_obj_new_list(0, NULL);
        }
        mp_obj_list_append(MP_STATE_PORT(nm_native_code), MP_OBJ_FROM_PTR(buf));
    }
    xtensa_sync_code(buf, len);
    return buf;
}

void nlr_jump_fail(void *val) {
    (void)val;
    mp_printf(&mp_plat_print, "uncaught NLR\n");
    xtensa_sim_exit(1);
}
