/*
 * nm_decode_thumb.h - the Thumb-2 (ARMv7E-M, FPv4/FPv5) decoder of the cycle model.
 */
#ifndef NM_DECODE_THUMB_H
#define NM_DECODE_THUMB_H

#include "nm_insn.h"

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

#endif // NM_DECODE_THUMB_H
