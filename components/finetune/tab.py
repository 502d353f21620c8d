"""The "Fine-tuning & search" tab: task heads (``models.tasks.classifier``) and retrieval (``models.embeddings.retrieval``)."""

from __future__ import annotations

import gradio as gr
import pandas as pd

from models import (
    CLASS_ATTRIBUTION_METHODS,
    attribute_classification,
    MAX_TEXT_CHARS,
    build_index,
    classify,
    list_models,
    list_tasks,
    probe_layers,
    retrieval_report,
    search,
    train_classifier,
)

from ..shell.common import HEAVY, api_only, error_figure, model_choices, readable_errors, user_error, visitors_run
from ..shell.deep_links import LinkTarget
from ..shell.server import on_gpu
from ..shell.view_cache import cached_view
from . import copy
from . import plots
from .reading import build_reading_section
from .sentence import build_sentence_sections, epochs_follow, refresh_search_models, search_choices, search_default

DEFAULT_QUERY = "The whale dived under the ship and the sailors cried out."
DEFAULT_SENTENCE = "The President asked Congress to pass the budget before the end of the year."


def _picker():
    return model_choices(list_models()), search_default()


def _report_progress(progress):
    return lambda done, total, what: progress(done / max(1, total), desc=what)


def tasks_table():
    """Every task, its labels, sizes and label source (the ``list_tasks`` API)."""
    return plots.tasks_frame(list_tasks())


@on_gpu
def run_train(model_key: str, task: str, pooling: str, layer: float, freeze: bool, epochs: float,
              train_size: float, seed: float, request: gr.Request = None):
    """Train a head; curves, a summary and the head's id (the ``train_classifier`` API)."""
    with visitors_run("Training the head", request):
        size = int(train_size) if train_size else None
        result = train_classifier(model_key, task, pooling=pooling, layer=int(layer), freeze=freeze,
                                  epochs=epochs, seed=seed, train_size=size)
        return plots.training_curves(result), plots.summary_markdown(result), result.head_id


def _need_head(head_id: str, then: str) -> None:
    """An empty head box (nothing trained on this page yet) is a step to take, said as one."""
    if not head_id:
        raise user_error(f"Train a head first (the button above), then {then}.")


@on_gpu
def run_why_class(head_id: str, text: str):
    """Which words drove the head's class, by each method (the ``why_this_class`` API)."""
    with readable_errors("Why this class"):
        _need_head(head_id, "ask which words drove its class")
        results = [attribute_classification(head_id, text, m) for m in CLASS_ATTRIBUTION_METHODS]
        return plots.class_attribution_frame(results), plots.class_attribution_note(results)


def run_classify(head_id: str, text: str):
    """The trained head's answer for one sentence, as HTML (the ``classify`` API)."""
    with readable_errors("Classify"):
        _need_head(head_id, "classify a sentence")
        return plots.classification_html(classify(head_id, text), copy.TOKEN_COLOURS)


@on_gpu
def run_probe(model_key: str, task: str, pooling: str, progress=gr.Progress()):
    """A probe on every layer, as a chart (the ``probe_layers`` API)."""
    with readable_errors("Probing the layers"):
        progress(0, desc="encoder features, every layer")
        return plots.probe_chart(probe_layers(model_key, task, pooling=pooling))


@on_gpu
def run_search(query: str, model_key: str, pooling: str, index: str, k: float, progress=gr.Progress()):
    """The k closest corpus sentences (the ``search`` API)."""
    with readable_errors("Search"):
        build_index(model_key, pooling, _report_progress(progress))  # built once; the progress shown
        return _searched(query, model_key, pooling, index, int(k))


@cached_view()
def _searched(query: str, model_key: str, pooling: str, index: str, k: int):
    result = search(model_key, query, k=k, pooling=pooling, index=index)
    note = (f"{len(result.hits)} hits among {result.corpus_size:,} sentences, {result.index} index, "
            f"{result.pooling} pooling, search {result.milliseconds:.2f} ms (the query's encoding excluded).")
    return plots.hits_frame(result), note


@on_gpu
def run_report(model_key: str, pooling: str, k: float, progress=gr.Progress()):
    """ANN vs exact, cosine vs dot, [CLS] vs mean (the ``retrieval_report`` API)."""
    with readable_errors("Retrieval report"):
        report = retrieval_report(model_key, k=int(k), pooling=pooling, progress=_report_progress(progress))
        return plots.report_markdown(report)


