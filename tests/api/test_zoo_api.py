"""The mini zoo's endpoints through gradio_client, against the core."""

from __future__ import annotations

import pytest
from gradio_client.exceptions import AppError

from models import detect_replaced, pair_loss, sentence_order, zoo_comparison


def test_endpoints_listed(client):
    names = set(client.view_api(print_info=False, return_format="dict")["named_endpoints"])
    assert {"/score_pair", "/next_sentence", "/sentence_order", "/detect_replaced", "/zoo_comparison"} <= names


def test_pair_heads(client):
    a, b = "He lit the candle.", "Then the room filled with a soft light."
    nsp = client.predict("mini-bert", a, b, api_name="/next_sentence")
    assert f"P(IsNext) = {pair_loss('mini-bert', a, b, head='nsp').p_is_next:.3f}" in nsp
    assert "held-out pairs" in nsp
    sop = client.predict("mini-albert", a, b, api_name="/score_pair")  # ALBERT's own head: SOP
    assert f"P(in order) = {sentence_order('mini-albert', a, b):.3f}" in sop
    with pytest.raises(AppError, match="sentence-order"):
        client.predict("mini-roberta", a, b, api_name="/sentence_order")


def test_detect_replaced(client):
    text = "The chef cooked a delicious meal for the guests."
    html, table = client.predict("mini-electra", text, 2, 3, api_name="/detect_replaced")
    core = detect_replaced("mini-electra", text, 2, 3)
    assert [row[1] for row in table["data"]] == list(core.tokens)
    assert [row[2] for row in table["data"]] == [round(p, 4) for p in core.p_replaced]
    assert sum(bool(row[4]) for row in table["data"]) == 2
    assert html.count("rtd-token") == len(core.tokens)
    with pytest.raises(AppError, match="greater than maximum value 10"):  # the slider's own check
        client.predict("mini-electra", text, 11, 0, api_name="/detect_replaced")


def test_zoo_comparison(client):
    figure, table, notes = client.predict(api_name="/zoo_comparison")
    rows = {row[0]: dict(zip(table["headers"], row)) for row in table["data"]}
    for entry in zoo_comparison():
        assert rows[entry.key]["training tokens"] == f"{entry.tokens:,}"
        assert rows[entry.key]["held-out whole-word top-1 %"] == round(100 * entry.score, 1)
        assert rows[entry.key]["tokens/s"] == f"{round(entry.tokens / (60 * entry.wall_minutes)):,}"
        assert rows[entry.key]["score of"] == entry.scored_model
    baselines = [entry.baseline_score for entry in zoo_comparison() if entry.baseline_score is not None]
    assert len(rows) == 7 + bool(baselines)  # the seven families and the word-frequency baseline's row
    if baselines:
        mean = round(100 * sum(baselines) / len(baselines), 1)
        assert rows["word-frequency baseline"]["held-out whole-word top-1 %"] == mean
        assert "word-frequency" in notes
