/*
 * Fuzz harness for neuromotor's C kernels (nm_kernels.h, nm_train.h) under
 * AddressSanitizer and UndefinedBehaviorSanitizer.
 *
 * Every case draws random shapes from a seeded generator, gives each buffer a
 * malloc of its own, exactly as many elements as the size helpers (or the
 * kernel's documented contract) say, so one element read or written past the
 * end, or before the start, hits a redzone and ASan stops the program. Outputs
 * are compared with plain double-precision references, and the padding
 * between strided rows is checked unchanged, so an access that stays inside a
 * buffer but lands on the wrong element fails too.
 *
 *   asan_kernels <seed> <cases>     prints "ok <cases> <checks>" and exits 0,
 *                                   or prints what differed and exits 1
 *
 * Built with -DNM_ASAN_SHORT_BUFFER, one dense output buffer is a float short:
 * the test uses that build to show that ASan reports such an overrun here.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nm_kernels.h"
#include "nm_train.h"
#include "nm_sac_steps.h"

static uint64_t rng_state;
static long n_checks;
static unsigned long case_no;
static const char *case_name = "";

static uint64_t rnd(void) { // splitmix64
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static size_t pick(size_t lo, size_t hi) { // inclusive
    return lo + (size_t)(rnd() % (hi - lo + 1));
}

static float unit(void) { // [-1, 1)
    return (float)((double)(rnd() >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

/* ---- buffers: one exact-size malloc each, freed at the end of a case ---- */
#define MAX_BUFS 256
static void *bufs[MAX_BUFS];
static int n_bufs;

static void *exact(size_t bytes) {
    if (n_bufs == MAX_BUFS) {
        fprintf(stderr, "harness: too many buffers in one case\n");
        exit(2);
    }
    // malloc(0) may return NULL; a 0-element buffer must still be a distinct block
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "harness: out of memory\n");
        exit(2);
    }
    bufs[n_bufs++] = p;
    return p;
}

static float *floats(size_t n) {
    float *p = exact(n * sizeof(float));
    for (size_t i = 0; i < n; i++) {
        p[i] = unit();
    }
    return p;
}

static float *copy_of(const float *src, size_t n) {
    float *p = exact(n * sizeof(float));
    memcpy(p, src, n * sizeof(float));
    return p;
}

static void free_case(void) {
    while (n_bufs) {
        free(bufs[--n_bufs]);
    }
}

static void fail(const char *what, size_t i, double got, double want) {
    printf("MISMATCH case %lu (%s): %s[%zu] = %.9g, expected %.9g\n", case_no, case_name, what, i, got, want);
    exit(1);
}

static void close_to(const char *what, size_t i, double got, double want, double scale) {
    n_checks++;
    if (!(fabs(got - want) <= 2e-5 * (1.0 + scale + fabs(want)))) {
        fail(what, i, got, want);
    }
}

static void same(const char *what, size_t i, float got, float want) {
    n_checks++;
    if (memcmp(&got, &want, sizeof got) != 0) {
        fail(what, i, got, want);
    }
}

static void same_size(const char *what, size_t got, size_t want) {
    n_checks++;
    if (got != want) {
        fail(what, 0, (double)got, (double)want);
    }
}

static double act_ref(double v, int act) {
    if (act == NM_ACT_RELU) {
        return v > 0 ? v : 0;
    }
    if (act == NM_ACT_TANH) {
        return tanh(v);
    }
    return v;
}

