"""`neuromotor train-on-device`: upload the trainer, train on the board, bring the policy home."""

import contextlib
import time
from pathlib import Path

from neuromotor.training import rundir
from neuromotor.errors import UserError
from neuromotor.policy.policy_file import decode
from neuromotor.boards.ondevice.client import BoardResetError, TrainClient, upload_trainer
from neuromotor.boards.ondevice.rundir import PROFILES, write_run_dir, write_started


def train_on_device(port: str, profile: str = "teensy41", steps: int = 10000, seed: int = 0,
                    run_dir: Path = None, force: bool = False, upload: bool = True, every: int = None,
                    eval_episodes: int = 10, progress: bool = True, log=print) -> dict:
    if profile not in PROFILES:
        raise UserError(f"unknown profile {profile!r} (profiles: {', '.join(sorted(PROFILES))})")
    if steps <= 0:
        raise UserError(f"steps must be positive, got {steps}")
    every = every or max(100, min(1000, steps // 20 // 100 * 100 or 100))
    if run_dir is None:
        from neuromotor.paths import runs_dir
        run_dir = runs_dir() / f"pendulum-td3-ondevice-{profile}-s{seed}-{time.strftime('%Y%m%d-%H%M%S')}"
    run_dir = Path(run_dir)
    made = not run_dir.exists()
    try:
        return _train(port, profile, steps, seed, run_dir, force, upload, every, eval_episodes, progress, log)
    except BoardResetError:  # a run cut short cannot be resumed: its files go, as the error says
        for name in rundir.OWN_FILES + rundir.ADDED_FILES:
            (run_dir / name).unlink(missing_ok=True)
        if made:
            with contextlib.suppress(OSError):
                run_dir.rmdir()
        raise


def _train(port, profile, steps, seed, run_dir, force, upload, every, eval_episodes, progress, log) -> dict:
    rundir.prepare(run_dir, force)
    (run_dir / "policy.nmp").unlink(missing_ok=True)
    write_started(run_dir, profile, seed, steps)
    if upload:
        board = upload_trainer(port, log=log)
    else:
        board = None
    t0 = time.monotonic()
    stream = []
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=steps, unit="step", dynamic_ncols=True, desc=f"td3 on board ({profile})")
    started = {}

    def on_line(word, info):
        if word == "started":
            started.update(info)
            if bar is not None:
                bar.write(f"board: {info.get('kernels')} kernels, {info.get('hidden')} nets, "
                          f"batch {info.get('batch')}, replay {info.get('replay')}, "
                          f"{info.get('heap_setup')} B allocated, {info.get('mem_free_before')} B were free")
            return
        info["wall_s"] = round(time.monotonic() - t0, 3)
        stream.append(info)
        rundir.append_metrics(run_dir, [{"step": info["step"], "agent": 0, "seed": seed, "eval_return_mean": None,
                                       "eval_return_std": None, "train_return": info.get("recent_return"),
                                       "wall_s": info["wall_s"]}])
        if bar is not None:
            bar.update(info["step"] - bar.n)
            rr = info.get("recent_return")
            sps = info.get("steps_per_s")
            bar.set_postfix_str((f"return {rr:.0f}" if rr is not None else "return -")
                                + (f", {sps:.0f} step/s" if sps else "") + f", free {info.get('mem_free')} B")

    # metrics.jsonl grows while training runs (progress survives a reset)
    from neuromotor.training.config import RunConfig, RunSpec
    from neuromotor.boards.ondevice.rundir import algo_config
    rundir.write_config(run_dir, RunSpec("pendulum", "td3", [seed], RunConfig(steps=steps, shards=1), algo_config(profile)))
    client = TrainClient(port, timeout=30.0)
    try:
        try:
            done = client.train(profile, steps, seed, every=every, episodes=eval_episodes, on_line=on_line)
        except BoardResetError:
            if bar is not None:
                bar.close()
            raise
        if bar is not None:
            bar.update(steps - bar.n)
            bar.close()
        data = client.fetch_policy(done["policy_bytes"])
    finally:
        client.close(quit_server=not client._server_exited)
    import zlib
    if zlib.crc32(data) != done["policy_crc"]:
        raise UserError(f"{port}: the policy arrived corrupted (CRC mismatch); run again")
    spec = decode(data, "policy from the board")
    device = {**started, "board": client.info.get("platform") if client.info else None,
              "probe": {k: board.get(k) for k in ("impl", "version", "platform", "arch")} if board else None,
              "device_eval_return": done.get("eval_return"), "device_wall_s": done.get("wall_ms", 0) / 1000,
              "wall_s": round(time.monotonic() - t0, 3), "heap_live_peak": done.get("heap_live_peak"),
              "heap_peak": done.get("heap_peak"), "heap_gc_threshold": done.get("heap_gc_threshold"),
              "heap_base": done.get("heap_base"),
              "heap_setup": done.get("heap_setup"), "mem_free_before": done.get("mem_free_before"),
              "updates": done.get("updates")}
    # the progress-time metrics were provisional: rewrite them with the final record
    (run_dir / rundir.METRICS).unlink(missing_ok=True)
    return write_run_dir(run_dir, spec, data, profile, seed, steps, stream, device, eval_episodes)
