"""How fast can one core train at all? FLOPs per training step, counted from the layer
shapes, against this core's measured peak FP32 multiply-add rate.

    .venv/bin/python benchmarks/arithmetic_bound.py                # everything, about 20 s on an idle machine
    .venv/bin/python benchmarks/arithmetic_bound.py --no-train     # counts, peak and SGEMM only
    .venv/bin/python benchmarks/arithmetic_bound.py --sb3-sac-ms 14.0 --rltools-s 1.80
                                                                   # the peers' times of your own run

A speed target says "train N steps in at most T seconds". Whatever the code, a step
cannot take less time than its floating-point operations at the core's peak rate, so
a target that needs more GFLOP/s than the peak is out of reach at this precision, and
one that needs nearly the peak is out of reach in practice (nothing runs every
operation of a training step at peak). The targets:

  td3-population  TD3 Pendulum 10k steps (RLtools' configuration: actor 3-64-64-1, twin
                  critics 4-64-64-1, batch 100, actor and targets every 2nd step), CPU
                  seconds per agent of a population <= 0.67 x RLtools' single-agent time
  td3-sb3         the same run, one agent, with SB3's update (`shared_minibatch`, the
                  matched row of td3_pendulum.py): SB3 TD3's time / ours >= 20
  sac-halfcheetah SAC HalfCheetah-v5 100k steps (benchmarks/sac.py's `neuromotor` row:
                  256-256 networks, batch 256, one minibatch and one gradient step per env
                  step after 10k warm-up steps): time <= 1/4 of SB3 SAC's, per update
  sac-pendulum    SAC Pendulum 10k steps (sac.Config's defaults, RLtools' pendulum SAC: actor
                  3-64-64-2 [mean, log_std], twin critics 4-64-64-1, batch 100, an update per
                  step after 100 warm-up steps), one thread: the native backend's CPU time
                  <= NumPy SAC's / 3, each in its minibatch scheme: `sac-pendulum` RLtools'
                  (the default), `sac-pendulum-shared` SB3's (benchmarks/sac.py's rows)
  sac-quadrotor   `neuromotor train quadrotor` with its defaults (SAC's quadrotor preset, read
                  from neuromotor: its networks, batch, minibatch scheme and steps), one
                  thread: CPU seconds <= RLtools' L2F SAC zoo run (--rltools-l2f-s, its
                  wall time in benchmarks/quadrotor.py --rltools on this machine)

Counting (exact, from the shapes; a multiply-add is 2 FLOPs, the convention of the peak):
a dense layer n_in -> n_out over B samples is B n_in n_out multiply-adds forward, as many
for its weight gradient and as many for its input gradient; elementwise work (bias adds
and sums, activations and their derivatives, targets, losses, Adam, polyak) is counted
as one FLOP per operation (tanh, exp and log as one each). Three kinds of count:

  native, numpy   what the code runs: the native TD3 step (device/native/nm_host/nm_host.c
                  with nm_mlp_train.h: target nets on both critic minibatches at once,
                  the critic's input gradient for the action columns in the actor update, Adam
                  in 13 operations; the shapes' products, not the masked tail lanes of
                  its AVX2 tiles), the native SAC step (nm_host/nm_host_sac.h with
                  nm_sac_steps.h: the same, and the actor's gradient through both
                  critics, the other critic's samples with a zero gradient), and the NumPy TD3 and SAC (neuromotor.nn.mlp: biases
                  folded into augmented matrices with a constant column, Adam over those
                  too; SAC's actor gradient through both critics). The NumPy counts are
                  checked at every run against the matrix products the NumPy trainers
                  execute (a SAC HalfCheetah step, a SAC pendulum step per scheme, two
                  TD3 steps, counted inside neuromotor.nn.mlp); the native counts are
                  not (the C kernels count nothing, and this machine exposes no
                  floating-point event counters to perf)
  minimum         what the algorithm needs: every forward pass it uses, backward passes
                  with only the gradients it uses (no weight gradients of the critics in
                  the actor update, no input gradient of a first layer except the critic's
                  action columns, SAC's actor gradient through the smaller critic only),
                  Adam in 12 operations and polyak in 3 per parameter

TD3 and SAC are counted in two minibatch schemes: `rltools` (each critic learns from its
own minibatch with its own targets, the actor from a third: neuromotor's default and
RLtools') and `shared` (one minibatch per step: SB3's, and neuromotor's with
shared_minibatch); they differ by the targets of the second critic minibatch. Each target
uses the minimum of the scheme its comparison runs (td3-population: rltools; td3-sb3:
shared, with the rltools figure beside it; sac-pendulum: rltools; sac-pendulum-shared:
shared).

The verdict: a target is within the bound only if the minimum's matrix products alone,
in the time the target allows, need no more than the FP32 peak. Elementwise work is left
out of the verdict (it can run on other pipes beside the multiply-adds), so the bound is
a true lower bound on the time; the rate with it is printed too. Products are dense
(Strassen-type algorithms do not pay at 64- and 256-wide layers).

The peak: benchmarks/fma_peak.c, compiled now with the system gcc (-O2 -march=native),
one thread, independent FMA chains (1 to 24) of 256-bit and 512-bit vectors, the fastest
of many short repetitions; the clock from a chain of dependent one-cycle additions. The
FP32 peak counts 2 FLOPs per product at the highest FP32 product rate of any kernel:
the FMAs, and plain multiplies alone and interleaved with FMAs (every product of a
matrix product needs an FMA or a multiply, so if multiplies ran on pipes of their own,
a mix would be the ceiling; where they share the FMA pipes, as on Zen 4, it is the FMAs'). Beside it, OpenBLAS SGEMM through NumPy (one
thread) at the training shapes and at 2048^3: what a good library gets at these sizes.

Achieved rates: a short run of our trainers through the real code paths (TD3 native,
one agent and a population of 16 in one process, after the warm-up; SAC on the built-in
HalfCheetah with the `neuromotor` row's settings, a short warm-up; SAC on the built-in
pendulum with its defaults, NumPy and native backends in both schemes, after the warm-up,
the fastest of three rounds taking turns): the minimum's matrix-product FLOPs over their
CPU time. The peers' times are inputs (--rltools-s, --sb3-td3-s, --sb3-sac-ms: defaults
from benchmarks/td3_pendulum.py --seeds 16 --compare sb3 --rltools ... and
benchmarks/sac.py --phases halfcheetah on this 2-core machine); their rates are the same
FLOPs (SB3 TD3: of its shared scheme) over those times.

sac-pendulum compares two of our own backends, so both are measured in the run: the time
it allows is NumPy SAC's CPU time per step (an update each) over the run's 9900 updates,
divided by 3 (the 100 warm-up steps, env steps alone, left out of both). With --no-train
the times reported by benchmarks/sac.py --phases pendulum --no-sb3 (seeds 0-9, one
thread) stand in (--sac-pendulum-rltools-s, --sac-pendulum-shared-s: NumPy's, native's).
Beside the verdict it prints what would reach 3x: the native's own products (counted)
at peak and how far they exceed the minimum, the native's measured time and so the least
time it spends outside its products, the time 3x leaves for that, and the fraction of
two cores' peak the minimum needs if its products split evenly (a prediction: the twin
critics' work splits by critic, the actor's by samples).

Not covered: reduced precision (AVX512-BF16 doubles the multiply-add rate, measured
here too, but changes the arithmetic: the native and NumPy TD3 must agree to 1e-5),
more than one core (but sac-pendulum's even-split prediction), and everything that is
not arithmetic (env steps, replay gathers, random numbers, Python), which only adds time.
The machine may be shared: the peak is the best of many repetitions, the load average is
recorded, and the trainers' rates use CPU time. Prints the tables, writes
benchmarks/results/arithmetic_bound.json.
"""

