/*
 * nm_mlp_train.h - training one MLP: sizes, forward over a batch keeping the
 * activations, backward, Adam, Polyak averaging, export to the inference layout.
 *
 * Training layout (differs from the block-4 inference layout):
 *   network parameters, per layer l (n_in -> n_out):
 *       W[n_in][n_out] row-major (y = x W + b, as the host's MLP), then b[n_out]
 *   activations are FEATURE-MAJOR: a batch of B samples of width n is n x B
 *   floats, row i holding feature i of every sample. Every matrix product of
 *   the forward and backward pass then reads both operands along contiguous
 *   rows (nm_gemm_tn for outputs and input gradients, nm_gemm_nt for weight
 *   gradients), with no transposed copies of the activations.
 *   tape: the outputs of every layer after activation, layer after layer,
 *   (s1 + ... + sL) x B floats; forward writes it, backward reads it.
 *   layout: uint16 L, s0..sL, act0..act(L-1), as nm_kernels.h.
 */
#ifndef NM_MLP_TRAIN_H
#define NM_MLP_TRAIN_H

#include "nm_act_avx2.h"
#include "nm_gemm.h"
#include "nm_math.h"

// With a compile-time batch size GCC may report impossible iterations of the
// tail loops (-Waggressive-loop-optimizations); keep that out of -Werror builds.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Waggressive-loop-optimizations"
#endif

/* ---------------------------------------------------------------------------
 * Sizes (0 on overflow, as nm_kernels.h).
 */

// Floats of one network's parameters in the training layout.
static inline int nm_train_net_size(const uint16_t *sizes, size_t n_layers, size_t *out) {
    size_t total = 0, s;
    for (size_t l = 0; l < n_layers; l++) {
        if (!nm_mul_size((size_t)sizes[l] + 1, sizes[l + 1], &s) || !nm_add_size(total, s, &total)) {
            return 0;
        }
    }
    *out = total;
    return 1;
}

// Floats of the tape for a batch: (s1 + ... + sL) x batch.
static inline int nm_train_tape_size(const uint16_t *sizes, size_t n_layers, size_t batch, size_t *out) {
    size_t widths = 0;
    for (size_t l = 1; l <= n_layers; l++) {
        widths += sizes[l]; // <= 32 * 65535: no overflow
    }
    return nm_mul_size(widths, batch, out);
}

// Scratch floats backward needs: two delta buffers (widest x B) and W^T of
// the largest layer.
static inline int nm_train_scratch_size(const uint16_t *sizes, size_t n_layers, size_t batch, size_t *out) {
    size_t widest = 0, wt = 0;
    for (size_t l = 0; l <= n_layers; l++) {
        widest = sizes[l] > widest ? sizes[l] : widest;
    }
    for (size_t l = 0; l < n_layers; l++) {
        size_t w = (size_t)sizes[l] * sizes[l + 1];
        wt = w > wt ? w : wt;
    }
    size_t d;
    if (!nm_mul_size(2 * widest, batch, &d) || !nm_add_size(d, wt, out)) {
        return 0;
    }
    return 1;
}


#if NM_AVX2
// d[i] = y[i] > 0 ? d[i] : 0 compared as integers, 8 at a time; returns how many it did.
NM_AVX2_FN size_t nm_relu_mask_avx2(float *d, const float *y, size_t n) {
    const __m256i zero = _mm256_setzero_si256();
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i m = _mm256_cmpgt_epi32(_mm256_loadu_si256((const __m256i *)(y + i)), zero);
        _mm256_storeu_ps(d + i, _mm256_and_ps(_mm256_loadu_ps(d + i), _mm256_castsi256_ps(m)));
    }
    return i;
}
#endif

