"""What a setting may be: rules of (check, what it wants), one per field of a config dataclass.

A config dataclass (RunConfig, each algorithm's Config) names its fields' rules in the class
attribute RULES ({field: rule}) and may define `check(self)` for the rules that tie fields
together; neuromotor.training.config.validate applies both. Numbers must be finite. The
rules of the fields several algorithms share are here, so a name means the same thing in
every algorithm.
"""

import math

from neuromotor.limits import MAX_LAYER, MAX_LAYERS


def integer(lo, hi):
    return (lambda v: isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi,
            f"an integer from {lo} to {hi}")


def number(lo, hi=math.inf, lo_open=False, hi_open=False):
    def ok(v):
        return (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                and (lo < v if lo_open else lo <= v) and (v < hi if hi_open else v <= hi))
    left, right = "(" if lo_open else "[", ")" if hi_open or hi == math.inf else "]"
    return ok, f"a finite number in {left}{lo:g}, {hi:g}{right}"


def choice(*options):
    return (lambda v: v in options), "one of " + ", ".join(options)


BOOL = (lambda v: isinstance(v, bool)), "true or false"
HIDDEN = (lambda v: isinstance(v, tuple) and 1 <= len(v) <= MAX_LAYERS
          and all(isinstance(n, int) and 1 <= n <= MAX_LAYER for n in v),
          f"1 to {MAX_LAYERS} hidden layer sizes, each from 1 to {MAX_LAYER}")
RATE = number(0, lo_open=True)

# An actor and a critic: what every algorithm here trains.
ACTOR_CRITIC = {
    "actor_hidden": HIDDEN,
    "critic_hidden": HIDDEN,
    "activation": choice("relu", "tanh"),
    "actor_lr": RATE,
    "critic_lr": RATE,
    "gamma": number(0, 1),
}
