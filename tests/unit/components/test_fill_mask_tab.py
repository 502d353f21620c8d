"""The Fill-mask tab's handlers as its events call them: plain text and the model picker's key in."""

from __future__ import annotations

import pytest

from components.fill_mask import tab
from helpers import MLM_KEY, skip_if_available
from models import fill_mask

TEXT = "The capital of France is [MASK]."


def _answered(text=TEXT, model_key=MLM_KEY):
    """The live answer: table, plot, filled sentence, status, bars (the words strip dropped)."""
    _words, *outputs = tab.predict_live(text, model_key, 5, True, False)
    return outputs


def _assert_nothing_of_an_answer_is_left(outputs, old_filled):
    table, plot, filled, status, bars = outputs
    assert table["data"] == []  # emptied, not skipped (a skip keeps the last answer's rows)
    assert plot is None
    assert filled == "" and filled != old_filled
    assert bars == ""
    return status


def test_a_live_answer_fills_every_output():
    table, _plot, filled, status, bars = _answered()
    assert filled == fill_mask(MLM_KEY, TEXT, 5).filled_text
    assert len(table["data"]) == 5 and "<tbody>" in bars and "1 mask(s)" in status


@pytest.mark.parametrize("case", ["unavailable model", "too long", "no mask", "empty"])
def test_a_warning_clears_the_last_answer_instead_of_leaving_it_as_if_current(case):
    """After a warning the earlier predictions must not stay on screen: they would read as the
    answer of the model or text the warning is about."""
    old_filled = _answered()[2]
    if case == "unavailable model":
        skip_if_available("bert-base")
        status = _assert_nothing_of_an_answer_is_left(_answered(model_key="bert-base"), old_filled)
        assert status.startswith("⚠️") and "not available" in status
    elif case == "too long":
        status = _assert_nothing_of_an_answer_is_left(_answered("word " * 2000 + "[MASK]."), old_filled)
        assert status.startswith("⚠️") and "tokens long" in status
    else:
        text = "" if case == "empty" else "The capital of France is Paris."
        status = _assert_nothing_of_an_answer_is_left(_answered(text), old_filled)
        assert "Add [MASK]" in status


def _click(strip_text: str, word: str) -> tab.WordClick:
    """A click on ``word`` in the strip drawn from ``strip_text``, as the page sends it."""
    strip = tab.show_words(strip_text)
    index = next(i for i, (segment, _) in enumerate(strip) if segment == word)
    return tab.WordClick(None, {"index": index, "value": list(strip[index])})


def test_clicking_a_word_of_the_strip_masks_it():
    assert tab.click_word(TEXT, _click(TEXT, "France")) == "The capital of [MASK] is [MASK]."


def test_a_click_on_a_strip_drawn_from_an_earlier_text_masks_nothing():
    """The box already holds a new text when the old strip's "France" is clicked: the word at
    the same index of the new text ("long") must not be masked."""
    new = "My dog likes long walks in the park."
    assert tab.click_word(new, _click(TEXT, "France")) == new
