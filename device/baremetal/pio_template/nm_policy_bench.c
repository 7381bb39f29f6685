/* See nm_policy_bench.h. No printf: integer formatting only (newlib-nano and the
 * vendor C libraries differ in their float support). */
#include <stddef.h>
#include <stdint.h>

#include "nm_kernels.h"
#include "nm_policy.h"
#include "nm_policy_bench.h"

static uint32_t samples[NM_BENCH_MAX_N];
static char line[768];
static size_t len;

static void put(const char *s) {
    while (*s && len < sizeof(line) - 8) {
        line[len++] = *s++;
    }
}

static void put_u(uint64_t v) {
    char buf[24];
    int i = 0;
    do {
        buf[i++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (i) {
        char c[2] = { buf[--i], 0 };
        put(c);
    }
}

static void put_field(const char *key, uint64_t v) {
    put(", \"");
    put(key);
    put("\": ");
    put_u(v);
}

static void finish(nm_emit_fn emit) {
    // NMB/1 checksum: 16-bit sum of the bytes before " ~", four lower-case hex digits
    uint32_t sum = 0;
    for (size_t i = 0; i < len; i++) {
        sum += (uint8_t)line[i];
    }
    sum &= 0xffffu;
    static const char hex[] = "0123456789abcdef";
    line[len++] = ' ';
    line[len++] = '~';
    for (int s = 12; s >= 0; s -= 4) {
        line[len++] = hex[(sum >> s) & 15];
    }
    line[len] = 0;
    emit(line);
}

static void sort(uint32_t *v, int n) { // shell sort: no recursion, no library
    for (int gap = n / 2; gap > 0; gap /= 2) {
        for (int i = gap; i < n; i++) {
            uint32_t x = v[i];
            int j = i;
            for (; j >= gap && v[j - gap] > x; j -= gap) {
                v[j] = v[j - gap];
            }
            v[j] = x;
        }
    }
}

int nm_bench_report(nm_cycles_fn cycles, nm_emit_fn emit, uint32_t clock_hz, const char *board, int n) {
    float action[NM_POLICY_ACT_DIM];
    float obs[NM_POLICY_OBS_DIM];
    len = 0;
    put("@nm - bench {\"board\": \"");
    put(board);
    put("\"");
    if (n < 1 || n > NM_BENCH_MAX_N) {
        put(", \"error\": \"n out of range\"}");
        finish(emit);
        return -1;
    }
#ifdef NM_POLICY_EXAMPLE_STEPS
    // a recurrent policy's example is the action of a later step from its initial state
    nm_policy_reset();
    for (int s = 1; s < NM_POLICY_EXAMPLE_STEPS; s++) {
        nm_policy_forward(action, nm_policy_example_obs);
    }
#endif
    nm_policy_forward(action, nm_policy_example_obs);
    float err = 0.0f, mag = 1.0f;
    for (int i = 0; i < NM_POLICY_ACT_DIM; i++) {
        float d = action[i] - nm_policy_example_action[i];
        float a = nm_policy_example_action[i];
        d = d < 0 ? -d : d;
        a = a < 0 ? -a : a;
        err = d > err ? d : err;
        mag = a > mag ? a : mag;
    }
    int ok = err <= 1e-4f * mag;
    for (int i = 0; i < NM_POLICY_OBS_DIM; i++) {
        obs[i] = nm_policy_example_obs[i];
    }
    uint64_t total = 0;
    for (int k = 0; k < n; k++) {
        obs[k % NM_POLICY_OBS_DIM] += 1e-3f; // a different observation every call
        uint32_t t0 = cycles();
        nm_policy_forward(action, obs);
        uint32_t dt = cycles() - t0;
        samples[k] = dt;
        total += dt;
    }
    uint32_t t0 = cycles(); // the cost of reading the counter twice
    uint32_t overhead = cycles() - t0;
    sort(samples, n);
    uint64_t macs = 0;
    for (int l = 0; l < NM_POLICY_N_LAYERS; l++) {
        const uint64_t n_in = nm_policy_layout[1 + l], n_out = nm_policy_layout[2 + l];
        // a GRU (kind 1, the code's high nibble) has three gates, each reading its input and its state
        macs += (nm_policy_layout[2 + NM_POLICY_N_LAYERS + l] >> 4) == 1 ? 3 * n_out * (n_in + n_out) : n_in * n_out;
    }
    put(", \"impl\": \"c-header\"");
    put_field("n", (uint64_t)n);
    put_field("clock_hz", clock_hz);
    put_field("macs", macs);
    put(", \"cycles\": {\"min\": ");
    put_u(samples[0]);
    put_field("median", samples[(n - 1) / 2]);
    put_field("p99", samples[(99 * n + 99) / 100 - 1]);
    put_field("max", samples[n - 1]);
    put_field("mean", total / (uint64_t)n);
    put("}");
    put_field("counter_overhead", overhead);
    put_field("example_max_abs_err_e9", (uint64_t)(err * 1e9f));
    put(", \"example_ok\": ");
    put(ok ? "true" : "false");
    put("}");
    finish(emit);
    return ok ? 0 : -1;
}
