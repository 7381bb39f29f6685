// MicroPython configuration of the Xtensa sim port: QEMU's de233_fpu core with the
// ESP32's windowed ABI and single-precision FPU. boards/qemu-common/qemuboard_config.h
// (selected through MP_CONFIGFILE) includes this, then adds what the emulated boards
// share (time, select, machine, filesystem mount, VM poll hook).
#include <alloca.h>
#include <stddef.h>
#include <stdint.h>

#define MICROPY_CONFIG_ROM_LEVEL    (MICROPY_CONFIG_ROM_LEVEL_EXTRA_FEATURES)

// The ESP32's native code: the xtensawin emitter, viper and .mpy files with
// xtensawin machine code (natmods).
#define MICROPY_EMIT_XTENSAWIN      (1)
#define MICROPY_PERSISTENT_CODE_LOAD (1)
#define MICROPY_PERSISTENT_CODE_LOAD_NATIVE (1)
#define MP_PLAT_COMMIT_EXEC(buf, len, reloc) nm_commit_exec((buf), (len), (reloc))

// py/nlrxtensa.c is the call0 ABI; windows.S has setjmp/longjmp for the windowed one.
#define MICROPY_NLR_SETJMP          (1)
// Code states and temporary argument arrays on MicroPython's own stack, not alloca
// (a dynamic stack pointer move, MOVSP, raises an exception this port does not
// handle when the caller's frame is spilled).
#define MICROPY_ENABLE_PYSTACK      (1)

#define MICROPY_MALLOC_USES_ALLOCATED_SIZE (1)
#define MICROPY_MEM_STATS           (1)
#define MICROPY_READER_VFS          (1)
#define MICROPY_ENABLE_GC           (1)
#define MICROPY_ENABLE_EMERGENCY_EXCEPTION_BUF (1)
#define MICROPY_LONGINT_IMPL        (MICROPY_LONGINT_IMPL_MPZ)
#define MICROPY_FLOAT_IMPL          (MICROPY_FLOAT_IMPL_FLOAT)
#define MICROPY_WARNINGS            (1)
#define MICROPY_PY_SYS_PLATFORM     "qemu"
#define MICROPY_PY_SYS_STDIO_BUFFER (0)
#define MICROPY_PY_SELECT           (0)
#define MICROPY_PY_TIME             (0)
#define MICROPY_PY_ASYNCIO          (0)
#define MICROPY_PY_MACHINE          (1)
#define MICROPY_PY_MACHINE_RESET    (1)
#define MICROPY_VFS                 (1)

#define MP_SSIZE_MAX (0x7fffffff)
#define UINT_FMT "%lu"
#define INT_FMT "%ld"

typedef int32_t mp_int_t;
typedef uint32_t mp_uint_t;
typedef long mp_off_t;

#define MP_NEED_LOG2 (1)
#define MP_STATE_PORT MP_STATE_VM

void *nm_commit_exec(void *buf, size_t len, void *reloc);
