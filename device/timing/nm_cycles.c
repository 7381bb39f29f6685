/*
 * nm_cycles: a QEMU TCG plugin that turns executed instructions into cycles.
 *
 * Each translated block is decoded once (Thumb-2/ARMv7E-M with the FPv4/FPv5
 * extension, or RV32IMAC), every instruction is classified and the block's cost
 * is computed from the timing tables of one core model (docs/timing-model.md):
 *
 *   core=cortex-m4   Cortex-M4 TRM instruction timings (table sum, load/store
 *                    pipelining, 1+N multiples, branch refill P)
 *   core=cortex-m7   dual-issue in-order scoreboard (pairing rules, load-use and
 *                    FPU latencies, static branch prediction), kept across blocks:
 *                    each executed block's decoded instructions issue at run time
 *   core=rv32imc     single-issue in-order (load-use stall, taken-branch refill)
 *
 * At run time one callback per executed block adds the block's cycles (the M7 model
 * schedules the block's instructions on its running scoreboard there) and charges
 * the branch that ended the previous block as taken or not taken, by comparing
 * this block's address with the previous block's fall-through address.
 *
 * Arguments (-plugin libnm_cycles.so,core=cortex-m7,out=FILE[,mark=0xADDR]):
 *   out   a file the counters live in (mmap'd, MAP_SHARED): a host process reads
 *         them while the guest runs (layout: struct nm_counters below)
 *   mark  a guest address (the first instruction of a marker function): every
 *         execution of the block starting there appends a snapshot of the counters
 *
 * Only the handful of QEMU plugin API functions used here are declared (QEMU
 * 7.2's documented include/qemu/qemu-plugin.h, API version 1).
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- QEMU plugin API (declarations from the documented interface) ----------------- */

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
typedef struct {
    const char *target_name;
    struct {
        int min;
        int cur;
    } version;
    bool system_emulation;
    union {
        int smp_vcpus;
        struct {
            int smp_vcpus;
            int max_vcpus;
        } system;
    };
} qemu_info_t;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS = 0 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, qemu_plugin_vcpu_udata_cb_t cb,
                                          enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);
void qemu_plugin_outs(const char *string);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

/* ---- counters shared with the host ------------------------------------------------ */

#define NM_MAX_MARKS 64
struct nm_counters {
    char magic[8];        /* "NMCYC1\0\0" */
    uint64_t core;        /* 4 = cortex-m4, 7 = cortex-m7, 32 = rv32imc */
    uint64_t insns;       /* executed instructions */
    uint64_t cycles;      /* modelled cycles with zero wait states */
    uint64_t beats;       /* 32-bit data transfers (loads and stores), for wait states */
    uint64_t n_marks;
    uint64_t marks[NM_MAX_MARKS][3]; /* insns, cycles, beats at each marker execution */
};

static struct nm_counters *ctr;
static struct nm_counters local_ctr; /* without out=: counters printed at exit only */

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

/* ---- Thumb-2 decoder ------------------------------------------------------------------ */

