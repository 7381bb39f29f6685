/*
 * nm_int8_edge.h - the edges of an int8 policy (docs/policy-format.md, "int8 payload")
 * in integers on the float32s' bits: the float32 steps at the input and the action on
 * cores without an FPU (nm_q8_fsub, nm_q8_fadd, nm_q8_fmul: IEEE's bits in fewer
 * instructions than libgcc's on a Cortex-M0) and the output stage of a last layer that
 * is tanh, with no float arithmetic until the result is a float (nm_tanhf's polynomial
 * and division cost ~2,900 instructions per action on a Cortex-M0):
 *
 *   z = the accumulator times deq in Q16 (nm_q8_deq_q16), saturated to +-6
 *   t = tanh(z) in Q15 from a table of tanh(i / 64), linearly interpolated
 *       (nm_q8_tanh_q15; |t / 32768 - tanh(z / 65536)| < 5e-5)
 *   y = t / 32768 as a float32 (exact: nm_q8_q15_f32)
 */
#ifndef NM_INT8_EDGE_H
#define NM_INT8_EDGE_H

#include "nm_int8_layout.h"

#define NM_Q8_TANH_STEP 10                           // table step 2^-6 in Q16
#define NM_Q8_TANH_ZMAX (384 << NM_Q8_TANH_STEP)     // 6.0: tanh(6) * 32768 rounds to 32768

// round(tanh(i / 64) * 32768), i = 0..384 (neuromotor.policy.quantize.tanh_table).
static const uint16_t nm_q8_tanh_table[385] = {
    0, 512, 1024, 1535, 2045, 2555, 3063, 3570, 4075, 4578, 5079, 5577,
    6073, 6566, 7056, 7542, 8025, 8505, 8980, 9452, 9919, 10382, 10840, 11294,
    11743, 12186, 12625, 13058, 13486, 13909, 14326, 14737, 15143, 15542, 15936, 16324,
    16706, 17082, 17452, 17816, 18173, 18525, 18870, 19209, 19542, 19869, 20189, 20504,
    20813, 21115, 21411, 21702, 21986, 22265, 22538, 22804, 23066, 23321, 23571, 23815,
    24054, 24287, 24516, 24738, 24956, 25168, 25376, 25578, 25776, 25969, 26157, 26340,
    26519, 26694, 26864, 27029, 27191, 27348, 27502, 27651, 27797, 27938, 28076, 28211,
    28341, 28469, 28592, 28713, 28830, 28944, 29055, 29163, 29268, 29370, 29470, 29566,
    29660, 29751, 29840, 29926, 30010, 30091, 30170, 30247, 30322, 30394, 30465, 30533,
    30600, 30664, 30727, 30788, 30847, 30904, 30960, 31014, 31067, 31118, 31167, 31215,
    31262, 31307, 31351, 31394, 31435, 31476, 31515, 31553, 31589, 31625, 31659, 31693,
    31726, 31757, 31788, 31817, 31846, 31874, 31901, 31928, 31953, 31978, 32002, 32025,
    32048, 32070, 32091, 32112, 32132, 32151, 32170, 32188, 32206, 32223, 32240, 32256,
    32271, 32287, 32301, 32316, 32329, 32343, 32356, 32368, 32381, 32392, 32404, 32415,
    32426, 32436, 32447, 32456, 32466, 32475, 32484, 32493, 32501, 32509, 32517, 32525,
    32532, 32540, 32547, 32553, 32560, 32566, 32573, 32579, 32584, 32590, 32596, 32601,
    32606, 32611, 32616, 32620, 32625, 32629, 32634, 32638, 32642, 32646, 32649, 32653,
    32657, 32660, 32663, 32667, 32670, 32673, 32676, 32678, 32681, 32684, 32686, 32689,
    32691, 32694, 32696, 32698, 32700, 32702, 32704, 32706, 32708, 32710, 32712, 32714,
    32715, 32717, 32718, 32720, 32721, 32723, 32724, 32726, 32727, 32728, 32729, 32731,
    32732, 32733, 32734, 32735, 32736, 32737, 32738, 32739, 32740, 32741, 32741, 32742,
    32743, 32744, 32745, 32745, 32746, 32747, 32747, 32748, 32749, 32749, 32750, 32750,
    32751, 32751, 32752, 32752, 32753, 32753, 32754, 32754, 32755, 32755, 32755, 32756,
    32756, 32757, 32757, 32757, 32758, 32758, 32758, 32759, 32759, 32759, 32759, 32760,
    32760, 32760, 32760, 32761, 32761, 32761, 32761, 32762, 32762, 32762, 32762, 32762,
    32762, 32763, 32763, 32763, 32763, 32763, 32763, 32764, 32764, 32764, 32764, 32764,
    32764, 32764, 32764, 32765, 32765, 32765, 32765, 32765, 32765, 32765, 32765, 32765,
    32765, 32765, 32766, 32766, 32766, 32766, 32766, 32766, 32766, 32766, 32766, 32766,
    32766, 32766, 32766, 32766, 32766, 32766, 32767, 32767, 32767, 32767, 32767, 32767,
    32767, 32767, 32767, 32767, 32767, 32767, 32767, 32767, 32767, 32767, 32767, 32767,
    32767, 32767, 32767, 32767, 32767, 32767, 32767, 32767, 32767, 32767, 32767, 32767,
    32767, 32767, 32767, 32767, 32767, 32767, 32768, 32768, 32768, 32768, 32768, 32768,
    32768
};

