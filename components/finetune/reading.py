"""The "Retrieve, then read" section of the Fine-tuning & search tab (and its lesson step's view).

Layout and event wiring only; the chain is ``models.retrieve_then_read``, the figures are in
``reading_plots``. Beside the chain, the zoo's decoder generates after the same question, timed
the same way, where its weights are on this machine.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import gradio as gr

from models import MAX_TEXT_CHARS, generate_left_to_right, list_models, retrieve_then_read

from ..shell.common import HEAVY, error_figure, readable_errors
from ..shell.server import on_gpu
from . import reading_plots as plots
from . import reading_copy as copy

DECODER = "mini-decoder"
DECODER_STEPS = 8


@dataclass(frozen=True)
class DecoderAnswer:
    model_key: str
    steps: int
    text: str  # what it wrote after the question
    milliseconds: float


def decoder_answer(question: str) -> DecoderAnswer | None:
    """The zoo's decoder writing after the question (its best piece each step), timed; None where
    its weights are not on this machine."""
    if not any(m.key == DECODER and m.available for m in list_models()):
        return None
    prompt = f"{question.strip()} Answer:"
    started = time.perf_counter()
    result = generate_left_to_right(DECODER, prompt, steps=DECODER_STEPS, top_k=1)
    ms = (time.perf_counter() - started) * 1000
    return DecoderAnswer(DECODER, DECODER_STEPS, result.text[len(prompt):].strip() or result.text, ms)


def reading_view(question: str, k: float, encoder_key: str | None = None):
    """The chain's Markdown, its passages and its cost chart, for one question."""
    result = retrieve_then_read(question, k=int(k or 0), encoder_key=encoder_key)
    decoder = decoder_answer(question)
    return (plots.reading_markdown(result, decoder, copy.DECODER_MISSING.format(decoder=DECODER)),
            plots.passages_frame(result), plots.cost_chart(result, decoder))


@on_gpu
def run_reading(question: str, k: float):
    """Retrieve, then read (the ``retrieve_then_read`` API)."""
    with readable_errors("Retrieve, then read"):
        return reading_view(question, k)


def build_reading_section() -> None:
    """The section's layout and events; call inside the tab."""
    gr.Markdown(copy.READING_HELP)
    with gr.Row():
        question = gr.Textbox(label="Question", value=copy.READING_QUESTION, max_length=MAX_TEXT_CHARS, scale=4)
        k = gr.Slider(1, 10, value=3, step=1, label="Passages read (k)", scale=1)
    button = gr.Button("Retrieve, then read", variant="primary")
    answer = gr.Markdown(elem_id="reading-answer")
    passages = gr.Dataframe(label="Passages found and read", interactive=False, wrap=True,
                            column_widths=plots.PASSAGE_COLUMN_WIDTHS)
    costs = gr.Plot(error_figure(copy.READING_WAITING), label="Cost per query, each part")
    gr.on([button.click, question.submit], run_reading, [question, k], [answer, passages, costs],
          api_name="retrieve_then_read", **HEAVY)