def build_finetune_tab() -> LinkTarget:
    """The tab's layout and events; call inside ``gr.Blocks`` and ``gr.Tabs``."""
    choices, default = _picker()
    tasks = [t.name for t in list_tasks()]
    with gr.Tab("Fine-tuning & search", id="finetune") as tab:
        gr.Markdown(copy.HEADS_HELP)
        with gr.Accordion("The tasks and where their labels come from", open=False):
            gr.Markdown(copy.TASKS_HELP)
            task_table = gr.Dataframe(value=tasks_table(), interactive=False, wrap=True, label="Tasks")
            gr.Button("Show the tasks again").click(tasks_table, None, task_table, api_name="list_tasks")
        with gr.Row():
            model = gr.Dropdown(choices, value=default, label="Model")
            task = gr.Dropdown(tasks, value=tasks[0], label="Task")
            pooling = gr.Radio(["cls", "mean"], value="mean", label="Pooling (sentence tasks)")
            layer = gr.Number(value=-1, precision=0, label="Layer (-1 = last, 0 = input embeddings)")
        with gr.Row():
            freeze = gr.Checkbox(value=True, label="Freeze the encoder (a probe: seconds)")
            epochs = gr.Number(value=30, precision=0, label="Epochs (probe ≤ 300, fine-tuning ≤ 5)")
            train_size = gr.Number(value=0, precision=0, label="Training sentences (0 = all)")
            seed = gr.Number(value=0, precision=0, label="Seed")
        train = gr.Button("Train the head", variant="primary")
        summary = gr.Markdown(elem_id="head-summary")
        curves = gr.Plot(error_figure(copy.TRAIN_WAITING), label="Training curves")
        head_id = gr.Textbox(label="Trained head (id)", interactive=False,
                             placeholder="none yet on this page: train one with the button above")
        with gr.Row():
            sentence = gr.Textbox(label="Classify my sentence", value=DEFAULT_SENTENCE, max_length=MAX_TEXT_CHARS,
                                  scale=4)
            classify_button = gr.Button("Classify", scale=1)
        prediction = gr.HTML(elem_id="head-prediction")
        gr.Markdown(copy.WHY_CLASS_HELP)
        why_button = gr.Button("Which words drove this class?")
        why_note = gr.Markdown(elem_id="why-class-note")
        why_table = gr.Dataframe(  # empty until the button: its headers say what will come
            pd.DataFrame(columns=plots.class_attribution_columns(CLASS_ATTRIBUTION_METHODS)),
            label="Each token's score per method (rank in brackets)", interactive=False, wrap=True,
            elem_id="why-class-table")
        gr.Markdown(copy.PROBE_HELP)
        probe = gr.Button("Probe every layer")
        probe_plot = gr.Plot(error_figure(copy.PROBE_WAITING), label="Probe accuracy by layer")
        epochs_follow(freeze, epochs, probe=30, tuned=2)
        train.click(run_train, [model, task, pooling, layer, freeze, epochs, train_size, seed],
                    [curves, summary, head_id], api_name="train_classifier", **HEAVY)
        classify_button.click(run_classify, [head_id, sentence], prediction, api_name="classify")
        why_button.click(run_why_class, [head_id, sentence], [why_table, why_note], api_name="why_this_class",
                         **HEAVY)
        probe.click(run_probe, [model, task, pooling], probe_plot, api_name="probe_layers", **HEAVY)

        gr.Markdown(copy.SEARCH_HELP)
        with gr.Row():
            query = gr.Textbox(label="Query", value=DEFAULT_QUERY, max_length=MAX_TEXT_CHARS, scale=3)
            search_model = gr.Dropdown(search_choices(), value=default, label="Model", scale=2)
        with gr.Row():
            search_pooling = gr.Radio(["mean", "cls"], value="mean", label="Pooling")
            index = gr.Radio(["exact", "ann"], value="exact", label="Index")
            k = gr.Slider(1, 50, value=10, step=1, label="k (hits)")
        search_button = gr.Button("Search", variant="primary")
        search_note = gr.Markdown(elem_id="search-note")
        hits = gr.Dataframe(label="Hits", interactive=False, wrap=True, column_widths=plots.HITS_COLUMN_WIDTHS)
        search_inputs = [query, search_model, search_pooling, index, k]
        search_button.click(run_search, search_inputs, [hits, search_note], api_name="search")
        gr.Markdown(copy.REPORT_HELP)
        report_button = gr.Button("Compare ANN with exact search")
        report = gr.Markdown(elem_id="retrieval-report")
        report_button.click(run_report, [search_model, search_pooling, k], report, api_name="retrieval_report",
                            **HEAVY)
        build_sentence_sections(search_model)
        build_reading_section()
        known = gr.State(search_choices())  # the picker's entries in this session
        pickers = [(refresh_search_models, [known, search_model], [search_model, known])]  # with the tab's arrival
        api_only(refresh_search_models, [known, search_model], [search_model, known], "search_models")
        links = {"text": query, "model": search_model, "pooling": search_pooling, "k": k}
        return LinkTarget("fine-tuning-search", tab, links, [(run_search, search_inputs, [hits, search_note])],
                          pickers=pickers)
