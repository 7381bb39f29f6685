"""The requantisation's high word from 16-bit partial products (the ARMv6-M path: no
32x32->64 multiply there) gives the 64-bit product's bits for every accumulator and
multiplier, valid or not, compiled here with -DNM_Q8_MULHR16=1 beside the 64-bit form."""

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


def test_16bit_partial_products_equal_the_64bit_product(tmp_path):
    if not shutil.which("gcc"):
        pytest.fail("gcc is not installed")
    (tmp_path / "t.c").write_text(PROGRAM)
    subprocess.run(["gcc", "-std=c99", "-O2", "-Wall", "-Werror", "-ffp-contract=off", "-fsanitize=undefined",
                    "-fno-sanitize-recover", "-DNM_Q8_MULHR16=1", f"-I{INCLUDE}", "-o", str(tmp_path / "t"),
                    str(tmp_path / "t.c")], check=True)
    bad, n = map(int, subprocess.run([str(tmp_path / "t")], check=True, capture_output=True,
                                     text=True).stdout.split())
    assert n > 2_000_000 and bad == 0