static void decode_thumb16(insn_t *d, uint16_t h) {
    unsigned rd = h & 7, rn = (h >> 3) & 7, rm = (h >> 6) & 7;
    d->cls = K_ALU;
    if ((h >> 13) == 0) { /* 000xx: shifts, add/sub */
        if (((h >> 11) & 3) == 3) {
            d->rdst = R(rd) | FLAGS;
            d->rsrc = R(rn) | (((h >> 10) & 1) ? 0 : R(rm));
        } else {
            d->rdst = R(rd) | FLAGS;
            d->rsrc = R(rn);
        }
    } else if ((h >> 13) == 1) { /* 001xx: MOV/CMP/ADD/SUB imm8 */
        unsigned r = (h >> 8) & 7, op = (h >> 11) & 3;
        d->rdst = (op == 1 ? 0 : R(r)) | FLAGS;
        d->rsrc = op == 0 ? 0 : R(r);
    } else if ((h >> 10) == 0x10) { /* data processing register */
        unsigned op = (h >> 6) & 15;
        d->rsrc = R(rd) | R(rn);
        d->rdst = FLAGS | ((op == 8 || op == 10 || op == 11) ? 0 : R(rd));
        if (op == 13) {
            d->cls = K_MUL;
        }
    } else if ((h >> 10) == 0x11) { /* special data, BX/BLX */
        unsigned op = (h >> 8) & 3, r = ((h >> 4) & 8) | rd, m = (h >> 3) & 15;
        if (op == 3) {
            d->cls = K_BI;
            d->rsrc = R(m);
            if (h & 0x80) {
                d->rdst = R(14);
            }
        } else {
            d->rsrc = R(m) | (op == 2 ? 0 : R(r));
            d->rdst = op == 1 ? FLAGS : R(r);
            if (op != 1 && r == 15) {
                d->cls = K_BI;
            }
        }
    } else if ((h >> 11) == 9) { /* LDR literal */
        d->cls = K_LD;
        d->rdst = R((h >> 8) & 7);
        d->raddr = R(15);
    } else if ((h >> 12) == 5) { /* load/store register offset */
        unsigned op = (h >> 9) & 7;
        d->cls = op < 3 ? K_ST : K_LD;
        d->raddr = R(rn) | R(rm);
        if (op < 3) {
            d->rsrc = R(rd);
        } else {
            d->rdst = R(rd);
        }
    } else if ((h >> 13) == 3 || (h >> 12) == 8) { /* LDR/STR(B/H) immediate */
        bool load = (h >> 11) & 1;
        d->cls = load ? K_LD : K_ST;
        d->raddr = R(rn);
        if (load) {
            d->rdst = R(rd);
        } else {
            d->rsrc = R(rd);
            d->str_imm = 1;
        }
    } else if ((h >> 12) == 9) { /* SP-relative */
        bool load = (h >> 11) & 1;
        unsigned r = (h >> 8) & 7;
        d->cls = load ? K_LD : K_ST;
        d->raddr = R(13);
        if (load) {
            d->rdst = R(r);
        } else {
            d->rsrc = R(r);
            d->str_imm = 1;
        }
    } else if ((h >> 12) == 10) { /* ADR, ADD SP */
        d->rdst = R((h >> 8) & 7);
        d->rsrc = (h >> 11) & 1 ? R(13) : R(15);
    } else if ((h >> 12) == 11) { /* misc */
        unsigned op = (h >> 8) & 15;
        unsigned list = h & 0xff, nregs = (unsigned)__builtin_popcount(list);
        if (op == 0) {
            d->rdst = d->rsrc = R(13);
        } else if ((op & 5) == 1) { /* CBZ/CBNZ */
            d->cls = K_BC;
            d->rsrc = R(rd);
            d->target = d->pc + 4 + ((((h >> 9) & 1) << 6) | (((h >> 3) & 31) << 1));
        } else if (op == 2 || op == 10) { /* extends, REV */
            d->rdst = R(rd);
            d->rsrc = R(rn);
        } else if ((op & 14) == 4) { /* PUSH */
            d->cls = K_STM;
            d->n = (uint8_t)(nregs + ((h >> 8) & 1));
            d->rsrc = list | (((h >> 8) & 1) ? R(14) : 0) | R(13);
            d->rdst = R(13);
            d->raddr = R(13);
        } else if ((op & 14) == 12) { /* POP */
            d->cls = K_LDM;
            d->n = (uint8_t)(nregs + ((h >> 8) & 1));
            d->rdst = list | R(13);
            d->raddr = R(13);
            d->ldpc = (h >> 8) & 1;
        } else if (op == 15) {
            d->cls = (h & 15) ? K_IT : K_SYS;
            d->rsrc = (h & 15) ? FLAGS : 0;
        } else {
            d->cls = K_SYS;
        }
    } else if ((h >> 12) == 12) { /* LDM/STM */
        bool load = (h >> 11) & 1;
        unsigned r = (h >> 8) & 7, list = h & 0xff;
        d->cls = load ? K_LDM : K_STM;
        d->n = (uint8_t)__builtin_popcount(list);
        d->raddr = R(r);
        d->rsrc = R(r) | (load ? 0 : list);
        d->rdst = R(r) | (load ? list : 0);
    } else if ((h >> 12) == 13) { /* B<cond>, UDF, SVC */
        unsigned cond = (h >> 8) & 15;
        if (cond >= 14) {
            d->cls = K_SYS;
        } else {
            d->cls = K_BC;
            d->rsrc = FLAGS;
            d->target = d->pc + 4 + (uint64_t)(sext(h & 0xff, 8) * 2);
        }
    } else if ((h >> 11) == 0x1c) { /* B */
        d->cls = K_B;
        d->target = d->pc + 4 + (uint64_t)(sext(h & 0x7ff, 11) * 2);
    } else {
        d->cls = K_SYS;
    }
}

