"""The NSP, SOP and detector figures of `python -m scripts.zoo objectives`, as the cards, the Masking
lab's pair view and the NSP lesson quote them, read from the shipped records."""

from __future__ import annotations

import json

import pytest

from models import detection_figures
from models.registry.zoo_entries import zoo_folder


def _record(key: str) -> dict:
    path = zoo_folder(key) / "record.json"
    if not path.is_file():
        pytest.skip(f"{key}: no shipped record")
    return json.loads(path.read_text(encoding="utf-8"))


def test_the_pair_view_quotes_nsps_two_kinds_of_negatives_from_the_record():
    from components.masking.objectives import _heldout_pair
    from components.masking.objectives_plots import pair_markdown

    found = _record("mini-bert").get("pair_narrative")
    if not found:
        pytest.skip("mini-bert's record has no pair_narrative")
    text = pair_markdown("nsp", 0.7, *_heldout_pair("mini-bert"))
    for kind in ("sentences, another-source", "sentences, same-source"):
        assert f"{found['accuracy'][kind]:.1%}" in text
    card = (zoo_folder("mini-bert") / "MODEL_CARD.md").read_text(encoding="utf-8")
    for kind, value in found["accuracy"].items():
        assert f"{kind.replace('-', ' ')} {value:.1%}" in card
    ends = found.get("segments_b_ends_a_sentence")
    if ends:
        assert f"B ends a sentence in {ends['positives']:.1%} of the positive pairs and {ends['negatives']:.1%}" in card


def test_the_sop_view_and_card_quote_the_narrative_pairs_from_the_record():
    from components.masking.objectives import _heldout_pair
    from components.masking.objectives_plots import pair_markdown

    found = _record("mini-albert").get("pair_narrative")
    if not found:
        pytest.skip("mini-albert's record has no pair_narrative")
    assert f"{found['accuracy']['sentences, swapped']:.1%}" in pair_markdown("sop", 0.7, *_heldout_pair("mini-albert"))
    card = (zoo_folder("mini-albert") / "MODEL_CARD.md").read_text(encoding="utf-8")
    assert f"sentences, swapped {found['accuracy']['sentences, swapped']:.1%}" in card


def test_the_detectors_card_and_figures_quote_the_swap_figures_from_the_record():
    found = _record("mini-electra").get("swap_detection")
    if not found:
        pytest.skip("mini-electra's record has no swap_detection")
    assert dict(detection_figures("mini-electra")[1]) == {k: v["first"] for k, v in found.items() if isinstance(v, dict)}
    card = (zoo_folder("mini-electra") / "MODEL_CARD.md").read_text(encoding="utf-8")
    for name in ("written", "heldout"):
        assert f"ranked first by P(replaced) in **{found[name]['first']:.1%}**" in card


def test_the_detection_view_quotes_the_swap_figures_from_the_record():
    from components.masking.objectives import _heldout_rtd
    from components.masking.objectives_plots import replaced_note
    from models import ReplacedTokens

    found = _record("mini-electra").get("swap_detection")
    if not found:
        pytest.skip("mini-electra's record has no swap_detection")
    result = ReplacedTokens("mini-electra", ("[CLS]", "cat", "[SEP]"), (0.0, 0.1, 0.0), (True, False, True), "cat")
    note = replaced_note(result, *_heldout_rtd("mini-electra"))
    assert f"{found['written']['first']:.0%} of the sentences written" in note
    assert f"{found['heldout']['first']:.0%} of held-out sentences" in note


def test_the_nsp_lesson_reads_its_figures_from_the_record():
    from components.lessons.views import sentence_pair

    found = _record("mini-bert").get("pair_narrative")
    if not found:
        pytest.skip("mini-bert's record has no pair_narrative")
    _, note = sentence_pair("mini-bert", "The rain had not stopped since morning.", "By noon the streets were flooded.")
    assert f"{found['accuracy']['sentences, same-source']:.1%}" in note
