"""What the Lessons, Pre-training, Inside-one-layer and Fine-tuning texts say about the project's
own runs, against the files those runs wrote (read here with json, not through the core): the
mini zoo's records (weights/zoo/*/record.json) and the offline model's snapshots
(weights/minilm-mlm/snapshots.json)."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import pytest

from components.finetune import copy as finetune_copy
from components.finetune import sentence_copy
from components.inside import copy as inside_copy
from components.lessons import copy, views
from components.pretrain import copy as pretrain_copy
from zoo_setup import FAMILIES, ensure_test_zoo

REPO = Path(__file__).resolve().parents[3]
STEPS = {s.slug: s for s in copy.STEPS}


@pytest.fixture(scope="module")
def records() -> dict[str, dict]:
    folder = ensure_test_zoo()
    return {key: json.loads((folder / key / "record.json").read_text()) for key in FAMILIES}


def test_the_variants_step_says_only_the_tokens_are_equal(records):
    step = STEPS["variants"]
    assert "Only the tokens are equal" in step.text and "not from the budget" not in step.text
    tokens = [r["tokens"] for r in records.values()]
    assert max(tokens) / min(tokens) < 1.001  # the same budget of training tokens
    per_token = {k: r["flops_per_token"] for k, r in records.items()}
    params = {k: sum(r["parameters"].values()) for k, r in records.items()}
    assert max(per_token.values()) / min(per_token.values()) > 1.5 and max(params.values()) > 1.5 * min(params.values())
    # the view's note, from plain text as the tab calls it
    *_, note = views.variants(copy.VARIANTS_TEXT)
    cheapest, dearest = min(per_token, key=per_token.get), max(per_token, key=per_token.get)
    assert f"{len(records)} families trained here on {min(tokens) / 1e6:.1f} M training tokens each" in note
    assert f"{min(params.values()) / 1e6:.2f}–{max(params.values()) / 1e6:.2f} M parameters" in note
    assert (f"{per_token[cheapest] / 1e6:.1f} M (`{cheapest}`) to {per_token[dearest] / 1e6:.1f} M "
            f"(`{dearest}`) training FLOPs per token") in note


def test_the_electra_question_says_the_zoo_shows_no_advantage(records):
    step = STEPS["variants"]
    assert "ELECTRA" in step.question and step.answer.startswith("No.")
    electra, bert = records["mini-electra"], records["mini-bert"]
    # "its whole-word score (its generator's ...) is below mini-bert's"
    assert electra["heldout"]["word_top1"] < bert["heldout"]["word_top1"]
    assert "below mini-bert's" in step.answer and "generator" in step.answer
    # "each of its training tokens cost more FLOPs"
    assert electra["flops_per_token"] > bert["flops_per_token"]
    assert "cost more FLOPs" in step.answer


def test_the_distillation_texts_name_the_loss_the_core_trains():
    from models.pretraining import distillation

    loss = "α · T² · KL(teacher ‖ student) + (1 − α) · MLM"
    for text in (STEPS["distillation"].text, sentence_copy.DISTILL_HELP):
        flat = " ".join(text.split())
        assert loss in flat and "cosine term" in flat and "DistilBERT's idea" not in flat
    # the core's training loss: these two terms, no third (hidden-state) one
    lines = [line.strip() for line in inspect.getsource(distillation).splitlines() if line.strip().startswith("loss =")]
    assert lines == ["loss = mlm", "loss = alpha * temperature ** 2 * kl + (1 - alpha) * mlm"]  # alone, distilled


def test_the_scaling_is_written_with_d_head():
    texts = [inside_copy.HELP, inside_copy.ROW_HELP, (REPO / "docs" / "inside.md").read_text(encoding="utf-8")]
    for text in texts:
        assert not re.search(r"√d(?!_head)", text), text[:80]
    assert "QKᵀ / √d_head" in inside_copy.HELP


def test_the_dot_product_note_says_what_length_does():
    assert "whatever their direction" not in finetune_copy.REPORT_HELP
    assert "cosine times both lengths" in finetune_copy.REPORT_HELP


def test_the_pre_training_text_follows_the_snapshots_the_tab_shows():
    snapshots = json.loads((REPO / "weights" / "minilm-mlm" / "snapshots.json").read_text())
    top = {s["step"]: [[token for token, _ in probe[1]] for probe in s["probes"]] for s in snapshots}
    frequent = {",", ".", "the"}
    text = " ".join(pretrain_copy.PRETRAIN_HELP.split())
    # step 0: unrelated words, none of the frequent tokens first
    assert all(probe[0] not in frequent for probe in top[0])
    # after 30 steps the most frequent tokens, in every blank
    assert "after 30 steps the most frequent tokens, “,” “.” and “the”, in every blank" in text
    assert all(set(probe[:3]) == frequent for probe in top[30])
    # by step 300 nouns in four of its six blanks (the other two: "a" and "very")
    assert "by step 300 nouns in four of its six blanks (“wall”, “night”, “food”, “person”)" in text
    assert [probe[0] for probe in top[300]] == ["wall", "night", "a", "food", "very", "person"]
    # the capital of France: "paris" first from step 17,139 on
    france = next(i for i, probe in enumerate(snapshots[0]["probes"]) if "France" in probe[0])
    paris = [step for step in sorted(top) if top[step][france][0] == "paris"]
    assert paris[0] == 17139 and paris == [s for s in sorted(top) if s >= 17139]
    assert "“paris” for the capital of France from step 17,139 on" in text
