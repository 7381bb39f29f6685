/*
 * <stdarg.h> for C that clang-22 compiles for the Xtensa windowed ABI (ESP32, ESP32-S3,
 * QEMU's de233_fpu); device/port/xtensawin/xtensawin-gcc puts it ahead of clang's own.
 *
 * Why: clang 22 has no Xtensa ABI in its front end, so `va_arg` reaches the back end's
 * generic lowering, which reads the wrong slots, and the back end's va_start leaves
 * __va_reg at the first *variadic* register's save slot where the ABI's algorithm
 * expects the slot of a2. The caller side and the va_list layout are the ABI's (the
 * same as GCC's for the ESP32):
 *
 *   __va_stk  incoming stack arguments - 32 (the first stack argument is index 32)
 *   __va_reg  the six argument registers a2..a7 as saved by the callee
 *   __va_ndx  byte index of the next argument (named arguments count)
 *
 * va_start keeps clang's __builtin_va_start (it saves a2..a7 and the stack pointer)
 * and moves __va_reg back by the named arguments' bytes; va_arg is the ABI's walk:
 * an argument aligned above 4 bytes starts at a multiple of its alignment, and one
 * that does not fit in the six registers goes wholly to the stack. Scalars only: an
 * aggregate passed by value is not read through this va_arg.
 *
 * A variadic function must not keep a frame pointer: the back end makes a7 the frame
 * pointer before it saves a7, the sixth argument register (xtensawin-gcc passes
 * -fomit-frame-pointer; device/port/qemu-xtensa/check_varargs.py checks the firmware).
 */
#ifndef NM_XTENSA_GNUC_VA_LIST
#define NM_XTENSA_GNUC_VA_LIST
typedef __builtin_va_list __gnuc_va_list;
#endif

#if !defined(__need___va_list) && !defined(NM_XTENSA_STDARG_H)
#define NM_XTENSA_STDARG_H

typedef __builtin_va_list va_list;

struct __nm_xtensa_va_list {
    char *__va_stk;
    char *__va_reg;
    int __va_ndx;
};

_Static_assert(sizeof(struct __nm_xtensa_va_list) == sizeof(__builtin_va_list),
    "va_list is not the Xtensa ABI's three words");

#define __NM_XTENSA_ARGS_IN_REGS 24 /* a2..a7 */
#define __NM_XTENSA_FIRST_STACK_ARG 32

static inline __attribute__((always_inline)) void __nm_xtensa_va_rebase(__builtin_va_list *ap) {
    struct __nm_xtensa_va_list *v = (struct __nm_xtensa_va_list *)ap;
    v->__va_reg -= v->__va_ndx;
}

static inline __attribute__((always_inline)) void *__nm_xtensa_va_next(__builtin_va_list *ap,
    unsigned size, unsigned align) {
    struct __nm_xtensa_va_list *v = (struct __nm_xtensa_va_list *)ap;
    int bytes = (int)((size + 3u) & ~3u);
    int ndx = v->__va_ndx;
    if (align > 4u) {
        ndx = (ndx + (int)align - 1) & -(int)align;
    }
    if (ndx + bytes <= __NM_XTENSA_ARGS_IN_REGS) {
        v->__va_ndx = ndx + bytes;
        return v->__va_reg + ndx;
    }
    if (ndx <= __NM_XTENSA_ARGS_IN_REGS) {
        ndx = __NM_XTENSA_FIRST_STACK_ARG;
    }
    // On the stack the address is aligned, not the index: for named stack arguments the
    // back end advances __va_stk past them (GCC advances __va_ndx), and the caller aligns
    // stack arguments to the 16-byte aligned stack pointer.
    char *arg = v->__va_stk + ndx;
    if (align > 4u) {
        arg = (char *)(((unsigned)arg + align - 1u) & -align);
    }
    v->__va_ndx = (int)(arg + bytes - v->__va_stk);
    return arg;
}

#define va_start(ap, last) (__builtin_va_start(ap, last), __nm_xtensa_va_rebase(&(ap)))
#define va_arg(ap, type) (*(type *)__nm_xtensa_va_next(&(ap), sizeof(type), __alignof__(type)))
#define va_end(ap) __builtin_va_end(ap)
#define va_copy(dest, src) __builtin_va_copy(dest, src)
#define __va_copy(dest, src) __builtin_va_copy(dest, src)

#endif
