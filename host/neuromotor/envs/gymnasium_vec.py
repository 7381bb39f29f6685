"""Any gymnasium environment as a registry env: a registered id or `module:attr`.

`GymEnv.probe(name, kwargs, vector)` makes one env to read its spaces (Box
observations of any shape, flattened; a bounded 1-D Box of actions), then
serves as the env factory the algorithms call: `GymEnv(num_envs)` is a
`GymVec`, which steps gymnasium's own vector env (SyncVectorEnv, or
AsyncVectorEnv with one worker process per env for `vector="async"`) with its
auto-reset disabled (async inside a population shard's worker process
steps synchronously there: shards are already processes), so that neuromotor.envs.autoreset.AutoReset restarts
episodes exactly as it does for the built-in envs.

Seeding: a reset of env i draws from rngs[i], the Generator of the agent that
owns env i. The generator's state is handed to the env as its `np_random`
(gymnasium's source of randomness in `reset`), and the state the env leaves
it in is copied back, so agent k's stream advances by exactly what the env
drew, in the main process or in a worker. An env that draws its initial state
the way a built-in env does therefore starts from the same states (Pendulum-v1
and `pendulum`: the same uniform draw). Randomness an env uses inside `step`
comes from its own copy of that generator and leaves the agent's stream alone.

An arbitrary env cannot be snapshotted (`restorable = False`): a resumed run
restarts the episodes that were in flight (see AutoReset.restore).

What the env returns is checked at every step: an exception in `step` or
`reset`, or a NaN/inf observation or reward, is a UserError naming the env, so
training stops before it evaluates or checkpoints anything.
"""

import dataclasses
import difflib
import functools
import importlib
import json
import multiprocessing

import numpy as np

from neuromotor.errors import UserError
from neuromotor.registry import plugin_parts

# Episodes of an env without a time limit of its own are cut here (gymnasium's MuJoCo default).
DEFAULT_MAX_EPISODE_STEPS = 1000
MAX_EPISODE_STEPS = 10**9  # an episode longer than any run
VECTOR_MODES = ("sync", "async")
RNG_ATTR = "neuromotor_rng"  # the wrapper attribute that carries a Generator state in and out


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    text = text[0] if text else ""
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__


def _all_finite(x: np.ndarray) -> bool:
    # count_nonzero costs a tenth of .all()'s reduction on arrays of a step's size
    return np.count_nonzero(np.isfinite(x)) == x.size


def _gymnasium():
    try:
        import gymnasium
    except ImportError:
        raise UserError("gymnasium environments need the gymnasium package: pip install gymnasium") from None
    return gymnasium


def _import_attr(name: str):
    """`module:attr` -> the attribute, importing the module from the working directory
    or the installed packages. None when the module has no such attribute."""
    module, attr = plugin_parts(name, "environment", "mypackage.envs:MyRobotEnv")
    try:
        mod = importlib.import_module(module)
    except Exception as exc:  # an import error or any error the user's module raises while importing
        raise UserError(f"environment {name!r}: cannot import {module!r} ({_one_line(exc)})") from None
    obj = mod
    for part in attr.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