/* ---- size helpers ---- */
static void case_sizes(void) {
    case_name = "size helpers";
    const size_t edges[] = {0, 1, 2, 3, 65535, 65536, (size_t)1 << 31, SIZE_MAX / 4, SIZE_MAX / 2,
                            SIZE_MAX / 2 + 1, SIZE_MAX - 1, SIZE_MAX};
    for (int t = 0; t < 16; t++) {
        size_t a = rnd() & 1 ? edges[rnd() % 12] : (size_t)rnd() >> pick(0, 63);
        size_t b = rnd() & 1 ? edges[rnd() % 12] : (size_t)rnd() >> pick(0, 63);
        size_t got = 12345, want;
        int ok = nm_mul_size(a, b, &got), over = __builtin_mul_overflow(a, b, &want);
        n_checks++;
        if (ok == over || (ok && got != want) || (!ok && got != 12345)) {
            fail("nm_mul_size", 0, (double)a, (double)b);
        }
        got = 12345;
        ok = nm_add_size(a, b, &got);
        over = __builtin_add_overflow(a, b, &want);
        n_checks++;
        if (ok == over || (ok && got != want) || (!ok && got != 12345)) {
            fail("nm_add_size", 0, (double)a, (double)b);
        }
    }
    size_t s = 7;
    n_checks++;
    if (nm_layer_size(SIZE_MAX, 1, &s) || nm_layer_size(SIZE_MAX / 4, 5, &s) || s != 7) {
        fail("nm_layer_size overflow", 0, (double)s, 7);
    }
    for (int t = 0; t < 8; t++) {
        size_t n_in = pick(0, 70000), n_out = pick(0, 70000);
        same_size("nm_layer_size ok", (size_t)nm_layer_size(n_in, n_out, &s), 1);
        same_size("nm_layer_size", s, ((n_out + 3) / 4) * 4 * (n_in + 1));
        same_size("nm_blocks", nm_blocks(n_out), (n_out + 3) / 4);
    }
}

/* ---- inference: dense, dense_batch, pack, mlp, clamp ---- */
static void case_dense(void) {
    case_name = "nm_dense/nm_dense_batch/nm_pack_layer";
    const size_t n_in = pick(1, 40), n_out = pick(1, 40), batch = pick(1, 6);
    const int act = (int)pick(0, NM_ACT_COUNT - 1);
    float *w = floats(n_out * n_in), *b = floats(n_out);
    size_t len;
    if (!nm_layer_size(n_in, n_out, &len)) {
        fail("nm_layer_size", 0, 0, 1);
    }
    float *packed = floats(len);
    nm_pack_layer(packed, w, b, n_in, n_out);
    float *x = floats(batch * n_in);
    #ifdef NM_ASAN_SHORT_BUFFER
    float *y = floats(n_out - 1);
    #else
    float *y = floats(n_out);
    #endif
    nm_dense(y, x, packed, n_in, n_out, act);
    float *yb = floats(batch * n_out);
    nm_dense_batch(yb, x, packed, batch, n_in, n_out, act);
    for (size_t s = 0; s < batch; s++) {
        for (size_t o = 0; o < n_out; o++) {
            double v = b[o], mag = fabs(b[o]);
            for (size_t j = 0; j < n_in; j++) {
                v += (double)w[o * n_in + j] * x[s * n_in + j];
                mag += fabs((double)w[o * n_in + j] * x[s * n_in + j]);
            }
            close_to("dense_batch", s * n_out + o, yb[s * n_out + o], act_ref(v, act), mag);
            if (s == 0) {
                same("dense vs dense_batch", o, y[o], yb[o]);
            }
        }
    }
}

