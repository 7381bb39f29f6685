/*
 * neuromotor bare-metal timing program: the same kernel header the MicroPython
 * user C module and the natmods compile (device/native/include/nm_kernels.h), without
 * MicroPython, on the emulated MPS2 boards (Cortex-M7 AN500, Cortex-M4F AN386).
 *
 * It builds an MLP (NM_SIZES, default 13->64->64->4, ReLU hidden layers) with
 * deterministic weights, checks nm_mlp against a naive reference, then times
 * NM_REPEAT calls of nm_mlp with the CMSDK APB timer0 (25 MHz) - the clock behind
 * time.ticks_cpu() on our emulated firmware. Under QEMU -icount shift=0 one
 * instruction is 1 ns, so a timer tick is 40 instructions.
 *
 * The same network also runs through nm_generic.c (the way RLtools' generic
 * implementation computes it: compile-time sizes, each sum accumulated in the output
 * buffer, the activation applied per element) and is timed the same way.
 *
 * nm_mark() is called at the edges of each timed region: under the cycle-model plugin
 * (device/timing) with mark=<address of nm_mark>, each call records the counters, so the
 * host gets exact instruction and modelled cycle counts per region:
 *   mark 0 | empty loop | mark 1 | nm_mlp loop | mark 2 | generic loop | mark 3
 *
 * Output: a JSON object with integer fields, then the same result as an NMB/1 bench
 * line (docs/serial-protocol.md) that `neuromotor bench --port P` reads:
 *   @nm - bench {"board", "impl": "baremetal", "n", "clock_hz", "macs", "cycles": {...},
 *                "backends": {"native": per-call, "generic": per-call}} ~cksum
 * On the emulated MPS2 boards (semihosting, then exit) the unit is instructions and
 * clock_hz 1e9 (QEMU -icount shift=0). Built with -DNM_ARDUINO (the real-board
 * environments of platformio.ini), arduino_main.cpp supplies the cycle counter, the
 * clock and the serial line, and nm_baremetal_main() runs once per call.
 */
#include <stddef.h>
#include <stdint.h>

#include "nm_kernels.h"
#include "nm_generic.h"

#ifndef NM_SIZES
#define NM_SIZES 13, 64, 64, 4
#endif
#ifndef NM_ACTS
#define NM_ACTS NM_ACT_RELU, NM_ACT_RELU, NM_ACT_IDENTITY
#endif
#ifndef NM_REPEAT
#define NM_REPEAT 200
#endif
#ifndef NM_BOARD
#define NM_BOARD "qemu-m7"
#endif
#ifndef NM_INT8
#define NM_INT8 0
#endif

static const uint16_t sizes[] = { NM_SIZES };
static const uint16_t acts[] = { NM_ACTS };
#define N_LAYERS (sizeof(sizes) / sizeof(sizes[0]) - 1)
_Static_assert(sizeof(acts) / sizeof(acts[0]) == N_LAYERS, "one activation per layer");

#ifdef NM_ARDUINO
#define MAX_NET 8192        // fits the smallest board (STM32F405: 192 KB RAM)
#define MAX_WIDTH 128
uint32_t nm_port_cycles(void);
uint32_t nm_port_clock_hz(void);
void nm_port_write(const char *line);
#define main nm_baremetal_main
#else
#define MAX_NET 40000
#define MAX_WIDTH 512
#endif
static float net[MAX_NET];
static float scratch[2 * MAX_WIDTH];
static float rowmajor_w[MAX_WIDTH * MAX_WIDTH / 4];
static float bias[MAX_WIDTH];
static float gen_params[MAX_NET];   // the generic pass's row-major weights and biases
static float gen_buf[2 * MAX_WIDTH];

#if NM_INT8 // make NM_INT8=1: the timed kernel region runs the int8 forward (nm_int8.h)
#include "nm_baremetal_int8.h"
#endif

// The cycle model's marker: its first instruction starts a translated block, so it must
// stay a real call.
__attribute__((noinline, noipa, used)) void nm_mark(void) {
    __asm volatile ("" ::: "memory");
}

// ---- minimal runtime: what GCC may call, semihosting, the timer ----------------------

#ifndef NM_ARDUINO
#include "nm_libc.c" // one translation unit: the PlatformIO build compiles this file alone

static int semihost(int op, const void *arg) {
    register int r0 __asm__ ("r0") = op;
    register const void *r1 __asm__ ("r1") = arg;
    __asm__ volatile ("bkpt 0xab" : "+r" (r0) : "r" (r1) : "memory");
    return r0;
}
#endif

static char line[640];
static size_t line_len;

