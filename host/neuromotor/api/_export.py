"""Writing a run's policy (or converting a policy file) for a board: .nmp, C header, PlatformIO."""

import os
from pathlib import Path

from neuromotor.api import _formats
from neuromotor.api._progress import show_progress
from neuromotor.errors import UserError
from neuromotor.limits import MAX_COUNT, MAX_FINETUNE_STEPS, MAX_SEED
from neuromotor.policy import FINETUNE_STEPS, quantize_checked
from neuromotor.policy.policy_file import needs_version4
from neuromotor.policy.spec import env_for
from neuromotor.safe_write import check_target
from neuromotor.training.run_policy import load_spec
from neuromotor.training.rundir import CONFIG, own_paths


def protected_paths(source, output) -> list:
    """What an export must never replace: its source, and the files of any run directory
    (the source's, and the one the output would land in; see rundir.own_paths)."""
    src = Path(source)
    paths = [src] if src.is_file() else own_paths(src)
    out_dir = Path(os.path.realpath(output)).parent if output else None
    if out_dir is not None and (out_dir / CONFIG).is_file():
        paths += own_paths(out_dir)
    return paths


def export(source, path, format: "str | None" = None, agent: int = 0, quantize: "str | None" = None,
                  max_error: "float | None" = None, calibration: int = 2000, heldout: int = 2000, seed: int = 0,
                  finetune_steps: "int | None" = None, progress: "bool | None" = None):
    """Write the policy of `source` (a run directory or a .nmp file) to `path`.

    Returns (the written path, the PolicySpec written, the int8 accuracy report or {}).
    `format` is one of the export formats of neuromotor.api._formats: "nmp", "c-header" or
    "platformio" (default: chosen by the suffix, c-header for *.h, else nmp); platformio makes
    `path` a PlatformIO project directory. `quantize="int8"` calibrates
    integer weights and activations on rollouts of the run's env (`calibration` steps of 8
    episodes, as many of 64 episode starts, and a perturbed copy), rounds the weights with
    error compensation and fine-tunes them `finetune_steps` steps (default FINETUNE_STEPS) to
    act like the float policy there (a recurrent policy: along 128 episodes of calibration / 16
    steps, through time, default 300 steps), and refuses (QuantizationError) when the actions on
    `heldout` other observations are off by more than `max_error` of the action range (default
    0.02); on an env that judges success (the quadrotor) with `max_error` None, when the int8
    policy succeeds in more than 2 fewer of 100 held-out episodes than the float one. The
    file is written atomically and only over a regular file that is neither the source nor a
    run's own file. `progress`: a bar over the int8 fine-tune's steps (default: in a terminal or
    a notebook)."""
    path = os.fspath(path)  # "" is refused, in one line, by the target checks below
    fmt = _formats.policy_format(_formats.EXPORT, format, path)
    if isinstance(agent, bool) or not isinstance(agent, int) or agent < 0:
        raise UserError(f"agent must be a non-negative integer, got {agent!r}")
    for name, value, lo, hi in (("calibration", calibration, 1, MAX_COUNT), ("heldout", heldout, 1, MAX_COUNT),
                                ("seed", seed, 0, MAX_SEED),
                                ("finetune_steps", FINETUNE_STEPS if finetune_steps is None else finetune_steps,
                                 0, MAX_FINETUNE_STEPS)):
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise UserError(f"{name} must be an integer from {lo} to {hi}, got {value!r}")
    if quantize is not None:
        if quantize != "int8":
            raise UserError(f"quantize must be 'int8' (or None for float32), got {quantize!r}")
        if not fmt.int8:
            raise UserError(f"--quantize int8 writes a policy file or a C header, not {fmt.name}")
        if max_error is not None and not 0 < max_error < float("inf"):
            raise UserError(f"--max-error must be a fraction > 0 of the action range, got {max_error}")
    elif max_error is not None or finetune_steps is not None:
        raise UserError(f"--{'max-error' if max_error is not None else 'finetune-steps'} applies to "
                        "--quantize int8 only")
    if fmt.directory:
        _formats.resolve(fmt.check)(path)
    else:
        target = check_target(path, protected=protected_paths(source, path), follow=True)
    spec = load_spec(source, agent)
    dtype = getattr(spec, "dtype", "float32")
    if dtype != "float32" and not fmt.int8:
        raise UserError(f"{os.fspath(source)}: {fmt.name} holds float32 policies; this one is {dtype} "
                        "(use --format c-header)")
    if needs_version4(spec) and not fmt.recurrent:
        raise UserError(f"{os.fspath(source)}: {fmt.name} runs MLPs of identity, relu and tanh layers; this policy "
                        f"has {_v4_features(spec)} (write it as nmp)")
    if quantize and any(a not in ("identity", "relu", "tanh") for a in spec.activations):
        raise UserError(f"{os.fspath(source)}: int8 runs identity, relu and tanh layers and GRUs; this policy has "
                        f"{_v4_features(spec)} (write it as nmp, float32)")
    report = {}
    if quantize:
        if not getattr(spec, "has_limits", False) or dtype != "float32":
            raise UserError(f"{source}: --quantize needs a float policy with action limits (a run directory)")
        if "env" not in spec.meta:  # a policy file: the env it calibrates on must fit
            try:
                env_for(spec)
            except UserError:
                raise UserError(f"{os.fspath(source)}: this policy file names no env and does not fit the default "
                                "one; --quantize calibrates on the policy's env: export from its run (or "
                                "distillation) directory") from None
        from tqdm.auto import tqdm

        bars = []  # made at the first step: a policy exported without a fine-tune shows none

        def on_step(step, steps):
            if not bars:
                bars.append(tqdm(total=steps, desc="int8 fine-tune", unit="step", disable=not show_progress(progress)))
            bars[0].update(step - bars[0].n)

        try:
            spec, report = quantize_checked(spec, calibration, heldout, seed, max_error,
                                            finetune_steps=finetune_steps, on_step=on_step)
        finally:
            for bar in bars:
                bar.close()
    written = _formats.resolve(fmt.handler)(spec, path if fmt.directory else target)
    return Path(written if fmt.directory else path), spec, report


def _v4_features(spec) -> str:
    parts = [f"{spec.kinds.count('gru')} GRU layer(s)"] if spec.recurrent else []
    parts += sorted({a for a in spec.activations if a not in ("identity", "relu", "tanh")})
    return ", ".join(parts)
