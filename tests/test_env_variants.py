"""Env options for recurrent policies and distillation: the pendulum without its velocity, the
quadrotor with delayed sensing and with drones other than the Crazyflie."""

import numpy as np
import pytest

from neuromotor.envs import env_class
from neuromotor.envs.pendulum import PendulumVec
from neuromotor.envs.quadrotor import QuadrotorVec
from neuromotor.envs.quadrotor_drones import SENSED, QuadrotorDronesVec
from neuromotor.errors import UserError


def _rngs(n, seed=0):
    return [np.random.default_rng([seed, i]) for i in range(n)]


def test_pendulum_without_velocity_observes_the_angle_only():
    full, blind = PendulumVec(4), env_class("pendulum", {"observe_velocity": False})(4)
    assert (blind.obs_dim, env_class("pendulum", {"observe_velocity": False}).obs_dim) == (2, 2)
    np.testing.assert_array_equal(blind.reset(_rngs(4)), full.reset(_rngs(4))[:, :2])
    a = np.full((4, 1), 0.5, np.float32)
    (o1, r1, _), (o2, r2, _) = full.step(a), blind.step(a)
    np.testing.assert_array_equal(o2, o1[:, :2])
    np.testing.assert_array_equal(r2, r1)
    with pytest.raises(UserError, match="observe_velocity"):
        PendulumVec(1, observe_velocity="no")


def _fly(env, steps, seed=1):
    obs = [env.reset(_rngs(env.num_envs))]
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        obs.append(env.step(rng.uniform(-0.2, 0.6, (env.num_envs, 4)))[0])
    return np.array(obs)


def test_one_nominal_drone_flies_as_the_published_quadrotor():
    env = env_class("quadrotor", {"drones": [{}]})(3)
    assert type(env) is QuadrotorDronesVec
    np.testing.assert_array_equal(_fly(env, 20), _fly(QuadrotorVec(3), 20))


def test_drones_own_contiguous_blocks_and_native_equals_numpy():
    drones = [{"mass": 1.3, "thrust": 0.8}, {"inertia": 1.4, "arm": 0.8, "motor_time_constant": 1.5}]
    env = QuadrotorDronesVec(4, drones=drones)
    assert env.blocks == [(0, 2), (2, 4)]
    np.testing.assert_allclose(env.params[:2], [[0.027 * 1.3, 3.16e-10 * 0.8]] * 2)
    numpy_ = QuadrotorDronesVec(4, drones=drones)
    numpy_.reset(_rngs(4))
    env.reset(_rngs(4))
    rng = np.random.default_rng(3)
    for _ in range(30):
        a = rng.uniform(-0.2, 0.6, (4, 4))
        o1, r1, t1 = env.step(a)
        o2, r2, t2 = numpy_.step_numpy(a)
        np.testing.assert_allclose(o1, o2, rtol=1e-4, atol=1e-4)
        np.testing.assert_array_equal(t1, t2)
    # the same commands move different drones differently
    nominal = _fly(QuadrotorVec(4), 30)
    flown = _fly(QuadrotorDronesVec(4, drones=drones), 30)
    assert np.abs(flown - nominal).max() > 1e-2


def test_randomize_draws_around_each_drones_own_mass():
    env = QuadrotorDronesVec(200, randomize=0.1, drones=[{"mass": 0.5}, {"mass": 2.0}])
    env.reset(_rngs(200))
    assert env.params[:100, 0].max() <= 0.027 * 0.5 * 1.1 + 1e-12
    assert env.params[100:, 0].min() >= 0.027 * 2.0 * 0.9 - 1e-12


def test_obs_delay_observes_the_state_of_k_steps_ago():
    k = 3
    now, late = QuadrotorVec(2), QuadrotorDronesVec(2, obs_delay=k)
    seen_now, seen_late = _fly(now, 12), _fly(late, 12)
    np.testing.assert_array_equal(seen_late[k:, :, :SENSED], seen_now[:-k, :, :SENSED])
    np.testing.assert_array_equal(seen_late[:, :, SENSED:], seen_now[:, :, SENSED:])  # rotors, actions: current
    np.testing.assert_array_equal(seen_late[1, :, :SENSED], seen_now[0, :, :SENSED])  # the initial state, held
    # a snapshot restores what is still to be observed
    copy = QuadrotorDronesVec(2, obs_delay=k)
    copy.reset(_rngs(2))
    copy.set_state(late.get_state())
    a = np.full((2, 4), 0.3)
    np.testing.assert_array_equal(copy.step(a)[0], late.step(a)[0])


def test_a_reset_env_forgets_its_delayed_past_alone():
    env = QuadrotorDronesVec(2, obs_delay=2)
    env.reset(_rngs(2))
    for _ in range(5):
        obs = env.step(np.full((2, 4), 0.3))[0]
    kept = obs[1, :SENSED].copy()
    obs = env.reset(_rngs(2, seed=9), mask=np.array([True, False]))
    np.testing.assert_array_equal(obs[1, :SENSED], kept)
    np.testing.assert_array_equal(env.sensed[0, 0], env.sensed[0, -1])


@pytest.mark.parametrize("kwargs, match", [
    ({"obs_delay": -1}, "obs_delay"), ({"obs_delay": 1.5}, "obs_delay"),
    ({"drones": []}, "drones"), ({"drones": [{"mass": 9.0}]}, "mass"), ({"drones": [{"wings": 2}]}, "factors"),
    ({"drones": [{"arm": True}]}, "arm"),
])
def test_bad_options_are_one_line_errors(kwargs, match):
    with pytest.raises(UserError, match=match):
        env_class("quadrotor", kwargs)
