"""The "Why this guess" handler as its button calls it: typed text, the pickers' values in."""

from __future__ import annotations

from components.attribution import copy, tab
from models import ATTRIBUTION_METHODS, DEFAULT_IG_STEPS, fill_mask

MODEL = "minilm-mlm"  # the embedded MLM that guesses sensibly


def test_an_unlikely_target_is_called_so_with_no_steps_advice_and_no_winner():
    text = copy.EXAMPLES[0]
    assert fill_mask(MODEL, text, 20).masks[0].predictions[-1].score > 1e-3  # "unbelievable" is far below these
    status, *_ = tab.explain(text, MODEL, 1, "unbelievable", DEFAULT_IG_STEPS, list(ATTRIBUTION_METHODS))
    assert "almost no probability" in status
    assert "raise the steps" not in status and "held up best" not in status
