"""The Attention tab: layout and event wiring; the work is done by ``models.attention.weights``
and the views are drawn by ``components.attention.plots``."""

from __future__ import annotations

import gradio as gr

from models import (
    HEAD_FILTERS,
    MAX_TEXT_CHARS,
    NO_POSITION_TABLE,
    head_statistics,
    extract_attention,
    filter_heads,
    first_capable,
    input_embeddings,
    list_models,
)

from ..shell.common import api_only, model_choices, readable_errors, show_piece
from ..shell.deep_links import LinkTarget, Section
from ..shell.files import TEMP, kept_file
from ..shell.server import on_gpu
from ..shell.vendor import library_urls
from ..shell.view_cache import cached_view
from ..views import causal_copy
from ..views import input_embeddings_plots
from . import copy
from . import plots

ALL_HEADS = "all heads"
MODES = [("one head", "head"), ("average over heads", "mean"), ("rollout", "rollout")]
BERTVIZ_VIEWS = [("head view", "head"), ("model view", "model")]
# Slider bounds before a model is shown (then fitted to it); API callers may ask for any
# layer/head up to these, and values beyond the model's are clamped and said.
MAX_LAYERS, MAX_HEADS = 48, 64


@on_gpu  # the only place this tab runs a model
def _result(text, text_pair, model_key, causal=False):
    return extract_attention(model_key, text, text_pair or None, bool(causal))


def _in_range(value, top: int) -> int:
    return max(0, min(int(value or 0), top))


def status_line(result, layer=0, head=0) -> str:
    """What the tab shows for a result. It names no layer or head (the heatmap's title does,
    and the clicks that change it do not update this line); only an asked layer or head beyond
    the model's is said, with the one opened instead."""
    seg = {
        "single text": "one text, segment 0",
        "token_type_ids": "a pair: segments from the tokenizer's token_type_ids",
        "special-token positions": "a pair: this tokenizer has no token_type_ids, so segments "
        "are read from the special-token positions",
    }[result.segment_source]
    notes = [
        f"**{len(result.tokens)} tokens**, {result.num_layers} layers × {result.num_heads} heads "
        f"(`{result.model_key}`, {result.attn_implementation} attention); {seg}."
    ]
    for what, asked, count in (("layer", layer, result.num_layers), ("head", head, result.num_heads)):
        opened = _in_range(asked, count - 1)
        if opened != int(asked or 0):
            notes.append(f"There is no {what} {int(asked)} in this model ({what}s 0–{count - 1}): "
                         f"{what} {opened} was opened.")
    if result.causal:
        notes.append(copy.CAUSAL_NOTE)
    notes.append(plots.truncation_note(result, plots.VIEW_MAX_TOKENS, "the heatmap and the grid"))
    return "  \n".join(n for n in notes if n)


def token_segments(result) -> list[tuple[str, str]]:
    """Tokens for HighlightedText (as the heatmap's axes show them), labelled with their segment."""
    return [(f"{show_piece(tok)} ", f"segment {'AB'[seg]}") for tok, seg in zip(result.tokens, result.segment_ids)]


GRID_FOLDER = TEMP / "encoder-lab-grids"  # the grids' PNG files (components.shell.files)
GRID_KEEP = 200  # ~60-140 KB each


def attention(text, text_pair, model_key, layer, head, mode, causal=False):
    """Tokens, status, heatmap and grid (the ``attention`` API). The grid goes as a PNG file
    encoded once per result: Gradio would encode an image again on every response."""
    tokens, status, figure, png, shown = _attention_views(text, text_pair, model_key, layer, head, mode, causal)
    return tokens, status, figure, kept_file(png, GRID_FOLDER, "grid", ".png", GRID_KEEP), shown


@cached_view()
def _attention_views(text, text_pair, model_key, layer, head, mode, causal=False):
    """``attention``'s views, the grid as PNG bytes: kept per arguments (a tab's default view
    and the last few texts shown), the file made from them on each call."""
    with readable_errors("Attention"):
        result = _result(text, text_pair, model_key, causal)
        return (
            token_segments(result),
            status_line(result, layer, head),
            plots.attention_heatmap(result, _in_range(layer, result.num_layers - 1),
                                    _in_range(head, result.num_heads - 1), mode or "head"),
            plots.grid_png(result),
            (text, text_pair, model_key, bool(causal)),  # what is on screen: later clicks read this
        )


# The private events below read ``shown`` (text, second text, model, causal of the result on
# screen), not the text boxes: a slider moved or a cell clicked after the boxes were edited
# still refers to the tokens, grid and table that are displayed.


def controls(shown, layer, head):
    """Layer and head sliders fitted to the model just shown."""
    result = _result(*shown)
    top_layer, top_head = result.num_layers - 1, result.num_heads - 1
    return (
        gr.update(maximum=top_layer, value=_in_range(layer, top_layer)),
        gr.update(maximum=top_head, value=_in_range(head, top_head)),
    )


