"""Builders of the causal, arithmetic and input-embeddings views, on small hand-made results."""

from __future__ import annotations

import numpy as np
import pytest

from components.views.arithmetic_plots import arithmetic_frame, arithmetic_text, nsp_loss_text
from components.views.causal_plots import generation_frame
from components.views.input_embeddings_plots import input_embeddings_figure, input_embeddings_frame, input_embeddings_summary
from models import GenerationResult, InputEmbeddings, NSPLoss, explain_loss
from models.mlm.generation import GenerationStep
from models.mlm.results import Prediction
from models.pretraining.arithmetic import LogitRow, LossArithmetic


def test_textbook_table_and_text():
    frame = arithmetic_frame(explain_loss({"cat": 3.0, "dog": 1.5, "mat": 0.2, "the": 0.1}, "cat"))
    assert list(frame["word"]) == ["cat ← target", "dog", "mat", "the", "Σ over all 4 words (the denominator)"]
    assert abs(frame["p = exp(z) / Σ"].iloc[:4].sum() - 1) < 1e-5
    text = arithmetic_text(explain_loss({"cat": 3.0, "dog": 1.5, "mat": 0.2, "the": 0.1}, "cat"))
    assert "0.7468" in text and "0.2919 nats" in text


def test_a_real_position_folds_the_rest_into_one_row():
    rows = (LogitRow("<b>", 5.0, 148.4, 0.5), LogitRow("the", 4.0, 54.6, 0.2))
    result = LossArithmetic("the", rows, 296.8, 93.8, 30522, 0.2, 1.609, position=3, shown="[MASK]")
    frame = arithmetic_frame(result)
    assert frame["word"].iloc[-2] == "… the other 30,520 words"
    assert "&lt;b&gt;" not in "".join(frame["word"])  # cells are text: Gradio escapes them itself
    assert "Position 3" in arithmetic_text(result) and "&lt;" not in arithmetic_text(result)


def test_nsp_text_says_the_label_and_the_check():
    text = nsp_loss_text(NSPLoss("bert-base", False, (2.0, -1.0), 0.9526, 3.0486, 1e-7))
    assert "NotNext" in text and "−ln (1 − P(IsNext))" in text and "3.0486" in text and "pooler" in text


def _shown_p_and_loss(text: str) -> tuple[float, float]:
    """The p after "−ln " and the loss after "= **" that follows it, as the reader sees them."""
    import re

    found = re.search(r"−ln (?:\(1 − P\(IsNext\)\) = −ln )?([0-9.e+-]+) = \*\*([0-9.]+) nats", text)
    return float(found.group(1)), float(found.group(2))


def test_a_small_probability_keeps_its_digits_so_the_loss_follows_from_it():
    import math

    result = explain_loss({"cat": 0.0, "dog": 10.0, "mat": 0.2, "the": 0.1}, "cat")
    assert result.p_target < 1e-3
    p, loss = _shown_p_and_loss(arithmetic_text(result))
    assert p == pytest.approx(result.p_target, rel=1e-3) and -math.log(p) == pytest.approx(loss, abs=1e-3)
    nsp = nsp_loss_text(NSPLoss("bert-base", False, (6.0, -4.0), 0.9999546, 10.0000, 1e-7))
    p, loss = _shown_p_and_loss(nsp)
    assert p == pytest.approx(1 - 0.9999546, rel=1e-3) and -math.log(p) == pytest.approx(loss, abs=1e-3)


def test_generation_frame_one_row_per_step():
    p = Prediction(".", 1012, 0.9, ".")
    step = GenerationStep(1, "hi", ("[CLS]", "hi", "[MASK]", "[SEP]"), (p,), p, "hi.")
    frame = generation_frame(GenerationResult("m", "hi", 0, 1, (step,), "hi."))
    assert frame.shape == (1, 5) and frame["picked"].iloc[0] == "." and "[MASK] [SEP]" in frame.iloc[0, 1]


def _embeddings(segment: bool) -> InputEmbeddings:
    rng = np.random.default_rng(0)
    t, d = 4, 8
    token, position = rng.normal(size=(t, d)), rng.normal(size=(t, d))
    seg = rng.normal(size=(t, d)) if segment else None
    total = token + position + (seg if segment else 0)
    return InputEmbeddings("m", "a", "b" if segment else None, ("[CLS]", "<x>", "[SEP]", "b"), (1, 2, 3, 4),
                           (0, 1, 2, 3), (0, 0, 0, 1) if segment else None, token, position, seg, total,
                           total + 1e-7, total)


def test_input_embeddings_views():
    with_segments = input_embeddings_figure(_embeddings(True))
    assert len(with_segments.data) == 4  # token, position, segment, sum
    assert "&lt;x&gt;" in with_segments.data[0].y[1]  # tokens escaped in labels
    assert len(input_embeddings_figure(_embeddings(False)).data) == 3
    frame = input_embeddings_frame(_embeddings(True))
    assert list(frame["segment row"]) == [0, 0, 0, 1] and (frame["max |sum − model input|"] < 1e-6).all()
    assert "cosine" in input_embeddings_summary(_embeddings(True))
    assert "no segment table" in input_embeddings_summary(_embeddings(False))
