"""The documentation site: built by MkDocs in strict mode with no warning, every public name
documented (a docstring of its own, a place in the API reference), the notebooks rendered."""

import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import neuromotor

REPO = Path(__file__).resolve().parents[1]
PUBLIC = [n for n in neuromotor.__all__ if n != "__version__"]


def _own_doc(obj) -> str:
    """The object's own docstring: not inherited, and not the signature a dataclass makes up."""
    doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else getattr(obj, "__doc__", None)
    if not doc or (inspect.isclass(obj) and doc.startswith(f"{obj.__name__}(")):
        return ""
    return doc.strip()


def _api_members(cls):
    """Public methods and properties a class of neuromotor.api defines itself."""
    for name, value in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(value, property):
            yield name, value.fget
        elif inspect.isfunction(value) or isinstance(value, (staticmethod, classmethod)):
            yield name, getattr(value, "__func__", value)


def test_every_public_name_has_a_docstring():
    missing = [name for name in PUBLIC if not _own_doc(getattr(neuromotor, name))]
    for name in PUBLIC:
        obj = getattr(neuromotor, name)
        if inspect.isclass(obj) and obj.__module__.startswith("neuromotor.api"):
            missing += [f"{name}.{m}" for m, f in _api_members(obj) if not _own_doc(f)]
    assert missing == []


def test_the_docstring_check_sees_a_missing_one():
    class Bare:
        def method(self):
            pass

    assert _own_doc(Bare) == "" and [m for m, f in _api_members(Bare) if not _own_doc(f)] == ["method"]


def test_every_public_name_is_in_the_reference():
    reference = (REPO / "docs" / "reference.md").read_text()
    documented = set(re.findall(r"^::: neuromotor\.[\w.]*?(\w+)$", reference, re.M))
    assert sorted(set(PUBLIC) - documented) == []


@pytest.mark.slow
def test_site_builds_strict_without_warnings(tmp_path):
    site = tmp_path / "site"
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(REPO / "mkdocs.yml"),
                          "-d", str(site)], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    log = res.stdout + res.stderr
    assert res.returncode == 0, log
    assert "WARNING" not in log, log
    reference = (site / "reference" / "index.html").read_text()
    for name in PUBLIC:  # each public name has its own entry, generated from its docstring
        assert re.search(rf'id="neuromotor\.[\w.]*\b{name}"', reference), name
    for notebook in ("quickstart", "own_environment", "emulated_board", "inside_the_library"):
        page = (site / "tutorials" / notebook / "index.html").read_text()
        assert "import neuromotor" in page or "import numpy" in page, notebook
    assert "neuromotor.train" in (site / "guide" / "index.html").read_text()
