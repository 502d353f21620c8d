"""The Masking lab tab's fields, as built (no browser)."""

from __future__ import annotations

import gradio as gr
import pytest


@pytest.fixture(scope="module")
def fields():
    from components.masking.tab import build_masking_tab

    with gr.Blocks() as demo, gr.Tabs():
        build_masking_tab()
    return [b for b in demo.blocks.values() if isinstance(b, (gr.Number, gr.Slider))]


def test_the_split_fields_step_by_a_fraction_not_from_0_to_1(fields):
    """The three split fields hold probabilities between 0 and 1: an arrow key moves them by a
    small step (Gradio's default step of 1 jumped 0 <-> 1), as the selection-rate slider does."""
    split = {f.label: f for f in fields if f.label in ("→ [MASK]", "→ random", "→ kept")}
    assert len(split) == 3
    for field in split.values():
        assert (field.minimum, field.maximum) == (0, 1)
        assert 0 < field.step <= 0.05
        assert round(0.8 / field.step, 9).is_integer()  # BERT's 80/10/10 lies on the steps
    rate = next(f for f in fields if f.label == "Selection rate")
    assert 0 < rate.step <= 0.05
