"""The "Inside one layer" tab: layout and event wiring; the pass is ``models.forward_steps``,
the gradients ``models.mlm_gradients``, the drawings ``components.inside.plots``."""

from __future__ import annotations

import gradio as gr

from models import InputError, MAX_TEXT_CHARS, first_capable, forward_steps, list_models, mlm_gradients

from . import copy
from . import plots
from ..shell.common import model_choices, readable_errors
from ..shell.deep_links import LinkTarget, Section, model_shape
from ..shell.server import on_gpu
from ..shell.view_cache import cached_view

# Slider bounds before a model is shown (then fitted to it).
MAX_LAYERS, MAX_HEADS = 48, 64


def _position(token):
    """The token box's text as a position: blank is None (the core's default)."""
    text = "" if token is None else str(token).strip()
    if not text:
        return None
    try:
        return int(float(text))
    except ValueError:
        raise InputError(f"The token position must be a whole number (a token index), not {text[:6]!r}.") from None


@on_gpu  # the only place this tab runs the pass
def _steps(model_key, text, layer, head, token):
    return forward_steps(model_key, text, None, int(layer or 0), int(head or 0), _position(token))


def _step_name(result, step) -> str:
    names = [s.name for s in result.all_steps]
    return step if step in names else names[0]


@cached_view()
def inside_layer(model_key, text, layer, head, token, step):
    """The pass on screen: status, the step, its chart, the token's row, checks, norms (the
    ``inside_layer`` API); then the step picker and the sliders fitted to the model."""
    with readable_errors("Inside one layer"):
        result = _steps(model_key, text, layer, head, token)
        name = _step_name(result, step)
        return (
            plots.status_markdown(result),
            plots.step_markdown(result, name),
            plots.step_figure(result, name),
            plots.row_frame(result),
            plots.checks_markdown(result),
            plots.norms_figure(result),
            gr.update(choices=plots.step_choices(result), value=name),
            gr.update(maximum=result.num_layers - 1, value=result.layer),
            gr.update(maximum=result.num_heads - 1, value=result.head),
        )


def model_changed(model_key, text, layer, head, token, step):
    """Another model picked: the layer and head clamped to its range first (as a link's are),
    then the pass, which fits the sliders to the new model."""
    with readable_errors("Inside one layer"):
        layers, heads = model_shape(model_key)
    layer, head = min(max(int(layer or 0), 0), layers - 1), min(max(int(head or 0), 0), heads - 1)
    return inside_layer(model_key, text, layer, head, token, step)


@cached_view()
def inside_step(model_key, text, layer, head, token, step):
    """One step of the pass (the ``inside_step`` API): its text and its chart."""
    with readable_errors("Inside one layer"):
        result = _steps(model_key, text, layer, head, token)
        name = _step_name(result, step)
        return plots.step_markdown(result, name), plots.step_figure(result, name)


def _walk(offset: int):
    def walk(model_key, text, layer, head, token, step):
        with readable_errors("Inside one layer"):
            result = _steps(model_key, text, layer, head, token)
        names = [s.name for s in result.all_steps]
        index = min(max(plots.step_index(result, step) + offset, 0), len(names) - 1)
        return (names[index], *inside_step(model_key, text, layer, head, token, names[index]))

    return walk


def _masked(text: str) -> list[int] | None:
    parts = [p.strip() for p in (text or "").split(",") if p.strip()]
    try:
        return [int(p) for p in parts] or None
    except ValueError:
        raise InputError("Positions to mask are token indices separated by commas, e.g. 3 or 2, 5.") from None


@on_gpu
@cached_view()
def inside_gradients(model_key, text, masked):
    """Gradient of the MLM loss at every input token (the ``mlm_gradients`` API)."""
    with readable_errors("Gradients under MLM"):
        grads = mlm_gradients(model_key, text, _masked(masked))
        return plots.gradient_figure(grads), plots.gradient_markdown(grads)


