"""SAC's hyperparameters: its Config (the defaults, RLtools' pendulum SAC, and the rules of each
setting) and its named presets (neuromotor.algos.sac reads both)."""

from dataclasses import dataclass

from neuromotor import rules
from neuromotor.algos import offpolicy
from neuromotor.errors import UserError
from neuromotor.limits import MAX_STEPS
from neuromotor.native import NATIVE_ERROR


# The entropy settings every SAC shares (sac_gru.py's too), and their check.
ENTROPY_RULES = {
    "alpha_lr": rules.RATE,
    "init_alpha": rules.number(0, lo_open=True),
    "log_std_min": rules.number(-50, 10),
    "log_std_max": rules.number(-50, 10),
}


def check_log_std(cfg) -> None:
    if cfg.log_std_min >= cfg.log_std_max:
        raise UserError(f"log_std_min ({cfg.log_std_min}) must be below log_std_max ({cfg.log_std_max})")


@dataclass
class Config(offpolicy.NetworkConfig):
    """Defaults: RLtools' SAC Pendulum configuration (src/rl/environments/pendulum/sac/cpu/config.h
    with rl/algorithms/sac/sac.h and nn/layers/sample_and_squash/layer.h DefaultParameters):
    actor and critics 64-64 ReLU, batch 100 for critics and actor, replay 10,000 (= the step
    limit), 100 warm-up steps before learning, gamma 0.99, polyak 0.995 (tau 0.005), Adam
    1e-3 for actor, critics and alpha, alpha starts at 1, target entropy -|A|, log-std
    clipped to [-20, 2], one critic, actor and alpha update per env step.

    One difference: RLtools samples its (untrained) stochastic policy during warm-up; the
    default here is uniform random warm-up actions, as in SB3 and CleanRL
    (`warmup_actions = "policy"` selects RLtools' way).

    `shared_minibatch = True` trains both critics and the actor on one minibatch per update
    (SB3's and CleanRL's SAC) instead of one minibatch each (RLtools'): a third of the
    gradient work per update at the same batch_size. The random streams advance alike
    either way."""

    warmup_actions: str = "uniform"  # before learning_starts: "uniform" random, or "policy" samples
    gamma: float = 0.99
    tau: float = 0.005
    actor_lr: float = 1e-3
    critic_lr: float = 1e-3
    alpha_lr: float = 1e-3
    init_alpha: float = 1.0         # entropy coefficient at step 0 (log_alpha = log init_alpha)
    log_std_min: float = -20.0
    log_std_max: float = 2.0
    shared_minibatch: bool = False  # one minibatch per update for the critics and the actor
    update_every: int = 1           # one update per this many env steps (RLtools' L2F: 5)
    episode_steps: int = 0          # training episodes time out after this many steps (0: the env's limit)
    start_draws: int = 1            # training episodes start from the hardest of this many initial states
                                    # (an env that ranks them: the quadrotor); evaluation from the task's
    # From step lr_decay_start the actor's and critics' learning rates fall linearly to lr_decay_factor
    # times their own at step lr_decay_end, and stay there (lr_decay_end 0: constant rates).
    lr_decay_start: int = 0
    lr_decay_end: int = 0
    lr_decay_factor: float = 1.0
    # The policy (what evaluations fly, best.npz and exports hold) is an exponential moving average
    # of the actor's weights over about this many steps (0: the actor itself). Training acts and
    # learns with the actor; the average keeps the actor's late jitter out of the policy.
    policy_average: int = 0
    backend: str = "native" if NATIVE_ERROR is None else "numpy"  # the update's arithmetic: "native" or "numpy"

    RULES = {
        **offpolicy.RULES,
        **ENTROPY_RULES,
        "lr_decay_start": rules.integer(0, MAX_STEPS),
        "lr_decay_end": rules.integer(0, MAX_STEPS),
        "lr_decay_factor": rules.number(0, 1, lo_open=True),
        "policy_average": rules.integer(0, MAX_STEPS),
    }

    def check(self):
        check_log_std(self)


# Named configurations: hyperparameters, plus run settings for `neuromotor train`.
CONFIGS = {
    "pendulum": (Config(), {}),
    # The SAC paper's (v2) and SB3/rl-zoo's MuJoCo settings: 256-256 networks, batch 256,
    # 1M replay, lr 3e-4, 10k random warm-up steps (rl-zoo), 1M env steps.
    "mujoco": (Config(actor_hidden=(256, 256), critic_hidden=(256, 256), batch_size=256, buffer_size=1_000_000,
                      learning_starts=10_000, actor_lr=3e-4, critic_lr=3e-4, alpha_lr=3e-4),
               {"steps": 1_000_000, "eval_every": 10_000, "checkpoint_every": 50_000}),
    # The quadrotor: 2 s training episodes, rates falling to a tenth over the second half, the
    # hardest of three starts and a policy averaged over 30k steps, each measured in docs/algorithms.md.
    "quadrotor": (Config(batch_size=64, shared_minibatch=True, actor_lr=5e-4, critic_lr=5e-4, alpha_lr=5e-4,
                         buffer_size=100_000, episode_steps=200, lr_decay_start=150_000, lr_decay_end=300_000,
                         lr_decay_factor=0.1, start_draws=3, policy_average=30_000),
                  # 500 evaluation episodes (5% of the run's time): best.npz is chosen on success rates,
                  # and the best of 31 evaluations of 50 episodes often still crashed from 1 start in 100
                  {"steps": 300_000, "eval_every": 10_000, "eval_episodes": 500, "checkpoint_every": 50_000}),
}
