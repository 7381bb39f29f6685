"""PlatformIO pre-script: nm_generic.c is built as a generic library would be, with the
compiler's default floating-point contraction; the rest of the program keeps
-ffp-contract=off (the kernels' results then match the reference bit for bit).

On a real board whose board.toml has [timing.generic] (teensy41, stm32f405, stm32h743),
nm_generic.c is also built the way the firmware of the RLtools paper's measurement built
it (optimisation level, code-generation flags, buffer placement: docs/timing-model.md),
so the board times the code the cycle model predicts. The emulated boards have none and
keep the Makefile's build."""

import os
import sys

Import("env")  # noqa: F821 (PlatformIO's SCons global)

HERE = os.path.dirname(env.subst("$PROJECT_CONFIG"))  # noqa: F821
sys.path.insert(0, os.path.join(HERE, "..", "..", "host"))

from neuromotor.boards.cycles import generic_build_of  # noqa: E402
from neuromotor.boards.descriptor import load_board  # noqa: E402
from neuromotor.errors import UserError  # noqa: E402


def board_flags(name):
    """The modelled firmware's flags for a board with [timing.generic]; [] otherwise."""
    if not os.path.isfile(os.path.join(HERE, "..", "..", "boards", name, "board.toml")):
        return []
    if "generic" not in load_board(name).data.get("timing", {}):
        return []
    try:
        return generic_build_of(name)["extra"]
    except UserError as exc:
        sys.stderr.write(f"{exc}\n")
        env.Exit(2)  # noqa: F821


EXTRA = board_flags(env["PIOENV"])  # noqa: F821


def generic_as_a_library(env, node):
    # the board's flags come last, so its optimisation level replaces the program's -O3
    return env.Object(node, CCFLAGS=[f for f in env["CCFLAGS"] if f != "-ffp-contract=off"] + EXTRA)


env.AddBuildMiddleware(generic_as_a_library, "*nm_generic.c")  # noqa: F821
