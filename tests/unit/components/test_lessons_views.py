"""The Lessons tab's four live-training steps (sentence encoder, sentence pairs, span head,
distillation) through their view functions, from plain text as the tab calls them: the
figures' numbers against the core's own functions and an independent reference."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from components.lessons import copy, views
from components.lessons.tab import SLUGS, step_models, step_text
from models import (
    EncoderLabError,
    answer_span,
    classify_pair,
    embed,
    list_models,
    live_heads,
    load_model,
    parse_groups,
    sentence_encoders,
    similarity,
)
from models.embeddings.sentence_encoder import synset_groups
from models import get_spec


@pytest.fixture(scope="module")
def live_key():
    key = step_models(list_models())["live"]
    assert key == "mini-bert", "the test zoo has mini-bert: the BERT miniature comes first"
    return key


def _traces(figure) -> list[dict]:
    return json.loads(figure.to_json())["data"]


def _heldout_auc(key: str) -> float:
    """ROC AUC of same-synset vs other pairs over the held-out WordNet synsets, by sklearn."""
    held = synset_groups("validation")
    vectors = embed(key, list(held.sentences), pooling="mean")
    cosine = vectors @ vectors.T
    i, j = np.triu_indices(len(held.sentences), k=1)
    same = np.asarray(held.group)[i] == np.asarray(held.group)[j]
    return roc_auc_score(same, cosine[i, j])


def test_the_four_steps_come_last_and_wait_for_a_small_model():
    assert SLUGS[-4:] == list(copy.LIVE_STEPS) and len(SLUGS) == 17
    assert "seventeen steps" in copy.INTRO
    assert step_models(())["live"] is None  # no mini zoo: the steps wait, saying for what
    assert copy.LIVE_NEEDS in step_text("span-head", waiting=True)
    assert copy.LIVE_NEEDS not in step_text("nsp", waiting=True)
    for step in copy.STEPS[-4:]:  # each says its default run is short, and how long
        assert re.search(r"short run: .*\d+ (steps|epochs)", step.text) and "on two CPU cores" in step.text


def test_sentence_encoder_step_scores_before_and_after_as_the_core_does(live_key):
    loss_chart, matrices, note = views.sentence_encoder(live_key, copy.SENTENCE_GROUPS, "triplet", 0.5, 6, 0)
    result = views._sentence_run(live_key, "triplet", 0.5, 6, 0)  # the run the view showed (cached)
    assert result.steps_done == 6 and result.encoder_key in sentence_encoders()
    (curve,) = _traces(loss_chart)
    assert curve["y"] == pytest.approx(list(result.train_loss)) and len(curve["y"]) == 6
    # the before / after AUC of the chart and the note: the shared model's and the trained copy's
    # vectors, scored again here with sklearn
    before, after = _heldout_auc(live_key), _heldout_auc(result.encoder_key)
    assert result.before.auc == pytest.approx(before, abs=1e-4) and result.after.auc == pytest.approx(after, abs=1e-4)
    titles = [a["text"] for a in json.loads(matrices.to_json())["layout"]["annotations"]]
    assert titles == [f"before: ROC AUC {before:.3f}", f"after: ROC AUC {after:.3f}"]
    assert f"{before:.3f} → {after:.3f} ({after - before:+.3f})" in note
    # your groups: the shared model before, the trained copy after
    sentences, groups, _ = parse_groups(copy.SENTENCE_GROUPS)
    i, j = np.triu_indices(len(sentences), k=1)
    same = np.asarray(groups)[i] == np.asarray(groups)[j]
    mine = [roc_auc_score(same, similarity(k, sentences).matrix[i, j]) for k in (live_key, result.encoder_key)]
    assert f"ROC AUC {mine[0]:.3f} with `{live_key}` → {mine[1]:.3f}" in note
    assert "A copy of mini-bert" in note and "WordNet" in note
    # shown again: the same figures, not a second training
    assert views.sentence_encoder(live_key, copy.SENTENCE_GROUPS, "triplet", 0.5, 6, 0)[2] is note


def test_sentence_encoder_step_bad_input_fails_before_training(live_key):
    with pytest.raises(EncoderLabError):
        views.sentence_encoder(live_key, "only one sentence", "triplet", 0.5, 2, 0)
    with pytest.raises(EncoderLabError, match="margin"):
        views.sentence_encoder(live_key, copy.SENTENCE_GROUPS, "triplet", 9, 2, 0)


def test_pair_step_classifies_your_pair_with_its_head_against_the_baseline(live_key):
    typed = "<b>Hackers</b> say a program that crashes is buggy."
    curves, summary, answer_html = views.sentence_pair_head(live_key, copy.PAIR_TASK, typed, copy.PAIR_B)
    result = views._pair_run(live_key, copy.PAIR_TASK)
    assert result.head_id in live_heads() and result.train_examples == copy.PAIR_TRAIN
    assert result.epochs == copy.PAIR_EPOCHS and result.segment_ids
    accuracy = next(t for t in _traces(curves) if t["name"] == "validation" and t["xaxis"] == "x2")
    assert accuracy["y"][-1] == pytest.approx(result.final_validation_accuracy)
    assert f"{result.majority_baseline:.1%}" in summary and result.majority_baseline == pytest.approx(0.5)
    assert "258 parameters" in summary  # 2 labels x 128 + 2
    expected = classify_pair(result.head_id, typed, copy.PAIR_B)
    assert f"<b>{expected.predicted}</b>" in answer_html
    assert all(f"{label}: {p:.1%}" in answer_html for label, p in zip(expected.labels, expected.probabilities))
    assert "<b>Hackers</b>" not in answer_html and "&lt;b&gt;Hackers" in answer_html


def test_pair_step_head_reads_the_pair_well_above_its_baseline(live_key):
    # the step exists to show a head that reads A and B together: held out, it must be clearly
    # above always answering one label (definition-match, the step's task before, was at 52 %)
    result = views._pair_run(live_key, copy.PAIR_TASK)
    assert result.final_validation_accuracy >= result.majority_baseline + 0.1
    # the step's default pair (both from the Jargon File) and the one its "try" proposes (a State
    # of the Union sentence as B): the labels the corpus gives them
    assert classify_pair(result.head_id, copy.PAIR_A, copy.PAIR_B).predicted == "same"
    sotu = "We must work together in this Congress to lower taxes for American families."
    assert sotu in copy.STEPS[[s.slug for s in copy.STEPS].index("sentence-pairs")].try_this
    assert classify_pair(result.head_id, copy.PAIR_A, sotu).predicted == "different"


def test_span_step_shows_start_and_end_probabilities_over_the_context(live_key):
    chart, marked, summary = views.span_head(live_key, copy.SPAN_QUESTION, copy.SPAN_CONTEXT, 4)
    result = views._span_run(live_key, 4)
    assert result.steps_done == 4 and result.head_id in live_heads()
    start, end = _traces(chart)
    tokens = load_model(get_spec(live_key)).tokenizer.tokenize(copy.SPAN_CONTEXT)
    assert len(start["y"]) == len(end["y"]) == len(tokens)  # one bar per context token, no question token
    assert sum(start["y"]) == pytest.approx(1, abs=1e-5) and sum(end["y"]) == pytest.approx(1, abs=1e-5)
    answer = answer_span(result.head_id, copy.SPAN_QUESTION, copy.SPAN_CONTEXT)
    assert f"<b>{copy.SPAN_CONTEXT[answer.start:answer.end]}</b></mark>" in marked
    assert 'color:#111' in marked.split("<mark", 1)[1].split(">", 1)[0]  # dark text on the mark in either theme
    # the marked span is the best P(start) x P(end) of the bars, end not before start
    offsets = load_model(get_spec(live_key)).tokenizer(copy.SPAN_CONTEXT, add_special_tokens=False,
                                             return_offsets_mapping=True)["offset_mapping"]
    a = next(k for k, (first, _) in enumerate(offsets) if first == answer.start)
    b = next(k for k, (_, last) in enumerate(offsets) if last == answer.end)
    p_start, p_end = np.asarray(start["y"]), np.asarray(end["y"])
    best = max(p_start[s] * p_end[e] for s in range(len(tokens)) for e in range(s, min(len(tokens), s + 30)))
    assert a <= b and p_start[a] * p_end[b] == pytest.approx(best, rel=1e-4)
    assert p_start[a] * p_end[b] == pytest.approx(answer.score, rel=1e-4)
    assert f"exact match {result.scores.exact_match:.1%}" in summary
    assert f"first noun phrase EM {result.first_noun_phrase.exact_match:.1%}" in summary
    with pytest.raises(EncoderLabError, match="needs a context"):
        views.span_head(live_key, copy.SPAN_QUESTION, " ", 4)


def test_span_step_trains_again_when_its_head_was_dropped(live_key, monkeypatch):
    from models.tasks import span_heads

    views.span_head(live_key, copy.SPAN_QUESTION, copy.SPAN_CONTEXT, 3)
    first = views._span_run(live_key, 3).head_id
    span_heads._HEADS.runs.drop(first)  # dropped, as the memory budget would
    views.span_head(live_key, copy.SPAN_QUESTION, copy.SPAN_CONTEXT, 3)
    assert views._span_run(live_key, 3).head_id != first and views._span_run(live_key, 3).head_id in live_heads()


def test_distillation_step_draws_both_students_over_the_same_steps(live_key):
    chart, note = views.distillation(live_key, 4, 0.5, 2)
    traces = {t["name"]: t for t in _traces(chart)}
    soft_train, soft_eval = traces["soft targets + MLM: training MLM loss"], traces["soft targets + MLM: held-out accuracy"]
    mlm_train, mlm_eval = traces["MLM alone: training MLM loss"], traces["MLM alone: held-out accuracy"]
    assert soft_train["x"] == mlm_train["x"] == [1, 2, 3, 4]
    assert soft_eval["x"] == mlm_eval["x"] and soft_eval["x"][-1] == 4
    # the same seed, initial weights, batch and masks: the first step's MLM loss is one number
    assert soft_train["y"][0] == pytest.approx(mlm_train["y"][0], rel=1e-5)
    assert soft_train["y"][1:] != pytest.approx(mlm_train["y"][1:])  # then the soft targets change the path
    assert "1x64" in note and "4 step(s) of 32 sentences" in note
    assert ("won on held-out MLM loss" in note) or ("tie" in note)
    # the title's winner is decided on the held-out MLM loss: the chart plots it, and its last
    # points give the title's margin and the winner the note names
    title = json.loads(chart.to_json())["layout"]["title"]["text"]
    soft_held, mlm_held = traces["soft targets + MLM: held-out MLM loss"], traces["MLM alone: held-out MLM loss"]
    assert soft_held["x"] == soft_eval["x"] and mlm_held["x"] == mlm_eval["x"]
    margin = mlm_held["y"][-1] - soft_held["y"][-1]
    assert f"by {abs(margin):.3f}" in title
    winner = "soft targets + MLM won" if margin > 1e-4 else "MLM alone won" if margin < -1e-4 else "tie"
    assert winner in title and winner in note


def test_the_sentence_order_step_gives_the_order_its_pairs_show():
    """The Lessons' NSP/SOP step on ALBERT, from plain text as the tab calls it: the note gives
    the head's held-out accuracy and the bag-of-words order model's on the same pairs, both
    from the record; on BERT (NSP) there is no such reference."""
    from models.registry.zoo_entries import zoo_folder

    record = json.loads((zoo_folder("mini-albert") / "record.json").read_text(encoding="utf-8"))
    frame, note = views.sentence_pair("mini-albert", "The storm broke at night.", "By morning the river rose.")
    assert list(frame.iloc[:, 0]) == ["A, B as written", "B, A swapped"]
    assert f"{record['pair_heldout']['accuracy']:.1%}" in note
    assert f"gets {record['pair_reference']['accuracy']:.1%} of the same pairs right" in note
    _, bert_note = views.sentence_pair("mini-bert", "The storm broke at night.", "By morning the river rose.")
    assert "bag-of-words" not in bert_note
