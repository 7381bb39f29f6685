"""What the recurrent algorithms' tests share: small networks and replay, and the pendulum
without its velocity (the task that needs memory)."""

from neuromotor.envs import env_class

SMALL = dict(dense=8, hidden=4, critic_head=8, batch_size=4, sequence_length=6, burn_in=2, learning_starts=40,
             buffer_size=300)
HIDDEN_VELOCITY = '{"observe_velocity": false}'


def blind(n):
    return env_class("pendulum")(n, observe_velocity=False)