class _AgentRng:
    """Mixed into a gymnasium.Wrapper (_wrapper_class): the `neuromotor_rng` attribute reads and
    replaces the wrapped env's np_random by a bit-generator state (a dict that pickles)."""

    def __init__(self, env, max_episode_steps: int):
        super().__init__(env)
        self.neuromotor_max_episode_steps = max_episode_steps
        # Steps go straight to the wrapped env: this wrapper only carries the Generator, and
        # a wrapper's step is one more Python call per env and step.
        self.step = env.step

    @property
    def neuromotor_rng(self):
        return self.env.np_random.bit_generator.state

    @neuromotor_rng.setter
    def neuromotor_rng(self, state):
        if state is not None:
            # A Generator of its own for the env (never the agent's object), made once: later
            # states are set into it (a new bit generator costs ten times as much).
            own = self.__dict__.get("_neuromotor_generator")
            if own is None or type(own.bit_generator).__name__ != state["bit_generator"]:
                own = self.__dict__["_neuromotor_generator"] = np.random.Generator(
                    getattr(np.random, state["bit_generator"])())
            own.bit_generator.state = state
            if self.env.np_random is not own:
                self.env.np_random = own

    def draw_from(self, relay) -> None:
        """The next reset draws from `relay`, a Generator the envs of one agent that reset in the
        same call share, in env order."""
        self.__dict__["_neuromotor_relay"] = relay
        self.env.np_random = relay

    def reset(self, **kwargs):
        result = self.env.reset(**kwargs)
        relay = self.__dict__.pop("_neuromotor_relay", None)
        if relay is not None:
            # The agent's next env draws on from where this one stopped; this env keeps a
            # Generator of its own in that state for what it draws while stepping.
            state = self.env.np_random.bit_generator.state
            relay.bit_generator.state = state
            self.neuromotor_rng = state
        return result


@functools.lru_cache(maxsize=None)
def _wrapper_class():
    gymnasium = _gymnasium()
    return type("AgentRng", (_AgentRng, gymnasium.Wrapper), {})


def _time_limit(env):
    from gymnasium.wrappers import TimeLimit

    while env is not None:
        if isinstance(env, TimeLimit):
            return env._max_episode_steps
        env = getattr(env, "env", None)
    return None


def _make_registered(gymnasium, env_id: str, kwargs: dict):
    """gymnasium.make without the env checker and the OrderEnforcing and TimeLimit wrappers
    (each one more Python call per env and step): GymVec resets every env before its first
    step and counts every env's steps to its time limit itself. Returns the env and its time
    limit (kwargs' or the registry's, or None)."""
    kwargs = dict(kwargs)
    spec = gymnasium.spec(env_id)
    limit = kwargs.pop("max_episode_steps", None) or spec.max_episode_steps
    spec = dataclasses.replace(spec, order_enforce=False, max_episode_steps=None)
    return gymnasium.make(spec, disable_env_checker=True, **kwargs), limit


def make_env(name: str, kwargs: dict):
    """One gymnasium env for `name` (an id or module:attr) with `kwargs`, wrapped so that its
    np_random can be set. Its episodes end at its own time limit, kwargs' max_episode_steps,
    or DEFAULT_MAX_EPISODE_STEPS: the wrapper's `neuromotor_max_episode_steps`, where GymVec
    truncates them as gymnasium's TimeLimit would."""
    gymnasium = _gymnasium()
    kwargs = dict(kwargs)
    try:
        if ":" in name:
            target = _import_attr(name)
            if target is None:  # gymnasium's own "module:Env-v0": the import registers the id
                env_id = name.partition(":")[2]
                if env_id not in gymnasium.registry:
                    raise UserError(f"environment {name!r}: {name.partition(':')[0]!r} has no attribute or "
                                    f"registered gymnasium id {env_id!r}")
                env, limit = _make_registered(gymnasium, env_id, kwargs)
            elif not callable(target):
                raise UserError(f"environment {name!r} is a {type(target).__name__}, not a gymnasium.Env "
                                "class or a function that returns one")
            else:
                limit = kwargs.pop("max_episode_steps", None)
                env = target(**kwargs)
                if not isinstance(env, gymnasium.Env):
                    raise UserError(f"environment {name!r} returned a {type(env).__name__}, not a gymnasium.Env")
                limit = limit or _time_limit(env)
        else:
            env, limit = _make_registered(gymnasium, name, kwargs)
    except UserError:
        raise
    except (Exception, SystemExit) as exc:  # SystemExit: a module that calls sys.exit() as it is imported
        why = f"it called sys.exit({exc.code!r})" if isinstance(exc, SystemExit) else _one_line(exc)
        raise UserError(f"environment {name!r} could not be made with kwargs {json.dumps(kwargs, default=str)} "
                        f"({why})") from None
    limit = limit or DEFAULT_MAX_EPISODE_STEPS
    if isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or not 1 <= limit <= MAX_EPISODE_STEPS:
        env.close()
        raise UserError(f"environment {name!r}: max_episode_steps must be an integer from 1 to {MAX_EPISODE_STEPS}, "
                        f"got {str(limit)[:40]!r}")
    return _wrapper_class()(env, int(limit))


