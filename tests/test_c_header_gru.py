"""C headers of recurrent policies (float and int8): compiled with gcc against the kernels'
headers, stepped along episodes with a reset and a NaN observation between them, each
action against the host's reference: float to float32 rounding, int8 bit for bit; and the
header's example pair, which takes NM_POLICY_EXAMPLE_STEPS steps from the initial state."""

import shutil
import subprocess

import numpy as np
import pytest
from test_policy_gru import gru_spec
from test_quantize_gru import episodes, quantized

from neuromotor.paths import DEVICE_DIR
from neuromotor.policy.c_forward import EXAMPLE_STEPS
from neuromotor.policy.c_header import render_c_header

INCLUDE = DEVICE_DIR / "native" / "include"

# Reads lines from stdin: "reset", or one observation; prints the status and the action.
MAIN = r"""
#include <stdio.h>
#include <string.h>
#include "%(kernels)s"
#include "policy.h"
int main(void) {
    char line[4096];
    float obs[NM_POLICY_OBS_DIM], action[NM_POLICY_ACT_DIM];
    for (int s = 0; s < NM_POLICY_EXAMPLE_STEPS; s++) {
        nm_policy_forward(action, nm_policy_example_obs);
    }
    double worst = 0;
    for (int i = 0; i < NM_POLICY_ACT_DIM; i++) {
        double d = action[i] - nm_policy_example_action[i];
        worst = d < 0 ? (-d > worst ? -d : worst) : (d > worst ? d : worst);
    }
    printf("example %%.9g\n", worst);
    nm_policy_reset();
    while (fgets(line, sizeof line, stdin)) {
        if (strncmp(line, "reset", 5) == 0) {
            nm_policy_reset();
            continue;
        }
        char *p = line;
        for (int i = 0; i < NM_POLICY_OBS_DIM; i++) {
            int used = 0;
            sscanf(p, "%%f%%n", &obs[i], &used);
            p += used;
        }
        int status = nm_policy_forward(action, obs);
        printf("%%d", status);
        for (int i = 0; i < NM_POLICY_ACT_DIM; i++) {
            printf(" %%.9g", action[i]);
        }
        printf("\n");
    }
    return 0;
}
"""


def _compile(tmp_path, policy, kernels, flags=()):
    if not shutil.which("gcc"):
        pytest.fail("gcc is needed (make system installs it)")
    (tmp_path / "policy.h").write_text(render_c_header(policy))
    (tmp_path / "main.c").write_text(MAIN % {"kernels": kernels})
    exe = tmp_path / "steps"
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Werror", "-O2", "-ffp-contract=off", *flags, f"-I{INCLUDE}",
                    f"-I{tmp_path}", str(tmp_path / "main.c"), "-o", str(exe), "-lm"], check=True)
    return exe


def _steps(exe, lines):
    """(the example action's largest error, statuses, actions) of the program fed `lines`."""
    out = subprocess.run([str(exe)], input="\n".join(lines) + "\n", capture_output=True, text=True,
                         check=True).stdout.splitlines()
    rows = [line.split() for line in out[1:]]
    return float(out[0].split()[1]), [int(r[0]) for r in rows], np.array([[float(v) for v in r[1:]] for r in rows])


def _script(policy, seqs):
    """The program's input (two episodes, a reset and a NaN observation between them, the
    NaN again mid-episode) and the host's statuses and actions for it: a NaN step leaves the
    state as it was and gives the limits' midpoint."""
    mid = 0.5 * policy.action_low + 0.5 * policy.action_high
    bad = np.array(seqs[0, 0])
    bad[1] = np.nan
    lines, status, actions = [], [], []
    for episode in (0, 1):
        lines.append("reset")
        state = policy.initial_state()
        for t, obs in enumerate(seqs[:, episode]):
            if t == 5:  # mid-episode: the state goes on from where it was
                lines.append(" ".join(f"{v:.9g}" for v in bad))
                status.append(-1)
                actions.append(mid)
            lines.append(" ".join(f"{v:.9g}" for v in obs))
            action, state = policy.step(obs, state)
            status.append(0)
            actions.append(action)
    return lines, status, np.array(actions)


