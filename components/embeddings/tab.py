"""The Embeddings tab: layout and event wiring; the work is done by ``models.embeddings.pooling``."""

from __future__ import annotations

from pathlib import Path

import gradio as gr

from models import (
    MAX_SENTENCES,
    MAX_TEXT_CHARS,
    POOLINGS,
    first_capable,
    bank_demo,
    best_pooling,
    check_layer,
    compare_poolings,
    groups_text,
    list_models,
    parse_groups,
    project_2d,
    sentence_groups,
    separation_score,
    word_in_context,
)

from ..shell.common import api_only, changed_choices, encoder_choices, quoted, readable_errors, show_piece
from ..shell.deep_links import LinkTarget, Section
from ..shell.files import TEMP, kept_file
from ..shell.server import on_gpu
from ..shell.view_cache import cached_view
from . import copy
from . import plots

LAYER_LABEL = "Layer (0 = input embeddings, -1 = last)"
CSV_FOLDER = TEMP / "encoder-lab-csv"  # Gradio serves the temp folder
CSV_KEEP = 100  # the newest CSV files kept; older ones are deleted when one is written


def model_picker() -> tuple[list[tuple[str, str]], str | None]:
    """(label, key) of every registry model, usable ones first, then the sentence encoders
    trained in this process; and the default key."""
    models = list_models()
    default = first_capable(models, "embeddings") or first_capable(models, "any")
    return encoder_choices(models), default


def refresh_models(known: list | None = None, model: str | None = None, word_model: str | None = None):
    """Both model pickers' entries as they are now, with the sentence encoders trained since the
    page was built (the ``embeddings_models`` API; run when the tab is selected), and the
    entries the pickers then hold; nothing when they already hold these (``known``). A picker's
    value not among them (a sentence encoder dropped) goes back to the default."""
    choices, default = model_picker()
    return changed_choices(choices, known, (model, word_model), default)


def _csv_file(frame, folder: Path | None = None, keep: int | None = None) -> str:
    """The frame as a CSV file in one fixed folder, named by its content's hash: the same
    matrices give the same file, and only the newest ``keep`` files stay."""
    data = frame.to_csv(index=False).encode("utf-8")
    return kept_file(data, folder or CSV_FOLDER, "similarity", ".csv", keep or CSV_KEEP)


def _verdict(scores) -> str:
    best = best_pooling(scores)
    others = ", ".join(
        f"{plots.POOLING_NAMES[p]} {s.auc:.3f} (gap {s.gap:.3f})" for p, s in scores.items() if p != best
    )
    s = scores[best]
    return (
        f"**{plots.POOLING_NAMES[best][:1].upper() + plots.POOLING_NAMES[best][1:]} separates the groups better here**: ROC AUC "
        f"{s.auc:.3f} (gap {s.gap:.3f}) vs {others}, over {s.same_pairs} same-group and "
        f"{s.different_pairs} different-group pairs."
    )


@on_gpu
@cached_view()
def run_similarity(text: str, model_key: str, layer: float):
    """[CLS], mean and max cosine matrices, the separation score, a CSV (the ``similarity`` API)."""
    with readable_errors("Similarity"):
        sentences, groups, topics = parse_groups(text)
        results = compare_poolings(model_key, sentences, layer, POOLINGS)
        if len(set(groups)) > 1 and len(set(groups)) < len(groups):
            scores = {r.pooling: separation_score(r.matrix, groups, topics) for r in results}
            summary, table = _verdict(scores), plots.separation_frame(scores)
        else:
            summary = (
                "No separation score: separate the sentences into groups with blank lines "
                "(at least one group of two or more, and two groups)."
            )
            table = plots.separation_frame({})  # no rows, the columns named
        note = f"  \n{len(sentences)} sentences, `{model_key}`, layer {results[0].layer}."  # a validated key
        return (
            plots.similarity_heatmaps(results, groups),
            summary + note,
            table,
            _csv_file(plots.matrix_frame(results)),
        )


@on_gpu
@cached_view()
def run_word(text: str, word: str, model_key: str, layer: float):
    """The word's cosine across layers and a 2-D projection (the ``word_in_context`` API)."""
    with readable_errors("Word in context"):
        shown = check_layer(model_key, layer)  # before the forward pass over every layer
        sentences = parse_groups(text)[0]  # as the similarity box: "# topic" lines are skipped
        result = word_in_context(model_key, sentences, word)
        n_layers = len(result.layers) - 1
        points = project_2d(result.vectors[:, shown])
        title = f"“{result.word}” at layer {shown}: its occurrences projected with PCA"
        mean = result.mean_cosine()
        pieces = "; ".join(f"{k + 1}: {' + '.join(quoted(show_piece(t)) for t in p)}"
                                  for k, p in enumerate(result.pieces))
        summary = (
            f"Mean cosine between the occurrences: **{mean[0]:.3f} at layer 0** (input embeddings), "
            f"**{mean[-1]:.3f} at layer {n_layers}** (last). Pieces averaged per sentence: "
            f"{pieces}."
        )
        return plots.layer_chart(result), plots.scatter_2d(points, result.sentences, title), summary


