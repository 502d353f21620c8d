"""The Masking lab's sections for the other pre-training heads: NSP / SOP and ELECTRA's RTD.

Models are chosen by capability (``spec.can("pair")``, ``spec.pair_head``, ``spec.can("rtd")``);
the views open computed on their default example.
"""

from __future__ import annotations

import gradio as gr

from models import (
    MAX_TEXT_CHARS,
    detect_replaced,
    detection_figures,
    get_spec,
    pair_figures,
    pair_loss,
    past_budget_of,
    sentence_order,
)

from ..shell.common import readable_errors
from ..shell.server import on_gpu
from ..views import arithmetic_copy, arithmetic_plots
from . import objectives_copy as copy
from . import objectives_plots as views

RTD_COLUMNS = ["position", "token", "P(replaced)", "verdict", "generator replaced"]


def _heldout_pair(model_key: str) -> tuple:
    """(held-out accuracy, majority-label share, a bag-of-words order model's accuracy, the head
    on held-out narrative pairs by kind) of a model's pair head, from its record."""
    return pair_figures(model_key)


def _heldout_rtd(model_key: str) -> tuple:
    """(the ROC AUC of a model's replaced-token detection on held-out corrupted text, its share of
    single-swap sentences with the wrong word ranked first), from its record."""
    return detection_figures(model_key)


def pair_answer(model_key: str, a: str, b: str):
    """The chosen model's own pair head: SOP for ALBERT-style models, else NSP."""
    with readable_errors("Sentence-pair prediction"):
        spec = get_spec(model_key)
        kind = spec.pair_head
        p = sentence_order(model_key, a, b) if kind == "sop" else pair_loss(model_key, a, b, head="nsp").p_is_next
        text = views.pair_markdown(kind, p, *_heldout_pair(model_key))
        stage = past_budget_of(model_key, "nsp") if kind == "nsp" else ""
        if stage:  # the same model trained on past the budget on negatives of the same kind of text
            p_stage = pair_loss(stage, a, b, head="nsp").p_is_next
            text += "\n\n" + views.stage_markdown(model_key, stage, p_stage, *_heldout_pair(stage))
        return text


run_pair = on_gpu(pair_answer)


def rescore_pair(model_key: str, a: str, b: str):
    """Another model picked: its own answer for the pair on screen, and the pair loss shown (the
    other model's) cleared, so no answer stays under a model that did not give it."""
    return run_pair(model_key, a, b), ""


@on_gpu
def run_nsp_loss(model_key: str, a: str, b: str, is_next: bool):
    """The loss of the model's own pair head against the true label: NSP's P(IsNext), or SOP's
    P(in order) for an ALBERT-style model (the ``nsp_loss`` API)."""
    with readable_errors("The pair loss"):
        return arithmetic_plots.nsp_loss_text(pair_loss(model_key, a, b, bool(is_next)))


def not_next():
    """A random B does not follow A: the true label becomes NotNext."""
    return False


def swap_pair(a: str, b: str):
    return b, a


@on_gpu
def run_sentence_order(model_key: str, a: str, b: str) -> str:
    """P(in order) for the pair A, B (the ``sentence_order`` API)."""
    with readable_errors("Sentence-order prediction"):
        return views.pair_markdown("sop", sentence_order(model_key, a, b), *_heldout_pair(model_key))


def replaced_view(model_key: str, text: str, swap: float, seed: float):
    """Every token's P(replaced) (the ``detect_replaced`` API)."""
    with readable_errors("Replaced-token detection"):
        result = detect_replaced(model_key, text, int(swap or 0), int(seed or 0))
        beside = get_spec(model_key).generator
        return views.replaced_html(result, *_heldout_rtd(model_key), beside), views.replaced_rows(result)


run_detect_replaced = on_gpu(replaced_view)


