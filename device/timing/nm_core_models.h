/*
 * nm_core_models.h - the cycle model's cores (docs/timing-model.md): Cortex-M4 table
 * sums, the Cortex-M7 dual-issue scoreboard, the single-issue rv32imc.
 */
#ifndef NM_CORE_MODELS_H
#define NM_CORE_MODELS_H

#include "nm_insn.h"

/* ---- core models ------------------------------------------------------------------------ */

enum core { CORE_M4 = 4, CORE_M7 = 7, CORE_RV32 = 32 };
static enum core core = CORE_M7;

/* Branch costs, charged at run time when the successor block is known. */
typedef struct {
    uint64_t cycles;      /* everything but the outcome of a final conditional branch */
    uint64_t insns;
    uint64_t beats;
    uint64_t vaddr;
    uint64_t fallthrough; /* address after the final conditional branch; 0: none */
    uint32_t taken, not_taken;
    uint32_t end_penalty; /* an indirect branch at the end (M7) */
    bool mark;
    insn_t *v;            /* M7: the decoded block, issued at run time */
    size_t n;
} tb_cost_t;

static uint32_t beats_of(const insn_t *d) {
    switch (d->cls) {
    case K_LD: case K_ST: case K_VLD: case K_VST:
        return d->n ? d->n : 1;
    case K_LDD: case K_STD: case K_LDM: case K_STM: case K_VLDM: case K_VSTM:
        return d->n;
    default:
        return 0;
    }
}

/* Cortex-M4 (TRM r0p1, Table 3-1 and the FPU instruction table). */
#define M4_P 2 /* pipeline refill: the TRM gives 1..3 */

static uint32_t m4_cost(const insn_t *d, const insn_t *prev) {
    switch (d->cls) {
    case K_ALU: case K_MUL: case K_MULL: case K_IT: case K_FALU: case K_VMOV: case K_SYS:
        return 1;
    case K_DIV:
        return 12; /* 2..12 by operand; the model charges the bound */
    case K_LD: case K_ST: case K_VLD: case K_VST: {
        uint32_t base = (d->cls == K_VLD || d->cls == K_VST) && d->dbl ? 3 : 2;
        if (d->cls == K_LD && d->ldpc) {
            return 2 + M4_P;
        }
        if (d->cls == K_ST && d->str_imm && !d->dbl) {
            return 1;
        }
        /* pipelined behind a load single whose result does not form this address */
        if (base == 2 && prev && (prev->cls == K_LD || prev->cls == K_VLD) && !prev->ldpc &&
            !(prev->rdst & d->raddr)) {
            return 1;
        }
        return base;
    }
    case K_LDD: case K_STD:
        return 1 + 2;
    case K_LDM:
        return 1 + d->n + (d->ldpc ? M4_P : 0);
    case K_STM: case K_VLDM: case K_VSTM:
        return 1 + d->n;
    case K_VMOV2:
        return 2;
    case K_FMAC:
        return 3;
    case K_FDIV: case K_FSQRT:
        return 14;
    case K_B: case K_BI:
        return 1 + M4_P;
    case K_BC:
        return 1; /* + M4_P when taken, at run time */
    }
    return 1;
}

/* Cortex-M7: in-order dual issue on a scoreboard (docs/timing-model.md). */
#define M7_MISPREDICT 6

enum pipe { P_ALU, P_MAC, P_LSU, P_FPU, P_BR, P_ALONE };

static enum pipe m7_pipe(const insn_t *d) {
    switch (d->cls) {
    case K_ALU: case K_IT: return P_ALU;
    case K_MUL: case K_MULL: return P_MAC;
    case K_LD: case K_ST: case K_VLD: case K_VST: case K_VMOV: case K_VMOV2: return P_LSU;
    case K_FALU: case K_FMAC: return P_FPU;
    case K_B: case K_BC: case K_BI: return P_BR;
    default: return P_ALONE;
    }
}

static uint32_t m7_latency(const insn_t *d) {
    switch (d->cls) {
    case K_ALU: case K_IT: case K_SYS: return 1;
    case K_MUL: case K_MULL: return 2;
    case K_LD: case K_VLD: case K_LDD: case K_LDM: case K_VLDM: return 2;
    case K_VMOV: case K_VMOV2: return 1;
    case K_FALU: case K_FMAC: return 3;
    case K_DIV: return 12;
    case K_FDIV: case K_FSQRT: return d->dbl ? 30 : 14;
    default: return 1;
    }
}

