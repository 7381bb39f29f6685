"""The host package's layers, read from its own imports (those inside functions too), and
the README's map of the tree."""

import ast
import re
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "host" / "neuromotor"

# Bottom to top: a module imports only from its own layer's package or from layers below.
LAYERS = [
    ("errors", "limits", "paths", "rng", "registry", "reading", "rules", "safe_write", "native", "version", "lifeline",
     "_forkserver_lifeline", "interrupts"),
    ("nn", "envs"),
    ("policy",),
    ("algos",),
    ("training",),
    ("boards",),
    ("api",),
    ("__init__",),  # the package itself: the API's names, imported lazily
    ("cli", "__main__"),
]


def _modules() -> dict:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _runtime_imports(tree: ast.AST):
    """Import nodes that run: not those under `if TYPE_CHECKING:`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", None)) == "TYPE_CHECKING":
            node.body = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node


def import_graph() -> dict:
    """module -> the package modules it imports (a name imported from a package that is itself
    a module counts as that module)."""
    modules = _modules()

    def known(name):
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    graph = defaultdict(set)
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _runtime_imports(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                           for a in node.names]
            for t in targets:
                if t.startswith("neuromotor") and known(t) not in ("", name):
                    graph[name].add(known(t))
    return graph


def layer(module: str) -> int:
    parts = module.split(".")
    return next(i for i, names in enumerate(LAYERS) if (parts[1] if len(parts) > 1 else "__init__") in names)


def test_every_top_level_module_has_a_layer():
    tops = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
            if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and (p / "__init__.py").exists())}
    assert tops - {n for names in LAYERS for n in names} == set()


# The command line is built on the public API alone (and the errors and limits it names, and the
# SIGINT handler it installs).
CLI_MAY_IMPORT = ("neuromotor", "neuromotor.api", "neuromotor.errors", "neuromotor.limits", "neuromotor.interrupts")


def test_the_cli_uses_only_the_public_api():
    graph = import_graph()
    beyond = [f"{a} -> {b}" for a, targets in graph.items() if a.startswith("neuromotor.cli")
              for b in targets if not b.startswith("neuromotor.cli") and b not in CLI_MAY_IMPORT]
    assert beyond == []
    private = [f"{path.name}: {node.module}" for path in (PACKAGE / "cli").glob("*.py")
               for node in _runtime_imports(ast.parse(path.read_text()))
               if isinstance(node, ast.ImportFrom) and node.module == "neuromotor.api"
               and any(a.name.startswith("_") for a in node.names)]
    assert private == []


def test_no_module_imports_from_a_layer_above():
    up = [f"{a} -> {b}" for a, targets in import_graph().items() for b in targets if layer(b) > layer(a)]
    assert up == []


def cycles(graph) -> list:
    """Strongly connected sets of more than one module (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in list(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_between_files():
    assert cycles(import_graph()) == []


def test_the_checks_see_a_cycle_and_an_upward_import():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert layer("neuromotor.policy.spec") < layer("neuromotor.training.runs") < layer("neuromotor.cli.checks")
    graph = import_graph()
    assert len(graph) > 50 and "neuromotor.training.runs" in graph["neuromotor.training.session"]
    assert "neuromotor.training.loop" in graph["neuromotor.training.session"]  # imported inside a function


def _readme_layout_paths() -> str:
    text = (REPO / "README.md").read_text()
    section = text[text.index("## Layout"):]
    section = section[: section.find("\n## ", 4) if "\n## " in section[4:] else len(section)]
    return " ".join(re.findall(r"^\| ([^|]+) \|", section, re.M))


def test_the_readme_maps_every_folder():
    first_cells = _readme_layout_paths()
    host = [p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()]
    device = [p.name for p in (REPO / "device").iterdir() if p.is_dir()]
    missing = [f"host/neuromotor/{d}/" for d in host if f"`{d}/`" not in first_cells
               and f"host/neuromotor/{d}/" not in first_cells]
    missing += [f"device/{d}/" for d in device if f"device/{d}/" not in first_cells]
    assert missing == []