static void decode_fp(insn_t *d, uint16_t h1, uint16_t h2) {
    bool dbl = ((h2 >> 8) & 15) == 11;
    unsigned vd = (h2 >> 12) & 15, D = (h1 >> 6) & 1;
    unsigned vn = h1 & 15, N = (h2 >> 7) & 1, vm = h2 & 15, M = (h2 >> 5) & 1;
    d->dbl = dbl;
    if (((h1 >> 9) & 7) == 6) { /* extension register load/store, 64-bit transfers */
        unsigned rn = h1 & 15;
        if (((h1 >> 5) & 15) == 2) { /* VMOV two core registers <-> FP */
            d->cls = K_VMOV2;
            unsigned rt = (h2 >> 12) & 15, rt2 = h1 & 15;
            uint32_t f = dbl ? fregs(vm, M, true) : fregs_range((vm << 1) | M, 2);
            if ((h1 >> 4) & 1) {
                d->rdst = R(rt) | R(rt2);
                d->fsrc = f;
            } else {
                d->rsrc = R(rt) | R(rt2);
                d->fdst = f;
            }
            return;
        }
        bool P = (h1 >> 8) & 1, W = (h1 >> 5) & 1, L = (h1 >> 4) & 1;
        unsigned imm8 = h2 & 0xff;
        unsigned first = dbl ? ((D << 4) | vd) * 2 : ((vd << 1) | D);
        d->raddr = R(rn);
        d->rsrc = R(rn);
        if (P && !W) { /* VLDR/VSTR */
            d->cls = L ? K_VLD : K_VST;
            d->n = dbl ? 2 : 1;
            if (L) {
                d->fdst = fregs_range(first, d->n);
            } else {
                d->fsrc = fregs_range(first, d->n);
            }
        } else {
            d->cls = L ? K_VLDM : K_VSTM;
            d->n = (uint8_t)(imm8 ? imm8 : 1);
            if (W) {
                d->rdst = R(rn);
            }
            if (L) {
                d->fdst = fregs_range(first, imm8);
            } else {
                d->fsrc = fregs_range(first, imm8);
            }
        }
        return;
    }
    if ((h2 >> 4) & 1) { /* core <-> extension register transfers */
        unsigned rt = (h2 >> 12) & 15;
        bool L = (h1 >> 4) & 1;
        d->cls = K_VMOV;
        if (((h1 >> 5) & 7) == 7) { /* VMRS/VMSR */
            if (L) {
                d->rdst = rt == 15 ? FLAGS : R(rt);
                d->rsrc = FLAGS;
            } else {
                d->rsrc = R(rt);
            }
        } else if (L) {
            d->rdst = R(rt);
            d->fsrc = fregs(vn, N, false);
        } else {
            d->rsrc = R(rt);
            d->fdst = fregs(vn, N, false);
        }
        return;
    }
    /* data processing */
    unsigned o = (((h1 >> 7) & 1) << 2) | ((h1 >> 4) & 3);
    d->fdst = fregs(vd, D, dbl);
    d->fsrc = fregs(vn, N, dbl) | fregs(vm, M, dbl);
    switch (o) {
    case 0: case 1: case 5: case 6:
        d->cls = K_FMAC;
        d->fsrc |= d->fdst;
        break;
    case 2: case 3:
        d->cls = K_FALU;
        break;
    case 4:
        d->cls = K_FDIV;
        break;
    default: {
        unsigned opc2 = h1 & 15;
        d->fsrc = fregs(vm, M, dbl);
        if (((h2 >> 6) & 1) == 0) { /* VMOV immediate */
            d->fsrc = 0;
            d->cls = K_FALU;
        } else if (opc2 == 1 && ((h2 >> 7) & 1)) {
            d->cls = K_FSQRT;
        } else if ((opc2 & 14) == 4) { /* VCMP: writes FPSCR flags only */
            d->cls = K_FALU;
            d->fsrc |= fregs(vd, D, dbl);
            d->fdst = 0;
            d->rdst = FLAGS;
        } else {
            d->cls = K_FALU;
            if (opc2 == 7 || opc2 >= 8) { /* conversions change the register width */
                d->fdst = fregs(vd, D, dbl) | fregs(vd, D, !dbl);
                d->fsrc |= fregs(vm, M, !dbl);
            }
        }
    }
    }
}

