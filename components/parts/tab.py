"""The "Which parts matter" tab: layout and event wiring; the interventions are
``models.ablate_heads``, ``head_importance``, ``logit_lens`` and ``patch_activations``, the
drawings ``components.parts.plots``."""

from __future__ import annotations

import re

import gradio as gr

from models import (MASK_PATTERN, MAX_TEXT_CHARS, InputError, ablate_heads, first_capable, get_spec,
                    head_importance, list_models, logit_lens, patch_activations, tokenize)

from . import copy
from . import plots
from ..shell.common import HEAVY, model_choices, readable_errors
from ..shell.deep_links import LinkTarget, Section
from ..shell.server import on_gpu
from ..shell.view_cache import cached_view

_PAIR = re.compile(r"^\s*(\d+)\s*:\s*(\d+)\s*$")


def parse_heads(text) -> list[tuple[int, int]]:
    """"2:3, 4:1" as [(2, 3), (4, 1)]; an ``InputError`` naming the heads box otherwise
    (the core checks the ranges against the model)."""
    pairs = []
    for part in (p for p in str(text or "").split(",") if p.strip()):
        match = _PAIR.match(part)
        if not match:
            raise InputError(f"heads: write each head as layer:head, e.g. 2:3, 4:1 (not {part.strip()[:12]!r}).")
        pairs.append((int(match.group(1)), int(match.group(2))))
    return pairs


# --- knock out heads -------------------------------------------------------------------------


@on_gpu  # the only places this tab runs a model: the four functions below
@cached_view()
def _ablate(model_key, text, heads, target, mode):
    return ablate_heads(model_key, text, parse_heads(heads), (target or "").strip() or None, mode or "zero")


def knock_out(text, model_key, heads, target, mode):
    """The blank with the chosen heads knocked out (the ``ablate_heads`` API): status, bars,
    table, and the grid of heads."""
    with readable_errors(copy.TAB_LABEL):
        result = _ablate(model_key, text, heads, target, mode)
        return (plots.ablation_markdown(result), plots.ablation_figure(result), plots.ablation_frame(result),
                plots.grid_frame(result.num_layers, result.num_heads, result.heads))


def toggle_head(heads, evt: gr.SelectData):
    """A click on the grid: that cell's head knocked out, or brought back."""
    row, col = evt.index
    if col == 0:  # the layer's name
        return gr.skip()
    with readable_errors(copy.TAB_LABEL):
        pairs = set(parse_heads(heads)) ^ {(int(row), int(col) - 1)}
    return plots.heads_text(sorted(pairs))


# --- head importance, logit lens, causal trace -------------------------------------------------


@on_gpu
@cached_view()
def _importance(model_key, text, target):
    return head_importance(model_key, text, (target or "").strip() or None)


def importance(text, model_key, target):
    """Every head knocked out alone (the ``head_importance`` API): status, map, table."""
    with readable_errors(copy.TAB_LABEL):
        result = _importance(model_key, text, target)
        return plots.importance_markdown(result), plots.importance_figure(result), plots.importance_frame(result)


@on_gpu
@cached_view()
def _lens(model_key, text):
    return logit_lens(model_key, text)


def when_known(text, model_key, compare_key):
    """The logit lens of one or two models (the ``logit_lens`` API): status, curve, two tables."""
    with readable_errors(copy.TAB_LABEL):
        lenses = [_lens(key, text) for key in dict.fromkeys(k for k in (model_key, compare_key) if k)]
        second = plots.lens_frame(lenses[1]) if len(lenses) > 1 else None
        return ("  \n".join(plots.lens_markdown(lens) for lens in lenses), plots.lens_figure(lenses),
                plots.lens_frame(lenses[0]), gr.update(value=second, visible=second is not None))


@on_gpu
@cached_view()
def _trace(model_key, clean, corrupt, target):
    return patch_activations(model_key, clean, corrupt, (target or "").strip() or None)