def heatmap(shown, layer, head, mode):
    if not shown:
        return gr.skip()
    with readable_errors("Heatmap"):
        result = _result(*shown)
        layer = _in_range(layer, result.num_layers - 1)
        return plots.attention_heatmap(result, layer, _in_range(head, result.num_heads - 1), mode)


def _open(shown, layer, head):
    return layer, head, "head", heatmap(shown, layer, head, "head")


def open_grid_cell(shown, evt: gr.SelectData):
    """Clicking the grid opens the clicked head in the heatmap."""
    if not shown:
        return (gr.skip(),) * 4
    with readable_errors("Opening a head"):
        result = _result(*shown)
    cell = plots.GridLayout(result.num_layers, result.num_heads).cell_at(*evt.index[:2])
    if cell is None:
        return (gr.skip(),) * 4
    return _open(shown, *cell)


def open_table_row(shown, evt: gr.SelectData):
    """Clicking a row of the statistics table opens that head."""
    row = evt.row_value
    if not shown or not row:
        return (gr.skip(),) * 4
    return _open(shown, int(row[0]), int(row[1]))


def filter_stats(shown, which):
    """The statistics table of the result on screen, filtered."""
    return _stats_table(*shown[:3], which, *shown[3:]) if shown else gr.skip()


def _stats_table(text, text_pair, model_key, which, causal=False):
    """The ``head_stats`` table, labelled with how many heads pass the filter."""
    frame = head_stats(text, text_pair, model_key, which, causal)
    with readable_errors("Head statistics"):
        stats = head_statistics(_result(text, text_pair, model_key, causal))
    return gr.update(value=frame, label=plots.stats_label(stats, which))


@cached_view()
def head_stats(text, text_pair, model_key, which, causal=False):
    """The per-head statistics table, optionally filtered (the ``head_stats`` API)."""
    with readable_errors("Head statistics"):
        stats = head_statistics(_result(text, text_pair, model_key, causal))
        heads = None if which in (None, "", ALL_HEADS) else filter_heads(stats, which)
        return plots.stats_frame(stats, heads)


def bertviz_view(text, text_pair, model_key, view, causal=False):
    """bertviz's head or model view in a sandboxed iframe (the ``bertviz_view`` API)."""
    with readable_errors("bertviz"):
        urls = library_urls()
        if urls is None:
            return plots.notice_html(copy.LIBS_MISSING)
        result = _result(text, text_pair, model_key, causal)
        page = plots.bertviz_page(result, view or "head", urls)
        note = plots.truncation_note(result, plots.BERTVIZ_MAX_TOKENS, "bertviz")
        frame = plots.iframe(page, f"bertviz {view} view", height=760 if view == "model" else 620)
        return (plots.notice_html(note) if note else "") + frame


@on_gpu
@cached_view()
def show_input_embeddings(text, text_pair, model_key):
    """Token + position + segment vectors and their sum (the ``input_embeddings`` API)."""
    with readable_errors("Input embeddings"):
        result = input_embeddings(model_key, text, text_pair or None)
        return (
            input_embeddings_plots.input_embeddings_figure(result),
            input_embeddings_plots.input_embeddings_frame(result),
            input_embeddings_plots.input_embeddings_summary(result),
        )


def arrive(text, text_pair, model_key, layer, head, mode, causal, which):
    """Everything the tab shows for a text, in one event: the ``attention`` API's views, the
    sliders fitted to the model and the ``head_stats`` table. The page's click runs this,
    as does arriving by a link. One event, not the API's and two follow-ups: at each status
    change of each event, Gradio's page copies the state of every component that any event
    has updated so far (value by value), so each event more adds that work to the paint."""
    shown = attention(text, text_pair, model_key, layer, head, mode, causal)
    table = _stats_table(text, text_pair, model_key, which, causal)
    return (*shown, *controls(shown[-1], layer, head), table)


