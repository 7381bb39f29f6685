"""The ESP32's kernels bare metal: instructions per multiply-add of a 13->64->64->4 policy's
float and int8 forward passes on QEMU's de233_fpu core (the xtensawin ABI and ISA options
the ESP32, the ESP32-S3 and that core share), C path against the assembly layers.

Each row is neuromotor.boards.policy_baremetal's program (device/baremetal/xtensawin)
built twice: XT_ASM=0 compiles nm_dense.h/nm_int8.h with clang-22 as the natmods did
before; XT_ASM=1 (what the natmods build) runs device/native/xtensawin/*.S. Counts are
QEMU instruction counts under -icount shift=0 (CCOUNT, calibrated in the same run), not
cycles. The µs column is a prediction at the ESP32's 240 MHz assuming one instruction per
cycle (no cache misses, no pipeline stalls), not a measurement; beside it the RLtools
paper's measured ESP32 times for the same network (Table 2), from another machine.

    .venv/bin/python benchmarks/xtensawin_baremetal.py [--repeat 4]

Writes benchmarks/results/xtensawin_baremetal.json.
"""

import argparse

import numpy as np

from benchutil import RESULTS, macs, write_json

SIZES = (13, 64, 64, 4)
CLOCK_MHZ = 240.0
TARGETS = {"float": 2.0, "int8": 3.0}
# RLtools (arXiv 2306.03530), Table 2, ESP32 inference of the 13->64->64->4 policy, µs.
RLTOOLS_ESP32_US = {"generic": 4282.0, "Espressif DSP": 279.0, "RLtools optimised": 333.0}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=4, help="timed forward passes per kernel")
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args(argv)
    from neuromotor.boards.policy_baremetal import run_policy, td3_shaped_case
    spec, qp, obs = td3_shaped_case(SIZES)
    want_f, want_q = spec.forward(obs), qp.forward(obs)
    rows = []
    for path, xt_asm in (("C (clang-22)", 0), ("assembly", 1)):
        r = run_policy("xtensawin", spec, qp, obs, repeat=args.repeat, make_vars={"XT_ASM": xt_asm})
        for kind in ("float", "int8"):
            got = r[kind]
            if kind == "int8":
                agrees = bool(np.array_equal(got.view(np.uint32), want_q.view(np.uint32)))
            else:
                agrees = bool(np.allclose(got, want_f, rtol=1e-5, atol=1e-6))
            n = r["instructions_per_inference"][kind]
            rows.append({"kernel": kind, "path": path, "instructions": n,
                         "instructions_per_mac": r["instructions_per_mac"][kind],
                         "predicted_us_240mhz": n / CLOCK_MHZ, "agrees_with_numpy": agrees,
                         "target_instructions_per_mac": TARGETS[kind]})
    lines = [f"13->64->64->4 policy ({macs(SIZES)} multiply-adds), bare metal on QEMU de233_fpu (xtensawin): "
             "QEMU instruction counts",
             f"{'kernel':6s} {'path':13s} {'instructions':>12s} {'instr/MAC':>9s} {'target':>6s} "
             f"{'predicted µs @240 MHz':>22s}  NumPy"]
    for r in rows:
        lines.append(f"{r['kernel']:6s} {r['path']:13s} {r['instructions']:12.0f} {r['instructions_per_mac']:9.2f} "
                     f"{r['target_instructions_per_mac']:6.1f} {r['predicted_us_240mhz']:22.1f}  "
                     f"{'agrees' if r['agrees_with_numpy'] else 'DIFFERS'}")
    lines.append("predicted µs: instructions / 240 MHz at one instruction per cycle (a prediction, not a measurement)")
    lines.append("RLtools paper, ESP32 measured (Table 2): " +
                 ", ".join(f"{k} {v:,.0f} µs" for k, v in RLTOOLS_ESP32_US.items()))
    print("\n".join(lines))
    path = write_json(f"{args.out}/xtensawin_baremetal.json", {
        "sizes": list(SIZES), "macs": macs(SIZES), "core": "QEMU de233_fpu (sim), -icount shift=0",
        "count": "QEMU instructions (CCOUNT x 25), not cycles", "clock_mhz_for_prediction": CLOCK_MHZ,
        "rows": rows, "rltools_esp32_measured_us": RLTOOLS_ESP32_US})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
