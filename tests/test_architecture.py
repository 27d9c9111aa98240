"""The shape of the package: every module sits in a layer and imports only its own layer or lower
ones (lazy imports inside functions count too), and no modules import each other in a cycle."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "blindact"

# lowest first; a module's layer is that of its first name under blindact (blindact.<x>...); the
# command line's modules (blindact.cli.*, and the `cli` modules beside the code they drive, listed in
# CLI_MODULES) sit just under the package's __init__
LAYERS = [
    ("_version", "endings", "resources", "task_files", "scenarios", "spaces", "imaging", "observation", "headless",
     "values", "content", "stats",
     "prices"),
    ("actions",),
    ("apps", "desktop", "checks"),
    ("tasks", "trajectory", "routes"),
    ("llm", "agents"),
    ("env", "wrappers"),
    ("run", "provenance"),
    ("judging", "report", "fairness", "bench", "tasks_readme", "task_overlap", "task_dataset"),
    ("registration", "cli", "__main__", "inspect_bridge"),
]
TOP = len(LAYERS)
# a module named cli.py elsewhere is in the command line's layer only when listed here (else it is
# a module of its package's layer: a name alone must not lift a module over the layers)
CLI_MODULES = {"blindact.judging.cli", "blindact.fairness.cli"}

# "package.module:attribute", as registries name what they import later (entry points, factories)
_TARGET = re.compile(r"^(blindact(?:\.[A-Za-z_][A-Za-z0-9_]*)*):[A-Za-z_][A-Za-z0-9_.]*$")
_IMPORTERS = {"import_module", "__import__"}


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> int:
    parts = module.split(".")
    if module == "blindact":
        return TOP  # the package's __init__ registers the envs: it sits on top of everything
    if module in CLI_MODULES:
        return TOP - 1
    if parts[-1] == "cli" and parts[1] != "cli":
        raise AssertionError(f"{module} is named cli but is not in CLI_MODULES in {__file__}: list it there if it "
                             "is a command line, else rename it")
    for i, names in enumerate(LAYERS):
        if parts[1] in names:
            return i
    raise AssertionError(f"{module} is in no layer: add it to LAYERS in {__file__}")


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str | None:
    """The module an ImportFrom names, relative ones (`from . import x`, `from ..run import y`) resolved."""
    if node.level == 0:
        return node.module
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(path: Path, modules: set[str], package: Path = PACKAGE) -> set[str]:
    """What a module imports from blindact: import statements (absolute or relative, at the top or
    inside functions), importlib.import_module / __import__ of a literal name, and the
    "module:attribute" strings registries import later."""
    me = module_name(path, package)
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            target = _absolute(node, me, path.name == "__init__.py")
            if target and target.split(".")[0] == "blindact":
                # `from blindact.x import y` names the module blindact.x.y when there is one, else blindact.x
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    found.add(sub if sub in modules else target)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "blindact")
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            arg = node.args[0].value
            if name in _IMPORTERS and isinstance(arg, str) and arg.split(".")[0] == "blindact":
                found.add(arg)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _TARGET.match(node.value):
            found.add(_TARGET.match(node.value).group(1))
    return found


def graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    modules = {module_name(p, package): p for p in package.rglob("*.py")}
    return {name: {t for t in imports_of(path, set(modules), package) if t in modules and t != name}
            for name, path in modules.items()}


def upward_imports(edges: dict[str, set[str]]) -> list[str]:
    return [f"{m} (layer {layer_of(m)}) imports {t} (layer {layer_of(t)})"
            for m, targets in edges.items() for t in sorted(targets) if layer_of(t) > layer_of(m)]


def unplaced(edges: dict[str, set[str]]) -> list[str]:
    """Every module, whether it imports anything or not, must sit in a layer."""
    out = []
    for m in edges:
        try:
            layer_of(m)
        except AssertionError as exc:
            out.append(str(exc))
    return out


def test_every_module_is_in_a_layer():
    assert unplaced(graph()) == []


def test_no_module_imports_a_higher_layer():
    upward = upward_imports(graph())
    assert not upward, "\n".join(upward)


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in edges:
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles():
    assert _cycles(graph()) == []


def test_the_checks_can_fail():
    # the two checks above on a made-up graph that breaks both rules
    edges = {"blindact.run.suite": {"blindact.run.executors"}, "blindact.run.executors": {"blindact.run.suite"},
             "blindact.actions.model": {"blindact.cli.options"}}
    assert _cycles(edges) == [["blindact.run.executors", "blindact.run.suite"]]
    assert layer_of("blindact.cli.options") > layer_of("blindact.actions.model")


def _plant(root: Path, files: dict[str, str]) -> Path:
    package = root / "blindact"
    for name, text in files.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return package


def test_each_blind_spot_is_closed(tmp_path):
    # a made-up blindact whose every violation hides where the first version of these checks did not look
    package = _plant(tmp_path, {
        "__init__.py": "",
        "endings.py": "import importlib\n\ndef later():\n    return importlib.import_module('blindact.run.suite')\n",
        "resources.py": "def later():\n    return __import__('blindact.report.build')\n",
        "actions/__init__.py": "",
        "actions/model.py": "from ..cli import options\n",  # relative, upward
        "actions/keys.py": "from . import model\n",  # relative, same layer: fine
        "tasks.py": 'FACTORIES = {"x": "blindact.report.build:compute"}\n',  # a registry string, upward
        "desktop/__init__.py": "",
        "desktop/cli.py": "import json\n",  # a cli module nobody declared
        "gadgets.py": "",  # imports nothing, in no layer
        "run/__init__.py": "", "run/suite.py": "", "report/__init__.py": "", "report/build.py": "",
        "cli/__init__.py": "", "cli/options.py": "",
    })
    edges = graph(package)
    assert edges["blindact.actions.model"] == {"blindact.cli.options"}
    assert edges["blindact.actions.keys"] == {"blindact.actions.model"}
    assert edges["blindact.endings"] == {"blindact.run.suite"}
    assert edges["blindact.resources"] == {"blindact.report.build"}
    assert edges["blindact.tasks"] == {"blindact.report.build"}
    assert edges["blindact.gadgets"] == set()
    problems = unplaced(edges)
    assert any(p.startswith("blindact.gadgets is in no layer") for p in problems)
    assert any(p.startswith("blindact.desktop.cli is named cli but is not in CLI_MODULES") for p in problems)
    # with the two unplaced modules gone, the upward imports are each reported
    del edges["blindact.gadgets"], edges["blindact.desktop.cli"]
    upward = "\n".join(upward_imports(edges))
    for module in ("blindact.actions.model", "blindact.endings", "blindact.resources", "blindact.tasks"):
        assert f"{module} (layer" in upward, module
    assert "blindact.actions.keys" not in upward


def test_a_registry_string_makes_a_cycle_visible(tmp_path):
    package = _plant(tmp_path, {
        "__init__.py": "", "run/__init__.py": "",
        "run/suite.py": "from blindact.run.executors import run\n",
        "run/executors.py": 'EXECUTORS = {"local": "blindact.run.suite:run_suite"}\n',
    })
    assert _cycles(graph(package)) == [["blindact.run.executors", "blindact.run.suite"]]