/* A float32's significand shifted left by 7 (2^30 <= m < 2^31 when normal; zero
 * and subnormals have no implicit bit) and its exponent field (1 for zero and
 * subnormals): |f| = m * 2^(e - 157). */
NM_INLINE int32_t nm_q8_f32_sig(uint32_t u, int32_t *e) {
    const uint32_t ef = (u >> 23) & 0xffu;
    *e = ef ? (int32_t)ef : 1;
    return (int32_t)(((u & 0x7fffffu) | (ef ? 0x800000u : 0u)) << 7);
}

/* round(v * m / 2^s) (half up) clamped to +-lim (lim < 2^29), for any v, 0 <= m < 2^31
 * and any s. s >= 32: t = nm_q8_mulhr(v, m) (|t| < 2^30), then shifted right by
 * min(s - 32, 31), rounded half up. s < 32: nm_q8_mulhr(v << l, m), l = min(32 - s, 31),
 * one rounding; a v the left shift would overflow saturates (for m >= 2^30 the value is
 * then at least 2^29). */
NM_INLINE int32_t nm_q8_scale(int32_t v, int32_t m, int32_t s, int32_t lim) {
    int32_t z;
    if (s >= 32) {
        const int32_t t = nm_q8_mulhr(v, m), r = s - 32 > 31 ? 31 : s - 32;
        z = r ? (int32_t)((uint32_t)t + ((uint32_t)1 << (r - 1))) >> r : t;
    } else {
        const int32_t l = 32 - s > 31 ? 31 : 32 - s, big = (int32_t)1 << (31 - l); // l > 31: only v = 0 is left
        z = v >= big ? lim : v <= -big ? -lim : nm_q8_mulhr((int32_t)((uint32_t)v << l), m);
    }
    return z > lim ? lim : z < -lim ? -lim : z;
}

/* acc * deq in Q16 (deq = m * 2^(e - 157): acc * m / 2^(141 - e)), clamped to
 * +-lim (lim < 2^29). deq > 0 and finite (nm_q8_check). */
NM_INLINE int32_t nm_q8_mul_q16(int32_t acc, float deq, int32_t lim) {
    union { float f; uint32_t u; } b = { deq };
    int32_t e;
    const int32_t m = nm_q8_f32_sig(b.u, &e);
    return nm_q8_scale(acc, m, 141 - e, lim);
}

