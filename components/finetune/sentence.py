"""Sections of the "Fine-tuning & search" tab: a sentence encoder trained live
(Sentence-BERT), a sentence-pair head, a span (extractive QA) head and distillation.

Layout and event wiring only; the work is in ``models`` and the views in ``sentence_plots``.
"""

from __future__ import annotations

import gradio as gr

from models import (
    MAX_TEXT_CHARS,
    SENTENCE_LOSSES,
    STUDENT_SHAPES,
    answer_span,
    classify_pair,
    distill,
    list_models,
    list_pair_tasks,
    stop_live_training,
    train_pair_classifier,
    train_sentence_encoder,
    train_span_head,
)

from ..shell.common import (HEAVY, changed_choices, encoder_choices, error_figure, model_choices,
                            readable_errors, session_of, user_error, visitors_run)
from ..shell.server import on_gpu
from . import sentence_copy as copy
from . import plots as finetune_plots
from . import sentence_plots as plots

SMALL_KEYS = ("minilm-l6", "minilm-mlm", "mini-bert", "mini-roberta", "mini-distilbert", "mini-albert",
              "mini-electra", "mini-deberta", "mini-modernbert")


def search_default() -> str | None:
    """The search picker's first value: the first usable registry model with embedded weights."""
    keys = [m.key for m in list_models() if m.available and m.embedded]
    return keys[0] if keys else None


def _small_models():
    models = [m for m in list_models() if m.key in SMALL_KEYS]
    keys = [m.key for m in models if m.available]
    return model_choices(models), ("mini-bert" if "mini-bert" in keys else (keys[0] if keys else None))


def search_choices():
    """The search picker's entries: the registry's models, then the sentence encoders trained here."""
    return encoder_choices(list_models())


def refresh_search_models(known: list | None = None, value: str | None = None):
    """The search picker's entries now (the ``search_models`` API; run when the tab is
    selected), and the entries it then holds; nothing when it already holds these (``known``).
    Its ``value``, when not among them (a sentence encoder dropped), goes back to the default."""
    return changed_choices(search_choices(), known, (value,), search_default())


@on_gpu
def run_sentence_encoder(model_key: str, loss: str, margin: float, steps: float, seed: float,
                         request: gr.Request = None):
    """Train a sentence encoder on a copy (the ``train_sentence_encoder`` API)."""
    with visitors_run("Training the sentence encoder", request):
        r = train_sentence_encoder(model_key, loss=loss, margin=margin, steps=int(steps), seed=int(seed))
        return (plots.sentence_loss_chart(r), plots.similarity_before_after(r), plots.sentence_summary(r),
                gr.update(choices=search_choices(), value=r.encoder_key))


@on_gpu
def run_pair(model_key: str, task: str, freeze: bool, epochs: float, seed: float, request: gr.Request = None):
    """Train a sentence-pair head (the ``train_pair_classifier`` API)."""
    with visitors_run("Training the pair head", request):
        r = train_pair_classifier(model_key, task, freeze=freeze, epochs=int(epochs) if epochs else None, seed=int(seed))
        return finetune_plots.training_curves(r), plots.pair_summary(r), r.head_id


def run_classify_pair(head_id: str, text_a: str, text_b: str):
    """A trained pair head's answer for (A, B) (the ``classify_pair`` API)."""
    with readable_errors("Classify the pair"):
        if not head_id:
            raise user_error("Train a pair head first (the button above).")
        return plots.pair_html(classify_pair(head_id, text_a, text_b))


@on_gpu
def run_span(model_key: str, steps: float, seed: float, request: gr.Request = None):
    """Train a span head (the ``train_span_head`` API)."""
    with visitors_run("Training the span head", request):
        r = train_span_head(model_key, steps=int(steps), seed=int(seed))
        return plots.span_summary(r), r.head_id


def run_answer(head_id: str, question: str, context: str):
    """The span head's answer, with P(start) and P(end) per token (the ``answer_span`` API)."""
    with readable_errors("Answer"):
        if not head_id:
            raise user_error("Train a span head first (the button above).")
        answer = answer_span(head_id, question, context)
        return plots.span_html(answer), plots.span_chart(answer)


