"""A population split into shards that step in parallel worker processes.

Agents are independent, so a population of P agents can be cut into S
contiguous shards, each a full algorithm instance of its own. With S > 1 every
shard lives in a worker process; they meet only at the step counts the caller
names (evaluations, checkpoints, progress updates). Agent k computes exactly
the same numbers in any shard layout. Processes, not threads: a training step
is ~150 NumPy calls on small arrays whose dispatch holds the GIL; on 2 cores a
16-agent TD3 population took 6.0 ms per step in two threads and 3.5 ms in two
processes. With one shard this is a transparent in-process wrapper (`local`).
The shard count is part of the run config, because the checkpoint holds one
state per shard.
"""

import multiprocessing
import os
import signal
import time

import numpy as np
from threadpoolctl import threadpool_limits

from neuromotor.lifeline import die_with_parent
from neuromotor.training.checkpoint import IDENTITY_PREFIX as checkpoint_identity_prefix

_context = None


def _mp_context():
    """forkserver: workers start from a clean process, not a fork of a parent that may
    run threads (progress bar, MuJoCo pools). Every worker holds the forkserver open, so
    the forkserver ends with this process (the lifeline) and each worker with it (_serve)."""
    global _context
    if _context is None:
        _context = multiprocessing.get_context("forkserver")
        _context.set_forkserver_preload(["numpy", "neuromotor._forkserver_lifeline"])
    return _context


def _serve(conn, settings, algo_cls, cfg, env_factory, seeds):
    """A shard's worker: builds its algorithm, then runs method calls until the pipe closes
    (the parent closed it, or died). Every request gets one reply, (True, result) or
    (False, exception); the first reply says whether the algorithm could be built."""
    # A shard busy in a long advance() would not see the pipe close: end with the forkserver,
    # which ends with the training process, however that process ended.
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it then closes the pipe
    os.environ.update(settings)
    try:
        with threadpool_limits(1, "blas"):
            _answer(conn, algo_cls, cfg, env_factory, seeds)
    except (EOFError, ConnectionError, KeyboardInterrupt):  # the parent is gone or going: nothing to say
        pass


def _advance(algo, until):
    algo.advance()
    while until is not None and algo.steps < until:
        algo.advance()


def _answer(conn, algo_cls, cfg, env_factory, seeds):
    try:
        algo = algo_cls(cfg, env_factory, seeds)
    except Exception as e:
        conn.send((False, e))
        return
    conn.send((True, None))
    while True:
        name, args = conn.recv()
        try:
            if name == "advance":
                _advance(algo, *args)
                result = (algo.steps, algo.pop_episode_returns())
            elif name == "process_time":
                result = time.process_time()
            else:
                result = getattr(algo, name)(*args)
        except Exception as e:
            conn.send((False, e))
        else:
            conn.send((True, result))


class _Worker:
    def __init__(self, index, algo_cls, cfg, env_factory, seeds):
        self.index = index
        self.conn, child = _mp_context().Pipe()
        # Process-wide settings (e.g. --threads) travel as NEUROMOTOR_* variables: the
        # forkserver's environment is that of whenever it started.
        settings = {k: v for k, v in os.environ.items() if k.startswith("NEUROMOTOR_")}
        self.process = _mp_context().Process(target=_serve, args=(child, settings, algo_cls, cfg, env_factory, seeds),
                                             name=f"neuromotor-shard{index}", daemon=True)
        self.process.start()
        child.close()

    def send(self, name, *args):
        self.conn.send((name, args))

    def result(self):
        try:
            ok, value = self.conn.recv()
        except EOFError:
            raise RuntimeError(f"population shard {self.index} (pid {self.process.pid}) died") from None
        if not ok:
            raise value
        return value

    def close(self):
        self.conn.close()
        self.process.join(timeout=10)


def shard_bounds(agents: int, shards: int) -> list:
    """Where each shard's agents start, and the end: shard i trains agents bounds[i] to bounds[i + 1] - 1."""
    shards = max(1, min(shards, agents))
    return [int(b) for b in np.linspace(0, agents, shards + 1).round()]


def shard_prefix(bounds: list, agent: int) -> "tuple[str, int]":
    """(checkpoint key prefix of the shard that trains `agent`, its index within the shard)."""
    if len(bounds) == 2:
        return "", agent  # one shard trains in this process: no prefix
    i = int(np.searchsorted(bounds[:-1], agent, side="right")) - 1
    return f"shard{i}.", agent - bounds[i]


def identity_arrays(identity: dict) -> dict:
    """{"env": name, ...} as the checkpoint's "run.<key>" arrays (UTF-8 bytes)."""
    return {f"{checkpoint_identity_prefix}{k}": np.frombuffer(v.encode(), np.uint8).copy()
            for k, v in identity.items()}


