"""The shipped model cards say what their generator says of the shipped records."""

import json

import pytest

from models.registry.zoo_entries import PAST_BUDGET_KEYS, ZOO_KEYS, recipe_of, zoo_folder
from models.zoo.cards import card, past_budget_card


@pytest.mark.parametrize("key", ZOO_KEYS + PAST_BUDGET_KEYS)
def test_each_shipped_card_is_the_one_its_record_writes(key):
    # A card edited by hand, or a generator changed without `python -m scripts.zoo cards`, drifts
    # from the record (mini-modernbert's card counted its global layers from 1 while the views
    # count from 0).
    folder = zoo_folder(key)
    record_path = folder / "record.json"
    if not record_path.is_file():
        pytest.skip(f"{key}: no shipped record")
    record = json.loads(record_path.read_text(encoding="utf-8"))
    shipped = (folder / "MODEL_CARD.md").read_text(encoding="utf-8")
    written = past_budget_card(key, record) if key in PAST_BUDGET_KEYS else card(key, record, recipe_of(key))
    assert shipped == written, (
        f"{folder / 'MODEL_CARD.md'} is stale: run `python -m scripts.zoo cards`")
