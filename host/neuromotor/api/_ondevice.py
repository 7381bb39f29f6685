"""Training on the board itself: TD3 on the pendulum, in the board's own RAM, into a run directory."""

import os
from pathlib import Path

from neuromotor.boards.link.ports import resolve_port
from neuromotor.boards.ondevice import BoardResetError, train_on_device as train
from neuromotor.boards.ondevice.rundir import PROFILES
from neuromotor.errors import UserError
from neuromotor.training import rundir


def train_on_device(port: str = "auto", profile: str = "teensy41", steps: int = 10_000, seed: int = 0, *,
                    run_dir: "str | os.PathLike | None" = None, force: bool = False, upload: bool = True,
                    every: "int | None" = None, eval_episodes: int = 10, progress: bool = True, log=print) -> dict:
    """Train TD3 on the board at `port` with the memory profile `profile`, then evaluate the
    board's policy on the host. The run directory (default runs/pendulum-td3-ondevice-...) is
    an ordinary run (export, hil, eval) plus on_device.json; a failure leaves nothing behind.
    Returns the summary (what `neuromotor train-on-device --json` prints)."""
    if profile not in PROFILES:
        raise UserError(f"--profile: unknown profile {profile!r} (profiles: {', '.join(sorted(PROFILES))})")
    if run_dir is not None:
        run_dir = Path(run_dir)
        rundir.check_replaceable(run_dir, force)
    port = resolve_port(port)
    made = run_dir is None
    run_dir = run_dir or rundir.new_run_dir("pendulum", f"td3-ondevice-{profile}", [seed])
    try:
        with rundir.undone_on_failure(run_dir, made):  # a refused port leaves nothing behind
            rundir.make_dir(run_dir)
            with rundir.locked(run_dir):  # one trainer per run directory, as for `train`
                return train(port, profile, steps, seed, run_dir=run_dir, force=force, upload=upload, every=every,
                             eval_episodes=eval_episodes, progress=progress, log=log)
    except BoardResetError as exc:
        raise UserError(str(exc)) from None
