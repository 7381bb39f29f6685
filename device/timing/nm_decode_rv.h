/*
 * nm_decode_rv.h - the RV32IMAC decoder of the cycle model.
 */
#ifndef NM_DECODE_RV_H
#define NM_DECODE_RV_H

#include "nm_insn.h"

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

#endif // NM_DECODE_RV_H