static void case_mlp(void) {
    case_name = "nm_mlp/nm_clamp";
    const size_t L = pick(1, 4);
    uint16_t sizes[NM_MAX_LAYERS + 1], acts[NM_MAX_LAYERS];
    for (size_t i = 0; i <= L; i++) {
        sizes[i] = (uint16_t)pick(1, 24);
    }
    for (size_t i = 0; i < L; i++) {
        acts[i] = (uint16_t)pick(0, NM_ACT_COUNT - 1);
    }
    size_t n_net;
    if (!nm_net_size(sizes, acts, L, &n_net)) {
        fail("nm_net_size", 0, 0, 1);
    }
    size_t want_net = 2 * (size_t)sizes[0] + 2 * (size_t)sizes[L];
    for (size_t l = 0; l < L; l++) {
        want_net += ((sizes[l + 1] + 3) / 4) * 4 * ((size_t)sizes[l] + 1);
    }
    same_size("nm_net_size", n_net, want_net);
    float *net = floats(n_net);
    for (size_t i = 0; i < sizes[0]; i++) {
        net[sizes[0] + i] = 0.5f + 0.5f * (unit() + 1.0f); // obs_std in [0.5, 1.5)
    }
    float *x = floats(sizes[0]), *out = floats(sizes[L]);
    size_t n_scratch;
    if (!nm_mlp_scratch_size(sizes, acts, L, &n_scratch)) {
        fail("nm_mlp_scratch_size", 0, 0, 1);
    }
    float *scratch = floats(n_scratch);
    nm_mlp(out, x, net, sizes, acts, L, scratch, NULL);
    // reference: the same net, layer by layer in double
    double cur[64], nxt[64];
    for (size_t i = 0; i < sizes[0]; i++) {
        cur[i] = ((double)x[i] - net[i]) / net[sizes[0] + i];
    }
    const float *w = net + 2 * sizes[0];
    for (size_t l = 0; l < L; l++) {
        const size_t n_in = sizes[l], n_out = sizes[l + 1];
        for (size_t o = 0; o < n_out; o++) {
            const float *blk = w + (o / 4) * 4 * (n_in + 1);
            double v = blk[o % 4];
            for (size_t j = 0; j < n_in; j++) {
                v += (double)blk[4 * (j + 1) + o % 4] * cur[j];
            }
            nxt[o] = act_ref(v, acts[l]);
        }
        memcpy(cur, nxt, n_out * sizeof(double));
        w += ((n_out + 3) / 4) * 4 * (n_in + 1);
    }
    const size_t sl = sizes[L];
    for (size_t i = 0; i < sl; i++) {
        close_to("mlp", i, out[i], cur[i] * w[i] + w[sl + i], 50.0);
    }
    float *lo_hi = floats(2 * sl);
    for (size_t i = 0; i < sl; i++) {
        float a = lo_hi[i], b = lo_hi[sl + i];
        lo_hi[i] = a < b ? a : b;
        lo_hi[sl + i] = a < b ? b : a;
    }
    float *y = copy_of(out, sl);
    y[pick(0, sl - 1)] = NAN;
    nm_clamp(y, lo_hi, sl);
    for (size_t i = 0; i < sl; i++) {
        const float lo = lo_hi[i], hi = lo_hi[sl + i];
        const float want = out[i] < lo ? lo : (out[i] > hi ? hi : out[i]);
        if (y[i] != want) {
            same("clamp (NaN -> midpoint)", i, y[i], 0.5f * lo + 0.5f * hi);
        } else {
            same("clamp", i, y[i], want);
        }
    }
    n_checks++;
    if (nm_first_nonfinite(out, sl) != sl || nm_first_nonfinite(y, sl) != sl) {
        fail("nm_first_nonfinite", 0, 0, (double)sl);
    }
    const size_t n_bytes = pick(0, 40);
    uint8_t *bytes = exact(n_bytes);
    for (size_t i = 0; i < n_bytes; i++) {
        bytes[i] = (uint8_t)rnd();
    }
    // bitwise against the same CRC one byte at a time: every byte read, none past the end
    uint32_t crc = 0;
    for (size_t i = 0; i < n_bytes; i++) {
        crc = nm_crc32(crc, bytes + i, 1);
    }
    same_size("crc32", nm_crc32(0, bytes, n_bytes), crc);
}

/* ---- training: GEMM tiles at odd shapes and strides ---- */
static void check_padding(const char *what, const float *c, const float *before, size_t rows, size_t ld, size_t n) {
    for (size_t r = 0; r + 1 < rows; r++) {
        for (size_t j = n; j < ld; j++) {
            same(what, r * ld + j, c[r * ld + j], before[r * ld + j]);
        }
    }
}