def _check_name(name: str, builtin=()) -> None:
    """Refuse a name that is neither module:attr nor a registered id, before making anything
    (`builtin`: the built-in names, offered beside gymnasium's)."""
    if ":" in name:
        return
    gymnasium = _gymnasium()
    if name not in gymnasium.registry:
        near = difflib.get_close_matches(name, list(builtin) + list(gymnasium.registry), n=3)
        raise UserError(f"unknown environment {name!r}; built-in: {', '.join(sorted(builtin))}; or a registered "
                        "gymnasium id (e.g. Pendulum-v1) or module:attr"
                        + (f" (did you mean {', '.join(near)}?)" if near else ""))


def check_kwargs(kwargs) -> dict:
    """env_kwargs must be a table whose keys are names (they become keyword arguments)."""
    if not isinstance(kwargs, dict) or not all(isinstance(k, str) and k.isidentifier() for k in kwargs):
        raise UserError(f"env_kwargs must be a table of keyword arguments, got {kwargs!r}")
    return kwargs


def check_vector(vector) -> str:
    if not isinstance(vector, str) or vector not in VECTOR_MODES:
        raise UserError(f"vector must be one of {', '.join(VECTOR_MODES)}, got {vector!r}")
    return vector


def _space_text(space) -> str:
    text = " ".join(str(space).split())
    return text if len(text) <= 80 else text[:77] + "..."


class GymEnv:
    """The factory of one gymnasium env spec: call it with num_envs for a GymVec.
    Class-like attributes (obs_dim, act_dim, action bounds, max_episode_steps) come from
    one probe env. It pickles, so population shards rebuild their envs in their workers."""

    restorable = False

    def __init__(self, name, kwargs, vector, obs_shape, action_low, action_high, max_episode_steps):
        self.name, self.kwargs, self.vector = name, dict(kwargs), vector
        self.obs_shape = tuple(obs_shape)
        self.obs_dim = int(np.prod(self.obs_shape, dtype=np.int64))
        self.act_dim = len(action_low)
        self.action_low = np.asarray(action_low, np.float32)
        self.action_high = np.asarray(action_high, np.float32)
        self.max_episode_steps = int(max_episode_steps)
        if ":" not in name:  # `eval --gymnasium` evaluates in gymnasium's own env: this one
            self.gym_id, self.gym_kwargs = name, self.kwargs

    @property
    def __name__(self) -> str:
        return self.name

    @classmethod
    def probe(cls, name: str, kwargs: dict, vector: str = "sync", builtin=()) -> "GymEnv":
        gymnasium = _gymnasium()
        check_vector(vector)
        _check_name(name, builtin)
        env = make_env(name, check_kwargs(kwargs))
        try:
            # A class that never sets them has them only as annotations (AttributeError).
            obs_space, act_space = getattr(env, "observation_space", None), getattr(env, "action_space", None)
            if not isinstance(obs_space, gymnasium.spaces.Box):
                raise UserError(f"environment {name!r} observes a {_space_text(obs_space)} space; neuromotor "
                                "trains on Box observations only")
            if not isinstance(act_space, gymnasium.spaces.Box) or len(act_space.shape) != 1:
                raise UserError(f"environment {name!r} acts in a {_space_text(act_space)} space; neuromotor "
                                "trains on a one-dimensional Box of continuous actions only")
            if int(np.prod(obs_space.shape)) < 1 or act_space.shape[0] < 1:
                raise UserError(f"environment {name!r} observes {_space_text(obs_space)} and acts in "
                                f"{_space_text(act_space)}: a policy needs at least one number of each")
            low, high = act_space.low.astype(np.float64), act_space.high.astype(np.float64)
            if not (np.isfinite(low).all() and np.isfinite(high).all()) or (low >= high).any():
                raise UserError(f"environment {name!r} acts in an unbounded {_space_text(act_space)}; actions are "
                                "mapped from [-1, 1] to finite bounds: give the action space finite low < high")
            lo32, hi32 = low.astype(np.float32), high.astype(np.float32)
            if not (np.isfinite(lo32).all() and np.isfinite(hi32).all()):
                raise UserError(f"environment {name!r}: action bounds {_space_text(act_space)} do not fit in float32")
            return cls(name, kwargs, vector, obs_space.shape, lo32, hi32, env.neuromotor_max_episode_steps)
        finally:
            env.close()

    def __call__(self, num_envs: int) -> "GymVec":
        return GymVec(self, num_envs)


