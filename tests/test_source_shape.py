"""Small files with one job each: no host or device Python file over 500 lines, no C file
or header over 700; every header's #includes at its top (none after its first line of code),
and no two headers that include each other, directly or through others."""

import re
from pathlib import Path

from test_layout import cycles

REPO = Path(__file__).resolve().parents[1]
PYTHON_MAX, C_MAX = 500, 700
PYTHON_ROOTS = ("host", "device")
C_ROOTS = ("device", "boards", "host", "benchmarks")
INCLUDE_DIRS = (REPO / "device" / "native" / "include", REPO / "device" / "native")


def _files(roots, suffixes):
    for root in roots:
        for path in sorted((REPO / root).rglob("*")):
            if path.suffix in suffixes and path.is_file() and "__pycache__" not in path.parts:
                yield path


def _lines(path) -> int:
    return len(path.read_text(errors="replace").splitlines())


def too_long(paths, limit) -> list:
    return [f"{p.relative_to(REPO) if p.is_relative_to(REPO) else p}: {n} lines"
            for p in paths if (n := _lines(p)) > limit]


def test_python_files_stay_under_500_lines():
    assert too_long(_files(PYTHON_ROOTS, {".py"}), PYTHON_MAX) == []


def test_c_files_and_headers_stay_under_700_lines():
    assert too_long(_files(C_ROOTS, {".c", ".h", ".cpp", ".S"}), C_MAX) == []


def late_includes(text: str) -> list:
    """#include lines that come after the first line of code (a line that is neither a comment,
    a conditional directive, an #include nor the include guard's #ifndef/#define)."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    guard = re.search(r"^\s*#\s*ifndef\s+(\w+)\s*\n\s*#\s*define\s+\1\b", text, re.M)
    guard_name = guard.group(1) if guard else None
    seen_code, late = False, []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("//", 1)[0].strip()
        if not line:
            continue
        directive = re.match(r"#\s*(\w+)\s*(\w*)", line)
        if directive and directive.group(1) == "include":
            if seen_code:
                late.append(f"line {number}: {line}")
        elif directive and directive.group(1) in ("if", "ifdef", "ifndef", "elif", "else", "endif", "pragma"):
            if directive.group(1) == "pragma" and "once" not in line:
                seen_code = True
        elif directive and directive.group(1) == "define" and directive.group(2) == guard_name:
            continue
        else:
            seen_code = True
    return late


def include_graph(headers) -> dict:
    """header -> the project headers it includes ("..." includes found beside it or in
    device/native/include and device/native)."""
    graph = {}
    for h in headers:
        targets = set()
        for name in re.findall(r'^\s*#\s*include\s+"([^"]+)"', h.read_text(errors="replace"), re.M):
            for d in (h.parent, *INCLUDE_DIRS):
                if (d / name).is_file():
                    targets.add(str((d / name).resolve().relative_to(REPO)))
                    break
        graph[str(h.resolve().relative_to(REPO))] = targets
    return graph


def _headers():
    return list(_files(("device", "boards"), {".h"}))


def test_headers_include_only_at_the_top():
    bad = {str(h.relative_to(REPO)): late for h in _headers() if (late := late_includes(h.read_text()))}
    assert bad == {}


def test_headers_include_no_circle():
    assert cycles(include_graph(_headers())) == []


def test_the_checks_see_long_files_late_includes_and_circles(tmp_path):
    long = tmp_path / "long.c"
    long.write_text("int x;\n" * (C_MAX + 1))
    assert too_long([long], C_MAX) == [f"{long}: 701 lines"] and too_long([long], C_MAX + 1) == []
    top = "/* doc */\n#ifndef A_H\n#define A_H\n#include <stdint.h>\n#if X\n#include <x.h>\n#endif\nint a;\n#endif\n"
    assert late_includes(top) == []
    assert late_includes(top.replace("int a;\n", "int a;\n#include \"b.h\"\n")) == ['line 9: #include "b.h"']
    assert late_includes("#ifndef A_H\n#define A_H\n#define N 1\n#include \"b.h\"\n#endif\n") == \
        ['line 4: #include "b.h"']
    assert cycles({"a.h": {"b.h"}, "b.h": {"c.h"}, "c.h": {"a.h"}}) == [["a.h", "b.h", "c.h"]]
    real = include_graph(_headers())
    assert "device/native/include/nm_dense.h" in real["device/native/include/nm_kernels.h"]
    assert "device/native/include/nm_int8_layout.h" in real["device/native/include/nm_int8_dsp.h"]
