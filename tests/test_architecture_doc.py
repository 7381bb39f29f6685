"""docs/architecture.md names only files and folders that exist, in its text and in its drawing of the layers."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "architecture.md"
PACKAGE = REPO / "host" / "neuromotor"


def _text_paths(text: str) -> list:
    """The repository paths in `code` spans: those with a slash (not a placeholder such as
    boards/<name>/), and setup.py."""
    spans = re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S))
    return [s for s in spans if s == "setup.py" or ("/" in s and " " not in s and "<" not in s)]


def _drawing_names(text: str) -> list:
    """The package's folders and modules the drawing of the layers names (the first column of each row)."""
    drawing = re.search(r"```text\n(.*?)```", text, re.S).group(1)
    return [word for line in drawing.splitlines() if line.strip() and line.strip() != "|"
            for word in line[:26].split()]


def test_every_path_the_document_names_exists():
    text = DOC.read_text()
    paths = _text_paths(text)
    assert len(paths) > 30 and "host/neuromotor/algos/__init__.py" in paths
    assert [p for p in paths if not (REPO / p).exists()] == []


def test_every_module_the_drawing_names_exists():
    names = _drawing_names(DOC.read_text())
    assert {"cli/", "algos/", "native/", "rules", "__init__.py"} <= set(names)
    missing = [n for n in names if not (PACKAGE / n).exists() and not (PACKAGE / f"{n}.py").exists()]
    assert missing == []


def test_the_checks_see_a_missing_path():
    text = "`host/neuromotor/nowhere.py` and `boards/<name>/` and `neuromotor board check`\n```text\n nowhere/  x\n```"
    assert _text_paths(text) == ["host/neuromotor/nowhere.py"]
    assert _drawing_names(text) == ["nowhere/", "x"]
