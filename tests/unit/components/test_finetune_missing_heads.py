"""A head id the process no longer keeps (pushed out by newer heads, or from before a restart),
as the Fine-tuning tab's answer buttons send it: the message names the tab's button that trains
one and the API function, for the visitor and the API caller alike."""

from __future__ import annotations

import gradio as gr
import pytest

from components.finetune import sentence, tab

CASES = {
    "classify": (lambda: tab.run_classify("mini-bert/source/999", "A cat."), "Train the head", "train_classifier"),
    "why_this_class": (lambda: tab.run_why_class("mini-bert/source/999", "A cat."), "Train the head",
                       "train_classifier"),
    "classify_pair": (lambda: sentence.run_classify_pair("pair:mini-bert/same-source/999", "A cat.", "A dog."),
                      "Train the pair head", "train_pair_classifier"),
    "answer_span": (lambda: sentence.run_answer("span:mini-bert/999", "Who?", "A cat."), "Train the span head",
                    "train_span_head"),
}


@pytest.mark.parametrize("api", CASES)
def test_a_missing_head_names_the_button_and_the_api_function(api):
    call, button, function = CASES[api]
    with pytest.raises(gr.Error) as caught:
        call()
    message = caught.value.message
    assert "999" in message and "in this process" in message
    assert f"train one first: the “{button}” button, or {function} in the API." in message
    assert "train one with" not in message  # not the API's name alone, as if the visitor called it
