"""The "Why this guess" tab: layout and event wiring; the work is done by
``models.attribution.masked_guess`` and the views are drawn by ``components.attribution.plots``."""

from __future__ import annotations

import gradio as gr

from models import (
    ATTRIBUTION_METHODS,
    DEFAULT_IG_STEPS,
    MASK_PATTERN,
    MAX_IG_STEPS,
    MAX_TEXT_CHARS,
    InputError,
    attribute_fill_mask,
    deletion_curve,
    first_capable,
    list_models,
)

from ..shell.common import HEAVY, model_choices, readable_errors
from ..shell.deep_links import LinkTarget
from ..shell.server import on_gpu
from ..shell.view_cache import cached_view
from . import copy
from . import plots


def _mask_index(text, mask_number) -> int:
    """The core's mask_index (0 is the first mask) for the box's Mask number (1 is the first),
    a number out of range refused in the box's own numbering."""
    if not isinstance(mask_number, (int, float)):
        return 0
    masks = len(MASK_PATTERN.findall(text)) if isinstance(text, str) else 0
    if masks and not 1 <= mask_number <= masks:  # no mask at all: the core says so
        raise InputError(f"The text has {masks} mask(s), so there is no mask number {mask_number:g}: "
                         f"Mask number takes 1 to {masks} (1 is the first mask).")
    return int(mask_number) - 1


@on_gpu  # the only place this tab runs a model
@cached_view()
def _explain(text, model_key, mask_number, target, n_steps, methods):
    if not methods:
        raise InputError("Tick at least one method.")
    mask_index, target = _mask_index(text, mask_number), target or None
    results = [attribute_fill_mask(model_key, text, m, mask_index, target, n_steps) for m in methods]
    curves = [deletion_curve(model_key, text, m, mask_index, target, n_steps) for m in methods]
    return results, curves


def explain(text, model_key, mask_number, target, n_steps, methods):
    """Every ticked method's scores and deletion curve (the ``why_this_guess`` API)."""
    with readable_errors("Why this guess"):
        results, curves = _explain(text, model_key, mask_number, target, n_steps, methods)
        return (
            plots.status_markdown(results, curves),
            plots.attribution_html(results),
            plots.deletion_figure(curves),
            plots.scores_frame(results),
        )


def build_attribution_tab() -> LinkTarget:
    """The tab's layout and events; call inside ``gr.Blocks`` and ``gr.Tabs``."""
    models = list_models()
    choices = model_choices(models, need_mlm=True)
    default = first_capable(models, "mlm")
    with gr.Tab(copy.TAB_LABEL, id="attribution") as tab:
        gr.Markdown(copy.HELP)
        with gr.Row():
            with gr.Column(scale=3):
                text = gr.Textbox(label="Text with a mask", value=copy.EXAMPLES[0], lines=2,
                                  max_length=MAX_TEXT_CHARS)
                with gr.Row():
                    model = gr.Dropdown(choices=choices, value=default, label="Model", scale=2)
                    mask_number = gr.Number(value=1, precision=0, minimum=1, label="Mask number", scale=1)
                target = gr.Textbox(label="Target word (empty: the model's top guess)", value="")
                methods = gr.CheckboxGroup(
                    choices=[(copy.METHOD_LABELS[m], m) for m in ATTRIBUTION_METHODS],
                    value=list(ATTRIBUTION_METHODS), label="Methods",
                )
                steps = gr.Slider(4, MAX_IG_STEPS, value=DEFAULT_IG_STEPS, step=4,
                                  label="Integrated gradients: steps")
                button = gr.Button("Explain this guess", variant="primary")
                gr.Examples(copy.EXAMPLES, inputs=[text], label="Examples")
                with gr.Accordion("What each method measures", open=False):
                    gr.Markdown("\n".join(f"- **{copy.METHOD_LABELS[m]}**: {note}"
                                          for m, note in copy.METHOD_NOTES.items()))
            with gr.Column(scale=5):
                status = gr.Markdown("", elem_id="attribution-status")
                shaded = gr.HTML(label="Scores per word, one row per method", elem_id="attribution-tokens")
                gr.Markdown(copy.DELETION_HELP)
                curves = gr.Plot(label="Deletion check", elem_id="attribution-curves")
                table = gr.Dataframe(label="Scores per token", elem_id="attribution-table",
                                     interactive=False)
                gr.Markdown(copy.LIMITS)
        inputs, outputs = [text, model, mask_number, target, steps, methods], [status, shaded, curves, table]
        gr.on([button.click, text.submit], explain, inputs=inputs, outputs=outputs, api_name="why_this_guess",
              trigger_mode="always_last", **HEAVY)
        links = {"text": text, "model": model, "mask": mask_number, "target": target}
        return LinkTarget("why-this-guess", tab, links, [(explain, inputs, outputs, HEAVY)])