// The last layer's tanh input, saturated at +-6 where the table ends.
NM_INLINE int32_t nm_q8_deq_q16(int32_t acc, float deq) {
    return nm_q8_mul_q16(acc, deq, NM_Q8_TANH_ZMAX);
}

/* IEEE float32 addition, subtraction and multiplication (round to nearest, ties to
 * even) for the input's t = (x - mean) * in_mul and the action's y * scale + offset.
 * Cores without an FPU and without a 32x32->64 multiply (ARMv6-M) take them in
 * integers when the operands and the result are normal, with guard bits and a sticky
 * bit: the bits of the compiler's soft float (libgcc's ~120-130 instructions an
 * operation on a Cortex-M0, here ~80 with the operands' unpacking), which remains for
 * zeros, subnormals, inf, NaN and results outside the normal range.
 * -DNM_Q8_SOFT_EDGE=1 selects them anywhere (the host test against its FPU). */
#if !defined(NM_Q8_SOFT_EDGE) && defined(__thumb__) && !defined(__thumb2__)
#define NM_Q8_SOFT_EDGE 1
#endif
#if NM_Q8_SOFT_EDGE
typedef union { float f; uint32_t u; } nm_q8_f32u_t;

NM_INLINE float nm_q8_fmul(float a, float b) {
    nm_q8_f32u_t x = { a }, y = { b };
    const uint32_t ea = (x.u >> 23) & 0xffu, eb = (y.u >> 23) & 0xffu;
    if (__builtin_expect(ea - 1u >= 254u || eb - 1u >= 254u, 0)) {   // the rare cases out of line
        return a * b;
    }
    const uint32_t ma = (x.u & 0x7fffffu) | 0x800000u, mb = (y.u & 0x7fffffu) | 0x800000u;
    const uint32_t ah = ma >> 16, al = ma & 0xffffu, bh = mb >> 16, bl = mb & 0xffffu, ll = al * bl;
    // hi = the 48-bit product ma * mb >> 16 (no overflow: the sum is below 2^32)
    uint32_t hi = ((ah * bh) << 16) + ah * bl + al * bh + (ll >> 16);
    const uint32_t low = ll & 0xffffu;
    int32_t e = (int32_t)(ea + eb) - 127;
    if (hi & 0x80000000u) {
        e++;
    } else {
        hi <<= 1;                       // bit 0 is low's top bit, kept as sticky below
    }
    if (e < 1) {                        // subnormal: rounded at another bit
        return a * b;
    }
    uint32_t sig = hi >> 8;
    if (((hi >> 7) & 1u) && ((hi & 0x7fu) || low || (sig & 1u))) {
        sig++;
    }
    if (sig >> 24) {
        sig >>= 1;
        e++;
    }
    if (e > 254) {
        return a * b;
    }
    x.u = ((x.u ^ y.u) & 0x80000000u) | ((uint32_t)e << 23) | (sig & 0x7fffffu);
    return x.f;
}

