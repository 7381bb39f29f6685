/*
 * nm_kernels.h - the one place neuromotor's arithmetic lives.
 *
 * Plain C99, no MicroPython, no libm, no allocation. Compiled into:
 *   - the MicroPython user C module and the dynamic native modules (.mpy)
 *     per architecture, both from device/native/nm_kernels/nm_kernels.c,
 *   - bare-metal programs (include it and call the functions directly, as
 *     device/baremetal/ and exported C policy headers do).
 *
 * The arithmetic of inference, one job per header:
 *   nm_isa.h          compiler attributes, instruction-set paths, the run-time choice
 *   nm_layout.h       block-4 weights, the net and layout descriptors, size arithmetic
 *   nm_act.h          division and activations
 *   nm_dense.h        fused dense layers (portable blocks, dispatch), over
 *   nm_dense_vldm.h   ARMv7E-M blocks and nm_dense_simd.h SSE2/wasm SIMD and AVX2 blocks
 *   nm_gru.h          one GRU layer's step (two fused products, then the gates)
 *   nm_mlp.h          the whole policy in one call, dense and GRU layers; packing a layer
 *   nm_clamp.h        finiteness and the clamp into the action limits
 *   nm_crc.h          CRC-32
 *
 * Determinism: every multiply-add goes through NM_MADD, which is a fused
 * multiply-add exactly where the target has one in hardware and a plain
 * multiply then add elsewhere (the ARMv7E-M inference kernel's exception is
 * NM_SPLIT_MAC below); compile with -ffp-contract=off so the
 * compiler never fuses anything on its own. The user C module and the natmod
 * built for one architecture then give bit-identical results.
 */
#ifndef NM_KERNELS_H
#define NM_KERNELS_H

#include "nm_isa.h"
#include "nm_layout.h"
#include "nm_act.h"
#include "nm_dense.h"
#include "nm_gru.h"
#include "nm_mlp.h"
#include "nm_clamp.h"
#include "nm_crc.h"

#define NM_KERNELS_VERSION 1

#endif // NM_KERNELS_H
