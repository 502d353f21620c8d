"""The Compare tab's architecture table and speed benchmark for every family of the mini zoo,
through the tab's handlers (the side-by-side views are in tests/unit/mlm/test_fill_mask_every_family.py).

References: the model loaded again by transformers' Auto classes (``helpers.zoo_reference``):
its parameters counted here and its config; the shape each family was trained in, from the
record the training script wrote next to the weights.
"""

from __future__ import annotations

import json

import pytest

from components.compare import tab
from helpers import zoo_reference
from models import ZOO_KEYS
from models.registry.zoo_entries import zoo_folder


def _shape(key: str) -> dict:
    return json.loads((zoo_folder(key) / "record.json").read_text(encoding="utf-8"))["config"]["shape"]


def _count(text) -> int:
    return int(str(text).replace(",", ""))


@pytest.fixture(scope="module")
def table():
    frame = tab.show_architecture()
    return {row["model"]: row for row in frame.to_dict("records")}


@pytest.mark.parametrize("key", ZOO_KEYS)
def test_architecture_row_is_the_models_own_count_and_shape(table, key):
    model = zoo_reference(key)[1]
    config, shape, row = model.config, _shape(key), table[key]
    assert _count(row["params (encoder)"]) == sum(p.numel() for p in model.parameters())
    layers = getattr(config, "num_hidden_layers", None) or config.n_layers  # DistilBERT: n_layers
    assert row["layers"] == layers
    assert row["hidden"] == shape["hidden"] and row["vocab"] == shape["vocab"]
    assert row["max context"] == shape["max_len"]  # what the family was trained to read


def test_benchmark_times_every_family_with_its_own_weights_and_context():
    _, frame, notes = tab.run_benchmark(list(ZOO_KEYS), ["16", "256"], 1)
    assert list(frame["model"]) == list(ZOO_KEYS)  # one row each: 256 is past every context
    assert set(frame["length"]) == {16} and (frame["median ms"] > 0).all()
    assert set(frame["weights"]) == {"pretrained weights"}  # the trained miniatures, not random-init
    for key in ZOO_KEYS:
        assert f"beyond {key}'s max context of {_shape(key)['max_len']} tokens" in notes
