"""Stand-ins (scripts/standins.py) in a Hugging Face cache: found offline through the normal Hub
path, labelled as random weights in every view, never the default unless the operator names one;
and the server's memory budget over every family's stand-in loaded in turn. Each check runs in a
fresh process: huggingface_hub reads HF_HUB_CACHE once, at import."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from helpers import REPO
from scripts import standins

HUB_PATH = textwrap.dedent(
    """
    import json, sys
    from transformers import pipeline
    from models import default_selection, fill_mask, first_capable, get_spec, list_models
    text = "The capital of France is [MASK]."
    spec = get_spec("bert-base")
    ours = fill_mask("bert-base", text, 5).masks[0].predictions
    theirs = pipeline("fill-mask", model=sys.argv[1], top_k=5, device="cpu")(text)
    rows = {m.key: m for m in list_models()}
    from components.fill_mask.tab import model_card
    from components.models.tab import models_table
    table = models_table().set_index("key")
    print(json.dumps({"name": spec.display_name, "provenance": spec.provenance, "card": model_card("bert-base"),
                      "table": [table.loc["bert-base", c] for c in ("model", "why", "provenance")],
                      "listed": [rows["bert-base"].display_name, rows["bert-base"].availability],
                      "default": next(k for k, m in rows.items() if m.default),
                      "views": [first_capable(None, c) for c in ("mlm", "pair", "attention", "any")]
                               + default_selection(None, "mlm"),
                      "ours": [[p.token_id, p.score] for p in ours],
                      "theirs": [[p["token"], p["score"]] for p in theirs]}))
    """
)


def _run(script: str, cache, *args, **env) -> dict:
    env = dict(os.environ, HF_HUB_CACHE=str(cache), HF_HUB_OFFLINE="1", **env)
    out = subprocess.run([sys.executable, "-c", script, *map(str, args)], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def small_cache(tmp_path_factory):
    """Every Hub family's stand-in, small (2 layers, 64 wide, the real vocabulary)."""
    cache = tmp_path_factory.mktemp("standins-hub")
    standins.main(["--out", str(cache), "--small"])
    return cache


def test_a_standin_goes_through_the_hub_path_labelled(small_cache):
    snapshot = next((small_cache / "models--bert-base-uncased" / "snapshots").iterdir())
    data = _run(HUB_PATH, small_cache, snapshot)
    # the same weights as transformers' own pipeline reads them from the snapshot folder
    assert [t for t, _ in data["ours"]] == [t for t, _ in data["theirs"]]
    assert [s for _, s in data["ours"]] == pytest.approx([s for _, s in data["theirs"]], abs=1e-5)
    for shown in (data["name"], data["provenance"], *data["listed"], data["card"], *data["table"]):
        assert "stand-in: random weights" in shown
    assert data["default"] != "bert-base"  # first in the preference, but a stand-in: not on its own
    assert not set(data["views"]) & set(standins.hub_keys())  # nor any view's opening model
    marker = json.loads((snapshot / standins.MARKER).read_text())
    assert marker["stand_in"] is True and "random" in marker["weights"]


def test_the_operator_can_open_on_a_standin(small_cache):
    snapshot = next((small_cache / "models--bert-base-uncased" / "snapshots").iterdir())
    data = _run(HUB_PATH, small_cache, snapshot, ENCODER_LAB_DEFAULT="bert-base")
    assert data["default"] == "bert-base" and data["views"][0] == "bert-base"


def test_real_shapes_come_from_the_published_configs():
    from transformers import AutoModelForPreTraining

    entry = standins.hub_keys()["bert-base"]
    model = AutoModelForPreTraining.from_config(standins.build_config(entry, small=False))
    assert sum(p.numel() for p in model.bert.parameters()) == 109_482_240  # bert-base-uncased, published


BUDGET = textwrap.dedent(
    """
    import json, sys
    from models import InputError, fill_mask, get_spec, load_model, memory_budget, list_models
    from models.runtime import loading, memory
    budget = int(sys.argv[1])
    memory.MEMORY.budget_bytes = loading.MODEL_CACHE.budget_bytes = budget
    keys = [m.key for m in list_models() if m.available and m.source_kind == "hub"]
    seen = {}
    for key in keys:
        spec = get_spec(key)
        loaded = load_model(spec, "mlm" if spec.can("mlm") else "base")
        if spec.can("mlm"):
            fill_mask(key, f"A {spec.mask_token} here.", 3)
        report = memory_budget()
        seen[key] = [loaded.nbytes, report.used_bytes, report.dropped]
    big = max(seen, key=lambda k: seen[k][0])
    memory.MEMORY.budget_bytes = seen[big][0] // 2
    loading.clear_cache()
    try:
        load_model(get_spec(big), "base")
        refused = ""
    except InputError as exc:
        refused = str(exc)
    print(json.dumps({"seen": seen, "big": big, "refused": refused}))
    """
)


def test_the_budget_holds_with_every_family_loaded_in_turn(small_cache):
    import torch
    from transformers import AutoModelForMaskedLM

    snapshot = next((small_cache / "models--roberta-base" / "snapshots").iterdir())
    # measured apart from the app: transformers' own model of that snapshot, its tensors' bytes
    reference = AutoModelForMaskedLM.from_pretrained(snapshot, dtype=torch.float32)
    roberta = sum(t.numel() * t.element_size() for t in [*reference.parameters(), *reference.buffers()])
    budget = 3 * roberta
    data = _run(BUDGET, small_cache, budget)
    seen = data["seen"]
    assert len(seen) == 8 and seen["roberta-base"][0] == roberta
    assert all(used <= budget for _, used, _ in seen.values())
    assert list(seen.values())[-1][2] > 0  # the budget dropped models on the way
    assert "memory budget" in data["refused"] and data["big"] in data["refused"]