@pytest.mark.parametrize("flags", [(), ("-DNM_NO_AVX2", "-DNM_NO_FDIV")])
def test_float_gru_header_steps_as_the_host(tmp_path, flags):
    spec = gru_spec(seed=2, h0_scale=1.5)  # an initial state beyond +-1 is the float's to keep
    # meta is whatever a run's config held: a long list, and text that would end a C comment
    spec.meta.update(drones=[{"mass": 1.0 + k / 100} for k in range(40)], note="a */ #error in the comment")
    exe = _compile(tmp_path, spec, "nm_kernels.h", flags)
    seqs = episodes(spec, steps=20, batch=2, seed=3)
    lines, status, ref = _script(spec, seqs)
    example, got_status, got = _steps(exe, lines)
    assert got_status == status
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
    assert example <= 1e-5  # the C's exp and tanh round apart from NumPy's
    meta_line = next(line for line in (tmp_path / "policy.h").read_text().splitlines() if "meta:" in line)
    assert len(meta_line) < 250 and "*/" not in meta_line


def test_int8_gru_header_is_the_host_integer_reference_bit_for_bit(tmp_path):
    spec, qp = quantized(seed=1)
    exe = _compile(tmp_path, qp, "nm_int8.h")
    seqs = episodes(spec, steps=20, batch=2, seed=4)
    lines, status, ref = _script(qp, seqs)
    example, got_status, got = _steps(exe, lines)
    assert example == 0.0 and got_status == status
    assert np.array_equal(got.astype(np.float32), ref.astype(np.float32))
    text = (tmp_path / "policy.h").read_text()
    assert f"#define NM_POLICY_EXAMPLE_STEPS {EXAMPLE_STEPS}" in text and "NM_POLICY_STATE_INT16 8" in text


def test_example_is_a_later_step_than_the_first(tmp_path):
    """The header's example action is step NM_POLICY_EXAMPLE_STEPS's, not the first's."""
    spec = gru_spec(seed=5)
    text = render_c_header(spec, example_obs=np.zeros(spec.obs_dim, np.float32))
    first = spec.step(np.zeros(spec.obs_dim, np.float32), spec.initial_state())[0]
    state, obs = spec.initial_state(), np.zeros(spec.obs_dim, np.float32)
    for _ in range(EXAMPLE_STEPS):
        action, state = spec.step(obs, state)
    body = text.split("nm_policy_example_action[NM_POLICY_ACT_DIM] = {")[1].split("}")[0]
    values = np.array([float(v.strip().rstrip("f")) for v in body.split(",")], np.float32)
    assert np.array_equal(values, action) and not np.allclose(values, first)


def test_sigmoid_and_fast_tanh_headers_step_as_the_host(tmp_path):
    """The other version-4 activations: a header holds them too (an MLP, so no state)."""
    spec = gru_spec(seed=6, out_act="sigmoid")
    spec.kinds, spec.hidden_weights, spec.hidden_biases, spec.initial_hidden = ["dense"] * 3, *[[None] * 3] * 3
    spec.weights[1], spec.biases[1], spec.activations[1] = spec.weights[1][:6], spec.biases[1][:6], "fast_tanh"
    spec.validate()
    text = render_c_header(spec)
    assert "nm_policy_reset" not in text and "NM_POLICY_STATE" not in text
    (tmp_path / "policy.h").write_text(text)
    (tmp_path / "main.c").write_text(r"""
#include <stdio.h>
#include "nm_kernels.h"
#include "policy.h"
int main(void) {
    float obs[NM_POLICY_OBS_DIM], action[NM_POLICY_ACT_DIM];
    while (1) {
        for (int i = 0; i < NM_POLICY_OBS_DIM; i++) {
            if (scanf("%f", &obs[i]) != 1) return 0;
        }
        nm_policy_forward(action, obs);
        for (int i = 0; i < NM_POLICY_ACT_DIM; i++) printf("%.9g ", action[i]);
        printf("\n");
    }
}
""")
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Werror", "-O2", "-ffp-contract=off", f"-I{INCLUDE}",
                    f"-I{tmp_path}", str(tmp_path / "main.c"), "-o", str(tmp_path / "mlp"), "-lm"], check=True)
    obs = np.random.default_rng(7).normal(0, 2, (50, spec.obs_dim)).astype(np.float32)
    out = subprocess.run([str(tmp_path / "mlp")], input="\n".join(" ".join(f"{v:.9g}" for v in o) for o in obs),
                         capture_output=True, text=True, check=True).stdout
    got = np.array([[float(v) for v in line.split()] for line in out.splitlines()])
    np.testing.assert_allclose(got, spec(obs), rtol=1e-5, atol=1e-5)
