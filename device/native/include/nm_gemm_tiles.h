/*
 * nm_gemm_tiles.h - the register tiles of nm_gemm.h's portable kernels: 4 x 4 and
 * 4 x 6 blocks of scalar accumulators, as macros over the caller's c<row><col>.
 */
#ifndef NM_GEMM_TILES_H
#define NM_GEMM_TILES_H

#include "nm_isa.h"

/* ---------------------------------------------------------------------------
 * Matrix kernels. Both keep a tile of 4 x 4 outputs (4 x 8 with SSE) in
 * registers; a k step loads 4 values of each operand for 16 multiply-adds.
 *
 * nm_gemm_tn: C[m][n] = init(m, n) + sum_k A[k][m] * B[k][n]  (rows of A, B, C
 *   are lda, ldb, ldc floats apart); init is bias[m] (bias != NULL), else C
 *   itself (acc), else 0; ReLU applied on the way out when relu != 0.
 *   Forward (A = W, B = X) and input gradients (A = W^T, B = dY).
 * nm_gemm_nt: C[m][n] = sum_k A[m][k] * B[n][k]: dot products of rows;
 *   weight gradients (A = X, B = dY, both feature-major).
 */
#if defined(__GNUC__) && !defined(__clang__)
#define NM_HOT __attribute__((optimize("O2")))
#else
#define NM_HOT
#endif

#define NM_RELU(v) ((v) > 0.0f ? (v) : 0.0f)

// Tiles of scalar accumulators c<row><col> in the caller's scope (the kernels below).
// c<i>0..c<i>3 += x<i> * (y0..y3), row after row: a 4 x 4 tile, one k step.
#define NM_MADD_4X4(x0, x1, x2, x3, y0, y1, y2, y3) do { \
        c00 = NM_MADD(x0, y0, c00); c01 = NM_MADD(x0, y1, c01); \
        c02 = NM_MADD(x0, y2, c02); c03 = NM_MADD(x0, y3, c03); \
        c10 = NM_MADD(x1, y0, c10); c11 = NM_MADD(x1, y1, c11); \
        c12 = NM_MADD(x1, y2, c12); c13 = NM_MADD(x1, y3, c13); \
        c20 = NM_MADD(x2, y0, c20); c21 = NM_MADD(x2, y1, c21); \
        c22 = NM_MADD(x2, y2, c22); c23 = NM_MADD(x2, y3, c23); \
        c30 = NM_MADD(x3, y0, c30); c31 = NM_MADD(x3, y1, c31); \
        c32 = NM_MADD(x3, y2, c32); c33 = NM_MADD(x3, y3, c33); \
} while (0)

// Column j of a 4 x 6 tile: c0j..c3j += (x0..x3) * y.
#define NM_MADD_COL4(j, x0, x1, x2, x3, y) \
    c0##j = NM_MADD(x0, y, c0##j); c1##j = NM_MADD(x1, y, c1##j); \
    c2##j = NM_MADD(x2, y, c2##j); c3##j = NM_MADD(x3, y, c3##j)

// A 4 x 6 tile, one k step, column after column; each y is loaded just before
// its column (24 accumulators + 4 + 1 operands fit 32 FPU registers).
#define NM_MADD_4X6(x0, x1, x2, x3, y0, y1, y2, y3, y4, y5) do { \
        float nm_y = (y0); \
        NM_MADD_COL4(0, x0, x1, x2, x3, nm_y); \
        nm_y = (y1); \
        NM_MADD_COL4(1, x0, x1, x2, x3, nm_y); \
        nm_y = (y2); \
        NM_MADD_COL4(2, x0, x1, x2, x3, nm_y); \
        nm_y = (y3); \
        NM_MADD_COL4(3, x0, x1, x2, x3, nm_y); \
        nm_y = (y4); \
        NM_MADD_COL4(4, x0, x1, x2, x3, nm_y); \
        nm_y = (y5); \
        NM_MADD_COL4(5, x0, x1, x2, x3, nm_y); \
} while (0)

// Store a 4 x 4 tile at c (rows ldc apart).
#define NM_STORE_4X4(c) do { \
        (c)[0] = c00, (c)[1] = c01, (c)[2] = c02, (c)[3] = c03; \
        (c)[ldc] = c10, (c)[ldc + 1] = c11, (c)[ldc + 2] = c12, (c)[ldc + 3] = c13; \
        (c)[2 * ldc] = c20, (c)[2 * ldc + 1] = c21, (c)[2 * ldc + 2] = c22, (c)[2 * ldc + 3] = c23; \
        (c)[3 * ldc] = c30, (c)[3 * ldc + 1] = c31, (c)[3 * ldc + 2] = c32, (c)[3 * ldc + 3] = c33; \
} while (0)

// Store a 4 x 6 tile at c (rows ldc apart); advances the pointer c.
#define NM_STORE_4X6(c) do { \
        c[0] = c00, c[1] = c01, c[2] = c02, c[3] = c03, c[4] = c04, c[5] = c05; \
        c += ldc; \
        c[0] = c10, c[1] = c11, c[2] = c12, c[3] = c13, c[4] = c14, c[5] = c15; \
        c += ldc; \
        c[0] = c20, c[1] = c21, c[2] = c22, c[3] = c23, c[4] = c24, c[5] = c25; \
        c += ldc; \
        c[0] = c30, c[1] = c31, c[2] = c32, c[3] = c33, c[4] = c34, c[5] = c35; \
} while (0)

#endif // NM_GEMM_TILES_H
