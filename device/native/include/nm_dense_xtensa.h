/*
 * nm_dense_xtensa.h - the dense blocks of nm_dense.h on the ESP32's windowed Xtensa core
 * (xtensawin natmods and the bare-metal program built with -DNM_XT_ASM=1): whole layers
 * of full blocks in assembly (device/native/xtensawin/nm_dense_xtensa.S), because clang
 * emits neither madd.s nor zero-overhead loops and its inline assembly has no
 * floating-point register constraint. NM_XT_DENSE is 1 there, else 0.
 */
#ifndef NM_DENSE_XTENSA_H
#define NM_DENSE_XTENSA_H

#include <stdint.h>

#if defined(__XTENSA__) && defined(NM_XT_ASM) && NM_XT_ASM
#define NM_XT_DENSE 1
// n_blocks full blocks of w into y (4 floats each), ReLU when relu != 0.
void nm_xt_dense_f32(float *y, const float *x, const float *w, uint32_t n_in, uint32_t n_blocks, uint32_t relu);
#else
#define NM_XT_DENSE 0
#endif

#endif // NM_DENSE_XTENSA_H
