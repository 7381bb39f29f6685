"""A Ctrl-C that something swallowed still stops training (neuromotor.interrupts)."""

import subprocess
import sys
import textwrap

# Stands for C code that clears the error of what it called: the first SIGINT's KeyboardInterrupt
# is caught and dropped before training starts.
SWALLOWED_THEN_TRAIN = textwrap.dedent("""
    import os, signal, sys, time
    from neuromotor import interrupts
    from neuromotor.cli import main
    {install}
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
    except KeyboardInterrupt:
        pass
    sys.exit(main(["train", "pendulum", "--steps", "3000", "--run-dir", sys.argv[1], "--quiet",
                   "--set", "eval_every=1000", "--set", "checkpoint_every=1000"]))
""")


def _run(tmp_path, install: str):
    return subprocess.run([sys.executable, "-c", SWALLOWED_THEN_TRAIN.format(install=install), str(tmp_path / "run")],
                          capture_output=True, text=True, timeout=120)


def test_training_stops_at_its_first_chunk_after_a_swallowed_interrupt(tmp_path):
    res = _run(tmp_path, "interrupts.install()")
    assert res.returncode == 130 and res.stderr == "neuromotor: interrupted\n", (res.returncode, res.stderr)
    assert not (tmp_path / "run" / "checkpoint.npz").exists()  # stopped before its first checkpoint


def test_the_command_line_keeps_a_programs_own_sigint_handler():
    script = textwrap.dedent("""
        import signal
        from neuromotor.cli import main
        own = lambda *a: None
        signal.signal(signal.SIGINT, own)
        assert main(["--version"]) == 0
        assert signal.getsignal(signal.SIGINT) is own
        from neuromotor import interrupts
        signal.signal(signal.SIGINT, signal.default_int_handler)
        interrupts.install()
        assert signal.getsignal(signal.SIGINT) is interrupts._handler
    """)
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
