/*
 * A policy's float and int8 forward passes as a bare-metal program, for the cores
 * without an FPU that no emulator runs MicroPython on here: the ESP8266's Xtensa LX106
 * (QEMU sim machine, this folder) and the Cortex-M0 (QEMU microbit, ../armv6m/).
 *
 * The policy comes as the two C headers `neuromotor export --format c-header` writes,
 * float and int8 (nm_case_float.c, nm_case_int8.c; see nm_policy_run.h), and the
 * observations to run as nm_case_obs.h; neuromotor.boards.policy_baremetal generates
 * all three into a case folder.
 *
 * Output, one JSON object in pieces through the port's console:
 *   "float"/"int8": per observation, the clamped action's float32 bits in hex (each
 *                   header's nm_policy_forward);
 *   "ticks":        the port's clock at each nm_mark() call:
 *     mark 0 | empty loop | mark 1 | nm_mlp loop | mark 2 | nm_q8_mlp loop | mark 3
 *                   (NM_REPEAT calls each; the host takes exact instruction counts from
 *                   the cycle-model plugin's marks where it runs, else from the ticks);
 *   "calib_ticks":  the clock across NM_CALIB_INSNS straight-line instructions, which
 *                   checks the instructions per tick the host assumes.
 * Exit status 0, or 1 with "error" when the int8 payload fails nm_q8_check.
 */
#include <stddef.h>
#include <stdint.h>

#include <nm_port.h> // the port of the folder being built (-I), not this one
#include "nm_case_obs.h"
#include "nm_policy_run.h"

#ifndef NM_REPEAT
#define NM_REPEAT 4
#endif

static uint32_t ticks[4];

// The cycle model's marker: its first instruction starts a translated block, so it must
// stay a real call.
__attribute__((noinline, noipa, used)) void nm_mark(void) {
    __asm__ volatile ("" ::: "memory");
}

// ---- output: a small buffer flushed to the console as it fills ------------------------

static char out_buf[128];
static size_t out_len;

static void flush(void) {
    if (out_len) {
        nm_port_write(out_buf, out_len);
        out_len = 0;
    }
}

static void put_str(const char *s) {
    while (*s) {
        if (out_len == sizeof(out_buf)) {
            flush();
        }
        out_buf[out_len++] = *s++;
    }
}

static void put_hex(uint32_t v) {
    char s[11] = { '"' };
    for (int i = 0; i < 8; i++) {
        s[1 + i] = "0123456789abcdef"[(v >> (28 - 4 * i)) & 15];
    }
    s[9] = '"';
    s[10] = 0;
    put_str(s);
}

static void put_uint(uint32_t v) {
    char s[11];
    int i = 10;
    s[i] = 0;
    do {
        s[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    put_str(s + i);
}

static void put_actions(const char *key, const float *a, size_t n_obs) {
    put_str(", \"");
    put_str(key);
    put_str("\": [");
    for (size_t k = 0; k < n_obs; k++) {
        put_str(k ? ", [" : "[");
        for (size_t i = 0; i < NM_CASE_ACT_DIM; i++) {
            union { float f; uint32_t u; } b = { a[k * NM_CASE_ACT_DIM + i] };
            if (i) {
                put_str(", ");
            }
            put_hex(b.u);
        }
        put_str("]");
    }
    put_str("]");
}

// NM_CALIB_INSNS instructions with no branch, timed by the port's clock.
static uint32_t calibrate(void) {
    uint32_t t0 = nm_port_ticks();
    __asm__ volatile (".rept " NM_STR(NM_CALIB_INSNS) "\n\tnop\n\t.endr" ::: "memory");
    return nm_port_ticks() - t0;
}

void nm_policy_run(void) {
    static float act_f[NM_CASE_N_OBS * NM_CASE_ACT_DIM], act_q[NM_CASE_N_OBS * NM_CASE_ACT_DIM];
    float out[NM_CASE_ACT_DIM];
    const uint16_t *lay = nm_case_layout();
    size_t macs = 0;
    for (size_t l = 0; l < lay[0]; l++) {
        macs += (size_t)lay[1 + l] * lay[2 + l];
    }
    put_str("{\"arch\": \"" NM_PORT_ARCH "\"");
    if (nm_case_int8_check() != 0) {
        put_str(", \"error\": \"the int8 payload is not deployable\"}\n");
        flush();
        nm_port_exit(1);
    }
    for (size_t k = 0; k < NM_CASE_N_OBS; k++) {
        nm_case_float_forward(act_f + k * NM_CASE_ACT_DIM, nm_case_obs[k]);
        nm_case_int8_forward(act_q + k * NM_CASE_ACT_DIM, nm_case_obs[k]);
    }
    put_actions("float", act_f, NM_CASE_N_OBS);
    put_actions("int8", act_q, NM_CASE_N_OBS);

    const float *x = nm_case_obs[0];
    nm_mark();
    ticks[0] = nm_port_ticks();
    for (volatile int i = 0; i < NM_REPEAT; i++) {
    }
    ticks[1] = nm_port_ticks();
    nm_mark();
    for (volatile int i = 0; i < NM_REPEAT; i++) {
        nm_case_float_kernel(out, x);
    }
    ticks[2] = nm_port_ticks();
    nm_mark();
    for (volatile int i = 0; i < NM_REPEAT; i++) {
        nm_case_int8_kernel(out, x);
    }
    ticks[3] = nm_port_ticks();
    nm_mark();

    put_str(", \"macs\": ");
    put_uint((uint32_t)macs);
    put_str(", \"repeat\": ");
    put_uint(NM_REPEAT);
    put_str(", \"ticks\": [");
    for (int i = 0; i < 4; i++) {
        put_str(i ? ", " : "");
        put_uint(ticks[i]);
    }
    put_str("], \"calib_insns\": ");
    put_uint(NM_CALIB_INSNS);
    put_str(", \"calib_ticks\": ");
    put_uint(calibrate());
    put_str("}\n");
    flush();
    nm_port_exit(0);
}