class GymVec:
    """The registry protocol (see neuromotor.envs) over a gymnasium vector env of num_envs."""

    restorable = False

    def __init__(self, factory: GymEnv, num_envs: int):
        gymnasium = _gymnasium()
        from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv

        self.name = factory.name
        self.num_envs, self.obs_dim, self.act_dim = num_envs, factory.obs_dim, factory.act_dim
        self.action_low, self.action_high = factory.action_low, factory.action_high
        self.max_episode_steps = factory.max_episode_steps
        self.truncated = np.zeros(num_envs, bool)  # ended by the env's own time limit at the last step
        self._ended = np.zeros(num_envs, bool)     # ended at the last step and not reset since
        self._reset_pending = False                # any of _ended
        self._elapsed = np.zeros(num_envs, np.int64)  # steps since each env's reset, for the time limit
        thunks = [functools.partial(make_env, factory.name, factory.kwargs)] * num_envs
        try:
            # A population shard's worker process (daemonic) cannot start processes of its own;
            # its envs step in it, the shards being the parallelism.
            if factory.vector == "async" and not multiprocessing.current_process().daemon:
                # The workers' errors come back as exceptions this class reports in one line;
                # gymnasium would also log each worker's traceback.
                gymnasium.logger.min_level = max(gymnasium.logger.min_level, gymnasium.logger.ERROR + 1)
                self.vec = AsyncVectorEnv(thunks, copy=False, context="forkserver",
                                          autoreset_mode=AutoresetMode.DISABLED)
            else:
                self.vec = SyncVectorEnv(thunks, copy=False, autoreset_mode=AutoresetMode.DISABLED)
        except UserError:
            raise
        except Exception as exc:
            raise UserError(f"environment {self.name!r}: {num_envs} envs could not be started ({_one_line(exc)})") \
                from None
        self._act_dtype = self.vec.single_action_space.dtype
        # The vector env resets a subset only once every env has an observation; these
        # first states come from the envs' own generators and are never used.
        self._guard("reset", self.vec.reset)

    def _guard(self, what: str, fn, *args, **kwargs):
        """fn(*args, **kwargs); an exception the env raised becomes a one-line UserError."""
        try:
            return fn(*args, **kwargs)
        except UserError:
            raise
        except Exception as exc:
            raise UserError(f"environment {self.name!r} raised in {what} ({_one_line(exc)})") from None

    def _observations(self, obs, what: str) -> np.ndarray:
        out = np.array(obs, np.float32).reshape(self.num_envs, self.obs_dim)
        if not _all_finite(out):
            i = int(np.flatnonzero(~np.isfinite(out).all(axis=1))[0])
            raise UserError(f"environment {self.name!r} returned a NaN or inf observation from {what} "
                            f"(env {i}: {out[i].tolist()[:8]}); stopped before it reached training")
        return out

    def reset(self, rngs, mask=None) -> np.ndarray:
        mask = np.ones(self.num_envs, bool) if mask is None else np.asarray(mask, bool)
        pending = list(np.flatnonzero(mask))
        obs = None
        # Envs that share a Generator (an agent's envs) draw from it one after the other, in
        # env order. A SyncVectorEnv resets its envs in env order in this process: one call
        # with an agent's envs relaying one Generator. Elsewhere each round resets at most one
        # env per Generator.
        envs = getattr(self.vec, "envs", None)
        if envs is not None and pending:
            obs = self._reset_relayed(envs, rngs, mask)
            pending = []
        while pending:
            now, later, taken = np.zeros(self.num_envs, bool), [], set()
            for i in pending:
                if id(rngs[i]) in taken:
                    later.append(i)
                else:
                    taken.add(id(rngs[i]))
                    now[i] = True
            obs = self._reset_round(rngs, now)
            pending = later
        self._ended &= ~mask
        self._reset_pending = np.count_nonzero(self._ended) > 0
        self.truncated[mask] = False
        self._elapsed[mask] = 0
        return self._observations(obs, "reset")

    def _reset_relayed(self, envs, rngs, mask):
        relays = {}  # id of an agent's Generator -> (it, a copy its envs draw from in turn)
        for i in np.flatnonzero(mask):
            if id(rngs[i]) not in relays:
                relay = np.random.Generator(type(rngs[i].bit_generator)())
                relay.bit_generator.state = rngs[i].bit_generator.state
                relays[id(rngs[i])] = rngs[i], relay
            self._guard("reset", envs[i].draw_from, relays[id(rngs[i])][1])
        obs, _ = self._guard("reset", self.vec.reset, options={"reset_mask": mask})
        for rng, relay in relays.values():
            rng.bit_generator.state = relay.bit_generator.state
        return obs

    def _reset_round(self, rngs, mask):
        states = [rngs[i].bit_generator.state if m else None for i, m in enumerate(mask)]
        self._guard("reset", self.vec.set_attr, RNG_ATTR, states)
        obs, _ = self._guard("reset", self.vec.reset, options={"reset_mask": mask})
        after = self._guard("reset", self.vec.get_attr, RNG_ATTR)
        for i in np.flatnonzero(mask):
            rngs[i].bit_generator.state = after[i]
        return obs

    def step(self, actions):
        actions = np.asarray(actions)
        if not _all_finite(actions):
            raise UserError(f"NaN or inf actions reached environment {self.name!r}: training diverged; "
                            "lower the learning rates (--set actor_lr=..., critic_lr=...) and train a new run")
        if self._reset_pending:  # an evaluation steps past episode ends: restart those envs, whose rewards it ignores
            self._guard("reset", self.vec.reset, options={"reset_mask": self._ended.copy()})
            self._elapsed[self._ended] = 0
        # (np.minimum/np.maximum: np.clip's Python-level checks cost more than the clamp)
        actions = np.minimum(np.maximum(actions, self.action_low), self.action_high).astype(self._act_dtype,
                                                                                           copy=False)
        obs, reward, terminated, truncated, _ = self._guard("step", self.vec.step, actions)
        reward = np.asarray(reward, np.float32)
        if not _all_finite(reward):
            i = int(np.flatnonzero(~np.isfinite(reward))[0])
            raise UserError(f"environment {self.name!r} returned a non-finite reward ({reward[i]}) in env {i}; "
                            "stopped before it reached training")
        terminated = np.array(terminated, bool)
        # gymnasium's TimeLimit, for all envs at once (make_env leaves it out)
        self._elapsed += 1
        limit = np.greater_equal(self._elapsed, self.max_episode_steps)
        limit |= truncated
        np.greater(limit, terminated, out=self.truncated)  # truncated and not terminated
        np.logical_or(terminated, self.truncated, out=self._ended)
        self._reset_pending = np.count_nonzero(self._ended) > 0
        return self._observations(obs, "step"), reward, terminated

    def get_state(self) -> np.ndarray:
        return np.zeros((self.num_envs, 0))

    def set_state(self, state) -> None:
        raise UserError(f"environment {self.name!r} cannot be restored from a snapshot; its episodes restart")

    def close(self) -> None:
        self.vec.close()