// gb[o] = sum over the B samples of row o of d (n_out rows): four running sums (k mod 4),
// the tail into the first, then (s0 + s1) + (s2 + s3) (every path adds in this order).
static inline void nm_train_bias_grad(float *gb, const float *d, size_t n_out, size_t B) {
    size_t o = 0;
    #if NM_SIMD4
    // four rows at a time: four independent chains instead of one
    for (; o + 4 <= n_out; o += 4) {
        const float *r0 = d + o * B, *r1 = r0 + B, *r2 = r1 + B, *r3 = r2 + B;
        nm_v4 s0 = {0.0f, 0.0f, 0.0f, 0.0f}, s1 = s0, s2 = s0, s3 = s0;
        size_t k = 0;
        for (; k + 4 <= B; k += 4) {
            s0 += NM_LOAD4(r0 + k);
            s1 += NM_LOAD4(r1 + k);
            s2 += NM_LOAD4(r2 + k);
            s3 += NM_LOAD4(r3 + k);
        }
        const nm_v4 sums[4] = {s0, s1, s2, s3};
        const float *rows[4] = {r0, r1, r2, r3};
        for (size_t i = 0; i < 4; i++) {
            float a = sums[i][0];
            for (size_t j = k; j < B; j++) {
                a += rows[i][j];
            }
            gb[o + i] = (a + sums[i][1]) + (sums[i][2] + sums[i][3]);
        }
    }
    #endif
    for (; o < n_out; o++) {
        const float *row = d + o * B;
        float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
        size_t k = 0;
        #if NM_SIMD4
        // the four running sums in one register: the same additions in the same order
        nm_v4 s = {0.0f, 0.0f, 0.0f, 0.0f};
        for (; k + 4 <= B; k += 4) {
            s += NM_LOAD4(row + k);
        }
        s0 = s[0], s1 = s[1], s2 = s[2], s3 = s[3];
        #else
        for (; k + 4 <= B; k += 4) {
            s0 += row[k], s1 += row[k + 1], s2 += row[k + 2], s3 += row[k + 3];
        }
        #endif
        for (; k < B; k++) {
            s0 += row[k];
        }
        gb[o] = (s0 + s1) + (s2 + s3);
    }
}

/* ---------------------------------------------------------------------------
 * MLP forward over a batch, keeping the activations (tape).
 *   x: s0 x B (feature-major); tape as described at the top of this file.
 */
NM_HOT static inline void nm_train_forward(const float *net, const uint16_t *sizes, const uint16_t *acts,
    size_t n_layers, const float *x, float *tape, size_t B) {
    const float *in = x, *w = net;
    float *out = tape;
    for (size_t l = 0; l < n_layers; l++) {
        const size_t n_in = sizes[l], n_out = sizes[l + 1];
        const float *b = w + n_in * n_out;
        nm_gemm_tn(out, B, w, n_out, in, B, n_out, B, n_in, 0, b, acts[l] == NM_ACT_RELU);
        if (acts[l] == NM_ACT_TANH) {
            nm_tanh_all(out, n_out * B);
        }
        w = b + n_out;
        in = out;
        out += n_out * B;
    }
}

/* ---------------------------------------------------------------------------
 * Backward through the last forward pass (same net, x, tape):
 *   dy: dL/d(output), sL x B; overwritten.
 *   grad: dL/dparams in the net's layout (NULL: skip).
 *   dx: dL/dx of the first dx_rows inputs, dx_rows x B (NULL: skip). A caller that needs
 *       the gradient of the leading inputs only (a critic's action columns) skips the
 *       product's other rows: the most costly of a wide input layer.
 *   scratch: nm_train_scratch_size floats.
 */