def trace(clean, corrupt, model_key, target):
    """Causal tracing (the ``patch_activations`` API): status, heatmap, table."""
    with readable_errors(copy.TAB_LABEL):
        result = _trace(model_key, clean, corrupt, target)
        return plots.trace_markdown(result), plots.trace_figure(result), plots.trace_frame(result)


def preset_label(pair) -> str:
    return f"{pair[0]}  /  {pair[1]}"


@cached_view()
def presets_for(model_key) -> list[tuple[str, str]]:
    """The presets whose clean and corrupt texts tokenize to the same length for this model."""
    mask = get_spec(model_key).mask_token or "[MASK]"
    same = [pair for pair in copy.PRESETS
            if len({len(tokenize(model_key, MASK_PATTERN.sub(mask, t)).tokens) for t in pair}) == 1]
    return [(preset_label(p), str(copy.PRESETS.index(p))) for p in same]


def presets(model_key):
    """The preset picker for the model picked (the ``trace_presets`` API)."""
    with readable_errors(copy.TAB_LABEL):
        choices = presets_for(model_key)
    return gr.update(choices=choices, value=choices[0][1] if choices else None)


def use_preset(index):
    if index in (None, ""):
        return gr.skip(), gr.skip()
    return copy.PRESETS[int(index)]


# --- layout --------------------------------------------------------------------------------------


def _knockout_section(text, model, target):
    gr.Markdown(copy.KNOCKOUT_HELP)
    with gr.Row():
        heads = gr.Textbox(label=copy.HEADS_LABEL, value="", scale=3, max_length=2000, elem_id="parts-heads")
        mode = gr.Radio(copy.MODES, value="zero", label=copy.MODE_LABEL, scale=2)
    with gr.Row():
        button = gr.Button(copy.KNOCKOUT_BUTTON, variant="primary")
        clear = gr.Button(copy.CLEAR_BUTTON)
    grid = gr.Dataframe(label=copy.GRID_LABEL, interactive=False, elem_id="parts-grid")
    status = gr.Markdown("", elem_id="parts-knockout-status")
    bars = gr.Plot(label="The blank, before and after", elem_id="parts-bars")
    table = gr.Dataframe(label="Top guesses at each mask", interactive=False, elem_id="parts-knockout-table")
    inputs, outputs = [text, model, heads, target, mode], [status, bars, table, grid]
    gr.on([button.click, heads.submit, mode.input], knock_out, inputs, outputs, api_name="ablate_heads",
          trigger_mode="always_last", **HEAVY)
    grid.select(toggle_head, [heads], [heads], api_visibility="private").then(
        knock_out, inputs, outputs, api_visibility="private", **HEAVY)
    clear.click(lambda: "", None, [heads], api_visibility="private").then(
        knock_out, inputs, outputs, api_visibility="private", **HEAVY)
    model.input(lambda: "", None, [heads], api_visibility="private")
    return heads, mode, (knock_out, inputs, outputs, HEAVY)


def _importance_section(text, model, target):
    gr.Markdown(copy.IMPORTANCE_HELP)
    button = gr.Button(copy.IMPORTANCE_BUTTON, variant="primary")
    status = gr.Markdown("", elem_id="parts-importance-status")
    figure = gr.Plot(label="Head importance", elem_id="parts-importance")
    table = gr.Dataframe(label="Every head", interactive=False, elem_id="parts-importance-table")
    inputs, outputs = [text, model, target], [status, figure, table]
    button.click(importance, inputs, outputs, api_name="head_importance", **HEAVY)
    return (importance, inputs, outputs, HEAVY)


