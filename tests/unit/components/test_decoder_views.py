"""Lesson 1 on the pair and Compare's decoder section, from plain text as the UI calls them.

References: the core's public functions called apart (fill_mask, next_token, encoder_vs_decoder,
decoder_comparison) and the decoder's record on disk."""

from __future__ import annotations

import json

import pytest

from components.compare import decoder_plots
from components.compare import tab as compare_tab
from components.lessons import tab as lessons_tab
from components.lessons import views
from models import decoder_comparison, encoder_vs_decoder, fill_mask, list_models, next_token
from models.registry.zoo_entries import zoo_folder

TEXT = "The [MASK] barked at the postman all night."


def small_table(encoder_key="mini-modernbert", decoder_key="mini-decoder", measure=True):
    return encoder_vs_decoder(encoder_key, decoder_key, sentences=50)  # the table test's (kept in this session)


def test_lesson_one_runs_on_the_twins():
    assert lessons_tab.step_models(list_models())["twins"] == "mini-modernbert"


def test_lesson_one_shows_the_detective_the_storyteller_and_the_table(monkeypatch):
    monkeypatch.setattr(views, "encoder_vs_decoder", small_table)
    both, story, note, frame, left = views.encoder_decoder.__wrapped__("mini-modernbert", TEXT)
    detective = fill_mask("mini-modernbert", TEXT, 5).masks[0].predictions
    assert [round(x, 6) for x in both.data[0]["x"]][::-1] == [round(p.score, 6) for p in detective]
    teller = next_token("mini-decoder", "The", 5).predictions
    assert list(story.data[0].x)[::-1] == pytest.approx([p.score for p in teller])
    table = small_table()
    assert list(frame["task"]) == [r.task for r in table.rows]
    assert "Classify, retrieve, tag" in note and "mini-decoder" in note
    assert "causal mask" in note and left.data  # the second exhibit, labelled as the encoder's handicap


def refuse_to_measure(*_args):
    raise AssertionError("the lesson measured the table itself (minutes on two cores)")


def test_lesson_one_measures_nothing_itself(monkeypatch, tmp_path):
    """The lesson shows a kept table, else the one shipped beside the decoder, and never measures
    one (Compare does: minutes); with neither it says where the table comes from."""
    from models.decoder import versus

    monkeypatch.setenv("ENCODER_LAB_RUNS_DIR", str(tmp_path))  # nothing kept
    monkeypatch.setattr(versus, "measure_table", refuse_to_measure)
    shipped = zoo_folder("mini-decoder") / versus.SHIPPED_TABLE
    _, story, note, frame, _ = views.encoder_decoder.__wrapped__("mini-modernbert", TEXT)
    if shipped.is_file():  # the shipped zoo's: its table, row for row
        rows = json.loads(shipped.read_text(encoding="utf-8"))["table"]["rows"]
        assert list(frame["task"]) == [r["task"] for r in rows]
        assert "not measured on this server yet" not in note
    monkeypatch.setattr(versus, "_shipped_path", lambda _spec: None)  # as a decoder shipped without one
    assert encoder_vs_decoder("mini-modernbert", "mini-decoder", measure=False) is None
    _, story, note, frame, _ = views.encoder_decoder.__wrapped__("mini-modernbert", TEXT)
    assert frame is None and story.data and "Compare's mini-zoo section measures it" in note


def test_lesson_one_says_when_nothing_comes_before_the_blank():
    _, story, _, frame, _ = views.encoder_decoder.__wrapped__("mini-modernbert", "[MASK] barked all night.")
    assert frame is None and "before the blank" in json.dumps(story.to_plotly_json())


def test_compare_lists_the_decoder_with_its_curve():
    figure, note = compare_tab.show_decoder()
    record = json.loads((zoo_folder("mini-decoder") / "record.json").read_text(encoding="utf-8"))
    assert list(figure.data[0].y) == [p["piece_loss"] for p in record["curve"]]
    assert "mini-decoder" in note and f"{record['heldout']['piece_loss']:.2f}" in note
    assert decoder_comparison()[0].tokens == record["tokens"]


def test_compare_measures_the_pair(monkeypatch):
    monkeypatch.setattr(compare_tab, "encoder_vs_decoder", small_table)
    frame, text = compare_tab.show_versus()
    table = small_table()
    assert len(frame) == len(table.rows) and text == decoder_plots.versus_md(table)


def test_lesson_one_s_answer_says_what_the_shipped_table_shows():
    """The step's answer: the probe rows close between the two (within 3 points), the blank-filling
    row won by the encoder, the next-piece row by the decoder."""
    from components.lessons import copy
    from models.decoder.versus import SHIPPED_TABLE

    shipped = zoo_folder("mini-decoder") / SHIPPED_TABLE
    if not shipped.is_file():
        pytest.skip("no table shipped beside this decoder (the test zoo's)")
    answer = next(s for s in copy.STEPS if s.slug == "encoder-vs-decoder").answer
    assert "about as well from either model" in answer and "blank-filling row" in answer
    rows = {r["task"]: r for r in json.loads(shipped.read_text(encoding="utf-8"))["table"]["rows"]}
    probes = [r for task, r in rows.items() if task.startswith("probe")]
    assert len(probes) >= 2 and all(abs(r["encoder"] - r["decoder"]) <= 0.03 for r in probes)
    assert rows["blank filling"]["encoder"] > rows["blank filling"]["decoder"] + 0.05
    assert rows["next piece"]["decoder"] < rows["next piece"]["encoder"]  # a loss: lower is better