@on_gpu
def run_distill(teacher: str, shape: str, steps: float, alpha: float, temperature: float, seed: float,
                request: gr.Request = None):
    """Two students, soft targets + MLM vs MLM alone (the ``distill`` API)."""
    with visitors_run("Distillation", request):
        r = distill(teacher, shape, steps=int(steps), alpha=alpha, temperature=temperature, seed=int(seed))
        return plots.distill_chart(r), plots.distill_summary(r)


def stop_run(request: gr.Request = None) -> str:
    """Stop the live run this visitor started (the ``stop_live_training`` API): another
    visitor's run is left going, with a message saying so."""
    return stop_live_training(owner=session_of(request))


def pair_example(task: str, text_a: str, text_b: str):
    """The picked task's example pair, unless A and B hold text of the user's own."""
    if (text_a, text_b) in copy.PAIR_EXAMPLES.values() or not (text_a or text_b):
        return copy.PAIR_EXAMPLES.get(task, (text_a, text_b))
    return gr.skip(), gr.skip()


def epochs_follow(freeze: gr.Checkbox, epochs: gr.Number, probe: int, tuned: int) -> None:
    """Ticking or unticking 'Freeze the encoder' sets Epochs to that mode's default (the core's):
    the probe's default is above fine-tuning's limit, an error one click from the defaults."""
    freeze.input(lambda frozen: probe if frozen else tuned, freeze, epochs, api_visibility="private", queue=False)


