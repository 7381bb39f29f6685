"""Run configuration: the run's own settings plus the algorithm's hyperparameter dataclass.

Both are set from defaults, then a TOML file (`--config f.toml`, flat keys or
tables [run] / [algo]), then `--set key=value` on the command line. Any key that
is not a field of either dataclass is an error, as is a value of the wrong type.
"""

import dataclasses
import json
import sys
from dataclasses import dataclass

from neuromotor.errors import UserError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass
class RunConfig:
    steps: int = 10_000             # env steps per agent
    eval_every: int = 1000          # deterministic evaluation interval (paper: 1000)
    eval_episodes: int = 10         # episodes per evaluation (paper: 10)
    checkpoint_every: int = 1000    # 0: only at the end
    shards: int = 0                 # population shards stepped in parallel processes; 0: one per CPU

    def validate(self):
        if self.steps <= 0:
            raise UserError(f"steps must be positive, got {self.steps}")
        for name in ("eval_every", "eval_episodes"):
            if getattr(self, name) <= 0:
                raise UserError(f"{name} must be positive, got {getattr(self, name)}")
        if self.shards < 0:
            raise UserError(f"shards must be >= 0, got {self.shards}")
        if self.checkpoint_every < 0:
            raise UserError(f"checkpoint_every must be >= 0, got {self.checkpoint_every}")


def parse_seeds(text: str) -> list:
    """'0-15' -> [0..15]; '0,3,5' -> [0, 3, 5]; mixtures like '0-3,8' work too."""
    seeds = []
    try:
        for part in text.split(","):
            lo, _, hi = part.strip().partition("-")
            seeds.extend(range(int(lo), int(hi) + 1) if hi else [int(lo)])
    except ValueError:
        raise UserError(f"bad seed list {text!r}; use e.g. 0-15 or 0,3,5") from None
    if not seeds or len(set(seeds)) != len(seeds) or min(seeds) < 0:
        raise UserError(f"bad seed list {text!r}: need distinct non-negative seeds")
    return seeds


def load_toml(path) -> dict:
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as exc:
        raise UserError(f"cannot read config {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"malformed TOML in {path}: {exc}") from None
    flat = {}
    for key, value in data.items():
        if key in ("run", "algo") and isinstance(value, dict):
            flat.update(value)
        else:
            flat[key] = value
    return flat


def parse_set(items) -> dict:
    """['batch_size=100', 'actor_hidden=[64, 64]'] -> values parsed as TOML where possible."""
    out = {}
    for item in items or ():
        key, eq, text = item.partition("=")
        if not eq or not key.strip():
            raise UserError(f"--set expects key=value, got {item!r}")
        try:
            out[key.strip()] = tomllib.loads(f"v = {text}")["v"]
        except tomllib.TOMLDecodeError:
            out[key.strip()] = text  # a bare string such as activation=tanh
    return out


def _coerce(name, field_type, default, value):
    if isinstance(default, tuple):
        if isinstance(value, str):
            value = [v for v in value.split(",") if v.strip()]
        if not isinstance(value, (list, tuple)):
            raise UserError(f"{name} must be a list, got {value!r}")
        return tuple(_coerce(name, int, 0, v) for v in value)
    if isinstance(default, bool) or isinstance(value, bool):
        if not isinstance(value, bool) or not isinstance(default, bool):
            raise UserError(f"{name} must be a {type(default).__name__}, got {value!r}")
        return value
    try:
        if isinstance(default, int):
            if isinstance(value, float) and not value.is_integer():
                raise ValueError
            return int(value)
        if isinstance(default, float):
            return float(value)
    except (TypeError, ValueError):
        raise UserError(f"{name} must be a {type(default).__name__}, got {value!r}") from None
    return str(value)


def apply(overrides: dict, *configs):
    """Set each key on whichever config dataclass has that field; unknown keys are errors."""
    fields = {f.name: cfg for cfg in configs for f in dataclasses.fields(cfg)}
    for key, value in overrides.items():
        if key not in fields:
            raise UserError(f"unknown setting {key!r}; known: {', '.join(sorted(fields))}")
        cfg = fields[key]
        default = getattr(cfg, key)
        setattr(cfg, key, _coerce(key, type(default), default, value))


def to_dict(cfg) -> dict:
    return json.loads(json.dumps(dataclasses.asdict(cfg)))
