"""The code's layout rules, checked: the core imports no UI library, the UI uses only the
core's public API, every tab has its folder, the core has no import cycle, nothing edits the
import path (scripts and benchmarks run as modules)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys

from helpers import REPO

COMPONENTS = REPO / "components"


def _imported_ui_libraries(modules: list[str]) -> list[str]:
    """Top-level UI packages in sys.modules after a fresh interpreter imports ``modules``."""
    code = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "print(json.dumps(sorted({n.split('.')[0] for n in sys.modules} & {'gradio', 'gradio_client', 'plotly'})))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_models_imports_neither_gradio_nor_plotly():
    core = ["models"] + [".".join(p.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
            for p in sorted((REPO / "models").rglob("*.py"))]
    assert _imported_ui_libraries(core) == []


def _module(path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")


def test_plot_builders_and_copy_import_no_gradio():
    pure = [_module(p) for p in sorted(COMPONENTS.rglob("*.py"))
            if p.stem.endswith(("plots", "copy")) or p.name in ("common.py", "vendor.py")]
    assert len(pure) >= 25
    assert "gradio" not in _imported_ui_libraries(pure)


def test_the_ui_uses_only_what_models_exports():
    import models

    exported = set(models.__all__)
    for path in [REPO / "app.py", *sorted(COMPONENTS.rglob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("models."):
                raise AssertionError(f"{path.name}: imports {node.module}; export what it needs from models")
            if isinstance(node, ast.Import) and any(a.name.startswith("models.") for a in node.names):
                raise AssertionError(f"{path.name}: imports a models submodule")
            if isinstance(node, ast.ImportFrom) and node.module == "models":
                missing = {a.name for a in node.names} - exported
                assert not missing, f"{path.name}: {missing} not in models.__all__"


def test_every_tab_has_its_folder_with_tab_plots_and_copy():
    from components.shell.links import TABS

    tabs = sorted(p.parent.name for p in COMPONENTS.glob("*/tab.py"))
    assert len(tabs) == len(TABS) == 12
    for tab in tabs:
        for part in ("__init__", "tab", "plots", "copy"):
            assert (COMPONENTS / tab / f"{part}.py").is_file(), f"components/{tab}/{part}.py is missing"
    # only the package marker beside the folders; one escape helper, in shell/common.py
    assert [p.name for p in COMPONENTS.glob("*.py")] == ["__init__.py"]
    names = [node.name for p in COMPONENTS.rglob("*.py") for node in ast.walk(ast.parse(p.read_text()))
             if isinstance(node, ast.FunctionDef)]
    assert names.count("escape") == 1 and "plot_text" not in names


def test_nothing_edits_the_import_path():
    def touches_import_path(path) -> bool:
        return any(isinstance(node, ast.Attribute) and node.attr == "path"
                   and isinstance(node.value, ast.Name) and node.value.id == "sys"
                   for node in ast.walk(ast.parse(path.read_text())))

    offenders = [str(p.relative_to(REPO)) for folder in ("tests", "bench", "scripts", "models", "components")
                 for p in (REPO / folder).rglob("*.py") if touches_import_path(p)] + [
                 name for name in ("app.py",) if touches_import_path(REPO / name)]
    assert offenders == []  # pyproject.toml's pythonpath makes the imports work



def _import_graph(root) -> dict[str, set[str]]:
    """The package at ``root``: module -> the package's modules it imports, at any depth
    (a function-level import counts: it hides a cycle, it does not break one)."""
    modules = {".".join(p.relative_to(root.parent).with_suffix("").parts).removesuffix(".__init__"): p
               for p in root.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")
                base = base[: len(base) - node.level + 1] if node.level else []
                target = ".".join(base + [node.module] if node.module else base)
                # "from .pkg import mod" names a module, "from .mod import name" a name
                candidates = [target] + [f"{target}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                candidates = [a.name for a in node.names]
            else:
                continue
            edges |= {c for c in candidates if c in modules and c != name}
        graph[name] = edges
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of ``graph`` (a depth-first search), or [] when it has none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: finished

    def visit(module: str, path: list[str]) -> list[str]:
        state[module] = 1
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                return path[path.index(target):] + [target]
            if target not in state and (found := visit(target, path + [target])):
                return found
        state[module] = 2
        return []

    for module in sorted(graph):
        if module not in state and (found := visit(module, [module])):
            return found
    return []


def test_the_core_import_graph_has_no_cycle():
    graph = _import_graph(REPO / "models")
    assert len(graph) > 40 and "models.mlm.fill_mask" in graph["models"]
    assert {"models.runtime.loading", "models.registry.catalogue"} <= graph["models.mlm.fill_mask"]
    assert [m for m, edges in graph.items() if "models" in edges] == []  # nothing below imports the door
    assert _cycle(graph) == []


def test_the_cycle_check_finds_a_cycle_hidden_in_a_function(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("from .sub.a import f\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "a.py").write_text("from ..b import g\n\ndef f():\n    return g()\n")
    (package / "b.py").write_text("def g():\n    from .sub import a  # hidden from import time\n    return a\n")
    graph = _import_graph(package)
    assert graph["pkg.sub.a"] == {"pkg.b"} and "pkg.sub.a" in graph["pkg.b"]
    cycle = _cycle(graph)
    assert cycle[0] == cycle[-1] and {"pkg.b", "pkg.sub.a"} <= set(cycle)
    (package / "b.py").write_text("def g():\n    return 1\n")
    assert _cycle(_import_graph(package)) == []