import argparse
import dataclasses
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from benchutil import RESULTS, write_json

HERE = Path(__file__).resolve().parent
FMA_SOURCE = HERE / "fma_peak.c"

# Elementwise FLOPs per element of a layer's output: forward (after the bias add) and the
# derivative in backward, from the output (relu: a select; tanh: 1 - y^2, then the product).
ACT_FORWARD = {"identity": 0, "relu": 1, "tanh": 1}
ACT_BACKWARD = {"identity": 0, "relu": 1, "tanh": 3}
ADAM_MIN, ADAM_NATIVE, ADAM_NUMPY = 12, 13, 12   # FLOPs per parameter (nm_adam: one more division)
POLYAK = 3                                        # target + (online - target) * tau


@dataclass(frozen=True)
class Ops:
    madds: int = 0        # multiply-adds of matrix products (2 FLOPs each)
    elementwise: int = 0  # every other FLOP

    def __add__(self, other):
        return Ops(self.madds + other.madds, self.elementwise + other.elementwise)

    def __mul__(self, k: int):
        return Ops(self.madds * k, self.elementwise * k)

    __rmul__ = __mul__

    @property
    def flops(self) -> int:
        return 2 * self.madds + self.elementwise


def elem(n: int) -> Ops:
    return Ops(0, n)


@dataclass(frozen=True)
class Net:
    """An MLP's shapes. folded: biases folded into augmented matrices, hidden layers with a
    constant output column (neuromotor.nn.mlp); else W and b apart (nm_mlp_train.h)."""
    sizes: tuple
    acts: tuple
    folded: bool = False

    def _layers(self):
        last = len(self.acts) - 1
        for l, (n_in, n_out, act) in enumerate(zip(self.sizes, self.sizes[1:], self.acts)):
            # k inputs, w outputs of the matrix product actually formed
            k, w = (n_in + 1, n_out + (l != last)) if self.folded else (n_in, n_out)
            yield l, k, w, act

    def params(self) -> int:
        """Floats the optimiser updates (a folded net's constant columns included)."""
        return sum(k * w + (0 if self.folded else w) for _, k, w, _ in self._layers())

    def forward(self, B: int) -> Ops:
        ops = Ops()
        for _, k, w, act in self._layers():
            ops += Ops(B * k * w, B * w * ACT_FORWARD[act] + (0 if self.folded else B * w))
        return ops

    def backward(self, B: int, weight_grads: bool, input_cols: int) -> Ops:
        """Backward over B samples: weight (and bias) gradients if asked, input gradients of
        every layer but the first, and of the first only for `input_cols` of its inputs."""
        ops = Ops()
        for l, k, w, act in self._layers():
            ops += elem(B * w * ACT_BACKWARD[act])
            if weight_grads:
                ops += Ops(B * k * w, 0 if self.folded else B * w)
            ops += Ops(B * w * (k if l else input_cols), 0)
        return ops


# ---------------------------------------------------------------------------------------
# TD3 (neuromotor.algos.td3, RLtools' pendulum configuration)

@dataclass(frozen=True)
class TD3Shape:
    obs: int = 3
    act: int = 1
    hidden: tuple = (64, 64)
    batch: int = 100
    steps: int = 10_000
    learning_starts: int = 100
    policy_delay: int = 2

    def actor(self, folded=False):
        return Net((self.obs, *self.hidden, self.act), ("relu",) * len(self.hidden) + ("tanh",), folded)

    def critic(self, folded=False):
        return Net((self.obs + self.act, *self.hidden, 1), ("relu",) * len(self.hidden) + ("identity",), folded)

    def updates(self) -> tuple:
        """(critic updates, actor updates, policy forwards for acting) of a run: uniform
        warm-up actions before learning_starts, the actor on steps divisible by policy_delay."""
        learn = range(self.learning_starts, self.steps)
        return len(learn), sum(1 for s in learn if s % self.policy_delay == 0), len(learn)


def td3_parts(s: TD3Shape, kind: str, scheme: str) -> dict:
    """Ops of one critic update, one actor update (with the target updates) and one act.
    kind: "native" (nm_host.c: nmh_critics, nmh_actor, nmh_td3_run, nmh_act_all), "numpy"
    (td3.py's reference update, neuromotor.nn.mlp's folded biases) or "minimum"."""
    folded = kind == "numpy"
    actor, critic, B, na, o = s.actor(folded), s.critic(folded), s.batch, s.act, s.obs
    smooth = elem(6 * na)       # noise * sigma, clip (2), add, clip (2)
    bellman = elem(4)           # min, * not_done, * gamma, + r
    pa, pc = actor.params(), critic.params()
    if kind in ("native", "numpy"):
        adam = ADAM_NATIVE if kind == "native" else ADAM_NUMPY
        # the target nets on both critic minibatches at once; the actor's critic gradient
        # to the action columns of [a, s] (NumPy: to every input and the folded constant 1)
        critics = (actor.forward(2 * B) + smooth * (2 * B) + critic.forward(2 * B) * 2
                   + 2 * (bellman * B + critic.forward(B) + elem(4 * B) + critic.backward(B, True, 0))
                   + elem(adam * 2 * pc))
        actor_up = (actor.forward(B) + critic.forward(B) + elem(B)
                    + critic.backward(B, False, na if kind == "native" else o + na + folded)
                    + actor.backward(B, True, 0) + elem(adam * pa + POLYAK * (pa + 2 * pc)))
        act = actor.forward(1) + smooth
    else:
        minibatches = 2 if scheme == "rltools" else 1
        # targets of each critic minibatch: pi' once, both target critics; each critic's
        # forward, dL/dq = (q - y) * 2 / B, backward with weight gradients only
        targets = actor.forward(B) + smooth * B + critic.forward(B) * 2 + bellman * B
        critics = (targets * minibatches + 2 * (critic.forward(B) + elem(2 * B) + critic.backward(B, True, 0))
                   + elem(ADAM_MIN * 2 * pc))
        # -mean Q1(s, pi(s)): Q1's gradient with respect to the action columns only
        actor_up = (actor.forward(B) + critic.forward(B) + critic.backward(B, False, na)
                    + actor.backward(B, True, 0) + elem(ADAM_MIN * pa + POLYAK * (pa + 2 * pc)))
        act = actor.forward(1) + elem(4 * na)  # noise * sigma, add, clip (2)
    return {"critic_update": critics, "actor_update": actor_up, "act": act}