static void case_gemm_tn(void) {
    case_name = "nm_gemm_tn";
    const size_t M = pick(1, 19), N = pick(1, 19), K = pick(1, 11);
    const size_t lda = M + pick(0, 3), ldb = N + pick(0, 3), ldc = N + pick(0, 3);
    const int acc = (int)pick(0, 1), relu = (int)pick(0, 1), with_bias = (int)pick(0, 1);
    float *A = floats((K - 1) * lda + M), *B = floats((K - 1) * ldb + N);
    float *C = floats((M - 1) * ldc + N), *bias = with_bias ? floats(M) : NULL;
    float *C0 = copy_of(C, (M - 1) * ldc + N);
    nm_gemm_tn(C, ldc, A, lda, B, ldb, M, N, K, acc, bias, relu);
    for (size_t m = 0; m < M; m++) {
        for (size_t n = 0; n < N; n++) {
            double v = bias ? bias[m] : (acc ? C0[m * ldc + n] : 0.0), mag = fabs(v);
            for (size_t k = 0; k < K; k++) {
                v += (double)A[k * lda + m] * B[k * ldb + n];
                mag += fabs((double)A[k * lda + m] * B[k * ldb + n]);
            }
            close_to("gemm_tn", m * ldc + n, C[m * ldc + n], relu && v < 0 ? 0.0 : v, mag);
        }
    }
    check_padding("gemm_tn padding", C, C0, M, ldc, N);
}

static void case_gemm_nt(void) {
    case_name = "nm_gemm_nt/nm_transpose";
    const size_t M = pick(1, 19), N = pick(1, 19), K = pick(1, 23);
    const size_t lda = K + pick(0, 3), ldb = K + pick(0, 3), ldc = N + pick(0, 3);
    float *A = floats((M - 1) * lda + K), *B = floats((N - 1) * ldb + K);
    float *C = floats((M - 1) * ldc + N), *C0 = copy_of(C, (M - 1) * ldc + N);
    nm_gemm_nt(C, ldc, A, lda, B, ldb, M, N, K);
    for (size_t m = 0; m < M; m++) {
        for (size_t n = 0; n < N; n++) {
            double v = 0, mag = 0;
            for (size_t k = 0; k < K; k++) {
                v += (double)A[m * lda + k] * B[n * ldb + k];
                mag += fabs((double)A[m * lda + k] * B[n * ldb + k]);
            }
            close_to("gemm_nt", m * ldc + n, C[m * ldc + n], v, mag);
        }
    }
    check_padding("gemm_nt padding", C, C0, M, ldc, N);
    float *src = floats(M * K), *dst = floats(K * M);
    nm_transpose(dst, src, M, K);
    for (size_t r = 0; r < M; r++) {
        for (size_t c = 0; c < K; c++) {
            same("transpose", c * M + r, dst[c * M + r], src[r * K + c]);
        }
    }
}

