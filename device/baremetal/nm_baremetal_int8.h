/*
 * The int8 run of the bare-metal timing program (make NM_INT8=1): an int8 policy of the
 * program's shape (nm_int8.h's qnet) with deterministic weights, and a naive integer
 * reference of the same arithmetic (row by row, 64-bit requantisation) that nm_q8_mlp
 * must match exactly. Included by nm_baremetal.c after nm_kernels.h.
 */
#ifndef NM_BAREMETAL_INT8_H
#define NM_BAREMETAL_INT8_H

#include "nm_int8.h"

#ifndef NM_Q8_SHIFT
#define NM_Q8_SHIFT 8 // the hidden layers' right shift: -DNM_Q8_SHIFT=r in OPT
#endif
#ifndef NM_Q8_GAIN
#define NM_Q8_GAIN 0  // multipliers up to 2^g times larger (rows that saturate): -DNM_Q8_GAIN=g
#endif
_Static_assert(NM_Q8_SHIFT >= 0 && NM_Q8_GAIN >= 0 && NM_Q8_SHIFT + NM_Q8_GAIN <= 8,
               "multipliers below 2^(23 + NM_Q8_SHIFT + NM_Q8_GAIN) <= 2^31");
#define NM_Q8_MULT_LO ((int32_t)1 << (22 + NM_Q8_SHIFT))
#define NM_Q8_MULT_HI (NM_Q8_SHIFT + NM_Q8_GAIN < 8 ? (int32_t)1 << (23 + NM_Q8_SHIFT + NM_Q8_GAIN) : INT32_MAX)

#define NM_BM_Q8_WORDS 16384
static uint32_t q8_net[NM_BM_Q8_WORDS];
static uint32_t q8_scratch[3 * MAX_WIDTH];

static uint32_t q8_lcg_state = 777u;
static int32_t q8_rand(int32_t lo, int32_t hi) {
    q8_lcg_state = q8_lcg_state * 1664525u + 1013904223u;
    return (int32_t)((uint32_t)lo + (q8_lcg_state >> 8) % ((uint32_t)hi - (uint32_t)lo + 1u));
}

static float *q8_f(size_t byte) {
    return (float *)((uint8_t *)q8_net + byte);
}

static int32_t *q8_i(size_t byte) {
    return (int32_t *)((uint8_t *)q8_net + byte);
}

// Fills q8_net (obs_mean 0, in_mul 4096, random int8 weights, small biases,
// multipliers in 2^(22 + r)..2^(23 + r) with shift r = NM_Q8_SHIFT, those of 2^27 or
// more multiples of 2^16; r = 8, multipliers in 2^30..2^31, is what the exporter
// picks for such layers: activations stay inside int16 without saturating
// everywhere, whatever r; NM_Q8_GAIN = g spreads the multipliers up to 2^g times
// larger, so some rows saturate). Returns 0 when the network does not fit.
static int q8_setup(void) {
    size_t bytes;
    if (!nm_q8_net_bytes(sizes, acts, N_LAYERS, &bytes) || bytes > sizeof(q8_net)
        || nm_q8_scratch_bytes(sizes, acts, N_LAYERS) > sizeof(q8_scratch)) {
        return 0;
    }
    size_t off = 0;
    for (size_t i = 0; i < sizes[0]; i++) {
        *q8_f(4 * i) = 0.0f;
        *q8_f(4 * (sizes[0] + i)) = 4096.0f;
    }
    off = 8 * (size_t)sizes[0];
    for (size_t l = 0; l < N_LAYERS; l++) {
        size_t rows = nm_q8_pad(sizes[l + 1]), cols = nm_q8_pad(sizes[l]);
        int8_t *w = (int8_t *)q8_net + off;
        for (size_t k = 0; k < rows * cols; k++) {
            // block k / (4 cols), group, row within the block, input within the group
            size_t in_blk = k % (4 * cols), g = in_blk / 16, r = in_blk % 16 / 4, j = 4 * g + in_blk % 4;
            size_t row = k / (4 * cols) * 4 + r;
            w[k] = row < sizes[l + 1] && j < sizes[l] ? (int8_t)q8_rand(-127, 127) : 0;
        }
        off += rows * cols;
        for (size_t c = 0; c < rows; c++) {
            *q8_i(off + 4 * c) = c < sizes[l + 1] ? q8_rand(-2000, 2000) : 0;
        }
        off += 4 * rows;
        if (l + 1 < N_LAYERS) {
            for (size_t c = 0; c < rows; c++) {
                int32_t m = c < sizes[l + 1] ? q8_rand(NM_Q8_MULT_LO, NM_Q8_MULT_HI) : 0;
                *q8_i(off + 4 * c) = m >= (1 << 27) ? m & ~0xffff : m;
            }
            off += 4 * rows;
            *q8_i(off) = NM_Q8_SHIFT;
            off += 4;
        } else {
            for (size_t c = 0; c < rows; c++) {
                *q8_f(off + 4 * c) = 1.0f / 65536.0f;
            }
            off += 4 * rows;
        }
    }
    for (size_t i = 0; i < sizes[N_LAYERS]; i++) {
        *q8_f(off + 4 * i) = 1.0f;
        *q8_f(off + 4 * (sizes[N_LAYERS] + i)) = 0.0f;
    }
    nm_q8_fault_t fault;
    return nm_q8_check(q8_net, sizes, acts, N_LAYERS, &fault) == NM_Q8_OK;
}