def td3_run(s: TD3Shape, kind: str, scheme: str) -> dict:
    parts = td3_parts(s, kind, scheme)
    n_critic, n_actor, n_act = s.updates()
    total = parts["critic_update"] * n_critic + parts["actor_update"] * n_actor + parts["act"] * n_act
    return {"kind": kind, "scheme": scheme, "per_critic_update_flops": parts["critic_update"].flops,
            "per_actor_update_flops": parts["actor_update"].flops, "per_act_flops": parts["act"].flops,
            "per_step_flops": total.flops / n_critic, "updates": n_critic, "actor_updates": n_actor,
            "total_flops": total.flops, "total_madds": total.madds, "total_elementwise": total.elementwise}


# ---------------------------------------------------------------------------------------
# SAC (neuromotor.algos.sac): the `mujoco` preset on HalfCheetah, the default on the pendulum

@dataclass(frozen=True)
class SACShape:
    obs: int = 17          # HalfCheetah-v5
    act: int = 6
    hidden: tuple = (256, 256)
    batch: int = 256
    steps: int = 100_000
    learning_starts: int = 10_000

    def actor(self, folded=False):   # outputs [mean, log_std]
        return Net((self.obs, *self.hidden, 2 * self.act), ("relu",) * len(self.hidden) + ("identity",), folded)

    def critic(self, folded=False):
        return Net((self.obs + self.act, *self.hidden, 1), ("relu",) * len(self.hidden) + ("identity",), folded)

    def updates(self) -> int:
        return self.steps - self.learning_starts


# sac.Config's defaults (RLtools' pendulum SAC: 64-64, batch 100, 100 warm-up steps), 10k steps
SAC_PENDULUM = SACShape(obs=3, act=1, hidden=(64, 64), batch=100, steps=10_000, learning_starts=100)
SCHEMES = {"shared": 1, "rltools": 2}   # the critics' minibatches per update


def sac_quadrotor() -> tuple:
    """(SACShape, scheme) of `train quadrotor`'s SAC preset, read from neuromotor itself."""
    from neuromotor.algos.sac import SAC
    from neuromotor.envs.quadrotor import QuadrotorVec
    cfg, run = SAC.defaults("quadrotor")
    if cfg.actor_hidden != cfg.critic_hidden:
        raise SystemExit("sac-quadrotor: SACShape counts equal actor and critic widths")
    env = QuadrotorVec(1)
    shape = SACShape(obs=env.obs_dim, act=env.act_dim, hidden=tuple(cfg.actor_hidden), batch=cfg.batch_size,
                     steps=run["steps"], learning_starts=cfg.learning_starts)
    return shape, "shared" if cfg.shared_minibatch else "rltools"

# sac.TanhGaussian per action: forward (range test 2, clip 2, exp, std * eps, + mean, tanh,
# a * a, 1 - ., eps * eps, * -1/2, - log_std, - log(2 pi)/2, + 1e-6, log, -, sum) and backward
# (11: the two paths into [mean, log_std]); acting samples with clip 2, exp, *, +, tanh.
TANH_GAUSS_FWD, TANH_GAUSS_BWD, SAMPLE = 18, 11, 6
# nm_sac_steps.h: nm_sac_sample (the forward above without the range test; acting too) and
# its backward, which recomputes 1 - a^2, the clip, exp and the range test.
NM_SAMPLE_FWD, NM_SAMPLE_BWD = 16, 18


def sac_update(s: SACShape, kind: str, scheme: str = "shared") -> dict:
    """Ops of one SAC gradient step (critics, actor, alpha, targets) and one act. kind: "native"
    (nm_host_sac.h: nmh_sac_run, nmh_sac_act_all), "numpy" (sac.py's update, neuromotor.nn.mlp's
    folded biases) or "minimum"; scheme: "shared" (one minibatch) or "rltools" (one per critic,
    the actor's a third: the critics' targets on two minibatches)."""
    folded, native = kind == "numpy", kind == "native"
    actor, critic, B, na, M = s.actor(folded), s.critic(folded), s.batch, s.act, SCHEMES[scheme]
    adam = ADAM_NATIVE if native else ADAM_NUMPY if folded else ADAM_MIN
    fwd, bwd = (NM_SAMPLE_FWD, NM_SAMPLE_BWD) if native else (TANH_GAUSS_FWD, TANH_GAUSS_BWD)
    pa, pc = actor.params(), critic.params()
    # soft targets on the M minibatches at once: a' ~ pi(s'), both target critics, y (min, alpha
    # log pi, -, * not_done, * gamma, + r); both critics forward, dq (native: and the loss, 4),
    # backward with weight gradients
    critics = (actor.forward(M * B) + elem(fwd * M * B * na) + critic.forward(M * B) * 2 + elem(6 * M * B)
               + 2 * (critic.forward(B) + elem((4 if native else 2) * B) + critic.backward(B, True, 0))
               + elem(adam * 2 * pc))
    # the actor through both critics' values: min(Q1, Q2)(s, a~) - alpha log pi
    actor_up = actor.forward(B) + elem(fwd * B * na) + critic.forward(B) * 2 + elem(B)
    if native:
        # nmh_sac_actor: losses, entropy sum and dq (11 more per sample); both critics backward to
        # the action columns of [a, s] (dq zero where the other is smaller), d_action summed
        actor_up += elem(11 * B) + critic.backward(B, False, na) * 2 + elem(B * na)
    elif folded:
        # sac._actor_loss: dq of both critics (selected or zero), both backward to all of [a, s, 1]
        actor_up += elem(4 * B) + critic.backward(B, False, s.obs + na + 1) * 2 + elem(B * na)
    else:
        # each sample's gradient flows through the smaller critic alone, to its action inputs
        actor_up += critic.backward(B, False, na)
    actor_up += elem(bwd * B * na) + actor.backward(B, True, 0) + elem(adam * pa)
    alpha = elem((0 if native else 2 * B) + adam)  # mean of log pi + target entropy, Adam on log alpha
    targets = elem(POLYAK * 2 * pc)
    update = critics + actor_up + alpha + targets
    act = actor.forward(1) + elem((NM_SAMPLE_FWD if native else SAMPLE) * na)
    updates = s.updates()
    total = update * updates + act * updates
    return {"kind": kind, "scheme": scheme, "per_update_flops": update.flops, "per_act_flops": act.flops,
            "per_step_flops": (update + act).flops, "per_update_madds": update.madds, "updates": updates,
            "total_flops": total.flops, "total_madds": total.madds, "total_elementwise": total.elementwise}


