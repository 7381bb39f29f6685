/*
 * nm_insn.h - what the cycle model knows of one instruction: its class, operands and
 * registers, as the decoders (nm_decode_thumb.h, nm_decode_rv.h) fill it in.
 */
#ifndef NM_INSN_H
#define NM_INSN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- instruction classes ---------------------------------------------------------- */

enum cls {
    K_ALU,      /* data processing, moves, compares, extends, bit fields */
    K_MUL,      /* 32-bit multiply and multiply-accumulate */
    K_MULL,     /* long multiplies (64-bit result) */
    K_DIV,      /* SDIV/UDIV, RISC-V DIV/REM */
    K_LD,       /* single load (LDR/LDRB/LDRH/LDREX, RISC-V loads) */
    K_ST,       /* single store */
    K_LDD,      /* LDRD */
    K_STD,      /* STRD */
    K_LDM,      /* LDM/POP (n registers) */
    K_STM,      /* STM/PUSH */
    K_B,        /* unconditional direct branch (B, BL, JAL) */
    K_BC,       /* conditional branch (B<cond>, CBZ/CBNZ, RISC-V branches) */
    K_BI,       /* indirect branch (BX, BLX, MOV/ADD pc, LDR pc, TBB/TBH, JALR) */
    K_IT,
    K_FALU,     /* VADD/VSUB/VMUL/VNMUL/VABS/VNEG/VCVT/VCMP/VMOV */
    K_FMAC,     /* VMLA/VMLS/VNMLA/VNMLS/VFMA/VFMS/VFNMA/VFNMS */
    K_FDIV,
    K_FSQRT,
    K_VLD,      /* VLDR */
    K_VST,      /* VSTR */
    K_VLDM,     /* VLDM/VPOP (n words) */
    K_VSTM,     /* VSTM/VPUSH */
    K_VMOV,     /* core <-> FP register transfers, VMRS/VMSR */
    K_VMOV2,    /* two core registers <-> two singles or one double */
    K_SYS,      /* barriers, hints, MSR/MRS, CPS, SVC, BKPT, CSR, ECALL, FENCE */
};

typedef struct {
    uint8_t cls;
    uint8_t n;          /* registers/words for multiples; 2 for doubles */
    uint8_t size;       /* bytes */
    uint8_t dbl;        /* FP double precision */
    uint8_t str_imm;    /* Cortex-M4: STR with an immediate offset */
    uint8_t ldpc;       /* a load multiple/single that writes the PC */
    uint8_t barrier;    /* ISB/DSB/DMB: waits until every result is written */
    uint32_t rdst, rsrc, raddr; /* core register bitmasks (bit 16: flags/FPSCR) */
    uint32_t fdst, fsrc;        /* FP registers s0..s31 */
    uint64_t pc, target;        /* target: direct branches, 0 when unknown */
} insn_t;

#define R(n) (1u << ((n) & 15))
#define FLAGS (1u << 16)

static uint32_t fregs(unsigned v, unsigned bit, bool dbl) {
    if (dbl) {
        unsigned d = (bit << 4) | v; /* d0..d15 on FPv4/FPv5-D16 */
        return d < 16 ? 3u << (2 * d) : 0;
    }
    return 1u << (((v << 1) | bit) & 31);
}

static uint32_t fregs_range(unsigned first, unsigned words) {
    uint32_t m = 0;
    for (unsigned i = 0; i < words && first + i < 32; i++) {
        m |= 1u << (first + i);
    }
    return m;
}

static int64_t sext(uint32_t v, int bits) {
    return (int64_t)((int32_t)(v << (32 - bits)) >> (32 - bits));
}

#endif // NM_INSN_H
