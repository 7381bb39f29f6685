"""The browser board's page in headless Chromium (Debian's package), served by
`neuromotor serve-web`'s server: a first visit trains TD3 on the pendulum in a Web Worker
and shows the pendulum moving within 3 s; the returns, the timings and the downloaded
policy are read back; the policy's actions in the page (neuromotor_rt in MicroPython)
equal the host's NumPy forward pass, and the host's deploy takes the file. Chromium runs
with every host name but 127.0.0.1 unresolvable, so the page needs nothing from elsewhere."""

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request

import numpy as np
import pytest

from neuromotor.boards.deploy.core import policy_bytes
from neuromotor.policy import read_policy
from neuromotor.boards.web.chromium import Chromium
from neuromotor.boards.web.serve import Background

STEPS = 1200  # 6 episodes; 1100 updates
RTOL = 1e-5


@pytest.fixture(scope="module")
def server(browser_build):
    with Background(build=browser_build) as srv:
        yield srv


@pytest.fixture(scope="module")
def trained(server, tmp_path_factory):
    """One visit: train STEPS steps, download the policy, run it on observations in the page."""
    downloads = tmp_path_factory.mktemp("downloads")
    obs = np.random.default_rng(5).uniform([-1, -1, -8], [1, 1, 8], (200, 3)).astype(np.float32)
    with Chromium(download_dir=downloads, offline=True) as b:
        t0 = time.monotonic()
        b.open(server.url + f"?seed=1&steps={STEPS}")
        b.wait_for("window.nmState && window.nmState.done", timeout=120, fail="window.nmState && window.nmState.error")
        wall = time.monotonic() - t0
        state = b.evaluate("window.nmState")
        b.evaluate("document.getElementById('download').click()")
        deadline = time.monotonic() + 20
        while not list(downloads.glob("*.nmp")) and time.monotonic() < deadline:
            time.sleep(0.1)
        files = list(downloads.glob("*.nmp"))
        assert files, "the page's download produced no .nmp file"
        data = files[0].read_bytes()
        b.evaluate(f"window.nmLoadPolicy({json.dumps(list(data))})")
        actions = b.evaluate(f"window.nmActions({json.dumps(obs.ravel().tolist())})", await_promise=True)
        # the button runs one episode of the trained policy on the pendulum
        b.evaluate("document.getElementById('run').click()")
        episode = b.wait_for("window.nmState.episodeReturn", timeout=30)
        # the downloaded file chosen in the page's file input plays an episode too
        b.evaluate("window.nmState.episodeReturn = null; window.nmState.loaded = null")
        root = b.send("DOM.getDocument")["root"]["nodeId"]
        node = b.send("DOM.querySelector", {"nodeId": root, "selector": "#file"})["nodeId"]
        b.send("DOM.setFileInputFiles", {"nodeId": node, "files": [str(files[0])]})
        chosen = b.wait_for("window.nmState.episodeReturn", timeout=30)
        loaded = b.evaluate("window.nmState.loaded")
        # a damaged file (one payload byte changed: CRC) is refused with the runtime's message
        bad = bytearray(data)
        bad[len(bad) // 2] ^= 0x40
        b.evaluate(f"window.nmLoadPolicy({json.dumps(list(bad))})")
        error = b.wait_for("window.nmState.error", timeout=30)
        urls = b.requested_urls()
    return {"state": state, "wall": wall, "file": files[0], "data": data, "obs": obs,
            "actions": np.array(actions, np.float32).reshape(len(obs), 1), "urls": urls,
            "episode": episode, "chosen": chosen, "loaded": loaded, "error": error}


def test_first_visit_trains_and_reports(trained):
    s = trained["state"]
    assert s["status"] == "trained" and s["error"] is None
    assert s["steps"] == STEPS
    assert len(s["returns"]) == STEPS // 200 and s["returnSteps"] == [200 * (i + 1) for i in range(STEPS // 200)]
    assert all(-2000 < r < 0 for r in s["returns"]), s["returns"]
    assert np.isfinite(s["evalReturn"]) and -2000 < s["evalReturn"] < 0
    # the pendulum moved on screen (how soon is benchmarks/device_training.py's first_motion_s)
    assert s["firstMotionMs"] is not None


def test_downloaded_policy_equals_host_forward_pass(trained):
    spec = read_policy(trained["file"])
    assert spec.sizes == [3, 64, 64, 1] and spec.activations == ["relu", "relu", "tanh"]
    assert len(trained["data"]) == trained["state"]["policyBytes"]
    ref = spec.forward(trained["obs"])
    dev = trained["actions"]
    assert np.all(np.isfinite(dev)) and np.ptp(ref) > 1e-3  # a policy that answers differently
    assert np.abs(dev - ref).max() <= RTOL * max(1.0, np.abs(ref).max()), np.abs(dev - ref).max()
    # the host's deploy reads and validates it as it would before uploading
    source, data = policy_bytes(str(trained["file"]))
    assert data == trained["data"]


def test_page_runs_policies_and_refuses_a_damaged_one(trained):
    assert -2000 < trained["episode"] < 0 and -2000 < trained["chosen"] < 0
    assert trained["loaded"] == {"obsDim": 3, "actDim": 1}
    assert "CRC" in trained["error"] or "checksum" in trained["error"].lower(), trained["error"]
    assert "\n" not in trained["error"].strip()


def test_page_requests_only_the_local_server(trained, server):
    assert trained["urls"] and all(u.startswith(server.url) for u in trained["urls"]), trained["urls"]


def _head(url):
    req = urllib.request.Request(url, method="HEAD")
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status, r.headers["Content-Type"]


def test_server_types_and_refuses_other_files(server):
    assert _head(server.url + "micropython.wasm") == (200, "application/wasm")
    assert _head(server.url + "micropython.mjs")[1].startswith("text/javascript")
    assert _head(server.url + "worker.js")[1].startswith("text/javascript")
    assert _head(server.url)[1].startswith("text/html")
    for bad in ("../../etc/passwd", "%2e%2e/README.md", "frozen_content.c", "nope.js"):
        with pytest.raises(urllib.error.HTTPError) as exc:
            _head(server.url + bad)
        assert exc.value.code == 404, bad
    assert server.server.server_address[0] == "127.0.0.1"


def test_serve_web_command(browser_build, tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "neuromotor", "serve-web", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("serving http://127.0.0.1:"), line + proc.stderr.read()
        url = line.split()[1]
        assert _head(url + "micropython.wasm") == (200, "application/wasm")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    empty = subprocess.run([sys.executable, "-m", "neuromotor", "serve-web"], capture_output=True, text=True,
                           env={**__import__("os").environ, "NEUROMOTOR_CACHE": str(tmp_path)})
    assert empty.returncode == 2
    assert empty.stderr.strip().count("\n") == 0 and "make firmware BOARD=browser" in empty.stderr