class Sharded:
    """`identity` ({"env": name, "algo": name}) is saved with the state as "run.<key>" arrays,
    so a checkpoint can say which run it belongs to (see checkpoint.load)."""

    def __init__(self, algo_cls, cfg, env_factory, seeds, shards: int, identity: dict = None):
        seeds = list(seeds)
        self._has_scalars = hasattr(algo_cls, "scalars")
        self._recurrent = hasattr(algo_cls, "begin_episodes")
        self.identity = identity_arrays(identity or {})
        bounds = shard_bounds(len(seeds), shards)
        self.seeds = seeds
        self.first_agent = list(bounds[:-1])
        self.shard_seeds = [seeds[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
        self.local = algo_cls(cfg, env_factory, seeds) if len(bounds) == 2 else None
        self._workers = [] if self.local else [_Worker(i, algo_cls, cfg, env_factory, s)
                                               for i, s in enumerate(self.shard_seeds)]
        self._steps = 0
        self._episodes = [[] for _ in seeds]
        try:
            for w in self._workers:
                w.result()  # built, or the reason it could not be (bad hyperparameters)
        except BaseException:
            self.close()
            raise

    def _call_all(self, name, *per_worker_args) -> list:
        for i, w in enumerate(self._workers):
            w.send(name, *(a[i] for a in per_worker_args))
        return [w.result() for w in self._workers]

    def close(self) -> None:
        for w in self._workers:
            w.close()
        self._workers = []

    def process_time(self) -> float:
        """CPU seconds of this process and every shard worker (time.process_time sees only this one)."""
        return time.process_time() + sum(self._call_all("process_time"))

    @property
    def steps(self) -> int:
        return self.local.steps if self.local else self._steps

    def advance(self, until: int = None) -> None:
        """One step of the algorithm, or as many as it takes to reach step `until`: shards
        then run that far on their own, without waiting for each other at every step."""
        if self.local:
            _advance(self.local, until)
            return
        results = self._call_all("advance", [until] * len(self._workers))
        self._steps = results[0][0]
        for first, (_, finished) in zip(self.first_agent, results):
            for k, returns in enumerate(finished):
                self._episodes[first + k].extend(returns)

    def act(self, obs: np.ndarray) -> np.ndarray:
        if self.local:
            return self.local.act(obs)
        parts = [obs[a:a + len(s)] for a, s in zip(self.first_agent, self.shard_seeds)]
        return np.concatenate(self._call_all("act", parts))

    def begin_episodes(self, envs: int) -> None:
        """A recurrent algorithm's act() starts each of its `envs` envs per agent from the
        initial state (a no-op for the others, whose act() keeps no state)."""
        if not self._recurrent:
            return
        if self.local:
            self.local.begin_episodes(envs)
        else:
            self._call_all("begin_episodes", [envs] * len(self._workers))

    def pop_episode_returns(self) -> list:
        if self.local:
            return self.local.pop_episode_returns()
        out, self._episodes = self._episodes, [[] for _ in self.seeds]
        return out

    def scalars(self) -> dict:
        """The algorithm's per-agent scalars (see neuromotor.training.tensorboard), shards joined; {} without them."""
        if not self._has_scalars:
            return {}
        if self.local:
            return self.local.scalars()
        parts = self._call_all("scalars")
        return {tag: np.concatenate([np.broadcast_to(np.asarray(p[tag], np.float64), (len(s),))
                                     for p, s in zip(parts, self.shard_seeds)]) for tag in parts[0]}

    def policy_spec(self, agent: int):
        if self.local:
            return self.local.policy_spec(agent)
        i = int(np.searchsorted(self.first_agent, agent, side="right")) - 1
        w = self._workers[i]
        w.send("policy_spec", agent - self.first_agent[i])
        return w.result()

    def state_dict(self) -> dict:
        if self.local:
            return {**self.local.state_dict(), **self.identity}
        return {**{f"shard{i}.{k}": v for i, d in enumerate(self._call_all("state_dict")) for k, v in d.items()},
                **self.identity}

    def start_from(self, state: dict) -> None:
        """Every agent's networks from a one-agent run's state_dict (the algorithm's start_from)."""
        state = {k: v for k, v in state.items() if not k.startswith(checkpoint_identity_prefix)}
        if self.local:
            self.local.start_from(state)
        else:
            self._call_all("start_from", [state] * len(self._workers))

    def load_state_dict(self, arrays: dict) -> None:
        arrays = {k: v for k, v in arrays.items() if not k.startswith(checkpoint_identity_prefix)}
        if self.local:
            self.local.load_state_dict(arrays)
            return
        parts = []
        for i in range(len(self._workers)):
            prefix = f"shard{i}."
            parts.append({k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)})
        self._call_all("load_state_dict", parts)
        self._steps = int(arrays["shard0.steps"])