# ---------------------------------------------------------------------------------------
# Measurements

def peak(madds: float, reps: int) -> dict:
    """Compile and run fma_peak.c: the clock, and the FLOP/s of every kernel."""
    gcc = shutil.which(os.environ.get("CC", "gcc"))
    if gcc is None:
        sys.exit("the peak needs a C compiler: install gcc (or set CC)")
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "fma_peak"
        built = subprocess.run([gcc, "-O2", "-march=native", "-o", str(exe), str(FMA_SOURCE)],
                               capture_output=True, text=True)
        if built.returncode:
            sys.exit(f"{FMA_SOURCE.name} does not compile here: {built.stderr.strip().splitlines()[-1]}")
        out = subprocess.run([str(exe), f"{madds:.0f}", str(reps)], check=True, capture_output=True, text=True).stdout
    clocks, kernels = [], []
    for line in out.splitlines():
        f = line.split()
        if f[0] == "clock":
            clocks.append(float(f[1]) / float(f[2]))
        else:
            seconds = float(f[5])
            kernels.append({"kernel": f[0], "products_per_instruction": int(f[1]), "chains": int(f[2]),
                            "products_per_s": float(f[3]) / seconds, "gflops": float(f[4]) / seconds / 1e9})
    hz = max(clocks)
    for k in kernels:
        k["flops_per_cycle"] = k["gflops"] * 1e9 / hz
        k["products_per_cycle"] = k["products_per_s"] / hz
    # every product of a matrix product costs an FMA or a multiply: the fastest FP32 product
    # rate of any kernel, as multiply-adds of 2 FLOPs
    fp32 = 2 * max(k["products_per_s"] for k in kernels if not k["kernel"].startswith("bf16")) / 1e9
    best = {w: max((k["gflops"] for k in kernels if k["kernel"] == w), default=None)
            for w in ("fma256", "fma512", "mul256", "mul512", "fma+mul256", "bf16dot512")}
    return {"compiler": subprocess.run([gcc, "--version"], capture_output=True, text=True).stdout.splitlines()[0],
            "flags": "-O2 -march=native", "clock_ghz": hz / 1e9, "fp32_peak_gflops": fp32,
            "best_gflops": best, "kernels": kernels, "repetitions": reps, "madds_per_repetition": madds}


SGEMM_SHAPES = [  # (algorithm whose training shape it is, name, M, K, N): (M x K) @ (K x N)
    ("td3", "TD3 hidden layer, batch 100", 100, 64, 64),
    ("td3", "TD3 weight gradient", 64, 100, 64),
    ("td3", "TD3 target nets, 2 minibatches", 200, 64, 64),
    ("sac", "SAC hidden layer, batch 256", 256, 256, 256),
    (None, "large", 2048, 2048, 2048),
]