static void decode_thumb32(insn_t *d, uint16_t h1, uint16_t h2) {
    unsigned op1 = (h1 >> 11) & 3, op2 = (h1 >> 4) & 0x7f;
    unsigned rn = h1 & 15, rd = (h2 >> 8) & 15, rt = (h2 >> 12) & 15, rm = h2 & 15;
    d->cls = K_ALU;
    if (op1 == 1) {
        if ((op2 & 0x64) == 0x00) { /* load/store multiple */
            bool L = (h1 >> 4) & 1, W = (h1 >> 5) & 1;
            uint32_t list = h2 & 0xffff;
            d->cls = L ? K_LDM : K_STM;
            d->n = (uint8_t)__builtin_popcount(list);
            d->raddr = R(rn);
            d->rsrc = R(rn) | (L ? 0 : list);
            d->rdst = (W ? R(rn) : 0) | (L ? (list & 0xffff) : 0);
            d->ldpc = L && (list & 0x8000);
        } else if ((op2 & 0x64) == 0x04) { /* dual, exclusive, table branch */
            bool L = (h1 >> 4) & 1;
            unsigned o1 = (h1 >> 7) & 3, o2 = (h1 >> 4) & 3;
            if (o1 == 1 && o2 == 1 && ((h2 >> 5) & 7) == 0) {
                d->cls = K_BI; /* TBB/TBH */
                d->rsrc = R(rn) | R(rm);
            } else if ((h1 >> 8) & 1 || (h1 >> 5) & 1) { /* LDRD/STRD */
                d->cls = L ? K_LDD : K_STD;
                d->n = 2;
                d->raddr = R(rn);
                if (L) {
                    d->rdst = R(rt) | R(rd);
                } else {
                    d->rsrc = R(rt) | R(rd);
                }
            } else { /* exclusives */
                d->cls = L ? K_LD : K_ST;
                d->raddr = R(rn);
                if (L) {
                    d->rdst = R(rt);
                } else {
                    d->rsrc = R(rt);
                    d->rdst = R(rd);
                }
            }
        } else if ((op2 & 0x60) == 0x20) { /* data processing, shifted register */
            bool S = (h1 >> 4) & 1;
            d->rsrc = R(rn) | R(rm);
            d->rdst = (S ? FLAGS : 0) | ((rd == 15 && S) ? 0 : R(rd));
        } else {
            decode_fp(d, h1, h2);
        }
    } else if (op1 == 2) {
        if (((h2 >> 15) & 1) == 0) { /* data processing, immediate */
            bool S = (h1 >> 4) & 1, plain = (h1 >> 9) & 1;
            unsigned op = (h1 >> 4) & 31;
            d->rsrc = R(rn);
            d->rdst = (S && !plain ? FLAGS : 0) | ((rd == 15 && S && !plain) ? 0 : R(rd));
            if (plain && op == 4) { /* MOVW */
                d->rsrc = 0;
            } else if (plain && op == 12) { /* MOVT keeps the low half */
                d->rsrc = R(rd);
            }
        } else { /* branches, misc control */
            unsigned b = (h2 >> 12) & 5;
            uint32_t S = (h1 >> 10) & 1, J1 = (h2 >> 13) & 1, J2 = (h2 >> 11) & 1;
            if (b == 5 || b == 1) { /* BL, B.W */
                uint32_t I1 = !(J1 ^ S), I2 = !(J2 ^ S);
                uint32_t imm = (S << 24) | (I1 << 23) | (I2 << 22) | ((h1 & 0x3ffu) << 12) | ((h2 & 0x7ffu) << 1);
                d->cls = K_B;
                d->target = d->pc + 4 + (uint64_t)sext(imm, 25);
                if (b == 5) {
                    d->rdst = R(14);
                }
            } else if (b == 0 && ((h1 >> 7) & 7) != 7) { /* B<cond>.W */
                uint32_t imm = (S << 20) | (J2 << 19) | (J1 << 18) | ((h1 & 0x3fu) << 12) | ((h2 & 0x7ffu) << 1);
                d->cls = K_BC;
                d->rsrc = FLAGS;
                d->target = d->pc + 4 + (uint64_t)sext(imm, 21);
            } else {
                d->cls = K_SYS;
                d->barrier = h1 == 0xf3bf && (h2 & 0xff00) == 0x8f00;
            }
        }
    } else { /* op1 == 3 */
        if ((op2 & 0x71) == 0x00 || (op2 & 0x67) == 0x01 || (op2 & 0x67) == 0x03 || (op2 & 0x67) == 0x05) {
            bool L = (h1 >> 4) & 1;
            bool regoff = !((h1 >> 7) & 1) && ((h2 >> 6) & 0x3f) == 0;
            bool imm12 = (h1 >> 7) & 1;
            d->raddr = R(rn) | (regoff ? R(rm) : 0);
            if (L) {
                if (rt == 15 && ((h1 >> 5) & 3) != 2) {
                    d->cls = K_SYS; /* PLD/PLI hints */
                    return;
                }
                d->cls = K_LD;
                d->rdst = R(rt);
                d->ldpc = rt == 15;
            } else {
                d->cls = K_ST;
                d->rsrc = R(rt);
                d->str_imm = !regoff;
            }
            /* pre/post-indexed forms write the base back */
            if (!imm12 && !regoff && rn != 15 && ((h2 >> 11) & 1) && ((h2 >> 8) & 1)) {
                d->rdst |= R(rn);
            }
            d->rsrc |= d->raddr;
        } else if ((op2 & 0x70) == 0x20) { /* data processing register, extends, parallel, misc */
            d->rsrc = R(rn) | R(rm);
            d->rdst = R(rd) | FLAGS;
        } else if ((op2 & 0x78) == 0x30) { /* multiply, multiply-accumulate */
            d->cls = K_MUL;
            d->rsrc = R(rn) | R(rm) | (rt != 15 ? R(rt) : 0);
            d->rdst = R(rd);
        } else if ((op2 & 0x78) == 0x38) { /* long multiply, divide */
            unsigned o = (h1 >> 4) & 7;
            if (o == 1 || o == 3) {
                d->cls = K_DIV;
                d->rsrc = R(rn) | R(rm);
                d->rdst = R(rd);
            } else {
                d->cls = K_MULL;
                d->rsrc = R(rn) | R(rm) | ((o & 4) ? R(rt) | R(rd) : 0);
                d->rdst = R(rt) | R(rd);
            }
        } else if (op2 & 0x40) {
            decode_fp(d, h1, h2);
        } else {
            d->cls = K_SYS;
        }
    }
    if (d->cls == K_ALU && (d->rdst & R(15)) && rd == 15) {
        d->cls = K_BI;
    }
}