def build_attention_tab() -> LinkTarget:
    """The tab's layout and events; call inside ``gr.Blocks`` and ``gr.Tabs``."""
    models = list_models()
    default = first_capable(models, "attention")
    with gr.Tab("Attention", id="attention") as tab:
        gr.Markdown(copy.HELP)
        with gr.Row():
            with gr.Column(scale=2):
                text = gr.Textbox(label="Text", value=copy.EXAMPLES[0][0], lines=2, max_length=MAX_TEXT_CHARS)
                text_pair = gr.Textbox(
                    label="Second text (optional: makes a sentence pair)",
                    value=copy.EXAMPLES[0][1],
                    lines=1,
                    max_length=MAX_TEXT_CHARS,
                )
                model = gr.Dropdown(choices=model_choices(models), value=default, label="Model")
                causal = gr.Checkbox(value=False, label=causal_copy.CAUSAL_LABEL, elem_id="attention-causal")
                button = gr.Button("Show attention", variant="primary")
                gr.Examples(copy.EXAMPLES, inputs=[text, text_pair], label="Examples")
                gr.Markdown(copy.PAIR_NOTE)
            with gr.Column(scale=3):
                status = gr.Markdown("", elem_id="attention-status")
                tokens = gr.HighlightedText(
                    label="Tokens and segment ids",
                    color_map={"segment A": "#dbe9f6", "segment B": "#fde2c4"},
                    show_legend=True,
                    interactive=False,
                )
        with gr.Tabs(elem_id="attention-sections"):
            with gr.Tab(copy.SECTION_HEATMAPS, id="attention-heatmaps"):
                gr.Markdown(copy.VIEWS_HELP)
                with gr.Row():
                    layer = gr.Slider(0, MAX_LAYERS - 1, value=0, step=1, label="Layer")
                    head = gr.Slider(0, MAX_HEADS - 1, value=0, step=1, label="Head")
                    mode = gr.Radio(MODES, value="head", label="Heatmap shows")
                with gr.Row():
                    with gr.Column(scale=1):
                        grid = gr.Image(
                            label="All layers × all heads (click a cell to open it)",
                            type="filepath",
                            interactive=False,
                            elem_id="attention-grid",
                            buttons=[],
                            alt_text=copy.GRID_ALT,
                        )
                    with gr.Column(scale=1):
                        plot = gr.Plot(label="Attention heatmap", elem_id="attention-heatmap")
                gr.Markdown(copy.STATS_HELP)
                which = gr.Radio([ALL_HEADS, *HEAD_FILTERS], value=ALL_HEADS, label="Show heads that")
                table = gr.Dataframe(label="Per-head statistics", interactive=False, elem_id="attention-stats")
            with gr.Tab(copy.SECTION_BERTVIZ, id="attention-bertviz-section"):
                gr.Markdown(copy.BERTVIZ_HELP)
                with gr.Row():
                    view = gr.Radio(BERTVIZ_VIEWS, value="head", label="bertviz view")
                    draw = gr.Button("Draw with bertviz")
                bertviz = gr.HTML(
                    "" if library_urls() else plots.notice_html(copy.LIBS_MISSING), elem_id="attention-bertviz"
                )
            with gr.Tab(copy.SECTION_INPUT, id="attention-input-section") as sum_tab:
                no_table = [f"`{m.key}`" for m in models if m.family in NO_POSITION_TABLE]
                gr.Markdown(copy.INPUT_EMBEDDINGS_HELP
                            + (copy.NO_POSITION_TABLE_NOTE.format(", ".join(no_table)) if no_table else ""))
                sum_button = gr.Button("Show token + position + segment")
                sum_summary = gr.Markdown(elem_id="input-embeddings-summary")
                sum_plot = gr.Plot(label="Input vectors per token (first dimensions)", elem_id="input-embeddings-plot")
                sum_table = gr.Dataframe(label="Rows used and vector lengths", interactive=False)
        source = [text, text_pair, model]
        on_screen = gr.State(None)  # (text, second text, model) of the result shown
        shown_outputs = [tokens, status, plot, grid, on_screen]
        gr.on(
            [button.click, text.submit, text_pair.submit, causal.input],
            arrive,
            inputs=[*source, layer, head, mode, causal, which],
            outputs=[*shown_outputs, layer, head, table],
            api_visibility="private",
            trigger_mode="always_last",
            # a run time in each output's corner: the full overlay's animated progress bar kept
            # a core of the page's machine busy while it waited (~0.7 s a second, headless
            # Chromium), on the bench's machine the core the model's forward needs
            show_progress="minimal",
        )
        # The two public endpoints the click's one event combines (arrive's docstring: why).
        api_only(attention, [*source, layer, head, mode, causal], shown_outputs, "attention", queue=True)
        api_only(head_stats, [*source, which, causal], table, "head_stats", queue=True)
        which.change(filter_stats, [on_screen, which], table, api_visibility="private")
        gr.on(
            [layer.release, head.release, mode.input],
            heatmap,
            inputs=[on_screen, layer, head, mode],
            outputs=plot,
            api_visibility="private",
            trigger_mode="always_last",
        )
        opened = [layer, head, mode, plot]
        grid.select(open_grid_cell, on_screen, opened, api_visibility="private")
        table.select(open_table_row, on_screen, opened, api_visibility="private")
        gr.on([draw.click, view.change], bertviz_view, [*source, view, causal], bertviz, api_name="bertviz_view")
        sum_outputs = [sum_plot, sum_table, sum_summary]
        sum_button.click(show_input_embeddings, source, sum_outputs, api_name="input_embeddings")
        links = {"text": text, "text_pair": text_pair, "model": model, "layer": layer, "head": head,
                 "mode": mode, "causal": causal}
        views = [(arrive, [*source, layer, head, mode, causal, which], [*shown_outputs, layer, head, table])]
        sections = [Section(copy.SECTION_INPUT.lower(), sum_tab, [(show_input_embeddings, source, sum_outputs)])]
        return LinkTarget("attention", tab, links, views, sections)
