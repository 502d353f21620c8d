"""The "Why this guess" handler as its button calls it: typed text, the pickers' values in."""

from __future__ import annotations

import gradio as gr
import pytest

from components.attribution import copy, tab
from models import ATTRIBUTION_METHODS, DEFAULT_IG_STEPS, fill_mask

MODEL = "minilm-mlm"  # the embedded MLM that guesses sensibly


def test_an_unlikely_target_is_called_so_with_no_steps_advice_and_no_winner():
    text = copy.EXAMPLES[0]
    assert fill_mask(MODEL, text, 20).masks[0].predictions[-1].score > 1e-3  # "unbelievable" is far below these
    status, *_ = tab.explain(text, MODEL, 1, "unbelievable", DEFAULT_IG_STEPS, list(ATTRIBUTION_METHODS))
    assert "almost no probability" in status
    assert "raise the steps" not in status and "held up best" not in status


@pytest.mark.parametrize("number", [3, 0, -1, 12])
def test_a_mask_number_out_of_range_is_refused_in_the_boxs_own_numbering(number):
    """The box counts masks from 1: its message must not explain a 0-based mask_index."""
    text = "She opened the [MASK] and walked into the [MASK]."
    with pytest.raises(gr.Error) as info:
        tab.explain(text, MODEL, number, "", 8, ["leave_one_out"])
    message = str(info.value)
    assert f"no mask number {number}" in message and "takes 1 to 2" in message
    assert "mask_index" not in message and "0 is the first" not in message


def test_the_last_mask_number_explains_the_last_mask():
    text = "She opened the [MASK] and walked into the [MASK]."
    status, *_ = tab.explain(text, MODEL, 2, "", 8, ["leave_one_out"])
    assert "at mask 2 " in status
