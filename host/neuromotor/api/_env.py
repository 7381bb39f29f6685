"""An environment given as a Python object becomes the name a run records in config.json."""

import inspect

from neuromotor.envs import env_class
from neuromotor.errors import UserError
from neuromotor.training.session import parse_table


def env_name(env) -> str:
    """A built-in name, gymnasium id or module:attr is used as given; a gymnasium.Env subclass
    or a factory function becomes "module:qualname", which every later step (resume, evaluate,
    export, hil, shard workers) imports again. Objects that cannot be imported by that name
    (defined in __main__ or a notebook, nested, lambdas) are refused."""
    if env is None or isinstance(env, str):  # None: refused with the rest of the settings
        return env
    if not (inspect.isclass(env) or inspect.isfunction(env)):
        raise UserError(f"env must be a name, a gymnasium.Env subclass or a function returning an env, "
                        f"got {type(env).__name__}")
    module, qualname = getattr(env, "__module__", None), getattr(env, "__qualname__", "")
    if not module or module == "__main__" or "<" in qualname or "." in qualname:
        raise UserError(f"{getattr(env, '__name__', env)!r} is defined in {module or 'no module'}, so a run "
                        "cannot import it again; put it in a module of its own (in a notebook: "
                        "%%writefile myenv.py, then `from myenv import MyEnv`)")
    return f"{module}:{qualname}"


def env_factory(name: str, env_kwargs: "dict | None" = None, vector: str = "sync"):
    """The env factory `factory(n)` (n copies, stepped together) of a built-in name, gymnasium id
    or module:attr, with its keyword arguments; an unknown env or bad kwargs is a UserError."""
    return env_class(name, env_kwargs, vector)


def parse_kwargs(option: str, text: str) -> dict:
    """Keyword arguments for an env from their text, a JSON object or a TOML inline table
    (``'{"max_episode_steps": 500}'``, ``'{ g = 9.81 }'``); `option` names them in the error."""
    return parse_table(option, text)
