"""A built-in env with keyword arguments (`--env-kwargs` on a built-in name), as a factory.

`Configured(cls, kwargs)(n)` is `cls(n, **kwargs)`. Its dimensions and bounds are those of one
env made so (the action history sets the quadrotor's obs_dim); everything else (draw, plots,
max_episode_steps, ...) is the class's. It pickles by reference to the class, so population
shard workers rebuild the same envs.
"""


class Configured:
    def __init__(self, cls, kwargs: dict):
        self.cls, self.kwargs = cls, dict(kwargs)
        probe = cls(1, **self.kwargs)  # bad values are the class's UserError, said now
        self.obs_dim, self.act_dim = probe.obs_dim, probe.act_dim
        self.action_low, self.action_high = probe.action_low, probe.action_high
        self.__name__ = cls.__name__

    @property
    def gym_kwargs(self) -> dict:
        """The keyword arguments of the gymnasium counterpart (`eval --gymnasium`): these too."""
        return {**self.cls.gym_kwargs, **self.kwargs}

    def __call__(self, num_envs: int):
        return self.cls(num_envs, **self.kwargs)

    def __getattr__(self, name):
        if name.startswith("__") or "cls" not in self.__dict__:  # pickling looks before __init__ ran
            raise AttributeError(name)
        return getattr(self.cls, name)