/* The length comes from the encoding: at the end of a page QEMU can report a 16-bit
 * instruction with the next halfword appended (size 4). */
static void decode_thumb(insn_t *d, const uint8_t *p, size_t size) {
    uint16_t h1 = (uint16_t)(p[0] | (p[1] << 8));
    bool wide = (h1 >> 11) >= 0x1d;
    d->size = wide && size >= 4 ? 4 : 2;
    if (d->size == 4) {
        uint16_t h2 = (uint16_t)(p[2] | (p[3] << 8));
        decode_thumb32(d, h1, h2);
    } else {
        decode_thumb16(d, h1);
    }
    if ((d->cls == K_LD || d->cls == K_LDM) && d->ldpc) {
        d->rdst |= R(15);
    }
}

/* ---- RV32IMAC decoder ----------------------------------------------------------------- */

#define X(n) ((n) ? 1u << (n) : 0u) /* x0 is never a dependency */

static void decode_rv(insn_t *d, const uint8_t *p, size_t size) {
    d->cls = K_ALU;
    d->size = (p[0] & 3) == 3 && size >= 4 ? 4 : 2; /* from the encoding, as for Thumb */
    if (d->size == 2) {
        uint16_t c = (uint16_t)(p[0] | (p[1] << 8));
        unsigned q = c & 3, f3 = (c >> 13) & 7;
        unsigned rd = (c >> 7) & 31, rs2 = (c >> 2) & 31, rdp = 8 + ((c >> 2) & 7), rs1p = 8 + ((c >> 7) & 7);
        if (q == 0) {
            if (f3 == 0) {
                d->rdst = X(rdp);
                d->rsrc = X(2);
            } else if (f3 == 2) {
                d->cls = K_LD;
                d->rdst = X(rdp);
                d->rsrc = d->raddr = X(rs1p);
            } else if (f3 == 6) {
                d->cls = K_ST;
                d->rsrc = X(rs1p) | X(rdp);
                d->raddr = X(rs1p);
            } else {
                d->cls = K_SYS;
            }
        } else if (q == 1) {
            if (f3 == 1 || f3 == 5) { /* C.JAL, C.J */
                uint32_t imm = (((c >> 12) & 1) << 11) | (((c >> 11) & 1) << 4) | (((c >> 9) & 3) << 8) |
                               (((c >> 8) & 1) << 10) | (((c >> 7) & 1) << 6) | (((c >> 6) & 1) << 7) |
                               (((c >> 3) & 7) << 1) | (((c >> 2) & 1) << 5);
                d->cls = K_B;
                d->target = d->pc + (uint64_t)sext(imm, 12);
                d->rdst = f3 == 1 ? X(1) : 0;
            } else if (f3 == 6 || f3 == 7) { /* C.BEQZ/C.BNEZ */
                uint32_t imm = (((c >> 12) & 1) << 8) | (((c >> 10) & 3) << 3) | (((c >> 5) & 3) << 6) |
                               (((c >> 3) & 3) << 1) | (((c >> 2) & 1) << 5);
                d->cls = K_BC;
                d->rsrc = X(rs1p);
                d->target = d->pc + (uint64_t)sext(imm, 9);
            } else if (f3 == 4) {
                d->rdst = X(rs1p);
                d->rsrc = X(rs1p) | ((((c >> 10) & 3) == 3) ? X(rdp) : 0);
            } else {
                d->rdst = X(rd);
                d->rsrc = (f3 == 0 || f3 == 3) ? X(rd) : 0;
            }
        } else if (q == 2) {
            if (f3 == 0) {
                d->rdst = d->rsrc = X(rd);
            } else if (f3 == 2) {
                d->cls = K_LD;
                d->rdst = X(rd);
                d->rsrc = d->raddr = X(2);
            } else if (f3 == 6) {
                d->cls = K_ST;
                d->rsrc = X(2) | X(rs2);
                d->raddr = X(2);
            } else if (f3 == 4) {
                bool b12 = (c >> 12) & 1;
                if (rs2 == 0 && rd != 0) { /* C.JR, C.JALR */
                    d->cls = K_BI;
                    d->rsrc = X(rd);
                    d->rdst = b12 ? X(1) : 0;
                } else if (rs2 == 0) {
                    d->cls = K_SYS; /* C.EBREAK */
                } else {
                    d->rdst = X(rd);
                    d->rsrc = X(rs2) | (b12 ? X(rd) : 0);
                }
            } else {
                d->cls = K_SYS;
            }
        }
        return;
    }
    uint32_t w = (uint32_t)(p[0] | (p[1] << 8) | (p[2] << 16) | ((uint32_t)p[3] << 24));
    unsigned opc = w & 0x7f, rd = (w >> 7) & 31, rs1 = (w >> 15) & 31, rs2 = (w >> 20) & 31, f3 = (w >> 12) & 7;
    switch (opc) {
    case 0x37: case 0x17:
        d->rdst = X(rd);
        break;
    case 0x6f: {
        uint32_t imm = (((w >> 31) & 1) << 20) | (((w >> 12) & 0xff) << 12) | (((w >> 20) & 1) << 11) |
                       (((w >> 21) & 0x3ff) << 1);
        d->cls = K_B;
        d->rdst = X(rd);
        d->target = d->pc + (uint64_t)sext(imm, 21);
        break;
    }
    case 0x67:
        d->cls = K_BI;
        d->rdst = X(rd);
        d->rsrc = X(rs1);
        break;
    case 0x63: {
        uint32_t imm = (((w >> 31) & 1) << 12) | (((w >> 7) & 1) << 11) | (((w >> 25) & 0x3f) << 5) |
                       (((w >> 8) & 15) << 1);
        d->cls = K_BC;
        d->rsrc = X(rs1) | X(rs2);
        d->target = d->pc + (uint64_t)sext(imm, 13);
        break;
    }
    case 0x03:
        d->cls = K_LD;
        d->rdst = X(rd);
        d->rsrc = d->raddr = X(rs1);
        break;
    case 0x23:
        d->cls = K_ST;
        d->rsrc = X(rs1) | X(rs2);
        d->raddr = X(rs1);
        break;
    case 0x13:
        d->rdst = X(rd);
        d->rsrc = X(rs1);
        break;
    case 0x33:
        d->rdst = X(rd);
        d->rsrc = X(rs1) | X(rs2);
        if ((w >> 25) == 1) {
            d->cls = f3 < 4 ? K_MUL : K_DIV;
        }
        break;
    case 0x2f: /* AMO: a load and a store */
        d->cls = K_LDD;
        d->n = 2;
        d->rdst = X(rd);
        d->rsrc = d->raddr = X(rs1);
        d->rsrc |= X(rs2);
        break;
    default:
        d->cls = K_SYS;
        d->rdst = opc == 0x73 ? X(rd) : 0;
        d->rsrc = opc == 0x73 ? X(rs1) : 0;
    }
}

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

