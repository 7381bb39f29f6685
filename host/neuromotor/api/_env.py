"""An environment given as a Python object becomes the name a run records in config.json."""

import inspect

from neuromotor.errors import UserError


def env_name(env) -> str:
    """A built-in name, gymnasium id or module:attr is used as given; a gymnasium.Env subclass
    or a factory function becomes "module:qualname", which every later step (resume, evaluate,
    export, hil, shard workers) imports again. Objects that cannot be imported by that name
    (defined in __main__ or a notebook, nested, lambdas) are refused."""
    if isinstance(env, str):
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
