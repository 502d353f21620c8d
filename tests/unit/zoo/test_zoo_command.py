"""`python -m scripts.zoo`: one command, one module per subcommand, documented in docs/zoo.md."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

from scripts.zoo.__main__ import SUBCOMMANDS

REPO = Path(__file__).resolve().parents[3]
HELPERS = {"__init__", "__main__", "export", "resumable"}  # scripts/zoo/ modules that are not subcommands
OLD = re.compile(r"scripts[./](train_zoo|zoo_(local|gpu|cards|flops|heads|plateau|profile|rtd|objectives|detector))\b")


def test_each_subcommand_is_one_module_and_each_module_one_subcommand():
    modules = {p.stem for p in (REPO / "scripts" / "zoo").glob("*.py")} - HELPERS
    assert modules == set(SUBCOMMANDS)
    for name in SUBCOMMANDS:
        module = importlib.import_module(f"scripts.zoo.{name}")
        assert callable(module.add_arguments) and callable(module.run) and module.__doc__


def test_the_command_lists_every_subcommand():
    out = subprocess.run([sys.executable, "-m", "scripts.zoo", "--help"], cwd=REPO, capture_output=True,
                         text=True, timeout=120, check=True).stdout
    listing = out[out.index("SUBCOMMAND\n"):]
    listed = re.findall(r"^    (\w+)\b", listing, re.M)
    assert listed == list(SUBCOMMANDS)


def test_the_old_entry_points_are_gone_and_nothing_names_them():
    assert not list((REPO / "scripts").glob("zoo_*.py")) and not (REPO / "scripts" / "train_zoo.py").exists()
    files = [p for folder in ("models", "components", "scripts", "tests", "bench") for p in (REPO / folder).rglob("*.py")]
    files += [REPO / "Makefile", REPO / "app.py", REPO / "docs" / "zoo.md", *(REPO / "weights" / "zoo").glob("*/MODEL_CARD.md"),
              *(REPO / "weights" / "zoo").glob("*/record.json")]
    named = [str(p.relative_to(REPO)) for p in files if p != Path(__file__) and OLD.search(p.read_text(encoding="utf-8"))]
    assert named == []


def test_docs_name_every_subcommand_and_the_shipped_recipe_as_its_records_give_it():
    doc = (REPO / "docs" / "zoo.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(\w+)` \|", doc, re.M)
    assert rows == list(SUBCOMMANDS)
    for key in ("mini-bert", "mini-albert", "mini-modernbert"):
        record = json.loads((REPO / "weights" / "zoo" / key / "record.json").read_text(encoding="utf-8"))
        settings = record["budget"]["settings"]
        assert record["script"] == "scripts.zoo search"
        assert f"is the run of `python -m {record['script']}` with its default" in doc
        assert f'--grid "{settings["grid"]}"' in doc and f"{settings['trial_tokens']:,} tokens" in doc
        assert f"to {settings['tokens']:,} training tokens" in doc
        assert f"batches of {settings['batch_size']} sequences" in doc and f"seed {settings['seed']}" in doc
        assert settings["search"] == "prefix" and "**prefix search**" in doc
        assert settings["autocast"] == "bf16" and "bfloat16 autocast" in doc
        assert settings["position_init"] == "local" and "the locality start" in doc
        assert f"over {settings['warmup']:.0%}" in doc.replace(" %", "%")