static void put_str(const char *s) {
    while (*s && line_len < sizeof(line) - 2) {
        line[line_len++] = *s++;
    }
}

static void put_int(int64_t v) {
    char buf[24];
    int i = 0;
    uint64_t u = v < 0 ? (uint64_t)(-v) : (uint64_t)v;
    do {
        buf[i++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0) {
        buf[i++] = '-';
    }
    while (i) {
        char c[2] = { buf[--i], 0 };
        put_str(c);
    }
}

static void put_field(const char *key, int64_t v) {
    put_str(", \"");
    put_str(key);
    put_str("\": ");
    put_int(v);
}

static void emit_line(void) {
#ifdef NM_ARDUINO
    line[line_len] = 0;
    nm_port_write(line);
#else
    line[line_len++] = '\n';
    line[line_len] = 0;
    semihost(0x04, line); // SYS_WRITE0
#endif
    line_len = 0;
}

// NMB/1: the line ends in " ~" and the 16-bit sum of the bytes before it, in hex.
static void emit_nmb(void) {
    uint32_t sum = 0;
    for (size_t i = 0; i < line_len; i++) {
        sum += (uint8_t)line[i];
    }
    static const char hex[] = "0123456789abcdef";
    char ck[8] = { ' ', '~', hex[(sum >> 12) & 15], hex[(sum >> 8) & 15], hex[(sum >> 4) & 15], hex[sum & 15], 0 };
    put_str(ck);
    emit_line();
}

#ifdef NM_ARDUINO
#define FINISH(code) do { emit_line(); return (code); } while (0)
#define TICKS_HZ nm_port_clock_hz()
#define UNITS_PER_TICK 1u
#define CLOCK_HZ nm_port_clock_hz()
static inline uint32_t ticks(void) {
    return nm_port_cycles();
}
#define ELAPSED(a, b) ((uint32_t)((b) - (a))) // up-counter
#else
// SYS_EXIT; on AArch32 r1 is the reason itself: ApplicationExit (status 0) or
// RunTimeErrorUnknown (QEMU exits with status 1).
__attribute__((noreturn)) static void finish(int code) {
    if (line_len) {
        emit_line();
    }
    semihost(0x18, (void *)(code == 0 ? 0x20026 : 0x20023));
    for (;;) {
    }
}
#define FINISH(code) finish(code)
#define TICKS_HZ 25000000u
#define UNITS_PER_TICK 40u       // -icount shift=0: 40 instructions per 25 MHz tick
#define CLOCK_HZ 1000000000u     // one instruction per guest nanosecond

typedef struct {
    volatile uint32_t CTRL, VALUE, RELOAD, INTSTATUS;
} cmsdk_timer_t;
#define TIMER0 ((cmsdk_timer_t *)0x40000000)

static inline uint32_t ticks(void) {
    return TIMER0->VALUE;
}
#define ELAPSED(a, b) ((uint32_t)((a) - (b))) // down-counter
#endif

// ---- the measurement ----------------------------------------------------------------------

static uint32_t lcg_state = 12345u;
static float lcg(void) { // uniform in [-0.5, 0.5)
    lcg_state = lcg_state * 1664525u + 1013904223u;
    return (float)(lcg_state >> 8) * (1.0f / 16777216.0f) - 0.5f;
}

static void reference(float *out, const float *x) {
    // Naive forward from the row-major weights regenerated with the same LCG.
    static float a[MAX_WIDTH], b[MAX_WIDTH];
    lcg_state = 12345u;
    for (size_t i = 0; i < sizes[0]; i++) {
        a[i] = x[i];
    }
    for (size_t l = 0; l < N_LAYERS; l++) {
        size_t n_in = sizes[l], n_out = sizes[l + 1];
        for (size_t k = 0; k < n_in * n_out; k++) {
            rowmajor_w[k] = lcg() * 0.5f;
        }
        for (size_t k = 0; k < n_out; k++) {
            bias[k] = lcg() * 0.1f;
        }
        for (size_t r = 0; r < n_out; r++) {
            float s = bias[r];
            for (size_t j = 0; j < n_in; j++) {
                s += rowmajor_w[r * n_in + j] * a[j];
            }
            if (acts[l] == NM_ACT_RELU && s < 0.0f) {
                s = 0.0f;
            } else if (acts[l] == NM_ACT_TANH) {
                s = nm_tanhf(s);
            }
            b[r] = s;
        }
        for (size_t r = 0; r < n_out; r++) {
            a[r] = b[r];
        }
    }
    for (size_t r = 0; r < sizes[N_LAYERS]; r++) {
        out[r] = a[r];
    }
}

int main(void) {
    size_t total, macs = 0, gen_total = 0;
    line_len = 0;
    int fits = nm_net_size(sizes, acts, N_LAYERS, &total) && total <= MAX_NET;
    for (size_t l = 0; fits && l < N_LAYERS; l++) {
        size_t w = (size_t)sizes[l] * sizes[l + 1];
        gen_total += w + sizes[l + 1];
        fits = sizes[l] <= MAX_WIDTH && sizes[l + 1] <= MAX_WIDTH &&
               w <= sizeof(rowmajor_w) / sizeof(rowmajor_w[0]);
    }
    if (!fits) {
        put_str("{\"error\": \"network too large\"");
        put_str("}");
        FINISH(1);
    }
    (void)gen_total;
    // obs normalisation (mean 0, std 1), packed layers, action scale 1 / offset 0
    const float *gen_w[N_LAYERS], *gen_b[N_LAYERS];
    int generic_ok = nm_generic_supported();
    float *g = gen_params;
    float *p = net;
    for (size_t i = 0; i < sizes[0]; i++) {
        p[i] = 0.0f;
        p[sizes[0] + i] = 1.0f;
    }
    p += 2 * sizes[0];
    lcg_state = 12345u;
    for (size_t l = 0; l < N_LAYERS; l++) {
        size_t n_in = sizes[l], n_out = sizes[l + 1], len;
        for (size_t k = 0; k < n_in * n_out; k++) {
            rowmajor_w[k] = lcg() * 0.5f;
        }
        for (size_t k = 0; k < n_out; k++) {
            bias[k] = lcg() * 0.1f;
        }
        nm_pack_layer(p, rowmajor_w, bias, n_in, n_out);
        if ((size_t)(g - gen_params) + n_in * n_out + n_out <= MAX_NET) {
            for (size_t k = 0; k < n_in * n_out; k++) {
                g[k] = rowmajor_w[k];
            }
            gen_w[l] = g;
            g += n_in * n_out;
            for (size_t k = 0; k < n_out; k++) {
                g[k] = bias[k];
            }
            gen_b[l] = g;
            g += n_out;
        } else {
            generic_ok = 0;
        }
        nm_layer_size(n_in, n_out, &len);
        p += len;
        macs += n_in * n_out;
    }
    for (size_t i = 0; i < sizes[N_LAYERS]; i++) {
        p[i] = 1.0f;
        p[sizes[N_LAYERS] + i] = 0.0f;
    }

    float x[MAX_WIDTH], out[MAX_WIDTH], ref[MAX_WIDTH];
    for (size_t i = 0; i < sizes[0]; i++) {
        x[i] = (float)i * 0.25f - 1.5f;
    }
    nm_mlp(out, x, net, sizes, acts, N_LAYERS, scratch, NULL); // warm-up (and ISA choice)
    reference(ref, x);
#if NM_INT8
    if (!q8_setup()) {
        put_str("{\"error\": \"int8 network does not fit\"}");
        FINISH(1);
    }
    nm_q8_mlp(out, x, q8_net, sizes, acts, N_LAYERS, q8_scratch, NULL);
    q8_reference(ref, x);
    generic_ok = 0; // the generic figure is the float run's
#endif
    float err = 0.0f, mag = 0.0f;
    for (size_t i = 0; i < sizes[N_LAYERS]; i++) {
        float d = out[i] - ref[i];
        err = d < 0 ? (-d > err ? -d : err) : (d > err ? d : err);
        mag = ref[i] < 0 ? (-ref[i] > mag ? -ref[i] : mag) : (ref[i] > mag ? ref[i] : mag);
    }

    float gen_out[MAX_WIDTH], gen_err = 0.0f;
    if (generic_ok) {
        nm_generic_forward(gen_out, x, gen_w, gen_b, gen_buf, gen_buf + MAX_WIDTH);
        for (size_t i = 0; i < sizes[N_LAYERS]; i++) {
            float d = gen_out[i] - ref[i];
            d = d < 0 ? -d : d;
            gen_err = d > gen_err ? d : gen_err;
        }
    }

    // Empty loop first: the cost of the timing loop itself.
    nm_mark();
    uint32_t t0 = ticks();
    for (volatile int i = 0; i < NM_REPEAT; i++) {
    }
    uint32_t t1 = ticks();
    nm_mark();
    for (volatile int i = 0; i < NM_REPEAT; i++) {
#if NM_INT8
        nm_q8_mlp(out, x, q8_net, sizes, acts, N_LAYERS, q8_scratch, NULL);
#else
        nm_mlp(out, x, net, sizes, acts, N_LAYERS, scratch, NULL);
#endif
    }
    uint32_t t2 = ticks();
    nm_mark();
    for (volatile int i = 0; generic_ok && i < NM_REPEAT; i++) {
        nm_generic_forward(gen_out, x, gen_w, gen_b, gen_buf, gen_buf + MAX_WIDTH);
    }
    uint32_t t3 = ticks();
    nm_mark();

    put_str("{\"board\": \"" NM_BOARD "\"");
    put_field("int8", NM_INT8);
    put_str(", \"sizes\": [");
    for (size_t i = 0; i <= N_LAYERS; i++) {
        if (i) {
            put_str(", ");
        }
        put_int(sizes[i]);
    }
    put_str("]");
    put_field("repeat", NM_REPEAT);
    put_field("macs", (int64_t)macs);
    uint32_t loop_ticks = ELAPSED(t0, t1), fused_ticks = ELAPSED(t1, t2), generic_ticks = ELAPSED(t2, t3);
    put_field("ticks", (int64_t)fused_ticks);
    put_field("loop_ticks", (int64_t)loop_ticks);
    put_field("generic", generic_ok);
    put_field("generic_ticks", (int64_t)generic_ticks);
    put_field("generic_max_abs_err_e9", (int64_t)(gen_err * 1e9f));
    put_field("ticks_hz", (int64_t)TICKS_HZ);
    put_field("instructions_per_tick", (int64_t)UNITS_PER_TICK);
    put_field("max_abs_err_e9", (int64_t)(err * 1e9f));
    put_field("max_abs_ref_e6", (int64_t)(mag * 1e6f));
    put_field("out0_e6", (int64_t)(out[0] * 1e6f));
    put_str("}");
    emit_line();

    // Per call, the timing loop's own cost taken out; the loop gives the mean only.
    int64_t fused = ((int64_t)fused_ticks - loop_ticks) * UNITS_PER_TICK / NM_REPEAT;
    int64_t generic = ((int64_t)generic_ticks - loop_ticks) * UNITS_PER_TICK / NM_REPEAT;
    put_str("@nm - bench {\"board\": \"" NM_BOARD "\", \"impl\": \"baremetal\"");
    put_field("n", NM_REPEAT);
    put_field("clock_hz", (int64_t)CLOCK_HZ);
    put_field("macs", (int64_t)macs);
    put_str(", \"cycles\": {\"min\": ");
    put_int(fused);
    put_field("median", fused);
    put_field("p99", fused);
    put_field("max", fused);
    put_field("mean", fused);
    put_str("}, \"backends\": {\"native\": ");
    put_int(fused);
    if (generic_ok) {
        put_field("generic", generic);
    }
    put_str("}");
    put_field("max_abs_err_e9", (int64_t)(err * 1e9f));
    put_str("}");
    emit_nmb();
    FINISH(0);
}

// ---- startup ----------------------------------------------------------------------------

#ifndef NM_ARDUINO
extern uint32_t _estack, _sidata, _sdata, _edata, _sbss, _ebss;

__attribute__((naked, noreturn)) void Reset_Handler(void) {
    __asm volatile ("ldr r0, =_estack\n mov sp, r0");
    for (uint32_t *s = &_sidata, *d = &_sdata; d < &_edata;) {
        *d++ = *s++;
    }
    for (uint32_t *d = &_sbss; d < &_ebss;) {
        *d++ = 0;
    }
    #if defined(__ARM_FP)
    *(volatile uint32_t *)0xE000ED88 |= 0xfu << 20; // CPACR: enable the FPU
    __asm volatile ("dsb\n isb" ::: "memory");
    #endif
    TIMER0->CTRL = 0;
    TIMER0->RELOAD = 0xffffffffu;
    TIMER0->VALUE = 0xffffffffu;
    TIMER0->CTRL = 1;
    main();
    finish(2);
}

static void Default_Handler(void) {
    put_str("{\"error\": \"fault\"}");
    finish(3);
}

const uint32_t isr_vector[16] __attribute__((section(".isr_vector"), used)) = {
    (uint32_t)&_estack, (uint32_t)&Reset_Handler,
    (uint32_t)&Default_Handler, (uint32_t)&Default_Handler, (uint32_t)&Default_Handler,
    (uint32_t)&Default_Handler, (uint32_t)&Default_Handler, 0, 0, 0, 0,
    (uint32_t)&Default_Handler, (uint32_t)&Default_Handler, 0,
    (uint32_t)&Default_Handler, (uint32_t)&Default_Handler,
};
#endif