def _lens_section(text, model, models):
    gr.Markdown(copy.LENS_HELP)
    with gr.Row():
        compare = gr.Dropdown(choices=[("none", "")] + model_choices(models, need_mlm=True), value="",
                              label=copy.LENS_COMPARE_LABEL, scale=3)
        button = gr.Button(copy.LENS_BUTTON, variant="primary", scale=1)
    status = gr.Markdown("", elem_id="parts-lens-status")
    figure = gr.Plot(label="p(final answer) per layer", elem_id="parts-lens")
    with gr.Row():
        first = gr.Dataframe(label="When does the model know?", interactive=False, elem_id="parts-lens-table")
        second = gr.Dataframe(label="The model compared", interactive=False, visible=False,
                              elem_id="parts-lens-compare")
    inputs, outputs = [text, model, compare], [status, figure, first, second]
    gr.on([button.click, compare.input], when_known, inputs, outputs, api_name="logit_lens",
          trigger_mode="always_last", **HEAVY)
    return compare, (when_known, inputs, outputs, HEAVY)


def _trace_section(model, target):
    gr.Markdown(copy.TRACE_HELP)
    preset = gr.Dropdown(choices=[], value=None, label=copy.PRESET_LABEL, elem_id="parts-preset")
    with gr.Row():
        clean = gr.Textbox(label=copy.CLEAN_LABEL, value=copy.PRESETS[0][0], max_length=MAX_TEXT_CHARS)
        corrupt = gr.Textbox(label=copy.CORRUPT_LABEL, value=copy.PRESETS[0][1], max_length=MAX_TEXT_CHARS)
    button = gr.Button(copy.TRACE_BUTTON, variant="primary")
    status = gr.Markdown("", elem_id="parts-trace-status")
    figure = gr.Plot(label="Causal trace", elem_id="parts-trace")
    table = gr.Dataframe(label="Every patch", interactive=False, elem_id="parts-trace-table")
    inputs, outputs = [clean, corrupt, model, target], [status, figure, table]
    gr.on([button.click, clean.submit, corrupt.submit], trace, inputs, outputs, api_name="patch_activations",
          trigger_mode="always_last", **HEAVY)
    model.change(presets, [model], [preset], api_name="trace_presets")
    preset.input(use_preset, [preset], [clean, corrupt], api_visibility="private").then(
        trace, inputs, outputs, api_visibility="private", **HEAVY)
    return clean, corrupt, [(presets, [model], [preset]), (trace, inputs, outputs, HEAVY)]


def build_parts_tab() -> LinkTarget:
    """The tab's layout and events; call inside ``gr.Blocks`` and ``gr.Tabs``."""
    models = list_models()
    default = first_capable(models, "mlm")
    with gr.Tab(copy.TAB_LABEL, id="parts") as tab:
        gr.Markdown(copy.HELP)
        with gr.Row():
            text = gr.Textbox(label="Text with a mask", value=copy.EXAMPLE_TEXT, scale=3, max_length=MAX_TEXT_CHARS)
            model = gr.Dropdown(choices=model_choices(models, need_mlm=True), value=default, label="Model", scale=2)
            target = gr.Textbox(label=copy.TARGET_LABEL, value="", scale=1, max_length=100)
        with gr.Tabs(elem_id="parts-sections"):
            with gr.Tab(copy.SECTION_KNOCKOUT, id="parts-knockout"):
                heads, mode, knockout = _knockout_section(text, model, target)
            with gr.Tab(copy.SECTION_IMPORTANCE, id="parts-importance") as importance_tab:
                importance_view = _importance_section(text, model, target)
            with gr.Tab(copy.SECTION_LENS, id="parts-lens") as lens_tab:
                compare, lens_view = _lens_section(text, model, models)
            with gr.Tab(copy.SECTION_TRACE, id="parts-trace") as trace_tab:
                clean, corrupt, trace_views = _trace_section(model, target)
        links = {"text": text, "model": model, "target": target, "heads": heads, "mode": mode, "compare": compare,
                 "clean": clean, "corrupt": corrupt}
        sections = [Section(copy.SECTION_IMPORTANCE.lower(), importance_tab, [importance_view]),
                    Section(copy.SECTION_LENS.lower(), lens_tab, [lens_view]),
                    Section(copy.SECTION_TRACE.lower(), trace_tab, trace_views)]
        return LinkTarget("which-parts-matter", tab, links, [knockout], sections)
