"""The retrieve-then-read view from plain text, as the Fine-tuning tab and the lesson step call it:
its table is the core's passages, its chart times each part and the test zoo's decoder beside
them, its text escapes the question; and without the decoder it says so."""

from __future__ import annotations

import pytest

from helpers import passage_slice
from models import retrieve_then_read
from components.finetune import reading, reading_plots

QUESTION = "Which city is the capital of Peru? <b>"


@pytest.fixture(scope="module")
def small_index(tmp_path_factory):
    _, _, patch = passage_slice(tmp_path_factory.mktemp("passages"), lambda i, s: i < 100 or "Peru" in s)
    yield
    patch.undo()


def test_the_view_shows_the_cores_passages_and_each_parts_cost(small_index):
    text, frame, figure = reading.reading_view(QUESTION, 4)
    core = retrieve_then_read(QUESTION, k=4)
    assert list(frame["passage"]) == [p.text for p in core.passages]
    assert list(frame["span read"]) == [p.answer for p in core.passages]
    assert f"**Answer: {core.answer}**" in text and "Lima" in core.answer
    bars = figure.data[0]
    assert list(bars.y[:3]) == ["encode the question", "search the index", "read the passages"]
    assert len(bars.x) == 4 and bars.y[3].startswith("generate with mini-decoder")  # the test zoo's decoder
    assert all(ms > 0 for ms in bars.x)
    assert "<b>" not in text


def test_without_the_decoder_the_view_says_it_is_not_trained_here(small_index, monkeypatch):
    monkeypatch.setattr(reading, "decoder_answer", lambda question: None)
    text, _, figure = reading.reading_view(QUESTION, 2)
    assert len(figure.data[0].x) == 3
    assert "is not trained on this machine" in text and "scripts.zoo train --families mini-decoder" in text


def test_cost_parts_put_the_decoder_last():
    class Result:
        encode_ms, search_ms, read_ms = 5.0, 0.5, 20.0

    decoder = reading.DecoderAnswer("mini-decoder", 8, "Lima", 300.0)
    assert reading_plots.cost_parts(Result, decoder)[-1] == ("generate with mini-decoder (8 pieces)", 300.0)
    assert [ms for _, ms in reading_plots.cost_parts(Result, None)] == [5.0, 0.5, 20.0]
