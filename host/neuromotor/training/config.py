"""Run configuration: a RunSpec says what trains (env, algorithm, seeds) and how (the run's
own settings, RunConfig, and the algorithm's hyperparameter dataclass).

Both are set from defaults, then a TOML file (`--config f.toml`, flat keys or
tables [run] / [algo]), then `--set key=value` on the command line. Any key that
is not a field of either dataclass is an error, as is a value of the wrong type;
`validate` then checks every field against its dataclass's RULES (neuromotor.rules:
finite numbers only) before anything is written, for new runs and for configs read
back from a run directory (RunSpec.from_document: config.json's one reader).
"""

import dataclasses
import json
from dataclasses import dataclass, field

from neuromotor import reading, rules
from neuromotor.algos import algo_class
from neuromotor.envs import env_class
from neuromotor.envs.gymnasium_vec import check_kwargs, check_vector
from neuromotor.errors import UserError
from neuromotor.limits import MAX_AGENTS, MAX_COUNT, MAX_SEED, MAX_STEPS


@dataclass
class RunConfig:
    steps: int = 10_000             # env steps per agent
    eval_every: int = 1000          # deterministic evaluation interval (paper: 1000)
    eval_episodes: int = 10         # episodes per evaluation (paper: 10)
    checkpoint_every: int = 1000    # 0: only at the end
    shards: int = 0                 # population shards stepped in parallel processes; 0: one per CPU

    RULES = {
        "steps": rules.integer(1, MAX_STEPS),
        "eval_every": rules.integer(1, MAX_STEPS),
        "eval_episodes": rules.integer(1, MAX_COUNT),
        "checkpoint_every": rules.integer(0, MAX_STEPS),
        "shards": rules.integer(0, 4096),
    }

    def validate(self):
        validate(self)


def validate(*configs) -> None:
    """Check every field of each config against its class's RULES, then the config's own `check()`
    (the rules that tie its fields together); UserError on the first bad one."""
    for cfg in configs:
        own = getattr(type(cfg), "RULES", {})
        for f in dataclasses.fields(cfg):
            if f.name not in own:
                raise UserError(f"{type(cfg).__module__}.{type(cfg).__qualname__} has no rule for its setting "
                                f"{f.name!r}: add one to its RULES (see neuromotor.rules)")
            ok, wants = own[f.name]
            value = getattr(cfg, f.name)
            if not ok(value):
                raise UserError(f"{f.name} must be {wants}, got {value!r}")
        if hasattr(cfg, "check"):
            cfg.check()


def steps_per_iteration(algo_cfg) -> int:
    """Env steps per agent in one advance(): a whole rollout for PPO, one step for TD3 and SAC."""
    return getattr(algo_cfg, "num_envs", 1) * getattr(algo_cfg, "num_steps", 1)


def round_steps(steps: int, algo_cfg) -> int:
    """`steps` rounded up to whole iterations: what training to `steps` really does."""
    per = steps_per_iteration(algo_cfg)
    return -(-steps // per) * per


def parse_seeds(text: str) -> list:
    """'0-15' -> [0..15]; '0,3,5' -> [0, 3, 5]; mixtures like '0-3,8' work too."""
    bounds = []
    try:
        for part in text.split(","):
            lo, _, hi = part.strip().partition("-")
            bounds.append((int(lo), int(hi) if hi else int(lo)))
    except ValueError:
        raise UserError(f"bad seed list {text!r}; use e.g. 0-15 or 0,3,5") from None
    for lo, hi in bounds:
        if not 0 <= lo <= hi <= MAX_SEED:
            raise UserError(f"bad seed list {text!r}: seeds are 0 to {MAX_SEED}, ranges go low-high")
    count = sum(hi - lo + 1 for lo, hi in bounds)
    if count > MAX_AGENTS:  # checked before the list exists: it alone could exhaust memory
        raise UserError(f"--seeds {text!r} is {count} agents; at most {MAX_AGENTS} train in one run")
    seeds = [s for lo, hi in bounds for s in range(lo, hi + 1)]
    if len(set(seeds)) != len(seeds):
        raise UserError(f"bad seed list {text!r}: need distinct seeds")
    return seeds


def check_seed(seed: int) -> int:
    if not 0 <= seed <= MAX_SEED:
        raise UserError(f"--seed must be from 0 to {MAX_SEED}, got {seed}")
    return seed


def check_seeds(seeds) -> list:
    """A seed list read back from a run: distinct integers from 0 to MAX_SEED, at least one."""
    if (not isinstance(seeds, list) or not 1 <= len(seeds) <= MAX_AGENTS
            or not all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s <= MAX_SEED for s in seeds)
            or len(set(seeds)) != len(seeds)):
        shown = repr(seeds) if len(repr(seeds)) < 80 else repr(seeds)[:77] + "..."
        raise UserError(f"seeds must be a list of distinct integers from 0 to {MAX_SEED}, got {shown}")
    return seeds


def load_toml(path) -> dict:
    data = reading.read_toml(path, "config", limit=reading.MIB)
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
            out[key.strip()] = reading.parse_toml(f"v = {text}", f"--set {key.strip()}")["v"]
        except UserError:
            if reading.too_deep(text):
                raise
            out[key.strip()] = text  # a bare string such as activation=tanh
    return out


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _kind(default) -> str:
    """What a setting with this default takes, as a message says it."""
    if isinstance(default, bool):
        return "true or false"
    return {int: "an integer", float: "a number"}.get(type(default), f"a {type(default).__name__}")