/* ---- training: a whole network, forward with its tape and backward ---- */
static void case_forward_backward(void) {
    case_name = "nm_train_forward/nm_train_backward/nm_train_pack";
    const size_t L = pick(1, 3), B = pick(1, 13);
    uint16_t sizes[NM_MAX_LAYERS + 1], acts[NM_MAX_LAYERS];
    for (size_t i = 0; i <= L; i++) {
        sizes[i] = (uint16_t)pick(1, 20);
    }
    for (size_t i = 0; i < L; i++) {
        acts[i] = (uint16_t)pick(0, NM_ACT_COUNT - 1);
    }
    size_t n_net, n_tape, n_scratch;
    if (!nm_train_net_size(sizes, L, &n_net) || !nm_train_tape_size(sizes, L, B, &n_tape)
        || !nm_train_scratch_size(sizes, L, B, &n_scratch)) {
        fail("training sizes", 0, 0, 1);
    }
    const size_t s0 = sizes[0], sl = sizes[L];
    float *net = floats(n_net), *x = floats(s0 * B), *tape = floats(n_tape);
    nm_train_forward(net, sizes, acts, L, x, tape, B);
    // reference forward in double: every layer's output after activation
    static double ref[4][20 * 13], dref[20 * 13], gref[2000], dxref[20 * 13];
    size_t off[4] = {0}, toff[4] = {0};
    for (size_t l = 0; l < L; l++) {
        const size_t n_in = sizes[l], n_out = sizes[l + 1];
        const float *w = net + off[l], *b = w + n_in * n_out;
        for (size_t o = 0; o < n_out; o++) {
            for (size_t k = 0; k < B; k++) {
                double v = b[o];
                for (size_t i = 0; i < n_in; i++) {
                    v += (double)w[i * n_out + o] * (l ? ref[l - 1][i * B + k] : x[i * B + k]);
                }
                ref[l][o * B + k] = act_ref(v, acts[l]);
                close_to("forward tape", toff[l] + o * B + k, tape[toff[l] + o * B + k], ref[l][o * B + k], 40.0);
            }
        }
        off[l + 1] = off[l] + (n_in + 1) * n_out;
        toff[l + 1] = toff[l] + n_out * B;
    }
    const int with_grad = (int)pick(0, 1), with_dx = (int)pick(0, 1);
    const size_t dx_rows = pick(0, 1) ? s0 : pick(1, s0);  // all inputs, or the leading ones alone
    float *dy = floats(sl * B), *scratch = floats(n_scratch);
    float *grad = with_grad ? floats(n_net) : NULL, *dx = with_dx ? floats(dx_rows * B) : NULL;
    for (size_t i = 0; i < sl * B; i++) {
        dref[i] = dy[i];
    }
    nm_train_backward(net, sizes, acts, L, x, tape, dy, grad, dx, dx_rows, scratch, B);
    for (size_t l = L; l-- > 0;) {
        const size_t n_in = sizes[l], n_out = sizes[l + 1];
        const float *w = net + off[l];
        const float *y = tape + toff[l];  // the kernel's own tape: masks agree exactly
        for (size_t i = 0; i < n_out * B; i++) {
            if (acts[l] == NM_ACT_RELU) {
                dref[i] = y[i] > 0.0f ? dref[i] : 0.0;
            } else if (acts[l] == NM_ACT_TANH) {
                dref[i] *= 1.0 - (double)y[i] * y[i];
            }
        }
        for (size_t i = 0; i < n_in; i++) {
            for (size_t o = 0; o < n_out; o++) {
                double g = 0;
                for (size_t k = 0; k < B; k++) {
                    g += (l ? (double)tape[toff[l - 1] + i * B + k] : x[i * B + k]) * dref[o * B + k];
                }
                gref[off[l] + i * n_out + o] = g;
            }
        }
        for (size_t o = 0; o < n_out; o++) {
            double g = 0;
            for (size_t k = 0; k < B; k++) {
                g += dref[o * B + k];
            }
            gref[off[l] + n_in * n_out + o] = g;
        }
        for (size_t i = 0; i < n_in; i++) {
            for (size_t k = 0; k < B; k++) {
                double v = 0;
                for (size_t o = 0; o < n_out; o++) {
                    v += (double)w[i * n_out + o] * dref[o * B + k];
                }
                dxref[i * B + k] = v;
            }
        }
        memcpy(dref, dxref, n_in * B * sizeof(double));
    }
    for (size_t i = 0; grad && i < n_net; i++) {
        close_to("backward grad", i, grad[i], gref[i], 60.0);
    }
    for (size_t i = 0; dx && i < dx_rows * B; i++) {
        close_to("backward dx", i, dx[i], dref[i], 60.0);
    }
    // export: the training layout packed to block-4 equals nm_pack_layer of each layer
    size_t n_packed = 0, s;
    for (size_t l = 0; l < L; l++) {
        nm_layer_size(sizes[l], sizes[l + 1], &s);
        n_packed += s;
    }
    float *packed = floats(n_packed);
    nm_train_pack(packed, net, sizes, L);
    const float *p = packed;
    for (size_t l = 0; l < L; l++) {
        const size_t n_in = sizes[l], n_out = sizes[l + 1];
        float *wt = floats(n_out * n_in);
        for (size_t i = 0; i < n_in; i++) {
            for (size_t o = 0; o < n_out; o++) {
                wt[o * n_in + i] = net[off[l] + i * n_out + o];
            }
        }
        nm_layer_size(n_in, n_out, &s);
        float *want = floats(s);
        nm_pack_layer(want, wt, net + off[l] + n_in * n_out, n_in, n_out);
        for (size_t i = 0; i < s; i++) {
            same("train_pack", i, p[i], want[i]);
        }
        p += s;
    }
}