def build_sentence_sections(search_model: gr.Dropdown) -> None:
    """The four sections; call inside the Fine-tuning tab. ``search_model``: the search picker,
    which gains each sentence encoder trained here."""
    choices, default = _small_models()
    stop_status = gr.Markdown(visible=False)
    with gr.Accordion("From encoder to sentence encoder (Sentence-BERT, trained live)", open=False):
        gr.Markdown(copy.SENTENCE_HELP)
        with gr.Row():
            s_model = gr.Dropdown(choices, value=default, label="Encoder (a copy is trained)")
            loss = gr.Radio(list(SENTENCE_LOSSES), value="triplet", label="Loss")
            margin = gr.Number(value=0.5, precision=2, label="Margin (triplet ≤ 4, contrastive ≤ 2)")
            steps = gr.Number(value=300, precision=0, label="Steps (≤ 1000; stops after 60 s)")
            seed = gr.Number(value=0, precision=0, label="Seed")
        with gr.Row():
            train = gr.Button("Train a sentence encoder", variant="primary")
            stop = gr.Button("Stop the live run")
        summary = gr.Markdown(elem_id="sentence-summary")
        loss_plot = gr.Plot(error_figure(copy.WAITING), label="Loss per step")
        matrix = gr.Plot(error_figure(copy.WAITING), label="Held-out similarity, before and after")
        train.click(run_sentence_encoder, [s_model, loss, margin, steps, seed], [loss_plot, matrix, summary, search_model],
                    api_name="train_sentence_encoder", **HEAVY)
        stop.click(stop_run, None, stop_status, api_name="stop_live_training").then(
            lambda: gr.update(visible=True), None, stop_status, api_visibility="private")
    tasks = [t.name for t in list_pair_tasks()]
    with gr.Accordion("Sentence pairs: [CLS] A [SEP] B [SEP] → a label", open=False):
        gr.Markdown(copy.PAIR_HELP)
        with gr.Row():
            p_model = gr.Dropdown(choices, value=default, label="Encoder")
            p_task = gr.Dropdown(tasks, value=copy.PAIR_DEFAULT_TASK if copy.PAIR_DEFAULT_TASK in tasks else tasks[0],
                                 label="Pair task")
            freeze = gr.Checkbox(value=True, label="Freeze the encoder (a probe)")
            epochs = gr.Number(value=60, precision=0, label="Epochs (probe ≤ 300, fine-tuning ≤ 3)")
            p_seed = gr.Number(value=0, precision=0, label="Seed")
        p_train = gr.Button("Train the pair head", variant="primary")
        p_summary = gr.Markdown(elem_id="pair-summary")
        p_curves = gr.Plot(error_figure(copy.WAITING), label="Pair head: training curves")
        p_head = gr.Textbox(label="Trained pair head (id)", interactive=False)
        with gr.Row():
            example_a, example_b = copy.PAIR_EXAMPLES.get(p_task.value, ("", ""))
            text_a = gr.Textbox(label="A", value=example_a, max_length=MAX_TEXT_CHARS)
            text_b = gr.Textbox(label="B", value=example_b, max_length=MAX_TEXT_CHARS)
        p_classify = gr.Button("Classify the pair")
        p_answer = gr.HTML(elem_id="pair-prediction")
        p_train.click(run_pair, [p_model, p_task, freeze, epochs, p_seed], [p_curves, p_summary, p_head],
                      api_name="train_pair_classifier", **HEAVY)
        p_classify.click(run_classify_pair, [p_head, text_a, text_b], p_answer, api_name="classify_pair")
        p_task.input(pair_example, [p_task, text_a, text_b], [text_a, text_b], api_visibility="private", queue=False)
        epochs_follow(freeze, epochs, probe=60, tuned=1)
    with gr.Accordion("Extractive QA: a start and an end head over the tokens", open=False):
        gr.Markdown(copy.SPAN_HELP)
        with gr.Row():
            q_model = gr.Dropdown(choices, value=default, label="Encoder (a copy is fine-tuned)")
            q_steps = gr.Number(value=150, precision=0, label="Steps (≤ 2000; stops after 120 s)")
            q_seed = gr.Number(value=0, precision=0, label="Seed")
        q_train = gr.Button("Train the span head", variant="primary")
        q_summary = gr.Markdown(elem_id="span-summary")
        q_head = gr.Textbox(label="Trained span head (id)", interactive=False)
        question = gr.Textbox(label="Question", value="What is the capital of Peru?", max_length=MAX_TEXT_CHARS)
        context = gr.Textbox(label="Context", value="Peru lies in South America, and its capital is Lima.",
                             max_length=MAX_TEXT_CHARS, lines=2)
        ask = gr.Button("Answer")
        q_answer = gr.HTML(elem_id="span-answer")
        q_chart = gr.Plot(error_figure(copy.WAITING), label="P(start) and P(end) per context token")
        q_train.click(run_span, [q_model, q_steps, q_seed], [q_summary, q_head], api_name="train_span_head", **HEAVY)
        ask.click(run_answer, [q_head, question, context], [q_answer, q_chart], api_name="answer_span")
    with gr.Accordion("Distillation: what do soft targets buy?", open=False):
        gr.Markdown(copy.DISTILL_HELP)
        mlm_choices = [c for c in choices if c[1] in ("mini-bert", "minilm-mlm")]
        with gr.Row():
            teacher = gr.Dropdown(mlm_choices or choices, value="mini-bert", label="Teacher (with an MLM head)")
            shape = gr.Dropdown(list(STUDENT_SHAPES), value="2x64", label="Student (layers x width)")
            d_steps = gr.Number(value=200, precision=0, label="Steps per student (≤ 2000)")
            alpha = gr.Slider(0.05, 1, value=0.5, step=0.05, label="alpha (soft-target share)")
            temperature = gr.Slider(0.5, 10, value=2, step=0.5, label="Temperature")
            d_seed = gr.Number(value=0, precision=0, label="Seed")
        d_run = gr.Button("Train both students", variant="primary")
        d_summary = gr.Markdown(elem_id="distill-summary")
        d_chart = gr.Plot(error_figure(copy.WAITING), label="Both students")
        d_run.click(run_distill, [teacher, shape, d_steps, alpha, temperature, d_seed], [d_chart, d_summary],
                    api_name="distill", **HEAVY)
