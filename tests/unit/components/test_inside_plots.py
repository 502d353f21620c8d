"""The "Inside one layer" plot builders on small hand-made results (no model)."""

from __future__ import annotations

import numpy as np
import pytest

from components.inside import plots
from models.inside import ForwardSteps, MLMGradients, Step, StepCheck

TOKENS = ("[CLS]", "<b>hi</b>", "there", "[SEP]")


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _result(deberta: bool = False, position: int = 1) -> ForwardSteps:
    rng = np.random.default_rng(0)
    t, dh = len(TOKENS), 3
    q, k, v = (rng.normal(size=(t, dh)).astype(np.float32) for _ in range(3))
    raw = q @ k.T
    scaled = raw / np.sqrt(dh)
    scaled[:, -1] = -np.inf  # one masked key
    weights = _softmax(scaled)
    steps = [Step("query", "Query", "Q = x W_Q", "(T, d_head)", q), Step("key", "Key", "K", "(T, d_head)", k),
             Step("value", "Value", "V", "(T, d_head)", v), Step("raw_scores", "Raw", "QKᵀ", "(T, T)", raw)]
    if deberta:
        steps += [Step(f"deberta_{n}", n, n, "(T, T)", scaled / 3, family="deberta-v2") for n in ("c2c", "c2p", "p2c")]
    steps += [Step("scaled_scores", "Scaled", "S/√d", "(T, T)", scaled),
              Step("weights", "Weights", "softmax", "(T, T)", weights),
              Step("weighted_values", "Weighted", "AV", "(T, d_head)", weights @ v),
              Step("roberta_position_ids", "Positions", "p + 1 + t", "(T,)", np.arange(t, dtype=np.float32) + 2,
                   family="roberta")]
    return ForwardSteps(
        model_key="toy", family="deberta-v2" if deberta else "bert", network="the MLM model", text="hi there",
        text_pair=None, tokens=TOKENS, token_ids=(0, 1, 2, 3), layer=0, head=0, position=position, num_layers=2,
        num_heads=1, d_model=dh, d_head=dh, d_ff=4, scale=float(np.sqrt(dh)), attn_implementation="eager",
        steps=tuple(steps),
        head_steps=(Step("head_top_k", "Top 2", "softmax", "(2,)", np.array([0.6, 0.3], np.float32)),),
        predictions=(("<i>x</i>", 0.6), ("y", 0.3)), layer_norms=np.ones((3, t), np.float32),
        checks=(StepCheck("weights", "output_attentions", 1e-8, 1e-4), StepCheck("bad", "x", 1.0, 1e-4)),
        facts=("a <script> fact",),
    )


def test_attention_step_is_a_token_by_token_heatmap_with_the_row_outlined():
    result = _result()
    fig = plots.step_figure(result, "weights")
    heat = fig.data[0]
    assert list(heat.y) == list(heat.x) == ["0 [CLS]", "1 &lt;b&gt;hi&lt;/b&gt;", "2 there", "3 [SEP]"]
    np.testing.assert_allclose(np.asarray(heat.z, dtype=float), result.step("weights").value, atol=1e-7)
    (box,) = fig.layout.shapes
    assert (box.y0, box.y1) == (0.5, 1.5)  # row of token 1
    assert "(T, T) = (4, 4)" in fig.layout.title.text


def test_masked_scores_are_gaps_not_numbers():
    z = np.asarray(plots.step_figure(_result(), "scaled_scores").data[0].z, dtype=float)
    assert np.isnan(z[:, -1]).all() and np.isfinite(z[:, :-1]).all()


def test_vectors_and_positions_are_bars():
    result = _result()
    bars = plots.step_figure(result, "roberta_position_ids").data[0]
    assert list(bars.y) == [2, 3, 4, 5] and bars.marker.color[1] == plots.HIGHLIGHT
    top = plots.step_figure(result, "head_top_k").data[0]
    assert list(top.x) == ["&lt;i&gt;x&lt;/i&gt;", "y"]


def test_row_frame_spells_out_the_chosen_row():
    result = _result()
    frame = plots.row_frame(result)
    p = result.position
    body, total = frame.iloc[:-1], frame.iloc[-1]
    np.testing.assert_allclose(body["softmax"].astype(float), result.step("weights").value[p], atol=1e-5)
    assert body.iloc[-1]["÷ 1.732 (+ mask)"] == "−∞" and body.iloc[-1]["softmax"] == 0
    # the Σ row is the sum of the weight × value column, and it is the head's output
    assert total["weight × v[0]"] == pytest.approx(body["weight × v[0]"].astype(float).sum(), abs=1e-4)
    assert total["weight × v[0]"] == pytest.approx(float(result.step("weighted_values").value[p, 0]), abs=1e-5)
    assert body["key"].tolist()[1] == "1 <b>hi</b>"  # a table cell is text, shown as written


def test_deberta_row_shows_its_three_terms():
    frame = plots.row_frame(_result(deberta=True))
    assert {"c2c", "c2p", "p2c", "sum (+ mask)"} <= set(frame.columns)


def test_step_text_choices_and_checks():
    result = _result(deberta=True)
    choices = plots.step_choices(result)
    assert choices[0] == ("1. Query", "query") and any(label.startswith("5. ★ c2c") for label, _ in choices)
    text = plots.step_markdown(result, "deberta_c2p")
    assert "★ *deberta-v2*" in text and "(T, T) = (4, 4)" in text and "Step 6 of" in text
    checks = plots.checks_markdown(result)
    assert "| weights | output_attentions | 1.00e-08 | 1e-04 | ✓ |" in checks and "| bad | x | 1.00e+00 | 1e-04 | ✗ |" in checks
    assert "<script>" not in checks and "&lt;i&gt;x&lt;/i&gt;" in checks
    assert "&lt;b&gt;" in plots.status_markdown(result)


def test_norms_figure_marks_the_token():
    fig = plots.norms_figure(_result(position=2))
    assert list(fig.data[0].y) == ["embeddings", "layer 0", "layer 1"]
    assert (fig.layout.shapes[0].x0, fig.layout.shapes[0].x1) == (1.5, 2.5)


def test_gradient_figure_colours_masked_positions():
    grads = MLMGradients(
        model_key="toy", text="hi there", tokens=TOKENS, inputs=("[CLS]", "[MASK]", "there", "[SEP]"), masked=(1,),
        special=(True, False, False, True), loss=2.0, embedding_grad_norms=np.array([0.1, 2.0, 0.5, 0.1]),
        logit_grad_norms=np.array([0.0, 1.0, 0.0, 0.0]), fd_position=2, fd_dim=0, fd_autograd=0.5,
        fd_estimate=0.5001, fd_eps=0.01)
    fig = plots.gradient_figure(grads)
    assert list(fig.data[0].marker.color) == [plots.SPECIAL, plots.MASKED, plots.UNMASKED, plots.SPECIAL]
    assert list(fig.data[1].y) == [0.0, 1.0, 0.0, 0.0]
    note = plots.gradient_markdown(grads)
    assert "masked **2**" in note and "unmasked **0.5**" in note and "relative difference 2.0e-04" in note