// a + (b with its sign bit xor flip): a + b, or a - b for flip = 2^31.
NM_INLINE float nm_q8_fadd_bits(float a, float b, uint32_t flip) {
    nm_q8_f32u_t r;
    uint32_t ux = ((nm_q8_f32u_t){ a }).u, uy = ((nm_q8_f32u_t){ b }).u ^ flip;
    if ((ux & 0x7fffffffu) < (uy & 0x7fffffffu)) {  // |x| >= |y|: the result has x's sign
        const uint32_t t = ux;
        ux = uy;
        uy = t;
    }
    const uint32_t ex = (ux >> 23) & 0xffu, ey = (uy >> 23) & 0xffu;
    if (__builtin_expect(ex - 1u >= 254u || ey - 1u >= 254u, 0)) {
        return flip ? a - b : a + b;
    }
    // Significands << 7 (2^30..2^31); y's aligned to x's, the bits shifted out kept as
    // a sticky bit 0 (exact when d <= 7; else below the guard bits even after the one
    // left shift a subtraction with d >= 2 can need).
    const uint32_t mx = ((ux & 0x7fffffu) | 0x800000u) << 7, d = ex - ey;
    uint32_t my = ((uy & 0x7fffffu) | 0x800000u) << 7, s;
    if (d > 31) {
        my = 1;
    } else if (d) {
        my = (my >> d) | ((my << (32 - d)) != 0);
    }
    int32_t e = (int32_t)ex;
    if ((ux ^ uy) >> 31) {
        s = mx - my;
        if (!s) {
            return 0.0f;                // x - x is +0 when rounding to nearest
        }
        while (!(s & 0x40000000u)) {
            s <<= 1;
            e--;
        }
    } else {
        s = mx + my;                    // below 2^32
        if (s & 0x80000000u) {
            s = (s >> 1) | (s & 1u);
            e++;
        }
    }
    if (e < 1) {
        return flip ? a - b : a + b;
    }
    uint32_t sig = s >> 7;
    if (((s >> 6) & 1u) && ((s & 0x3fu) || (sig & 1u))) {
        sig++;
    }
    if (sig >> 24) {
        sig >>= 1;
        e++;
    }
    if (e > 254) {
        return flip ? a - b : a + b;
    }
    r.u = (ux & 0x80000000u) | ((uint32_t)e << 23) | (sig & 0x7fffffu);
    return r.f;
}

NM_INLINE float nm_q8_fadd(float a, float b) {
    return nm_q8_fadd_bits(a, b, 0);
}

NM_INLINE float nm_q8_fsub(float a, float b) {
    return nm_q8_fadd_bits(a, b, 0x80000000u);
}
#else
NM_INLINE float nm_q8_fmul(float a, float b) {
    return a * b;
}

NM_INLINE float nm_q8_fadd(float a, float b) {
    return a + b;
}

NM_INLINE float nm_q8_fsub(float a, float b) {
    return a - b;
}
#endif

// tanh(z / 2^16) * 2^15, -32768..32768; odd, rounded half up on the interpolation.
NM_INLINE int32_t nm_q8_tanh_q15(int32_t z) {
    const int32_t a = z < 0 ? -z : z;
    int32_t t = 32768;
    if (a < NM_Q8_TANH_ZMAX) {
        const int32_t i = a >> NM_Q8_TANH_STEP, f = a & ((1 << NM_Q8_TANH_STEP) - 1);
        const int32_t t0 = nm_q8_tanh_table[i], d = nm_q8_tanh_table[i + 1] - t0; // d >= 0
        t = t0 + ((d * f + (1 << (NM_Q8_TANH_STEP - 1))) >> NM_Q8_TANH_STEP);
    }
    return z < 0 ? -t : t;
}

/* v / 32768 as a float32 for |v| <= 32768, built from its bits (exact: v has at most
 * 16 significant bits), so cores without an FPU need no conversion and multiplication. */
NM_INLINE float nm_q8_q15_f32(int32_t v) {
    union { uint32_t u; float f; } b = { 0 };
    uint32_t a = (uint32_t)(v < 0 ? -v : v), e = 127;
    if (a) {
        // Shift a into 2^15..2^16 - 1: then v / 32768 = (a / 2^15) * 2^(e - 127).
        if (a < 0x100u) {
            a <<= 8;
            e -= 8;
        }
        if (a < 0x1000u) {
            a <<= 4;
            e -= 4;
        }
        if (a < 0x4000u) {
            a <<= 2;
            e -= 2;
        }
        if (a < 0x8000u) {
            a <<= 1;
            e -= 1;
        }
        b.u = ((uint32_t)(v < 0) << 31) | (e << 23) | ((a << 8) & 0x7fffffu);
    }
    return b.f;
}

#endif // NM_INT8_EDGE_H
