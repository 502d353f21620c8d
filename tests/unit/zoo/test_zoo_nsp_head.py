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


class _ShortPositive:
    """rng for Examples.same_source_pair: the cut after the first sentence, a pair of one
    sentence each, labelled IsNext."""

    def __init__(self):
        self.draws = iter([0.1, 0.9])  # SHORT_PAIRS (< 0.5): one sentence each; then the label (>= 0.5): 0

    def integers(self, low, high=None):
        return 1

    def random(self):
        return next(self.draws)


def test_a_typed_pair_reads_as_its_training_pairs_did(folder):
    """The pair the views score (the shipped tokenizer, as ``pair_loss`` calls it) holds the ids and
    segments ``Examples.same_source_pair`` trained it on, for a student's pair of two sentences."""
    import numpy as np

    from models.zoo import data as zd
    from models.runtime.loading import load_model

    tok = load_model(get_spec(KEY), head="nsp").tokenizer
    pieces = [np.asarray(tok(s, add_special_tokens=False)["input_ids"]) for s in (A, B)]
    chunks = zd.make_chunks(["s", "s"], pieces, 125)
    examples = zd.Examples(tok, chunks, 128, 0, sources=["austen"], nsp_negatives="same-source")
    ids, types, label = examples.same_source_pair(0, _ShortPositive())
    enc = tok(A, B)
    assert label == 0 and enc["input_ids"] == ids.tolist() and enc["token_type_ids"] == types.tolist()
