"""The "Which parts matter" tab from plain text, as the page calls it: each view's handler
against the core's answer and against transformers (fill-mask's pipeline-tested answer)."""

from __future__ import annotations

import types

import numpy as np
import pytest

from components.parts import copy, plots, tab
from helpers import plotly_array
from models import fill_mask, get_spec, load_tokenizer

KEY = "minilm-mlm"
TEXT = "The capital of France is [MASK]."


def test_knock_out_from_the_heads_box_and_the_grid():
    status, figure, table, grid = tab.knock_out(TEXT, KEY, "2:3, 4:1", "paris", "zero")
    assert grid.shape == (6, 13) and grid.iloc[2, 4] == plots.KNOCKED and grid.iloc[4, 2] == plots.KNOCKED
    assert (grid.iloc[:, 1:] == plots.KNOCKED).sum().sum() == 2
    assert "2:3, 4:1" in status and "p(“paris”)" in status
    best = fill_mask(KEY, TEXT, 5).masks[0].predictions
    assert list(table["every head"]) == [p.token for p in best]
    np.testing.assert_allclose(table["p"], [p.score for p in best], atol=1e-5)
    bars = figure.to_plotly_json()["data"]
    np.testing.assert_allclose(plotly_array(bars[0]["y"]), [p.score for p in best], atol=1e-5)
    np.testing.assert_allclose(plotly_array(bars[1]["y"]), table["p without"], atol=1e-5)
    click = types.SimpleNamespace(index=[4, 2])  # layer 4, head 1: brought back
    assert tab.toggle_head("2:3, 4:1", click) == "2:3"
    assert tab.toggle_head("2:3", types.SimpleNamespace(index=[0, 1])) == "0:0, 2:3"


def test_the_heads_box_refuses_what_is_not_layer_head():
    import gradio as gr

    with pytest.raises(gr.Error, match="heads: write each head as layer:head"):
        tab.knock_out(TEXT, KEY, "2-3", "", "zero")
    with pytest.raises(gr.Error, match=r"heads\[0\]: the layer must be a whole number from 0 to 5"):
        tab.knock_out(TEXT, KEY, "9:0", "", "zero")


def test_importance_map_is_the_grid():
    status, figure, frame = tab.importance(TEXT, KEY, "")
    z = np.array(plotly_array(figure.to_plotly_json()["data"][0]["z"]), dtype=float)
    assert z.shape == (6, 12) and len(frame) == 72
    np.testing.assert_allclose(z.ravel(), frame["delta log p"], atol=1e-4)
    assert "“paris”" in status


def test_when_known_side_by_side_ends_on_each_models_fill_mask():
    status, figure, first, second = tab.when_known(TEXT, KEY, "mini-bert")
    for key, frame in ((KEY, first), ("mini-bert", second["value"])):
        top = fill_mask(key, TEXT, 5).masks[0].predictions
        assert frame["read at"].iloc[0] == "embeddings" and frame["top guess"].iloc[-1] == top[0].token
        assert frame["top guesses"].iloc[-1] == " ".join(p.token for p in top)
    assert second["visible"] and len(figure.to_plotly_json()["data"]) == 2
    alone = tab.when_known(TEXT, KEY, "")
    assert alone[3]["visible"] is False and len(alone[1].to_plotly_json()["data"]) == 1


@pytest.mark.parametrize("key", ["minilm-mlm", "mini-roberta", "mini-albert"])
def test_presets_offered_tokenize_to_the_same_length(key):
    tok = load_tokenizer(get_spec(key))
    offered = tab.presets_for(key)
    assert offered
    for _, index in offered:
        clean, corrupt = (t.replace("[MASK]", tok.mask_token) for t in copy.PRESETS[int(index)])
        assert len(tok(clean).input_ids) == len(tok(corrupt).input_ids)
    left_out = [p for i, p in enumerate(copy.PRESETS) if str(i) not in {ix for _, ix in offered}]
    for pair in left_out:
        a, b = (t.replace("[MASK]", tok.mask_token) for t in pair)
        assert len(tok(a).input_ids) != len(tok(b).input_ids)


def test_trace_heatmap_and_the_cap_on_screen():
    clean, corrupt = tab.use_preset("0")
    status, figure, frame = tab.trace(clean, corrupt, KEY, "")
    z = np.array(plotly_array(figure.to_plotly_json()["data"][0]["z"]), dtype=float)
    assert z.shape == (6, 9) and "p = 0.9" in status
    np.testing.assert_allclose(z.ravel(), frame["p(target)"], atol=1e-4)
    long = "The old mill by the river turned slowly in the evening light while " * 3 + TEXT
    status, figure, _ = tab.trace(long, long.replace("France", "Italy"), KEY, "")
    assert "32 positions are patched" in status


def test_lesson_steps_knock_out_a_head_and_read_every_layer():
    from components.lessons import views

    figure, note = views.knock_out_head(KEY, TEXT, 5, 0)
    core = tab.ablate_heads(KEY, TEXT, [(5, 0)])
    assert f"without layer 5, head 0: {plots.guess_text(core.masks[0].after[0])}" in note
    bars = figure.to_plotly_json()["data"]
    np.testing.assert_allclose(plotly_array(bars[1]["y"]), [g.probability for g in core.masks[0].after], atol=1e-6)
    figure, frame, note = views.answer_across_layers(KEY, TEXT)
    top = fill_mask(KEY, TEXT, 5).masks[0].predictions
    assert len(frame) == 7 and frame["top guesses"].iloc[-1] == " ".join(p.token for p in top)
    assert "is the top guess" in note
