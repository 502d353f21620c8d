"""Every bench runs as ``python -m bench.NAME`` from the repository root, outside pytest:
each module it imports, at the top or inside a function, must resolve there.

Two benches crashed that way for ten days while the suite passed: ``bench.startup`` imported
``bench_common`` (found only while pytest's ``pythonpath`` was set) and
``bench.attention_view`` imported the browser tests' conftest, which imports ``helpers`` the
same way."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BENCHES = sorted(p for p in (REPO / "bench").glob("*.py") if p.name != "__init__.py")


def imported_modules(path: Path) -> set[str]:
    """Every absolute module an ``import`` or ``from ... import`` names, at any depth."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def test_the_benches_are_found():
    assert {"startup", "attention_view", "first_visit", "embeddings", "fill_mask", "classroom"} <= {
        p.stem for p in BENCHES}


def test_every_bench_import_resolves_as_python_dash_m_runs_it():
    wanted = sorted(set().union(*(imported_modules(p) for p in BENCHES)) - {"__future__"})
    assert "bench.bench_common" in wanted and "tests.helpers" in wanted
    script = ("import importlib.util, json, sys\n"
              "missing = []\n"
              "for name in json.loads(sys.argv[1]):\n"
              "    try:\n"
              "        found = importlib.util.find_spec(name) is not None\n"
              "    except ImportError:\n"
              "        found = False\n"
              "    if not found:\n"
              "        missing.append(name)\n"
              "print(json.dumps(missing))\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # as a shell in the repo has it
    done = subprocess.run([sys.executable, "-c", script, json.dumps(wanted)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    missing = json.loads(done.stdout.strip().splitlines()[-1])
    assert not missing, f"bench imports that `python -m bench.NAME` cannot resolve: {missing}"


def test_no_bench_imports_the_browser_tests_conftest_or_a_bare_test_helper():
    """pytest puts tests/ on the path and imports conftest files itself; outside it they fail."""
    for path in BENCHES:
        for name in imported_modules(path):
            assert not name.startswith("tests.e2e.conftest") and name not in ("helpers", "bench_common",
                                                                                "conftest"), (path.name, name)