def sgemm(reps: int) -> list:
    """OpenBLAS SGEMM through np.matmul, one thread: best of `reps` batches of calls."""
    rng = np.random.default_rng(0)
    out = []
    with threadpool_limits(1, "blas"):
        for algo, name, M, K, N in SGEMM_SHAPES:
            a, b = rng.standard_normal((M, K), np.float32), rng.standard_normal((K, N), np.float32)
            c = np.empty((M, N), np.float32)
            calls = max(1, int(2e7 / (M * K * N)))   # about 40 MFLOP per batch
            best = float("inf")
            for _ in range(reps if calls > 1 else max(5, reps // 6)):
                t0 = time.perf_counter()
                for _ in range(calls):
                    np.matmul(a, b, out=c)
                best = min(best, (time.perf_counter() - t0) / calls)
            out.append({"algorithm": algo, "shape": name, "m": M, "k": K, "n": N, "seconds": best,
                        "gflops": 2 * M * K * N / best / 1e9})
    return out


class _CountingNumpy:
    """numpy as neuromotor.nn.mlp sees it, counting the multiply-adds of the matrix products
    it forms: np.matmul, and np.multiply where it is the outer product of a one-output
    layer's input gradient ((..., B, 1) x (..., 1, k))."""

    def __init__(self):
        self.madds = 0

    def __getattr__(self, name):
        return getattr(np, name)

    def _count(self, a, b, m, k, n):
        self.madds += math.prod(np.broadcast_shapes(a.shape[:-2], b.shape[:-2])) * m * k * n

    def matmul(self, a, b, out=None):
        self._count(a, b, a.shape[-2], a.shape[-1], b.shape[-1])
        return np.matmul(a, b, out=out)

    def multiply(self, a, b, out=None):
        if np.ndim(a) >= 2 and np.ndim(b) >= 2 and a.shape[-1] == 1 and b.shape[-2] == 1:
            self._count(a, b, a.shape[-2], 1, b.shape[-1])
        return np.multiply(a, b, out=out)


def executed_madds(algo, steps: int) -> int:
    """Multiply-adds of the matrix products `steps` advance() calls of a NumPy trainer run."""
    import neuromotor.nn.mlp as mlp

    counting = _CountingNumpy()
    mlp.np = counting
    try:
        for _ in range(steps):
            algo.advance()
    finally:
        mlp.np = np
    return counting.madds


def check_counts() -> dict:
    """The NumPy trainers' executed multiply-adds against this file's counts: one SAC HalfCheetah
    step (the `neuromotor` row's settings), one SAC pendulum step per minimum scheme and two TD3
    steps (one with the actor update), after warm-up."""
    from neuromotor.algos.sac import SAC, Config as SACConfig
    from neuromotor.algos.td3 import TD3, Config
    from neuromotor.envs import env_class

    s = SACShape()
    cfg, _ = SAC.defaults("halfcheetah", "mujoco")
    cfg = dataclasses.replace(cfg, backend="numpy", shared_minibatch=True, learning_starts=5, buffer_size=100)
    sac = SAC(cfg, env_class("halfcheetah"), [0])
    for _ in range(cfg.learning_starts):
        sac.advance()
    sac_count = sac_update(s, "numpy")
    t = TD3Shape()
    td3 = TD3(Config(backend="numpy", learning_starts=6), env_class("pendulum"), [0])
    for _ in range(6):
        td3.advance()
    parts = td3_parts(t, "numpy", "rltools")
    out = {"sac_step": {"executed": executed_madds(sac, 1), "counted": sac_count["total_madds"] // s.updates()},
           "td3_two_steps": {"executed": executed_madds(td3, 2),
                             "counted": (2 * (parts["critic_update"] + parts["act"]) + parts["actor_update"]).madds}}
    for scheme, M in SCHEMES.items():
        pend = SAC(SACConfig(backend="numpy", shared_minibatch=M == 1, learning_starts=5), env_class("pendulum"), [0])
        for _ in range(5):
            pend.advance()
        out[f"sac_pendulum_{scheme}_step"] = {"executed": executed_madds(pend, 1),
                                              "counted": sac_update(SAC_PENDULUM, "numpy", scheme)["total_madds"]
                                              // SAC_PENDULUM.updates()}
    for v in out.values():
        v["equal"] = v["executed"] == v["counted"]
    return out


def _timed_steps(algo, warmup: int, steps: int) -> tuple:
    """Wall and CPU seconds of `steps` training steps after `warmup` untimed ones."""
    for _ in range(warmup):
        algo.advance()
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(steps):
        algo.advance()
    return time.perf_counter() - t0, time.process_time() - c0


def run_td3(agents: int, steps: int) -> dict:
    """CPU and wall seconds per agent-step of the TD3 trainer (native backend, built-in
    pendulum, one thread) after its warm-up."""
    from neuromotor.algos.td3 import TD3, Config
    from neuromotor.native import _nm_host
    from neuromotor.envs import env_class

    cfg = Config()
    with threadpool_limits(1, "blas"):
        wall, cpu = _timed_steps(TD3(cfg, env_class("pendulum"), list(range(agents))), cfg.learning_starts + 100, steps)
    return {"agents": agents, "steps": steps, "backend": cfg.backend, "native": _nm_host is not None,
            "cpu_s_per_agent_step": cpu / steps / agents, "wall_s_per_agent_step": wall / steps / agents}


def run_sac(updates: int) -> dict:
    """CPU and wall seconds per step (one env step, one gradient step) of the SAC trainer with
    benchmarks/sac.py's `neuromotor` row (mujoco preset, one minibatch per gradient step) on
    the built-in HalfCheetah, one thread, after a short warm-up (a smaller replay: the same
    arithmetic)."""
    from neuromotor.algos.sac import SAC
    from neuromotor.envs import env_class

    cfg, _ = SAC.defaults("halfcheetah", "mujoco")
    cfg = dataclasses.replace(cfg, shared_minibatch=True, learning_starts=300, buffer_size=5_000)
    with threadpool_limits(1, "blas"):
        wall, cpu = _timed_steps(SAC(cfg, env_class("halfcheetah"), [0]), cfg.learning_starts + 30, updates)
    return {"updates": updates, "cpu_s_per_update": cpu / updates, "wall_s_per_update": wall / updates}


def run_sac_pendulum(steps: int, rounds: int) -> dict:
    """CPU and wall seconds per step (one env step, one update) of the SAC trainer on the built-in
    pendulum with its default config (benchmarks/sac.py's pendulum rows), per backend and scheme,
    one thread, after the warm-up: the fastest of `rounds` runs, the four taking turns."""
    from neuromotor.algos.sac import SAC, Config
    from neuromotor.native import NATIVE_ERROR
    from neuromotor.envs import env_class

    rows = [(b, sch) for b in ("numpy", "native")[:1 + (NATIVE_ERROR is None)] for sch in SCHEMES]
    best = {f"{b}_{sch}": (math.inf, math.inf) for b, sch in rows}
    with threadpool_limits(1, "blas"):
        for _ in range(rounds):
            for b, sch in rows:
                cfg = Config(backend=b, shared_minibatch=sch == "shared")
                wall, cpu = _timed_steps(SAC(cfg, env_class("pendulum"), [0]), cfg.learning_starts + 20, steps)
                best[f"{b}_{sch}"] = min(best[f"{b}_{sch}"], (cpu / steps, wall / steps))
    return {k: {"steps": steps, "rounds": rounds, "cpu_s_per_update": c, "wall_s_per_update": w}
            for k, (c, w) in best.items()}


# ---------------------------------------------------------------------------------------
# Targets

def targets(args, counts, fp32_peak, gemm_rates, runs) -> list:
    """Per target: the time it allows, the FLOP rate that needs, and the achieved rates.

    The verdict counts only the minimum's matrix products against the FMA peak: elementwise
    additions can run beside the multiply-adds (other pipes), so leaving them out keeps the
    bound a true lower bound on the time. The rate including them is reported beside it, and
    so are the achieved rates (the same matrix-product FLOPs over the time taken) and the best
    SGEMM rate at the algorithm's training shapes (gemm_rates: algorithm -> GFLOP/s)."""
    td3_min, td3_shared, sac_min = counts["td3_minimum_rltools"], counts["td3_minimum_shared"], counts["sac_minimum"]
    n_td3, n_sac = td3_min["updates"], sac_min["updates"]
    out = []

    def add(name, what, algo, count, allowed_s, achieved, note):
        gemm = 2 * count["total_madds"]
        need = gemm / allowed_s / 1e9
        out.append({"target": name, "what": what, "min_flops_per_step": count["per_step_flops"],
                    "min_gemm_flops_per_step": gemm / count["updates"], "steps": count["updates"],
                    "total_gflop": count["total_flops"] / 1e9, "total_gemm_gflop": gemm / 1e9,
                    "allowed_s": allowed_s, "needs_gflops": need,
                    "needs_gflops_all_flops": count["total_flops"] / allowed_s / 1e9, "peak_gflops": fp32_peak,
                    "needs_fraction_of_peak": need / fp32_peak, "gemm_time_at_peak_s": gemm / fp32_peak / 1e9,
                    "reachable": need <= fp32_peak, "best_sgemm_at_training_shapes_gflops": gemm_rates[algo],
                    "achieved_gflops": achieved, "note": note})

    def rate(seconds, count=td3_min):
        """A TD3 run's minimum matrix-product FLOPs over its seconds."""
        return 2 * count["total_madds"] / seconds / 1e9

    ours = {}
    if runs:
        ours["ours, 1 agent (CPU time now)"] = rate(n_td3 * runs["td3_single"]["cpu_s_per_agent_step"])
        r = runs["td3_population"]
        ours[f"ours, {r['agents']} agents (CPU time per agent now)"] = rate(n_td3 * r["cpu_s_per_agent_step"])
    ours["ours, 1 agent (reported)"] = rate(args.ours_td3_s)
    add("td3-population", f"TD3 Pendulum {args.td3_steps} steps: CPU s per agent <= {args.rltools_factor} x "
        f"RLtools' {args.rltools_s:.2f} s", "td3", td3_min, args.rltools_factor * args.rltools_s,
        {**ours, "RLtools (reported)": rate(args.rltools_s)},
        "minimum of the rltools scheme (what neuromotor and RLtools run); env, replay and "
        "random numbers not counted")
    rltools_need = 2 * td3_min["total_madds"] / (args.sb3_td3_s / args.sb3_td3_ratio) / 1e9
    add("td3-sb3", f"TD3 Pendulum {args.td3_steps} steps, 1 agent, SB3's update (shared_minibatch): "
        f"SB3's {args.sb3_td3_s:.2f} s / ours >= {args.sb3_td3_ratio:g}", "td3", td3_shared,
        args.sb3_td3_s / args.sb3_td3_ratio,
        {**ours, "SB3 TD3 (reported)": rate(args.sb3_td3_s, td3_shared)},
        f"minimum of the shared scheme (SB3's update, td3_pendulum.py's matched row); with neuromotor's "
        f"default rltools scheme the matrix products are {2 * td3_min['total_madds'] / 1e9:.1f} GFLOP, needing "
        f"{rltools_need:.1f} GFLOP/s ({100 * rltools_need / fp32_peak:.0f}% of peak); 'ours' rates are of the default scheme")
    per_update = 2 * sac_min["total_madds"] / n_sac
    sac_ours = {"ours (reported)": per_update / (args.ours_sac_ms * 1e-3) / 1e9}
    if runs:
        sac_ours = {"ours (CPU time now)": per_update / runs["sac"]["cpu_s_per_update"] / 1e9, **sac_ours}
    allowed = n_sac * args.sb3_sac_ms * 1e-3 / args.sb3_sac_ratio
    # SB3's warm-up (env steps only) would add to the allowed time over the whole run
    warmup_needed = args.sb3_sac_ratio * 2 * sac_min["total_madds"] / fp32_peak / 1e9 - n_sac * args.sb3_sac_ms * 1e-3
    add("sac-halfcheetah", f"SAC HalfCheetah {n_sac} updates: ms/update <= SB3's {args.sb3_sac_ms:.2f} / "
        f"{args.sb3_sac_ratio:g}", "sac", sac_min, allowed,
        {**sac_ours, "SB3 SAC (reported)": per_update / (args.sb3_sac_ms * 1e-3) / 1e9},
        f"per gradient step after the warm-up (sac.py's ms/update); over the whole run the bound is "
        f"met only if SB3's {SACShape.learning_starts} warm-up steps took {max(0.0, warmup_needed):.0f} s or more "
        f"({1e3 * max(0.0, warmup_needed) / SACShape.learning_starts:.1f} ms each)")
    for scheme, name in (("rltools", "sac-pendulum"), ("shared", "sac-pendulum-shared")):
        sac_pendulum(add, out, args, counts, fp32_peak, runs, scheme, name)
    q = counts["sac_quadrotor_minimum"]  # 64-wide layers: TD3's SGEMM shapes stand in, as for the pendulum
    per_update = 2 * q["total_madds"] / q["updates"]
    add("sac-quadrotor", f"SAC quadrotor, `train quadrotor`'s defaults ({q['updates']} updates, {q['scheme']} "
        f"scheme): CPU s <= RLtools' L2F zoo run's {args.rltools_l2f_s:.2f} s", "td3", q, args.rltools_l2f_s,
        {"ours (reported)": 2 * q["total_madds"] / args.ours_quadrotor_s / 1e9},
        f"at peak the allowed time holds {int(args.rltools_l2f_s * fp32_peak * 1e9 / per_update):,} updates of this "
        f"size ({per_update / 1e6:.2f} MFLOP of products each); the preset's {q['updates']:,} are what its success "
        "was measured with (benchmarks/quadrotor.py); env steps, replay, random numbers and evaluations not counted")
    return out


def sac_pendulum(add, out, args, counts, fp32_peak, runs, scheme, name):
    """The native SAC's time on the pendulum <= NumPy SAC's / ratio, NumPy's CPU time measured now
    (reported with --no-train), both over the run's updates; how far the native is from it."""
    mn, nat = counts[f"sac_pendulum_minimum_{scheme}"], counts[f"sac_pendulum_native_{scheme}"]
    n, ratio = mn["updates"], args.sac_pendulum_ratio
    reported = dict(zip(("numpy", "native"), getattr(args, f"sac_pendulum_{scheme}_s")))
    now = {b: n * r["cpu_s_per_update"] for b in reported
           if (r := runs.get("sac_pendulum", {}).get(f"{b}_{scheme}"))}
    numpy_s, native_s = now.get("numpy", reported["numpy"]), now.get("native", reported["native"])
    allowed, gemm = numpy_s / ratio, 2 * mn["total_madds"]
    achieved = {**{f"{b}, CPU time now": gemm / s / 1e9 for b, s in now.items()},
                **{f"{b}, reported": gemm / s / 1e9 for b, s in reported.items()}}
    # the same shapes as TD3's (batch 100 and 200, 64-wide layers): TD3's SGEMM rates
    add(name, f"SAC Pendulum {SAC_PENDULUM.steps} steps ({n} updates), {scheme} scheme: native CPU s <= NumPy "
        f"SAC's {numpy_s:.2f} s ({'measured now' if 'numpy' in now else 'reported'}) / {ratio:g}", "td3", mn,
        allowed, achieved, "")
    t = out[-1]
    nat_peak = 2 * nat["total_madds"] / fp32_peak / 1e9
    extra = (nat["total_madds"] - mn["total_madds"]) // n
    t.update({"scheme": scheme, "numpy_cpu_s": numpy_s, "native_cpu_s": native_s,
              "native_measured_now": "native" in now, "native_gemm_time_at_peak_s": nat_peak,
              "native_madds_above_minimum_per_update": extra, "native_needs_speedup": native_s / allowed,
              "native_outside_products_s_at_least": native_s - nat_peak,
              "outside_products_allowed_s": allowed - nat_peak,
              "two_cores_needs_fraction_of_peak": t["needs_fraction_of_peak"] / 2})
    t["note"] = (
        f"counted: the native runs {2 * nat['total_madds'] / 1e9:.1f} GFLOP of products, "
        f"{100 * extra * n / mn['total_madds']:.1f}% above the minimum ({extra:,} multiply-adds per update: the actor "
        f"update's backward through both critics, not the smaller one alone): {nat_peak:.3f} s at peak. Measured: the native takes {native_s:.2f} s "
        f"({'CPU time now' if 'native' in now else 'reported'}), {t['native_needs_speedup']:.2f} x the allowed time, "
        f"so at least {native_s - nat_peak:.2f} s outside its products (its time minus its products at peak); "
        f"{ratio:g}x leaves them {allowed - nat_peak:.2f} s ({allowed - t['gemm_time_at_peak_s']:.2f} s with the "
        f"minimum's products). On two cores the minimum's products need {50 * t['needs_fraction_of_peak']:.0f}% "
        "of their peak")


# The reported figures and the targets' ratios the bounds are judged by (each must be
# positive): option: (default, help).
FIGURES = {
    "rltools-s": (1.73, "RLtools' TD3 seconds for 10k steps, one thread"),
    "rltools-factor": (0.67, "allowed CPU s per agent / RLtools' s"),
    "sb3-td3-s": (23.17, "SB3 TD3's seconds for 10k steps, one thread"),
    "sb3-td3-ratio": (20.0, "required SB3 / ours time ratio for TD3"),
    "ours-td3-s": (1.66, "our TD3's reported seconds for 10k steps, one agent (from td3_pendulum.py)"),
    "sb3-sac-ms": (14.81, "SB3 SAC's ms per update on HalfCheetah-v5"),
    "ours-sac-ms": (8.85, "our SAC's reported ms per update (sac.py)"),
    "sb3-sac-ratio": (4.0, "required SB3 / ours time ratio for SAC"),
    "rltools-l2f-s": (6.5, "RLtools' L2F SAC zoo run's seconds, one thread (benchmarks/quadrotor.py --rltools)"),
    "ours-quadrotor-s": (63.8, "our `train quadrotor` CPU s per seed (benchmarks/quadrotor.py)"),
    "sac-pendulum-ratio": (3.0, "required NumPy / native time ratio"),
}
# How much is timed (each at least 1): option: (default, help).
COUNTS = {
    "reps": (60, "repetitions of each peak kernel and SGEMM batch (best counts)"),
    "td3-run-steps": (2000, "timed TD3 steps of one agent after warm-up"),
    "sac-run-updates": (150, "timed SAC steps after warm-up"),
    "sac-pendulum-run-steps": (300, "timed pendulum SAC steps per backend and scheme after warm-up "
                               "(fastest of 3 rounds)"),
}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for name, (default, text) in FIGURES.items():
        p.add_argument(f"--{name}", type=float, default=default, help=text)
    for scheme, (numpy_s, native_s) in (("rltools", (5.23, 2.10)), ("shared", (4.85, 1.85))):
        p.add_argument(f"--sac-pendulum-{scheme}-s", type=float, nargs=2, default=[numpy_s, native_s],
                       metavar=("NUMPY", "NATIVE"), help=f"NumPy and native SAC's reported CPU s for Pendulum 10k "
                       f"steps, {scheme} scheme (sac.py --phases pendulum --no-sb3); with --no-train")
    p.add_argument("--td3-steps", type=int, default=10_000, help="TD3 steps of the targets")
    for name, (default, text) in COUNTS.items():
        p.add_argument(f"--{name}", type=int, default=default, help=text)
    p.add_argument("--no-train", action="store_true", help="skip the short trainer runs")
    p.add_argument("--out", type=Path, default=RESULTS / "arithmetic_bound.json")
    args = p.parse_args()
    for name in FIGURES:
        if not getattr(args, name.replace("-", "_")) > 0:
            p.error(f"--{name} must be positive")
    if not all(x > 0 for x in args.sac_pendulum_rltools_s + args.sac_pendulum_shared_s):
        p.error("--sac-pendulum-rltools-s and --sac-pendulum-shared-s must be positive")
    if args.td3_steps <= TD3Shape.learning_starts:
        p.error(f"--td3-steps must exceed the {TD3Shape.learning_starts} warm-up steps")
    for name in COUNTS:
        if getattr(args, name.replace("-", "_")) < 1:
            p.error(f"--{name} must be at least 1")

    load_start = os.getloadavg()
    td3 = TD3Shape(steps=args.td3_steps)
    counts = {"td3_native": td3_run(td3, "native", "rltools"),
              "td3_numpy": td3_run(td3, "numpy", "rltools"),
              "td3_minimum_rltools": td3_run(td3, "minimum", "rltools"),
              "td3_minimum_shared": td3_run(td3, "minimum", "shared"),
              "sac_numpy": sac_update(SACShape(), "numpy"),
              "sac_minimum": sac_update(SACShape(), "minimum")}
    for scheme in ("rltools", "shared"):
        for kind in ("native", "numpy", "minimum"):
            counts[f"sac_pendulum_{kind}_{scheme}"] = sac_update(SAC_PENDULUM, kind, scheme)
    quadrotor, scheme = sac_quadrotor()
    for kind in ("native", "minimum"):
        counts[f"sac_quadrotor_{kind}"] = sac_update(quadrotor, kind, scheme)

    checked = check_counts()
    pk = peak(5e7, args.reps)
    gemm = sgemm(args.reps)
    runs = {}
    if not args.no_train:
        runs["td3_single"] = run_td3(1, args.td3_run_steps)
        runs["td3_population"] = run_td3(16, max(1, args.td3_run_steps // 8))
        runs["sac"] = run_sac(args.sac_run_updates)
        runs["sac_pendulum"] = run_sac_pendulum(args.sac_pendulum_run_steps, 3)
    gemm_rates = {a: max(g["gflops"] for g in gemm if g["algorithm"] == a) for a in ("td3", "sac")}
    result = targets(args, counts, pk["fp32_peak_gflops"], gemm_rates, runs)
    load_end = os.getloadavg()

    print(f"\n{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, load average "
          f"{load_start[0]:.2f} at the start, {load_end[0]:.2f} at the end (1 min)")
    print(f"Peak (fma_peak.c, {pk['compiler']}, {pk['flags']}, one thread, best of {args.reps}): "
          f"clock {pk['clock_ghz']:.3f} GHz")
    print(f"  {'kernel':12} {'lanes':>5} {'chains':>6} {'GFLOP/s':>9} {'FLOP/cycle':>10} {'products/cycle':>14}")
    for k in pk["kernels"]:
        print(f"  {k['kernel']:12} {k['products_per_instruction']:>5} {k['chains']:>6} {k['gflops']:9.1f} "
              f"{k['flops_per_cycle']:10.2f} {k['products_per_cycle']:14.2f}")
    fp32_pc = {k["kernel"]: k["products_per_cycle"] for k in pk["kernels"] if not k["kernel"].startswith("bf16")}
    print(f"  FP32 peak: {pk['fp32_peak_gflops']:.1f} GFLOP/s, 2 FLOPs per product at the most products per cycle "
          f"of any FP32 kernel ({max(fp32_pc.values()):.2f}, {max(fp32_pc, key=fp32_pc.get)}); "
          "bf16dot512 is not FP32 arithmetic")
    print(f"OpenBLAS SGEMM through NumPy {np.__version__}, one thread, best of {args.reps}:")
    for g in gemm:
        print(f"  {g['shape']:32} {g['m']:>5} x {g['k']:>5} x {g['n']:>5} {g['gflops']:8.1f} GFLOP/s "
              f"({100 * g['gflops'] / pk['fp32_peak_gflops']:.0f}% of peak)")

    print("\nFLOPs per step, counted (10k-step TD3 run: per critic update; SAC: per gradient step, acting included)")
    print(f"  {'count':34} {'per step':>12} {'steps':>7} {'total GFLOP':>12} {'of which GEMM':>13}")
    for name, c in counts.items():
        print(f"  {name:34} {c['per_step_flops']:12,.0f} {c['updates']:>7} {c['total_flops'] / 1e9:12.2f} "
              f"{100 * 2 * c['total_madds'] / c['total_flops']:12.1f}%")

    print("  checked against the NumPy trainers' executed matrix products: " + ", ".join(
        f"{k} {v['executed']:,} multiply-adds executed, {v['counted']:,} counted"
        + ("" if v["equal"] else " (DIFFERENT)") for k, v in checked.items()))
    if runs:
        print("\nShort runs (one thread):", ", ".join(
            [f"TD3 1 agent {1e3 * runs['td3_single']['cpu_s_per_agent_step']:.3f} ms CPU/step "
             f"({1e3 * runs['td3_single']['wall_s_per_agent_step']:.3f} wall)",
             f"TD3 16 agents {1e3 * runs['td3_population']['cpu_s_per_agent_step']:.3f} ms CPU/agent-step",
             f"SAC {1e3 * runs['sac']['cpu_s_per_update']:.2f} ms CPU/update "
             f"({1e3 * runs['sac']['wall_s_per_update']:.2f} wall)"]))
        print("  SAC pendulum, ms CPU/step (measured, fastest of 3 rounds): " + ", ".join(
            f"{k.replace('_', ' ')} {1e3 * r['cpu_s_per_update']:.3f} ({1e3 * r['wall_s_per_update']:.3f} wall)"
            for k, r in runs["sac_pendulum"].items()))

    print(f"\n{'target':19} {'GEMM FLOP/step':>14} {'steps':>6} {'GFLOP':>7} {'allowed s':>9} "
          f"{'needs GFLOP/s':>13} {'peak':>6} {'of peak':>7}  verdict")
    for t in result:
        verdict = "within the bound" if t["reachable"] else "UNREACHABLE at FP32"
        print(f"{t['target']:19} {t['min_gemm_flops_per_step']:14,.0f} {t['steps']:>6} {t['total_gemm_gflop']:7.1f} "
              f"{t['allowed_s']:9.3f} {t['needs_gflops']:13.1f} {t['peak_gflops']:6.1f} "
              f"{100 * t['needs_fraction_of_peak']:6.0f}%  {verdict}")
    print("(the minimum's matrix products only; with its elementwise FLOPs too: "
          + ", ".join(f"{t['target']} {t['needs_gflops_all_flops']:.1f} GFLOP/s" for t in result) + ")")
    for t in result:
        print(f"\n{t['target']}: {t['what']}")
        print(f"  at peak the matrix products alone take {t['gemm_time_at_peak_s']:.3f} s; allowed "
              f"{t['allowed_s']:.3f} s")
        best = t["best_sgemm_at_training_shapes_gflops"]
        print(f"  best OpenBLAS SGEMM at its training shapes: {best:.1f} GFLOP/s; the target needs "
              f"{100 * t['needs_gflops'] / best:.0f}% of that for the whole step")
        for who, r in t["achieved_gflops"].items():
            print(f"  achieved: {who:44} {r:6.1f} GFLOP/s ({100 * r / t['peak_gflops']:.0f}% of peak)")
        print(f"  {t['note']}")
    print("\nNot covered: reduced precision (bf16 dot products run at "
          f"{pk['best_gflops']['bf16dot512'] or 0:.0f} GFLOP/s here but change the arithmetic; native and NumPy "
          "must agree to 1e-5), more than one core (but sac-pendulum's even-split prediction), and all "
          "non-arithmetic work.")

    doc = {"benchmark": "arithmetic_bound", "command": " ".join(sys.argv), "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
           "cpus": os.cpu_count(), "load_avg_start": list(load_start), "load_avg_end": list(load_end),
           "numpy": np.__version__, "blas": [{k: i.get(k) for k in ("internal_api", "version", "architecture")}
                                            for i in threadpool_info() if i.get("user_api") == "blas"],
           "inputs": {k: v for k, v in vars(args).items() if k != "out"} | {"out": str(args.out)},
           "peak": pk, "sgemm": gemm, "counts": counts, "counts_checked": checked, "runs": runs, "targets": result}
    write_json(args.out, doc)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