NM_HOT static inline void nm_train_backward(const float *net, const uint16_t *sizes, const uint16_t *acts,
    size_t n_layers, const float *x, const float *tape, float *dy, float *grad, float *dx, size_t dx_rows,
    float *scratch, size_t B) {
    size_t widest = 0, offs[NM_MAX_LAYERS + 1], toffs[NM_MAX_LAYERS + 1];
    offs[0] = 0;
    toffs[0] = 0;
    for (size_t l = 0; l <= n_layers; l++) {
        widest = sizes[l] > widest ? sizes[l] : widest;
        if (l < n_layers) {
            offs[l + 1] = offs[l] + ((size_t)sizes[l] + 1) * sizes[l + 1];
            toffs[l + 1] = toffs[l] + (size_t)sizes[l + 1] * B;
        }
    }
    float *dbuf[2] = { scratch, scratch + widest * B };
    float *wt = scratch + 2 * widest * B;   // n_out x n_in
    float *d = dy;
    int gated = 0; // d was zeroed where this layer's ReLU is off as the product above stored it
    for (size_t l = n_layers; l-- > 0;) {
        const size_t n_in = sizes[l], n_out = sizes[l + 1], rows = l ? n_in : dx_rows;
        const float *y = tape + toffs[l];
        const float *in = l ? tape + toffs[l - 1] : x;
        const float *w = net + offs[l];
        const size_t nd = n_out * B;
        // through the activation, from its output: relu' = [y > 0], tanh' = 1 - y^2
        if (acts[l] == NM_ACT_RELU && !gated) {
            // y > 0 as integers (a positive float's bits are a positive int; -0 is not)
            const nm_i32a *yb = (const nm_i32a *)y;
            nm_i32a *db = (nm_i32a *)d;
            size_t i = 0;
            #if NM_AVX2
            if (nm_isa() == NM_ISA_AVX2) {
                i = nm_relu_mask_avx2(d, y, nd);
            }
            #endif
            for (; i + 4 <= nd; i += 4) {
                const int32_t m0 = yb[i] > 0, m1 = yb[i + 1] > 0, m2 = yb[i + 2] > 0, m3 = yb[i + 3] > 0;
                db[i] = m0 ? db[i] : 0;
                db[i + 1] = m1 ? db[i + 1] : 0;
                db[i + 2] = m2 ? db[i + 2] : 0;
                db[i + 3] = m3 ? db[i + 3] : 0;
            }
            for (; i < nd; i++) {
                db[i] = yb[i] > 0 ? db[i] : 0;
            }
        } else if (acts[l] == NM_ACT_TANH) {
            for (size_t i = 0; i < nd; i++) {
                d[i] = d[i] * (1.0f - y[i] * y[i]);
            }
        }
        if (grad) {
            float *gw = grad + offs[l], *gb = gw + n_in * n_out;
            nm_gemm_nt(gw, n_out, in, B, d, B, n_in, n_out, B);
            nm_train_bias_grad(gb, d, n_out, B);
        }
        if (l == 0 && !dx) {
            break;
        }
        float *next = l ? dbuf[(n_layers - l) & 1] : dx;
        gated = 0;
        #if NM_AVX2
        if (nm_isa() == NM_ISA_AVX2) {
            // W read as W^T in place: the values and order of the transposed copy's product;
            // the layer below's ReLU mask applied as the product stores
            const float *gate = l && acts[l - 1] == NM_ACT_RELU ? in : NULL;
            nm_gemm_tn_avx2(next, B, w, 1, n_out, d, B, rows, B, n_out, 0, NULL, 0, gate);
            gated = gate != NULL;
        } else
        #endif
        {
            nm_transpose(wt, w, n_in, n_out);
            nm_gemm_tn(next, B, wt, n_in, d, B, rows, B, n_out, 0, NULL, 0);
        }
        d = next;
    }
}

/* ---------------------------------------------------------------------------
 * Optimiser and target networks, elementwise over flat vectors.
 * Adam (PyTorch's update order, as the host's neuromotor.nn.Adam):
 *   state = [lr, beta1, beta2, eps, beta1^t, beta2^t] (t advanced here).
 */
#define NM_ADAM_STATE 6