/* ---- translation and execution ------------------------------------------------------------ */

static uint64_t mark_addr = ~0ull;
static tb_cost_t *pending; /* previous block, when it ended in a conditional branch */
static FILE *log_file;

static void tb_exec(unsigned int vcpu, void *udata) {
    (void)vcpu;
    tb_cost_t *t = udata;
    struct nm_counters *c = ctr;
    uint32_t penalty = 0;
    if (pending) {
        penalty = t->vaddr != pending->fallthrough ? pending->taken : pending->not_taken;
        pending = NULL;
    }
    c->insns += t->insns;
    if (t->v) {
        uint64_t before = m7.cycle;
        m7_stall(penalty);
        for (size_t i = 0; i < t->n; i++) {
            m7_issue(&m7, &t->v[i]);
        }
        m7_stall(t->end_penalty);
        c->cycles += m7.cycle - before;
    } else {
        c->cycles += t->cycles + penalty;
    }
    c->beats += t->beats;
    if (t->fallthrough) {
        pending = t;
    }
    if (t->mark && c->n_marks < NM_MAX_MARKS) {
        uint64_t *m = c->marks[c->n_marks];
        m[0] = c->insns;
        m[1] = c->cycles;
        m[2] = c->beats;
        c->n_marks++;
    }
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    insn_t *v = calloc(n ? n : 1, sizeof(insn_t));
    tb_cost_t *t = calloc(1, sizeof(tb_cost_t));
    if (!v || !t) {
        free(v);
        free(t);
        return;
    }
    t->vaddr = qemu_plugin_tb_vaddr(tb);
    t->insns = n;
    t->mark = t->vaddr == mark_addr;
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *in = qemu_plugin_tb_get_insn(tb, i);
        size_t size = qemu_plugin_insn_size(in);
        uint8_t bytes[4] = {0};
        memcpy(bytes, qemu_plugin_insn_data(in), size < 4 ? size : 4);
        v[i].pc = qemu_plugin_insn_vaddr(in);
        v[i].size = (uint8_t)size;
        if (core == CORE_RV32) {
            decode_rv(&v[i], bytes, size);
        } else {
            decode_thumb(&v[i], bytes, size);
        }
        t->beats += beats_of(&v[i]);
    }
    insn_t *last = n ? &v[n - 1] : NULL;
    bool cond_end = last && last->cls == K_BC;
    if (cond_end) {
        t->fallthrough = last->pc + last->size;
    }
    if (core == CORE_M4) {
        for (size_t i = 0; i < n; i++) {
            t->cycles += m4_cost(&v[i], i ? &v[i - 1] : NULL);
        }
        t->taken = M4_P;
        t->not_taken = 0;
    } else if (core == CORE_RV32) {
        for (size_t i = 0; i < n; i++) {
            t->cycles += rv_cost(&v[i], i ? &v[i - 1] : NULL);
        }
        t->taken = RV_TAKEN;
        t->not_taken = 0;
    } else {
        bool backward = cond_end && last->target && last->target <= last->pc;
        t->taken = backward ? 0 : M7_MISPREDICT;
        t->not_taken = backward ? M7_MISPREDICT : 0;
        t->end_penalty = last && last->cls == K_BI ? M7_MISPREDICT : 0;
        t->v = v;
        t->n = n;
    }
    if (log_file) {
        fprintf(log_file, "tb %#llx n=%zu cycles=%llu taken=%u not_taken=%u\n", (unsigned long long)t->vaddr, n,
                (unsigned long long)t->cycles, t->taken, t->not_taken);
        for (size_t i = 0; i < n; i++) {
            fprintf(log_file, "  %#llx size=%u cls=%u n=%u\n", (unsigned long long)v[i].pc, v[i].size, v[i].cls,
                    v[i].n);
        }
        fflush(log_file); /* complete even when QEMU is ended by a signal */
    }
    if (!t->v) {
        free(v);
    }
    qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec, QEMU_PLUGIN_CB_NO_REGS, t);
}