/* ---- training: optimiser, targets, TD3 steps, replay, random streams ---- */
static void case_elementwise(void) {
    case_name = "nm_adam/nm_polyak/td3 steps/rng";
    const size_t n = pick(1, 97);
    float *p = floats(n), *g = floats(n), *m = floats(n), *v = floats(n), *st = floats(NM_ADAM_STATE);
    for (size_t i = 0; i < n; i++) {
        v[i] = v[i] * v[i];
    }
    st[0] = 1e-3f, st[1] = 0.9f, st[2] = 0.999f, st[3] = 1e-8f, st[4] = 0.9f, st[5] = 0.999f;
    float *p0 = copy_of(p, n), *m0 = copy_of(m, n), *v0 = copy_of(v, n);
    nm_adam(p, g, m, v, n, st);
    for (size_t i = 0; i < n; i++) {
        const double mi = 0.9 * m0[i] + 0.1 * g[i], vi = 0.999 * v0[i] + 0.001 * (double)g[i] * g[i];
        const double step = 1e-3 / (1 - 0.81) * mi / (sqrt(vi) / sqrt(1 - 0.999 * 0.999) + 1e-8);
        close_to("adam m", i, m[i], mi, 1.0);
        close_to("adam p", i, p[i], p0[i] - step, 1.0);
    }
    float *t = floats(n), *t0 = copy_of(t, n);
    nm_polyak(t, p, n, 0.005f);
    for (size_t i = 0; i < n; i++) {
        close_to("polyak", i, t[i], t0[i] + 0.005 * ((double)p[i] - t0[i]), 1.0);
    }
    float *a = floats(n), *noise = floats(n), *a0 = copy_of(a, n);
    nm_td3_smooth(a, noise, n, 0.2f, 0.5f);
    for (size_t i = 0; i < n; i++) {
        n_checks++;
        if (!(a[i] >= -1.0f && a[i] <= 1.0f && fabs((double)a[i] - a0[i]) <= 0.5 + 1e-6)) {
            fail("td3_smooth", i, a[i], a0[i]);
        }
    }
    float *y = floats(n), *q1 = floats(n), *q2 = floats(n), *r = floats(n), *nd = floats(n), *dq = floats(n);
    nm_td3_bellman(y, q1, q2, r, nd, n, 0.99f);
    for (size_t i = 0; i < n; i++) {
        close_to("bellman", i, y[i], r[i] + 0.99 * (double)nd[i] * (q1[i] < q2[i] ? q1[i] : q2[i]), 2.0);
    }
    double loss = 0;
    const float got = nm_td3_critic_grad(dq, q1, y, n, 2.0f / (float)n);
    for (size_t i = 0; i < n; i++) {
        const double e = (double)q1[i] - y[i];
        loss += e * e;
        close_to("critic grad", i, dq[i], e * 2.0 / (double)n, 4.0);
    }
    close_to("critic loss", 0, got, loss / (double)n, 4.0);
    uint32_t *s = exact(4 * sizeof(uint32_t));
    nm_rng_seed(s, (uint32_t)rnd());
    float *u = floats(n), *z = floats(n);
    nm_rng_uniform(s, u, n, -2.0f, 3.0f);
    nm_rng_normal(s, z, n);
    const uint32_t range = (uint32_t)pick(1, 1u << 24);
    uint32_t *ix = exact(n * sizeof(uint32_t));
    nm_rng_int(s, ix, n, range);
    for (size_t i = 0; i < n; i++) {
        n_checks++;
        if (!(u[i] >= -2.0f && u[i] < 3.0f) || !(fabsf(z[i]) < 10.0f) || ix[i] >= range) {
            fail("rng ranges", i, u[i], z[i]);
        }
    }
    float *act = copy_of(u, n);
    nm_activate(act, n, NM_ACT_TANH);
    for (size_t i = 0; i < n; i++) {
        close_to("activate tanh", i, act[i], tanh(u[i]), 1.0);
    }
}

