/*
 * nm_train.h - the training arithmetic of neuromotor (TD3 on the board).
 *
 * Plain C99 on top of nm_kernels.h (its NM_MADD, nm_tanhf, nm_divf, size
 * arithmetic and conventions): no MicroPython, no libm, no allocation. The
 * caller (the nm_train module's bindings) validates every size first.
 *   nm_math.h       square root, log and exp without libm
 *   nm_rng.h        xoshiro128+: uniform, normal and integer streams
 *   nm_gemm.h       matrix products in register tiles
 *   nm_mlp_train.h  one network: training layout, forward with a tape,
 *                   backward, Adam, Polyak averaging, export (nm_train_pack
 *                   writes the block-4 layers nm_kernels' mlp() reads)
 *   nm_td3_steps.h  target smoothing, Bellman targets, critic gradient, replay
 */
#ifndef NM_TRAIN_H
#define NM_TRAIN_H

#include "nm_rng.h"
#include "nm_mlp_train.h"
#include "nm_td3_steps.h"

#define NM_TRAIN_VERSION 1

#endif // NM_TRAIN_H
