# nm_td3_plan: the on-device trainer's profiles and its memory plan: every buffer's size,
# from the network sizes, batch and replay of a profile. Used by the trainer (nm_td3), its
# Python kernels (nm_td3_py) and the host, which reads PROFILES from this file
# (neuromotor.boards.ondevice.rundir).
from array import array

IDENTITY, RELU, TANH = 0, 1, 2  # activation codes of nm_train and of the policy file

# Sized to real boards: teensy41 (1 MB RAM), small (STM32F405), esp32 (ESP32 without PSRAM:
# a 110 KiB heap of which MicroPython and the trainer's modules keep about 21 KiB). A profile
# may store its replay in binary16 halves ("half_replay") and set its own learning rates and
# exploration noise. esp32: of what fits its budget, 20x20 nets learning at 3e-3 (actor) and
# 1e-2 (critics) from 1600 half rows in minibatches of 24, exploring with noise 0.2, solved
# the most seeds (23 of 30 on a single-precision unix build, against 3 of 10 for the 16x16
# nets, 800 float rows and batch 16 at the defaults).
PROFILES = {
    "teensy41": {"hidden": (64, 64), "replay": 10000, "batch": 100, "budget": 900 * 1024},
    "small": {"hidden": (32, 32), "replay": 800, "batch": 32, "budget": 150 * 1024},
    "esp32": {"hidden": (20, 20), "replay": 1600, "half_replay": True, "batch": 24, "budget": 88 * 1024,
              "overhead": 12 * 1024, "actor_lr": 3e-3, "critic_lr": 1e-2, "exploration_noise": 0.2},
}
PROFILE_SETTINGS = ("actor_lr", "critic_lr", "exploration_noise")  # the DEFAULTS a profile may set
# Objects, views and code beside the float buffers (measured, rounded up); a profile may
# give its own ("overhead": esp32's runs peak 8 KB above their buffers, on qemu-xtensa).
OVERHEAD = 24 * 1024

# Sizes (shared by the native and the Python kernels)
def layout(sizes, acts):
    return array("H", [len(sizes) - 1] + list(sizes) + list(acts))


def net_size(sizes):
    return sum((sizes[i] + 1) * sizes[i + 1] for i in range(len(sizes) - 1))


def tape_size(sizes, batch):
    return sum(sizes[1:]) * batch


def scratch_size(sizes, batch):
    widest = max(sizes)
    wt = max(sizes[i] * sizes[i + 1] for i in range(len(sizes) - 1))
    return 2 * widest * batch + wt


def packed_size(sizes):
    return sum(((sizes[i + 1] + 3) // 4) * 4 * (sizes[i] + 1) for i in range(len(sizes) - 1))


def policy_floats(sizes):
    """Floats of a policy file's payload: observation mean and std, packed layers, action scale and offset."""
    return 2 * sizes[0] + packed_size(sizes) + 2 * sizes[-1]


def replay_floats(p, obs_dim, act_dim):
    """The replay's size in floats (a replay of halves takes half as many, rounded up)."""
    n = p["replay"] * (2 * obs_dim + act_dim + 2)
    return (n + 1) // 2 if p.get("half_replay") else n


def plan(profile, obs_dim=3, act_dim=1):
    """Float counts of every buffer of a profile -> dict, plus 'bytes' (all of it)."""
    p = PROFILES[profile] if isinstance(profile, str) else profile
    h, B = list(p["hidden"]), p["batch"]
    actor = [obs_dim] + h + [act_dim]
    critic = [obs_dim + act_dim] + h + [1]
    pa, pc = net_size(actor), net_size(critic)
    x = obs_dim + act_dim
    f = {
        "actor": 4 * pa,                 # parameters, target, Adam m and v
        "critics": 2 * 4 * pc,           # the same for each twin
        "grad": max(pa, pc),
        "replay": replay_floats(p, obs_dim, act_dim),
        "tapes": tape_size(actor, B) + tape_size(critic, B),
        "scratch": max(scratch_size(actor, B), scratch_size(critic, B), policy_floats(actor)),
        # indices of 3 minibatches (4 bytes each); [s; a] of both critic minibatches, [s'; a'],
        # dQ1/d[s; a]; reward, not_done and Bellman target of each; dL/dQ; target policy noise
        "minibatch": 3 * B + 4 * x * B + 2 * 3 * B + B + 2 * act_dim * B,
        "acting": tape_size(actor, 1) + 2 * obs_dim + 3 * act_dim + 1,
    }
    total = sum(f.values())
    f["floats"] = total
    f["overhead"] = p.get("overhead", OVERHEAD)
    f["bytes"] = 4 * total + f["overhead"]
    return f