// SAC's squashed Gaussian sample and its backward: the same bits on this path as on the
// scalar one (the AVX2 loops stop at a multiple of 8 samples and the scalar loop does the
// rest, so a sample's bits must not depend on which of them it fell to), and close to the
// double-precision formulas. Log-stds beyond both clip bounds, saturated actions.
static void case_sac_sample(void) {
    case_name = "nm_sac_sample/nm_sac_sample_backward";
    const size_t a = pick(1, 4), n = pick(1, 45);
    const float lo = -20.0f, hi = 2.0f, d_logp = unit();
    float *out = floats(2 * a * n), *eps = floats(a * n), *d_action = floats(a * n);
    for (size_t i = 0; i < a * n; i++) {
        out[i] *= (float)pick(1, 8);                   // means: saturated actions too
        out[a * n + i] = 13.0f * out[a * n + i] - 7.0f;  // log-stds in [-20, 6)
        out[a * n + i] = pick(0, 9) ? out[a * n + i] : (pick(0, 1) ? -25.0f : hi);
        eps[i] *= 3.0f;
    }
    float *action = floats(a * n), *logp = floats(n), *d_out = floats(2 * a * n);
    nm_sac_sample(out, eps, a, n, lo, hi, action, logp);
    nm_sac_sample_backward(out, eps, action, d_action, d_logp, a, n, lo, hi, d_out);
    const int isa = nm_isa();
    nm_isa_set(NM_ISA_SCALAR);
    float *action_s = floats(a * n), *logp_s = floats(n), *d_out_s = floats(2 * a * n);
    nm_sac_sample(out, eps, a, n, lo, hi, action_s, logp_s);
    nm_sac_sample_backward(out, eps, action, d_action, d_logp, a, n, lo, hi, d_out_s);
    nm_isa_set(isa);
    for (size_t k = 0; k < n; k++) {
        same("sample logp vs scalar path", k, logp[k], logp_s[k]);
        double want = 0;
        for (size_t j = 0; j < a; j++) {
            const size_t i = j * n + k;
            same("sample action vs scalar path", i, action[i], action_s[i]);
            same("backward d_mean vs scalar path", i, d_out[i], d_out_s[i]);
            same("backward d_log_std vs scalar path", i, d_out[a * n + i], d_out_s[a * n + i]);
            const double ls = out[a * n + i] < lo ? lo : (out[a * n + i] > hi ? hi : out[a * n + i]);
            const double std = exp(ls), u = out[i] + std * eps[i];
            close_to("sample action", i, action[i], tanh(u), fabs(std * eps[i]));
            // from the kernel's own action: near |a| = 1, log(1 - a^2) magnifies its last bit
            const double oma = 1.0 - (double)action[i] * action[i];
            want += -0.5 * eps[i] * eps[i] - ls - 0.918938533204672742 - log(oma + 1e-6);
            const double du = d_action[i] * oma + d_logp * 2.0 * action[i] * oma / (oma + 1e-6);
            close_to("backward d_mean", i, d_out[i], du, 1.0);
            const double in_range = out[a * n + i] > lo && out[a * n + i] < hi ? 1.0 : 0.0;
            close_to("backward d_log_std", i, d_out[a * n + i], (du * std * eps[i] - d_logp) * in_range,
                fabs(du * std * eps[i]));
        }
        close_to("sample logp", k, logp[k], want, 20.0 * (double)a);
    }
}

