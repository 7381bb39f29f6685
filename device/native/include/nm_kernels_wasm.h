/*
 * nm_kernels_wasm.h - WebAssembly SIMD (emscripten with -msimd128): the 4-lane paths of
 * nm_kernels.h and nm_gemm.h (NM_SIMD4) on wasm's v128. Per lane they do the arithmetic of
 * the scalar path in its order (one multiply, then one add: wasm has no fused
 * multiply-add), so a 4-lane inference equals the scalar one bit for bit; the training
 * tiles that reduce along k (nm_gemm_nt) sum in four lanes, as on x86's SSE2 path.
 * nm_kernels.isa() calls this path "simd128". Empty unless the target has wasm SIMD;
 * nm_isa.h includes it.
 */
#ifndef NM_KERNELS_WASM_H
#define NM_KERNELS_WASM_H

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>

#define NM_SIMD4 1
#define NM_SIMD4_NAME "simd128"
typedef float nm_v4 __attribute__((vector_size(16)));
typedef float nm_v4u __attribute__((vector_size(16), aligned(4), may_alias));
#define NM_LOAD4(p) (*(const nm_v4u *)(p))
#define NM_STORE4(p, v) (*(nm_v4u *)(p) = (v))

// max(v, 0) where NaN and -0 give +0, as SSE's maxps(v, 0) and NM_RELU: f32x4.pmax(0, v)
// is (0 < v) ? v : 0 in each lane.
#define NM_SIMD4_RELU(v) ((nm_v4)wasm_f32x4_pmax(wasm_f32x4_splat(0.0f), (v128_t)(v)))
#endif

#endif // NM_KERNELS_WASM_H