// The same forward, one row at a time from the packed layout, requantised in 64 bits.
static void q8_reference(float *out, const float *x) {
    static int32_t a[MAX_WIDTH], b[MAX_WIDTH];
    static int16_t q[4 * MAX_WIDTH];
    nm_q8_quantize_input(q, x, q8_f(0), q8_f(4 * sizes[0]), sizes[0]);
    for (size_t i = 0; i < sizes[0]; i++) {
        a[i] = q[nm_q8_slot(i)];
    }
    size_t off = 8 * (size_t)sizes[0];
    for (size_t l = 0; l < N_LAYERS; l++) {
        size_t n_in = sizes[l], n_out = sizes[l + 1], rows = nm_q8_pad(n_out), cols = nm_q8_pad(n_in);
        const int8_t *w = (const int8_t *)q8_net + off;
        const int32_t *bias = q8_i(off + rows * cols), *mult = bias + rows;
        int32_t r = mult[rows];
        for (size_t c = 0; c < n_out; c++) {
            int64_t acc = bias[c];
            for (size_t j = 0; j < n_in; j++) {
                acc += (int64_t)w[(c / 4) * 4 * cols + (j / 4) * 16 + (c % 4) * 4 + j % 4] * a[j];
            }
            if (l + 1 < N_LAYERS) {
                int64_t t = (acc * mult[c] + ((int64_t)1 << 31)) >> 32;
                int64_t v = (t + (((int64_t)1 << r) >> 1)) >> r;
                int64_t lo = acts[l] == NM_ACT_RELU ? 0 : -NM_Q8_AMAX - 1;
                b[c] = (int32_t)(v < lo ? lo : v > NM_Q8_AMAX ? NM_Q8_AMAX : v);
            } else {
                float y = (float)acc * *q8_f(off + rows * cols + 4 * rows + 4 * c);
                if (acts[l] == NM_ACT_RELU) {
                    y = y > 0.0f ? y : 0.0f;
                } else if (acts[l] == NM_ACT_TANH) {
                    y = nm_tanhf(y);
                }
                out[c] = y;
            }
        }
        for (size_t c = 0; c < n_out; c++) {
            a[c] = b[c];
        }
        off += rows * cols + 8 * rows + (l + 1 < N_LAYERS ? 4 : 0);
    }
}

#endif // NM_BAREMETAL_INT8_H
