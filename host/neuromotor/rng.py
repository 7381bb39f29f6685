"""Numpy Generator state <-> arrays, so checkpoints need no pickles."""

import numpy as np

MASK64 = (1 << 64) - 1


def rng_state_array(rng: np.random.Generator) -> np.ndarray:
    """PCG64 state as uint64 [state_hi, state_lo, inc_hi, inc_lo, has_uint32, uinteger]."""
    st = rng.bit_generator.state
    if st["bit_generator"] != "PCG64":
        raise ValueError("only PCG64 generators are checkpointed")
    s, inc = st["state"]["state"], st["state"]["inc"]
    return np.array([s >> 64, s & MASK64, inc >> 64, inc & MASK64, st["has_uint32"], st["uinteger"]], np.uint64)


def set_rng_state(rng: np.random.Generator, arr: np.ndarray) -> None:
    a = [int(x) for x in arr]
    rng.bit_generator.state = {
        "bit_generator": "PCG64",
        "state": {"state": (a[0] << 64) | a[1], "inc": (a[2] << 64) | a[3]},
        "has_uint32": a[4],
        "uinteger": a[5],
    }