static uint32_t m7_occupancy(const insn_t *d) { /* cycles the instruction blocks issue */
    switch (d->cls) {
    case K_LDM: case K_STM: case K_VLDM: case K_VSTM: case K_LDD: case K_STD:
        return (d->n + 1) / 2 > 0 ? (d->n + 1) / 2 : 1; /* 64 bits per cycle */
    case K_DIV: return 12;
    case K_FDIV: case K_FSQRT: return d->dbl ? 30 : 14;
    default: return 1;
    }
}

typedef struct {
    uint64_t cycle;         /* cycle of the current issue slot */
    int slot_used;          /* instructions issued in this cycle */
    enum pipe slot_pipe[2];
    uint8_t slot_cls[2];
    uint32_t slot_rdst, slot_fdst;
    uint64_t rready[17], fready[32];
} m7_state;

static void m7_issue(m7_state *s, const insn_t *d) {
    uint64_t t = s->cycle;
    uint32_t rs = (d->rsrc | d->raddr) & (m7_pipe(d) == P_BR ? ~FLAGS : ~0u) & 0x1ffffu;
    uint32_t fs = d->fsrc;
    if (d->barrier) { /* ISB/DSB/DMB: every result written before it completes */
        rs = 0x1ffffu;
        fs = ~0u;
    }
    for (; rs; rs &= rs - 1) {
        int r = __builtin_ctz(rs);
        t = s->rready[r] > t ? s->rready[r] : t;
    }
    for (; fs; fs &= fs - 1) {
        int r = __builtin_ctz(fs);
        t = s->fready[r] > t ? s->fready[r] : t;
    }
    enum pipe p = m7_pipe(d);
    /* a branch resolves late: it pairs with the compare that sets its flags */
    uint32_t needs = (d->rsrc | d->raddr) & (p == P_BR ? ~FLAGS : ~0u);
    enum pipe q = s->slot_pipe[0];
    uint8_t qc = s->slot_cls[0];
    bool vld_fmac = (d->cls == K_FMAC && (qc == K_VLD || qc == K_VST)) ||
                    ((d->cls == K_VLD || d->cls == K_VST) && qc == K_FMAC);
    bool pair = t == s->cycle && s->slot_used == 1 && p != P_ALONE && q != P_ALONE && q != P_BR &&
                (p != q || p == P_ALU) && !(needs & s->slot_rdst) && !(d->fsrc & s->slot_fdst) && !vld_fmac;
    if (!pair) {
        if (s->slot_used > 0 && t <= s->cycle) {
            t = s->cycle + 1;
        }
        s->cycle = t;
        s->slot_used = 0;
        s->slot_rdst = s->slot_fdst = 0;
    }
    s->slot_cls[s->slot_used] = d->cls;
    s->slot_pipe[s->slot_used++] = p;
    s->slot_rdst |= d->rdst;
    s->slot_fdst |= d->fdst;
    uint64_t ready = s->cycle + m7_latency(d);
    for (uint32_t m = d->rdst & 0x1ffffu; m; m &= m - 1) {
        s->rready[__builtin_ctz(m)] = ready;
    }
    for (uint32_t m = d->fdst; m; m &= m - 1) {
        s->fready[__builtin_ctz(m)] = ready;
    }
    uint32_t occ = m7_occupancy(d);
    if (p == P_ALONE || occ > 1) {
        s->cycle += occ - 1; /* the next instruction issues after the last beat */
        s->slot_used = 2;
    }
}

/* The running scoreboard: one core, one vCPU. */
static m7_state m7;

/* A pipeline refill: nothing issues for `cycles`, results in flight complete meanwhile. */
static void m7_stall(uint32_t cycles) {
    if (cycles) {
        m7.cycle += cycles;
        m7.slot_used = 2;
    }
}

/* rv32imc (ESP32-C3 class): single issue, in order. */
static uint32_t rv_cost(const insn_t *d, const insn_t *prev) {
    uint32_t c;
    switch (d->cls) {
    case K_DIV: c = 17; break;
    case K_LDD: c = 2; break;   /* AMO: read and write */
    case K_B: c = 2; break;     /* JAL: one refill cycle */
    case K_BI: c = 3; break;    /* JALR: two */
    default: c = 1;
    }
    if (prev && prev->cls == K_LD && (prev->rdst & (d->rsrc | d->raddr))) {
        c += 1; /* load-use */
    }
    return c;
}
#define RV_TAKEN 2

#endif // NM_CORE_MODELS_H