def build_pair_section(models, random_b) -> None:
    """NSP and SOP: one pair of sentences, one model with either head."""
    pair_models = [m for m in models if m.available and m.can("pair")]
    listed = pair_models or [m for m in models if m.can("pair")]
    gr.Markdown(copy.PAIR_HELP)
    with gr.Row():
        model = gr.Dropdown([(m.display_name, m.key) for m in listed],
                            value=(pair_models or listed)[0].key if listed else None,
                            label="Model with an NSP or SOP head")
        seed = gr.Number(value=0, precision=0, label="Seed for a random B")  # any whole number
    with gr.Row():
        a = gr.Textbox(label="Sentence A", value=copy.PAIR_A)
        b = gr.Textbox(label="Sentence B", value=copy.PAIR_B)
    with gr.Row():
        shuffle = gr.Button("Random B")
        swap = gr.Button("Swap A and B")
        score = gr.Button("Score the pair", variant="primary")
    first = pair_answer(pair_models[0].key, copy.PAIR_A, copy.PAIR_B) if pair_models else ""
    out = gr.Markdown(first, elem_id="masking-pair-answer")
    gr.Markdown(arithmetic_copy.NSP_LOSS_HELP)
    with gr.Row():
        is_next = gr.Radio(arithmetic_copy.NSP_LABELS, value=True, label="True label")
        nsp_loss = gr.Button("Pair loss (NSP or SOP)")
    nsp_loss_out = gr.Markdown(elem_id="nsp-loss")
    shuffle.click(random_b, seed, b, api_name="random_sentence").then(
        not_next, None, is_next, api_visibility="private")
    swap.click(swap_pair, [a, b], [a, b], api_visibility="private")
    score.click(run_pair, [model, a, b], out, api_name="score_pair")
    model.input(rescore_pair, [model, a, b], [out, nsp_loss_out], api_visibility="private",
                trigger_mode="always_last")
    nsp_loss.click(run_nsp_loss, [model, a, b, is_next], nsp_loss_out, api_name="nsp_loss")
    # each head as its own endpoint too, for API users
    gr.api(next_sentence_answer, api_name="next_sentence")
    gr.api(run_sentence_order, api_name="sentence_order")


@on_gpu
def next_sentence_answer(model_key: str, a: str, b: str) -> str:
    """P(IsNext) for sentence B after sentence A (the ``next_sentence`` API)."""
    with readable_errors("Next sentence prediction"):
        return views.pair_markdown("nsp", pair_loss(model_key, a, b, head="nsp").p_is_next, *_heldout_pair(model_key))


def build_rtd_section(models) -> None:
    """ELECTRA's discriminator on a sentence, optionally after the generator's swaps."""
    # a detector trained for these views (``ModelSpec.generator``: beside another's generator) first
    rtd = sorted((m for m in models if m.can("rtd")), key=lambda m: not m.generator)
    usable = [m for m in rtd if m.available]
    gr.Markdown(copy.RTD_HELP)
    with gr.Row():
        model = gr.Dropdown([(m.display_name, m.key) for m in rtd],
                            value=(usable or rtd)[0].key if rtd else None,
                            label="Model with a replaced-token-detection head")
        swap = gr.Slider(0, 10, value=0, step=1, label="Words the generator swaps first")
        seed = gr.Number(value=0, precision=0, label="Seed")  # bounds: detect_replaced's named check
    text = gr.Textbox(label="Sentence", value=copy.RTD_EXAMPLE, max_length=MAX_TEXT_CHARS)
    detect = gr.Button("Detect replaced tokens", variant="primary")
    html, rows = ("", [])
    if usable:
        html, rows = replaced_view(usable[0].key, copy.RTD_EXAMPLE, 0, 0)
    view = gr.HTML(html, elem_id="masking-rtd-view")
    table = gr.Dataframe(value=rows, headers=RTD_COLUMNS, label="P(replaced) per token",
                         interactive=False, elem_id="masking-rtd-table")
    detect.click(run_detect_replaced, [model, text, swap, seed], [view, table], api_name="detect_replaced")
