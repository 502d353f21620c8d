"""The code's layout rules, checked: the core imports no UI library, the UI uses only the
core's public API, every tab has its three modules, nothing edits sys.path."""

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
    core = ["models"] + [f"models.{p.stem}" for p in sorted((REPO / "models").glob("*.py")) if p.stem != "__init__"]
    assert _imported_ui_libraries(core) == []


def test_plot_builders_and_copy_import_no_gradio():
    pure = [f"components.{p.stem}" for p in sorted(COMPONENTS.glob("*.py"))
            if p.stem.endswith(("_plots", "_copy")) or p.stem in ("common", "vendor")]
    assert len(pure) >= 15
    assert "gradio" not in _imported_ui_libraries(pure)


def test_the_ui_uses_only_what_models_exports():
    import models

    exported = set(models.__all__)
    for path in [REPO / "app.py", *sorted(COMPONENTS.glob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("models."):
                raise AssertionError(f"{path.name}: imports {node.module}; export what it needs from models")
            if isinstance(node, ast.Import) and any(a.name.startswith("models.") for a in node.names):
                raise AssertionError(f"{path.name}: imports a models submodule")
            if isinstance(node, ast.ImportFrom) and node.module == "models":
                missing = {a.name for a in node.names} - exported
                assert not missing, f"{path.name}: {missing} not in models.__all__"


def test_every_tab_has_its_plots_and_copy_modules():
    tabs = sorted(p.stem.removesuffix("_tab") for p in COMPONENTS.glob("*_tab.py"))
    assert len(tabs) >= 7
    for tab in tabs:
        for part in ("plots", "copy"):
            assert (COMPONENTS / f"{tab}_{part}.py").is_file(), f"components/{tab}_{part}.py is missing"
    # one escape helper, in common.py; no catch-all modules beside the per-tab ones
    names = [node.name for p in COMPONENTS.glob("*.py") for node in ast.walk(ast.parse(p.read_text()))
             if isinstance(node, ast.FunctionDef)]
    assert names.count("escape") == 1 and "plot_text" not in names
    assert not (COMPONENTS / "plots.py").exists() and not (COMPONENTS / "copy.py").exists()


def test_no_test_or_benchmark_edits_sys_path():
    def touches_sys_path(path) -> bool:
        return any(isinstance(node, ast.Attribute) and node.attr == "path"
                   and isinstance(node.value, ast.Name) and node.value.id == "sys"
                   for node in ast.walk(ast.parse(path.read_text())))

    offenders = [str(p.relative_to(REPO)) for folder in ("tests", "bench") for p in (REPO / folder).rglob("*.py")
                 if touches_sys_path(p)]
    assert offenders == []  # pyproject.toml's pythonpath makes the imports work