def build_inside_tab() -> LinkTarget:
    """The tab's layout and events; call inside ``gr.Blocks`` and ``gr.Tabs``."""
    models = list_models()
    default = first_capable(models, "mlm") or first_capable(models, "any")
    with gr.Tab(copy.TAB_LABEL, id="inside") as tab:
        gr.Markdown(copy.HELP)
        with gr.Row():
            with gr.Column(scale=2):
                text = gr.Textbox(label="Text", value=copy.EXAMPLE_TEXT, lines=2, max_length=MAX_TEXT_CHARS)
                model = gr.Dropdown(choices=model_choices(models, mark_mlm=True), value=default, label="Model")
                with gr.Row():
                    layer = gr.Slider(0, MAX_LAYERS - 1, value=0, step=1, label="Layer")
                    head = gr.Slider(0, MAX_HEADS - 1, value=0, step=1, label="Head")
                token = gr.Textbox(value="", label=copy.TOKEN_LABEL, max_length=6)
                button = gr.Button(copy.RUN_LABEL, variant="primary")
            with gr.Column(scale=3):
                status = gr.Markdown("", elem_id="inside-status")
                checks = gr.Markdown("", elem_id="inside-checks")
        with gr.Tabs(elem_id="inside-sections"):
            with gr.Tab(copy.SECTION_STEPS, id="inside-steps"):
                with gr.Row():
                    back = gr.Button("← Previous", scale=1)
                    step = gr.Dropdown(choices=[(f"{i}. {t}", n) for i, (t, n) in enumerate(copy.COMMON_STEPS, 1)],
                                       value="query", label=copy.STEP_LABEL, scale=4, allow_custom_value=True,
                                       elem_id="inside-step")
                    forward = gr.Button("Next →", scale=1)
                step_text = gr.Markdown("", elem_id="inside-step-text")
                figure = gr.Plot(label="This step", elem_id="inside-figure")
                gr.Markdown(copy.ROW_HELP)
                row = gr.Dataframe(label="The chosen token's row", interactive=False, elem_id="inside-row")
                gr.Markdown(copy.NORMS_HELP)
                norms = gr.Plot(label="Hidden-state lengths", elem_id="inside-norms")
            with gr.Tab(copy.SECTION_GRADIENTS, id="inside-gradients") as grad_tab:
                gr.Markdown(copy.GRAD_HELP)
                with gr.Row():
                    grad_text = gr.Textbox(label="Sentence (no [MASK])", value=copy.GRAD_TEXT, scale=3,
                                           max_length=MAX_TEXT_CHARS)
                    grad_masked = gr.Textbox(label=copy.GRAD_MASKED_LABEL, value="", scale=2)
                grad_button = gr.Button(copy.GRAD_BUTTON)
                grad_note = gr.Markdown("", elem_id="inside-gradient-note")
                grad_plot = gr.Plot(label="Gradient per token", elem_id="inside-gradient")
        source = [model, text, layer, head, token]
        outputs = [status, step_text, figure, row, checks, norms, step, layer, head]
        gr.on([button.click, text.submit, layer.release, head.release, token.submit],
              inside_layer, [*source, step], outputs, api_name="inside_layer", trigger_mode="always_last")
        model.input(model_changed, [*source, step], outputs, api_visibility="private", trigger_mode="always_last")
        step.input(inside_step, [*source, step], [step_text, figure], api_name="inside_step",
                   trigger_mode="always_last")
        back.click(_walk(-1), [*source, step], [step, step_text, figure], api_visibility="private")
        forward.click(_walk(1), [*source, step], [step, step_text, figure], api_visibility="private")
        grad_inputs = [model, grad_text, grad_masked]
        gr.on([grad_button.click, grad_text.submit], inside_gradients, grad_inputs, [grad_plot, grad_note],
              api_name="mlm_gradients")
        links = {"text": text, "model": model, "layer": layer, "head": head, "token": token, "step": step}
        views = [(inside_layer, [*source, step], outputs)]
        gradients = (inside_gradients, grad_inputs, [grad_plot, grad_note])
        sections = [Section(copy.SECTION_GRADIENTS.lower(), grad_tab, [gradients])]
        return LinkTarget("inside-one-layer", tab, links, views, sections)