#if NM_AVX2
// 8 entries at a time through the same operations, each rounded once as in the scalar
// loop (no fused multiply-adds; vsqrtps and vdivps round as sqrtss and divss): the
// same bits. Returns how many entries it did (a multiple of 8).
NM_AVX2_FN size_t nm_adam_avx2(float *p, const float *g, float *m, float *v, size_t n, float b1, float b2,
    float c1, float c2, float lr_t, float s2, float eps) {
    const __m256 B1 = _mm256_set1_ps(b1), B2 = _mm256_set1_ps(b2), C1 = _mm256_set1_ps(c1);
    const __m256 C2 = _mm256_set1_ps(c2), LR = _mm256_set1_ps(lr_t), S2 = _mm256_set1_ps(s2);
    const __m256 EPS = _mm256_set1_ps(eps);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 gi = _mm256_loadu_ps(g + i);
        const __m256 mi = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(m + i), B1), _mm256_mul_ps(gi, C1));
        const __m256 vi = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(v + i), B2),
            _mm256_mul_ps(_mm256_mul_ps(gi, gi), C2));
        _mm256_storeu_ps(m + i, mi);
        _mm256_storeu_ps(v + i, vi);
        const __m256 den = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(vi), S2), EPS);
        _mm256_storeu_ps(p + i, _mm256_sub_ps(_mm256_loadu_ps(p + i), _mm256_mul_ps(_mm256_div_ps(mi, den), LR)));
    }
    return i;
}

NM_AVX2_FN size_t nm_polyak_avx2(float *target, const float *online, size_t n, float tau) {
    const __m256 T = _mm256_set1_ps(tau);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 t = _mm256_loadu_ps(target + i);
        _mm256_storeu_ps(target + i, _mm256_add_ps(t, _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(online + i), t), T)));
    }
    return i;
}
#endif

static inline void nm_adam(float *p, const float *g, float *m, float *v, size_t n, float *st) {
    const float lr = st[0], b1 = st[1], b2 = st[2], eps = st[3];
    st[4] *= b1;
    st[5] *= b2;
    const float c1 = 1.0f - b1, c2 = 1.0f - b2;
    const float lr_t = nm_divf(lr, 1.0f - st[4]);
    const float s2 = nm_sqrtf(1.0f - st[5]);
    size_t i = 0;
    #if NM_AVX2 && !defined(NM_NO_FDIV)
    if (nm_isa() == NM_ISA_AVX2) {
        i = nm_adam_avx2(p, g, m, v, n, b1, b2, c1, c2, lr_t, s2, eps);
    }
    #endif
    for (; i < n; i++) {
        const float gi = g[i];
        float mi = m[i] * b1;
        mi = mi + gi * c1;
        float vi = v[i] * b2;
        vi = vi + (gi * gi) * c2;
        m[i] = mi;
        v[i] = vi;
        const float den = nm_divf(nm_sqrtf(vi), s2) + eps;
        p[i] = p[i] - nm_divf(mi, den) * lr_t;
    }
}

// target <- target + tau * (online - target)
static inline void nm_polyak(float *target, const float *online, size_t n, float tau) {
    size_t i = 0;
    #if NM_AVX2
    if (nm_isa() == NM_ISA_AVX2) {
        i = nm_polyak_avx2(target, online, n, tau);
    }
    #endif
    for (; i < n; i++) {
        target[i] = target[i] + (online[i] - target[i]) * tau;
    }
}

/* ---------------------------------------------------------------------------
 * Export: the layers of a training-layout net in nm_kernels' block-4 layout
 * (sum of nm_layer_size floats), i.e. the middle of an mlp() net vector.
 */
static inline void nm_train_pack(float *dst, const float *net, const uint16_t *sizes, size_t n_layers) {
    for (size_t l = 0; l < n_layers; l++) {
        const size_t n_in = sizes[l], n_out = sizes[l + 1];
        const float *w = net, *b = net + n_in * n_out;
        for (size_t k = 0; k < nm_blocks(n_out); k++) {
            float *blk = dst + k * NM_BLOCK * (n_in + 1);
            for (size_t r = 0; r < NM_BLOCK; r++) {
                const size_t row = k * NM_BLOCK + r;
                blk[r] = row < n_out ? b[row] : 0.0f;
                for (size_t j = 0; j < n_in; j++) {
                    blk[NM_BLOCK * (j + 1) + r] = row < n_out ? w[j * n_out + row] : 0.0f;
                }
            }
        }
        dst += nm_blocks(n_out) * NM_BLOCK * (n_in + 1);
        net = b + n_out;
    }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#endif // NM_MLP_TRAIN_H