static void at_exit(qemu_plugin_id_t id, void *udata) {
    (void)id;
    (void)udata;
    char line[160];
    snprintf(line, sizeof(line), "nm_cycles: core=%llu insns=%llu cycles=%llu beats=%llu\n",
             (unsigned long long)ctr->core, (unsigned long long)ctr->insns, (unsigned long long)ctr->cycles,
             (unsigned long long)ctr->beats);
    qemu_plugin_outs(line);
    if (ctr != &local_ctr) {
        msync(ctr, sizeof(*ctr), MS_SYNC);
    }
    if (log_file) {
        fclose(log_file);
    }
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
                                                               int argc, char **argv) {
    const char *out = NULL;
    bool rv = info && info->target_name && strncmp(info->target_name, "riscv", 5) == 0;
    core = rv ? CORE_RV32 : CORE_M7;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "core=cortex-m4") == 0 || strcmp(a, "core=cortex-m4f") == 0) {
            core = CORE_M4;
        } else if (strcmp(a, "core=cortex-m7") == 0) {
            core = CORE_M7;
        } else if (strcmp(a, "core=rv32imc") == 0 || strcmp(a, "core=rv32imac") == 0) {
            core = CORE_RV32;
        } else if (strncmp(a, "out=", 4) == 0) {
            out = a + 4;
        } else if (strncmp(a, "mark=", 5) == 0) {
            char *end;
            mark_addr = strtoull(a + 5, &end, 0) & ~1ull;
            if (*end) {
                fprintf(stderr, "nm_cycles: bad mark address %s\n", a + 5);
                return -1;
            }
        } else if (strncmp(a, "log=", 4) == 0) { /* every translated block, decoded (for tests) */
            log_file = fopen(a + 4, "w");
            if (!log_file) {
                fprintf(stderr, "nm_cycles: cannot write %s\n", a + 4);
                return -1;
            }
        } else {
            fprintf(stderr, "nm_cycles: unknown argument %s (core=, out=, mark=, log=)\n", a);
            return -1;
        }
    }
    if ((core == CORE_RV32) != rv) {
        fprintf(stderr, "nm_cycles: the core model does not match the emulated target %s\n",
                info && info->target_name ? info->target_name : "?");
        return -1;
    }
    ctr = &local_ctr;
    if (out) {
        int fd = open(out, O_RDWR | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || ftruncate(fd, sizeof(struct nm_counters)) != 0) {
            fprintf(stderr, "nm_cycles: cannot create %s\n", out);
            if (fd >= 0) {
                close(fd);
            }
            return -1;
        }
        void *m = mmap(NULL, sizeof(struct nm_counters), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (m == MAP_FAILED) {
            fprintf(stderr, "nm_cycles: cannot map %s\n", out);
            return -1;
        }
        ctr = m;
    }
    memset(ctr, 0, sizeof(*ctr));
    memcpy(ctr->magic, "NMCYC1", 6);
    ctr->core = core;
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
}