# Other libraries' names for settings (SB3's, mostly): an unknown one suggests these.
SYNONYMS = {
    "learning_rate": ("actor_lr", "critic_lr"), "lr": ("actor_lr", "critic_lr"),
    "total_timesteps": ("steps",), "timesteps": ("steps",), "n_envs": ("num_envs",),
    "n_steps": ("num_steps",), "n_epochs": ("epochs",), "train_freq": ("update_every",),
    "net_arch": ("actor_hidden", "critic_hidden"),
    "hidden": ("actor_hidden", "critic_hidden"), "activation_fn": ("activation",),
    "ent_coef": ("ent_coef", "init_alpha"), "gae": ("gae_lambda",), "clip_range": ("clip_coef",),
    "action_noise": ("exploration_noise",), "target_policy_noise": ("policy_noise",),
    "target_noise_clip": ("noise_clip",),
}


def suggestion(key: str, known) -> str:
    """ "; did you mean X?" for an unknown setting: its known synonyms, else close spellings."""
    import difflib

    close = [k for k in SYNONYMS.get(key, ()) if k in known]
    close = close or difflib.get_close_matches(key, known, n=3, cutoff=0.6)
    return f"; did you mean {' or '.join(close)}?" if close else ""


def _coerce(name, field_type, default, value):
    if isinstance(default, tuple):
        if isinstance(value, str):
            value = [v for v in value.split(",") if v.strip()]
        if not isinstance(value, (list, tuple)):
            raise UserError(f"{name} must be a list, got {_shown(value)}")
        return tuple(_coerce(name, int, 0, v) for v in value)
    if isinstance(default, bool) or isinstance(value, bool):
        if not isinstance(value, bool) or not isinstance(default, bool):
            raise UserError(f"{name} must be {_kind(default)}, got {_shown(value)}")
        return value
    try:
        if isinstance(default, int):
            if isinstance(value, float) and not value.is_integer():
                raise ValueError
            return int(value)
        if isinstance(default, float):
            return float(value)
    except (TypeError, ValueError, OverflowError):
        raise UserError(f"{name} must be {_kind(default)}, got {_shown(value)}") from None
    return str(value)


def apply(overrides: dict, *configs):
    """Set each key on whichever config dataclass has that field; unknown keys are errors."""
    fields = {f.name: cfg for cfg in configs for f in dataclasses.fields(cfg)}
    for key, value in overrides.items():
        if key not in fields:
            raise UserError(f"unknown setting {key!r}{suggestion(key, fields)} (known: {', '.join(sorted(fields))})")
        cfg = fields[key]
        default = getattr(cfg, key)
        setattr(cfg, key, _coerce(key, type(default), default, value))


def to_dict(cfg) -> dict:
    return json.loads(json.dumps(dataclasses.asdict(cfg)))


@dataclass
class RunSpec:
    """Everything a run is: what trains and how. config.json holds it (to_document)."""

    env: str                        # built-in name, gymnasium id or module:attr
    algo: str                       # td3, sac or ppo
    seeds: list                     # one agent per seed
    run: RunConfig
    algo_config: object             # the algorithm's Config dataclass
    env_kwargs: dict = field(default_factory=dict)
    vector: str = "sync"            # how a gymnasium env's copies step (not what they compute)

    def env_factory(self):
        """The env factory (built-in class or gymnasium GymEnv) of this run."""
        return env_class(self.env, self.env_kwargs, self.vector)

    def validate(self) -> None:
        """Every field checked: the seeds, env and kwargs, then every setting against its rule."""
        check_seeds(self.seeds)
        check_kwargs(self.env_kwargs)
        check_vector(self.vector)
        self.env_factory()  # unknown env, bad kwargs or spaces -> UserError
        validate(self.run, self.algo_config)

    def to_document(self) -> dict:
        return {"env": self.env, "env_kwargs": self.env_kwargs, "vector": self.vector, "algo": self.algo,
                "seeds": self.seeds, "run": to_dict(self.run), "algo_config": to_dict(self.algo_config)}

    @classmethod
    def from_document(cls, doc, where) -> "RunSpec":
        """The RunSpec of a config.json document, every field checked (UserError naming `where`)."""
        try:
            env, algo, seeds = doc["env"], doc["algo"], doc["seeds"]
            run_settings, algo_settings = dict(doc["run"]), dict(doc["algo_config"])
            env_kwargs, vector = doc.get("env_kwargs", {}), doc.get("vector", "sync")
        except (ValueError, KeyError, TypeError) as exc:
            raise UserError(f"{where} is corrupted ({type(exc).__name__}: {exc})") from None
        if not isinstance(env, str) or not isinstance(algo, str):
            raise UserError(f"{where} is corrupted (env and algo must be names)")
        try:
            check_seeds(seeds)
            run_cfg, algo_cfg = RunConfig(), algo_class(algo).Config()
            check_kwargs(env_kwargs)
            spec = cls(env, algo, seeds, run_cfg, algo_cfg, env_kwargs, vector)
            check_vector(vector)
            spec.env_factory()
            apply(run_settings, run_cfg)
            apply(algo_settings, algo_cfg)
            validate(run_cfg, algo_cfg)
        except UserError as exc:
            raise UserError(f"{where}: {exc}") from None
        return spec
