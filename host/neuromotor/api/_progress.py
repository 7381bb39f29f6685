"""Whether a progress bar is shown when the caller did not say."""

import sys


def in_notebook() -> bool:
    """True inside a Jupyter kernel (where tqdm.auto draws a notebook widget)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


def show_progress(progress: "bool | None") -> bool:
    """`progress` if given; else on in a terminal or a notebook, off when output goes to a file
    or a pipe (a log would fill with redrawn bars)."""
    if progress is not None:
        return bool(progress)
    stream = sys.stderr
    return in_notebook() or bool(getattr(stream, "isatty", lambda: False)())
