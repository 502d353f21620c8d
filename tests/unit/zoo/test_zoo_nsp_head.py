"""mini-bert-nsp: mini-bert's NSP head trained on past the shared budget on negatives of the same
kind of text, answering beside mini-bert in the pair view and the NSP lesson, read against
transformers' own logits; Compare keeps the shared-budget mini-bert."""

from __future__ import annotations

import json

import pytest
import torch

from models import ZOO_KEYS, get_spec, pair_figures, pair_loss, past_budget_of, zoo_comparison
from models.registry.zoo_entries import zoo_folder

KEY = "mini-bert-nsp"
A, B = "The rain had not stopped since morning.", "My sister bought a new piano."


@pytest.fixture(scope="module")
def folder():
    found = zoo_folder(KEY)
    if not (found / "model.safetensors").is_file():
        pytest.skip("no mini-bert-nsp weights")
    return found


def test_the_stage_is_beside_the_zoo_not_in_it():
    spec = get_spec(KEY)
    assert KEY not in ZOO_KEYS and KEY not in {e.key for e in zoo_comparison()}
    assert spec.can("nsp") and spec.pair_head == "nsp" and not spec.can("mlm")
    assert "past the shared budget" in spec.provenance and "Compare shows mini-bert" in spec.provenance


def test_its_p_is_next_from_plain_text_is_bert_for_pretrainings_own(folder):
    from transformers import AutoTokenizer, BertForPreTraining

    tok = AutoTokenizer.from_pretrained(folder)
    model = BertForPreTraining.from_pretrained(folder, dtype=torch.float32).eval()
    with torch.no_grad():
        logits = model(**tok(A, B, return_tensors="pt")).seq_relationship_logits[0]
    assert pair_loss(KEY, A, B, head="nsp").p_is_next == pytest.approx(float(logits.softmax(-1)[0]), abs=1e-5)
    assert past_budget_of("mini-bert", "nsp") == KEY and past_budget_of("mini-albert", "nsp") == ""


def test_the_pair_view_and_the_lesson_answer_with_both_heads(folder):
    from components.lessons.views import sentence_pair
    from components.masking.objectives import pair_answer

    found = dict(pair_figures(KEY)[3])
    p_stage = pair_loss(KEY, A, B, head="nsp").p_is_next
    text = pair_answer("mini-bert", A, B)
    assert f"**P(IsNext) = {pair_loss('mini-bert', A, B, head='nsp').p_is_next:.3f}**" in text
    assert f"`{KEY}`" in text and f"**P(IsNext) = {p_stage:.3f}**" in text
    for kind in ("sentences, another-source", "sentences, same-source"):
        assert f"{found[kind]:.1%}" in text
    frame, note = sentence_pair("mini-bert", A, B)
    assert len(frame) == 4 and frame.iloc[2]["pair"] == f"{KEY}: A, then your B"
    assert frame.iloc[2]["P(IsNext)"] == pytest.approx(round(p_stage, 4))
    assert f"{found['sentences, same-source']:.1%}" in note


def test_the_card_quotes_the_record(folder):
    record = json.loads((folder / "record.json").read_text(encoding="utf-8"))
    card = (folder / "MODEL_CARD.md").read_text(encoding="utf-8")
    for kind, value in record["pair_narrative"]["accuracy"].items():
        assert f"{kind.replace('-', ' ')} {value:.1%}" in card
    assert f"{record['steps']:,} steps, {record['pairs']:,} pairs" in card
    assert "not the pairs this head trained on" in card