def build_embeddings_tab() -> LinkTarget:
    """The tab's layout and events; call inside ``gr.Blocks`` and ``gr.Tabs``."""
    choices, default = model_picker()
    bank_word, bank_sentences = bank_demo()
    with gr.Tab("Embeddings", id="embeddings") as tab:
        gr.Markdown(copy.EMBEDDINGS_HELP)
        with gr.Tabs(elem_id="embeddings-sections"):
            with gr.Tab(copy.SECTION_POOLING, id="embeddings-pooling"):
                with gr.Row():
                    with gr.Column(scale=3):
                        sentence_set = gr.Dropdown(
                            list(sentence_groups()), value=copy.SIMILARITY_DEFAULT_SET,
                            label="Built-in sentence groups",
                        )
                        sentences = gr.Textbox(
                            label=f"Sentences, one per line (2 to {MAX_SENTENCES}; blank line = new group)",
                            value=groups_text(copy.SIMILARITY_DEFAULT_SET),
                            lines=12,
                            max_lines=30,
                            max_length=MAX_TEXT_CHARS,
                        )
                    with gr.Column(scale=2):
                        model = gr.Dropdown(choices, value=default, label="Model")
                        layer = gr.Number(value=-1, precision=0, label=LAYER_LABEL)
                        compare = gr.Button("Compare [CLS], mean and max pooling", variant="primary")
                        summary = gr.Markdown(elem_id="embeddings-summary")
                        csv = gr.DownloadButton("Download the matrices (CSV)", value=None)
                heatmaps = gr.Plot(
                    label="Cosine similarity: [CLS] pooling (left), mean pooling (middle), max pooling (right)"
                )
                table = gr.Dataframe(label="How well each pooling separates the groups", interactive=False)
                gr.Markdown(copy.WHY_HELP)
            with gr.Tab(copy.SECTION_WORD, id="embeddings-word") as word_tab:
                gr.Markdown(copy.WORD_HELP)
                with gr.Row():
                    with gr.Column(scale=3):
                        word_sentences = gr.Textbox(
                            label="Sentences that contain the word, one per line",
                            value="\n".join(bank_sentences),
                            lines=5,
                            max_length=MAX_TEXT_CHARS,
                        )
                    with gr.Column(scale=2):
                        word = gr.Textbox(label="Word", value=bank_word, max_length=100)
                        word_model = gr.Dropdown(choices, value=default, label="Model")
                        word_layer = gr.Number(value=-1, precision=0, label=f"Scatter: {LAYER_LABEL.lower()}")
                        trace = gr.Button("Trace the word through the layers", variant="primary")
                word_summary = gr.Markdown(elem_id="word-summary")
                with gr.Row():
                    layer_plot = gr.Plot(label="Cosine between occurrences, layer by layer")
                    scatter = gr.Plot(label="Occurrences in 2-D")
                gr.Markdown(copy.WORD_SCATTER_HELP)
        sentence_set.change(groups_text, sentence_set, sentences, api_visibility="private")
        compare.click(
            run_similarity,
            inputs=[sentences, model, layer],
            outputs=[heatmaps, summary, table, csv],
            api_name="similarity",
        )
        word_inputs, word_outputs = [word_sentences, word, word_model, word_layer], [layer_plot, scatter, word_summary]
        trace.click(run_word, inputs=word_inputs, outputs=word_outputs, api_name="word_in_context")
        known = gr.State(choices)  # the pickers' entries in this session
        pickers = [(refresh_models, [known, model, word_model], [model, word_model, known])]  # with the tab's arrival
        api_only(refresh_models, [known, model, word_model], [model, word_model, known], "embeddings_models")
        views = [(run_similarity, [sentences, model, layer], [heatmaps, summary, table, csv])]
        sections = [Section(copy.SECTION_WORD.lower(), word_tab, [(run_word, word_inputs, word_outputs)])]
        return LinkTarget("embeddings", tab, {"text": sentences, "model": model, "layer": layer}, views, sections,
                          pickers=pickers)