// Replays of floats and of halves: what push stores is what gather gives back
// (for halves: the value rounded to binary16, which nm_half.h round-trips exactly).
static void case_replay(void) {
    case_name = "nm_replay_push/nm_replay_gather";
    const int half = (int)pick(0, 1);
    const size_t cap = pick(1, 23), o = pick(1, 5), na = pick(1, 3), B = pick(1, 11);
    const size_t row = 2 * o + na + 2;
    void *replay = exact(cap * row * (half ? sizeof(uint16_t) : sizeof(float)));
    for (size_t t = 0; t < cap + 2; t++) {
        float *s = floats(o), *a = floats(na), *s2 = floats(o);
        const size_t pos = t % cap;
        const float r = unit(), nd = (float)pick(0, 1);
        nm_replay_push(replay, half, pos, s, a, r, nd, s2, o, na);
        for (size_t i = 0; i < o; i++) {
            same("push s", pos * row + i, nm_replay_get(replay, half, pos * row + i),
                half ? nm_float_of_half(nm_half_of(s[i])) : s[i]);
            same("push s2", pos * row + o + na + 2 + i, nm_replay_get(replay, half, pos * row + o + na + 2 + i),
                half ? nm_float_of_half(nm_half_of(s2[i])) : s2[i]);
        }
        same("push r", pos, nm_replay_get(replay, half, pos * row + o + na), half ? nm_float_of_half(nm_half_of(r)) : r);
    }
    uint32_t *idx = exact(B * sizeof(uint32_t));
    for (size_t k = 0; k < B; k++) {
        idx[k] = (uint32_t)pick(0, cap - 1);
    }
    float *sa = floats((o + na) * B), *r = floats(B), *nd = floats(B), *s2 = floats(o * B);
    nm_replay_gather(replay, half, idx, B, o, na, sa, r, nd, s2);
    for (size_t k = 0; k < B; k++) {
        const size_t src = (size_t)idx[k] * row;
        for (size_t i = 0; i < o + na; i++) {
            same("gather sa", i * B + k, sa[i * B + k], nm_replay_get(replay, half, src + i));
        }
        same("gather r", k, r[k], nm_replay_get(replay, half, src + o + na));
        same("gather not_done", k, nd[k], nm_replay_get(replay, half, src + o + na + 1));
        for (size_t i = 0; i < o; i++) {
            same("gather s2", i * B + k, s2[i * B + k], nm_replay_get(replay, half, src + o + na + 2 + i));
        }
    }
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s <seed> <cases>\n", argv[0]);
        return 2;
    }
    rng_state = strtoull(argv[1], NULL, 10);
    const unsigned long cases = strtoul(argv[2], NULL, 10);
    // every instruction-set path of the inference kernels this CPU has
    int isas[3], n_isa = 0;
    for (int isa = NM_ISA_SCALAR; isa <= NM_ISA_AVX2; isa++) {
        if (nm_isa_set(isa)) {
            isas[n_isa++] = isa;
        }
    }
    {
        const char *msg = "123456789";
        n_checks++;
        if (nm_crc32(0, (const uint8_t *)msg, 9) != 0xCBF43926u) {
            fail("crc32 check value", 0, nm_crc32(0, (const uint8_t *)msg, 9), 0xCBF43926u);
        }
    }
    void (*const kinds[])(void) = {case_sizes, case_dense, case_mlp, case_gemm_tn, case_gemm_nt,
                                   case_forward_backward, case_elementwise, case_replay, case_sac_sample};
    const size_t n_kinds = sizeof kinds / sizeof kinds[0];
    for (case_no = 0; case_no < cases; case_no++) {
        nm_isa_set(isas[(case_no / n_kinds) % (unsigned long)n_isa]);
        kinds[case_no % n_kinds]();
        free_case();
    }
    printf("ok %lu %ld isas", cases, n_checks);
    for (int i = 0; i < n_isa; i++) {
        printf(" %d", isas[i]);
    }
    printf("\n");
    return 0;
}
