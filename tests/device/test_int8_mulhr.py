"""The ARMv6-M integer paths of the int8 kernels, compiled here beside the wide forms:
the requantisation's high word from 16-bit partial products (no 32x32->64 multiply
there; -DNM_Q8_MULHR16=1) gives the 64-bit product's bits for every accumulator and
multiplier, valid or not, and the edges' float32 addition, subtraction and
multiplication in integers (-DNM_Q8_SOFT_EDGE=1) give the host FPU's IEEE bits."""

import shutil
import subprocess
from pathlib import Path

import pytest

INCLUDE = Path(__file__).resolve().parents[2] / "device" / "native" / "include"

PROGRAM = r"""
#include <stdio.h>
#include "nm_int8.h"
static int32_t wide(int32_t acc, int32_t mult) {
    return (int32_t)(((int64_t)acc * mult + ((int64_t)1 << 31)) >> 32);
}
int main(void) {
    static const int32_t edge[] = {0, 1, -1, 2, 32767, -32768, 32768, 65535, 65536, -65535, -65536,
        0x7fff8000, 0x40000000, 0x3fffffff, 2147483647, -2147483647 - 1, -1073741824};
    const int ne = (int)(sizeof edge / sizeof edge[0]);
    long bad = 0, n = 0;
    for (int i = 0; i < ne; i++) {
        for (int j = 0; j < ne; j++, n++) {
            bad += nm_q8_mulhr(edge[i], edge[j]) != wide(edge[i], edge[j]);
        }
    }
    uint64_t st = 1;
    for (long k = 0; k < 2000000; k++, n++) {
        st = st * 6364136223846793005ULL + 1442695040888963407ULL;
        int32_t a = (int32_t)(st >> 32), m = (int32_t)st;
        a >>= (st >> 8) & 31;   // accumulators of every magnitude
        bad += nm_q8_mulhr(a, m) != wide(a, m);
    }
    printf("%ld %ld\n", bad, n);
    return 0;
}
"""


def _run_under_ubsan(tmp_path, program, define):
    """Build program with the host compiler, undefined behaviour fatal, and run it: its
    output is "<mismatches> <cases>"."""
    if not shutil.which("gcc"):
        pytest.fail("gcc is not installed")
    (tmp_path / "t.c").write_text(program)
    subprocess.run(["gcc", "-std=c99", "-O2", "-Wall", "-Werror", "-ffp-contract=off", "-fsanitize=undefined",
                    "-fno-sanitize-recover", define, f"-I{INCLUDE}", "-o", str(tmp_path / "t"),
                    str(tmp_path / "t.c")], check=True)
    return map(int, subprocess.run([str(tmp_path / "t")], check=True, capture_output=True,
                                   text=True).stdout.split())


def test_16bit_partial_products_equal_the_64bit_product(tmp_path):
    bad, n = _run_under_ubsan(tmp_path, PROGRAM, "-DNM_Q8_MULHR16=1")
    assert n > 2_000_000 and bad == 0


SOFT_FLOAT = r"""
#include <stdio.h>
#include <string.h>
#include "nm_int8.h"
static uint64_t st = 88172645463325252ULL;
static uint32_t rnd(void) {
    st ^= st << 13;
    st ^= st >> 7;
    st ^= st << 17;
    return (uint32_t)st;
}
static float f(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }
static uint32_t b(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
static int same(float p, float q) { return b(p) == b(q) || (p != p && q != q); }
int main(void) {
    long bad = 0, n = 0;
    for (long k = 0; k < 4000000; k++, n += 3) {
        uint32_t u = rnd(), v = rnd();
        switch (k % 4) {
        case 1:     // equal exponents (cancellation down to zero) or neighbouring bit patterns
            v = (k & 8) ? (u ^ (rnd() & 0x80000000u)) + (rnd() & 15) - 7
                        : ((u & 0xff800000u) ^ (rnd() & 0x80000000u)) | (v & 0x7fffffu);
            break;
        case 2:     // exponents within 40 of each other: every alignment shift
            v = (v & 0x807fffffu) | (((((u >> 23) & 0xffu) + (rnd() % 81) - 40) & 0xffu) << 23);
            break;
        case 3:     // short significands: exact results and ties
            u &= 0xfff00000u | (rnd() & 3u);
            v &= 0xfffe0000u;
            break;
        }
        float x = f(u), y = f(v);
        bad += !same(nm_q8_fmul(x, y), x * y);
        bad += !same(nm_q8_fsub(x, y), x - y);
        bad += !same(nm_q8_fadd(x, y), x + y);
    }
    printf("%ld %ld\n", bad, n);
    return 0;
}
"""


def test_integer_float32_addition_subtraction_and_multiplication_give_ieee_bits(tmp_path):
    """Random bit patterns (zeros, subnormals, inf, NaN and overflow take libgcc's path;
    the rest the integer one), cancellation, every alignment shift, rounding ties."""
    bad, n = _run_under_ubsan(tmp_path, SOFT_FLOAT, "-DNM_Q8_SOFT_EDGE=1")
    assert n == 12_000_000 and bad == 0
