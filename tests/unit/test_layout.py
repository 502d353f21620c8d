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


def _ui_imports() -> list[tuple[str, ast.AST]]:
    """(file name, node) of every import in app.py and components/."""
    return [(path.name, node) for path in [REPO / "app.py", *sorted(COMPONENTS.rglob("*.py"))]
            for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, (ast.Import, ast.ImportFrom))]


def test_the_ui_uses_only_what_models_exports():
    """The UI reads the core through ``models`` alone; the one exception is the server's start-up,
    which may import ``models.runtime``'s switches (a fast path on or off for the process), and
    nothing else from below ``models``."""
    import models
    import models.runtime

    exported, switches = set(models.__all__), set(models.runtime.__all__)
    for name, node in _ui_imports():
        if isinstance(node, ast.ImportFrom) and node.module == "models.runtime":
            unknown = {a.name for a in node.names} - switches
            assert not unknown, f"{name}: {unknown} from models.runtime: only its switches ({sorted(switches)})"
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("models."):
            raise AssertionError(f"{name}: imports {node.module}; export what it needs from models")
        if isinstance(node, ast.Import) and any(a.name.startswith("models.") for a in node.names):
            raise AssertionError(f"{name}: imports a models submodule")
        if isinstance(node, ast.ImportFrom) and node.module == "models":
            missing = {a.name for a in node.names} - exported
            assert not missing, f"{name}: {missing} not in models.__all__"


def _notebook_names() -> set[str]:
    """The identifiers the README's "## From a notebook" section shows in code: inline
    backticks and fenced blocks alike."""
    import re

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    found = re.search(r"^## From a notebook\n(.*?)(?=^## |\Z)", readme, re.S | re.M)
    assert found, "README.md has no '## From a notebook' section"
    code = re.findall(r"```.*?```|`[^`\n]+`", found.group(1), re.S)
    return {word for span in code for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", span)}


def test_every_public_name_is_used_by_the_app_or_shown_for_notebooks():
    """``models.__all__`` is the API of computations, one name each: every name is used by the UI
    (components/, app.py) or shown in the README's notebook section; no runtime switch and no
    test-only helper (those live in ``models.runtime`` and their own modules)."""
    import models
    import models.runtime

    used = {a.name for _, node in _ui_imports() if isinstance(node, ast.ImportFrom) and node.module == "models"
            for a in node.names}
    shown = _notebook_names()
    assert [n for n in models.__all__ if n not in used and n not in shown] == []
    assert not set(models.runtime.__all__) & set(models.__all__)
    assert len(models.__all__) == len(set(models.__all__)) <= 175


def test_every_tab_has_its_folder_with_tab_plots_and_copy():
    from components.shell.links import TABS

    tabs = sorted(p.parent.name for p in COMPONENTS.glob("*/tab.py"))
    assert len(tabs) == len(TABS) == 13
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


# --- a key becomes a ModelSpec once per request -------------------------------------------------
# A public function (a name of ``models.__all__``) resolves its key with ``get_spec`` and hands the
# spec down; everything below takes a ``ModelSpec``. The loader refuses a key (``TypeError``), so
# a helper that passes one on fails in every test that reaches it; the check below finds the
# resolutions themselves: only in the public layer, each result used, once per key a function.


def _spec_resolutions(source: str, public: set[str]) -> list[str]:
    """What breaks the rule in one module's source: a ``get_spec`` call (under any name it is
    imported as) outside a public function, one whose result is thrown away, or a second call
    on the same key in one function (a loop over several keys resolves each once)."""
    tree = ast.parse(source)
    names = {"get_spec"} | {a.asname for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                            for a in node.names if a.name == "get_spec" and a.asname}

    def resolves(node) -> bool:
        if not isinstance(node, ast.Call):
            return False
        func = node.func
        return (isinstance(func, ast.Name) and func.id in names) or (
            isinstance(func, ast.Attribute) and func.attr == "get_spec")

    found = []
    for top in tree.body:
        calls = [n for n in ast.walk(top) if resolves(n)]
        if not calls:
            continue
        where = getattr(top, "name", type(top).__name__)
        if not (isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef)) and top.name in public):
            found.append(f"{where}: resolves a key below the public layer (take a ModelSpec)")
        bare = [n for n in ast.walk(top) if isinstance(n, ast.Expr) and resolves(n.value)]
        found += [f"{where}: get_spec's result thrown away (line {n.lineno})" for n in bare]
        keys = [ast.unparse(call.args[0]) if call.args else "" for call in calls]
        found += [f"{where}: resolves {key} twice" for key in sorted(set(keys)) if keys.count(key) > 1]
    return found


def test_a_key_becomes_a_spec_once_per_request():
    import pytest

    import models

    public = set(models.__all__)
    offenders = [f"{p.relative_to(REPO)}: {found}" for p in sorted((REPO / "models").rglob("*.py"))
                 if p.parent.name != "registry"  # the catalogue itself: where a key becomes a spec
                 for found in _spec_resolutions(p.read_text(), public)]
    assert offenders == []
    for loader in (models.load_model, models.load_tokenizer):
        with pytest.raises(TypeError, match="get_spec"):
            loader("minilm-l6")  # refused before anything loads


def test_the_spec_check_finds_each_kind_of_offence():
    source = (
        "from ..registry.catalogue import get_spec as lookup\n"
        "from ..registry import catalogue\n"
        "def fill(key):\n    spec = lookup(key)\n    return _run(spec)\n"
        "def _run(key):\n    return catalogue.get_spec(key)\n"
        "def train(key):\n    catalogue.get_spec(key)\n    return 1\n"
        "def twice(key):\n    a = catalogue.get_spec(key)\n    return a, catalogue.get_spec(key)\n"
        "def each(keys):\n    return [catalogue.get_spec(k) for k in keys]\n"
    )
    found = _spec_resolutions(source, {"fill", "train", "twice", "each"})
    assert found == ["_run: resolves a key below the public layer (take a ModelSpec)",
                     "train: get_spec's result thrown away (line 9)", "twice: resolves key twice"]
