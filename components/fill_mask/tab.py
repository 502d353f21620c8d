"""The Fill-mask tab: layout and event wiring; the work is done by ``models.mlm.fill_mask``."""

from __future__ import annotations

import os

import gradio as gr
from gradio.components.plot import PlotData

from models import (
    MASK_PATTERN,
    MAX_TEXT_CHARS,
    EncoderLabError,
    availability,
    fill_mask,
    generate_left_to_right,
    get_spec,
    is_loaded,
    list_models,
    mask_word,
    text_segments,
)

from ..shell.common import escape, model_choices, quoted, readable_errors, user_error
from ..shell.deep_links import LinkTarget
from ..shell.server import on_gpu, queue_live_events
from ..shell.view_cache import cached_view
from ..views import causal_copy, causal_plots
from ..views.knowledge import build_knowledge_probe
from . import copy
from . import plots

N_OUTPUTS = 5  # table, plot, filled sentence, status, bars (the API's order: bars came last)
# Queued fill-mask requests running at once: the Predict button's, and the live ones under
# ZeroGPU (elsewhere live requests skip the queue). All of them meet in the core's
# micro-batcher (models/runtime/batching.py), which runs one forward for all that arrived while the
# model was busy: more at once means bigger batches, not more forwards competing for cores.
FILL_MASK_CONCURRENCY = int(os.environ.get("ENCODER_LAB_FILL_MASK_CONCURRENCY", 16))


def model_card(model_key: str) -> str:
    """A short Markdown card: provenance, availability, mask token."""
    try:
        spec = get_spec(model_key)
    except EncoderLabError:
        return ""
    available, why = availability(spec)
    state = "available" if available else "**not available here**"
    return (
        f"**{escape(spec.display_name)}** (`{spec.key}`, family {spec.family}): "
        f"{escape(spec.provenance)}  \n"
        f"Status: {state}: {escape(why)}  \n"
        f"Its own mask token is {quoted(spec.mask_token)}; "
        "you may write [MASK] or &lt;mask&gt; either way."
    )


@cached_view()
def _predicted(model_key: str, text: str, top_k: int, causal: bool):
    """The view of one fill-mask request (the default example computed once per process)."""
    return _outputs(fill_mask(model_key, text, int(top_k), bool(causal)))


def _outputs(result):
    status = (
        f"{len(result.masks)} mask(s), {len(result.tokens)} tokens read by "
        f"`{result.model_key}`"
        + (", **causal mask**: each position saw only its left." if result.causal else ".")
    )
    # The table as rows and the chart as its JSON: what Gradio would make of a pandas frame
    # and a plotly figure, made here without either (per answer, under a burst of live
    # requests; the answers are the same, tests/unit/components/test_fill_mask_and_models_plots.py).
    return (
        plots.predictions_table(result),
        PlotData(type="plotly", plot=plots.fill_mask_figure_json(result)),
        result.filled_text,
        status,
        plots.fill_mask_bars_html(result),
    )


def _cleared(message: str) -> tuple:
    """The outputs emptied, ``message`` in the status line: no earlier answer stays on screen
    as if it answered this text (or this model)."""
    return (plots.predictions_table(None), None, "", message, "")


@on_gpu
def predict(text: str, model_key: str, top_k: float, causal: bool = False, progress=gr.Progress()):
    """Run fill-mask; errors become a readable message (the ``fill_mask`` API)."""
    with readable_errors("Fill-mask"):
        if not is_loaded(model_key, "mlm"):
            progress(0.1, desc=f"Loading {get_spec(model_key).display_name}…")
        return _predicted(model_key, text, int(top_k), bool(causal))


@on_gpu
def predict_live(text: str, model_key: str, top_k: float, live: bool, causal: bool = False):
    """Every edit of the text: the clickable words, and predictions when live is on.

    One request per keystroke carries both (a second event would double each keystroke's requests).
    Never pops up errors: they go to the status line.
    """
    words = show_words(text)
    if not live:
        return (words,) + (gr.skip(),) * N_OUTPUTS
    if not text or not MASK_PATTERN.search(text):
        return (words,) + _cleared("Add [MASK] to the text to see predictions.")
    try:
        return (words,) + _predicted(model_key, text, int(top_k), bool(causal))
    except EncoderLabError as exc:
        return (words,) + _cleared(f"⚠️ {escape(str(exc))}")


@on_gpu
def generate(prompt: str, model_key: str, steps: float, seed: float, top_k: float):
    """Append a mask, fill it, repeat (the ``generate_left_to_right`` API)."""
    with readable_errors("Generation"):
        return _generated(model_key, prompt, int(steps), int(seed or 0), int(top_k))


@cached_view()
def _generated(model_key: str, prompt: str, steps: int, seed: int, top_k: int):
    result = generate_left_to_right(model_key, prompt, steps, seed, top_k)
    return result.text, causal_plots.generation_frame(result)


def show_words(text: str):
    """The text as clickable words (masks highlighted)."""
    return [(seg, kind if kind == "mask" else None) for seg, kind in text_segments(text or "")]


def text_segments_api(text: str) -> list[tuple[str, str | None]]:
    """The text cut into words ("word"), masks ("mask") and the spaces between (None)."""
    with readable_errors("Text segments"):
        return text_segments(text or "")


class WordClick(gr.SelectData):
    """A click on a word below the text box. An API request carries no click: say so."""

    def __init__(self, target, data):
        if not isinstance(data, dict) or data.get("index") is None:
            raise user_error(
                "mask_word answers a click on a word below the text box, and this request "
                "carries no click. Through the API, write [MASK] in the text yourself."
            )
        super().__init__(target, data)


def click_word(text: str, evt: WordClick):
    """Replace the clicked word by [MASK], if the text still has that word at that place.

    The strip is redrawn with each live answer, so it can still show an earlier text while
    the box holds a new one: a click there must not mask whatever word of the new text has
    the clicked one's index. The click carries the word it was on (``evt.value``: word, class).
    """
    text, index = text or "", int(evt.index)
    clicked = evt.value[0] if isinstance(evt.value, (list, tuple)) and evt.value else evt.value
    segments = text_segments(text)
    if not 0 <= index < len(segments) or segments[index][0] != clicked:
        return text  # a strip drawn from another text: nothing to mask
    return mask_word(text, index)


def build_fill_mask_tab() -> LinkTarget:
    """The tab's layout and events; call inside ``gr.Blocks`` and ``gr.Tabs``."""
    models = list_models()
    default = next((m.key for m in models if m.default), None)
    with gr.Tab("Fill-mask", id="fill-mask") as tab:
        gr.Markdown(copy.FILL_MASK_HELP)
        with gr.Row():
            with gr.Column(scale=3):
                text = gr.Textbox(
                    label="Text with masks",
                    value=copy.EXAMPLES[0],
                    lines=2,
                    max_length=MAX_TEXT_CHARS,
                )
                words = gr.HighlightedText(
                    value=show_words(copy.EXAMPLES[0]),
                    label="Click a word to mask it",
                    elem_id="fill-mask-words",
                    color_map={"mask": "#f4a261"},
                    show_legend=False,
                    show_inline_category=False,
                    interactive=False,
                )
                with gr.Row():
                    model = gr.Dropdown(
                        choices=model_choices(models, need_mlm=True), value=default, label="Model", scale=2
                    )
                    top_k = gr.Slider(1, 20, value=5, step=1, label="Top-k", scale=1)
                causal = gr.Checkbox(value=False, label=causal_copy.CAUSAL_LABEL, elem_id="fill-mask-causal")
                with gr.Row():
                    live = gr.Checkbox(value=True, label="Live: predict as you type")
                    button = gr.Button("Predict", variant="primary")
                card = gr.Markdown(model_card(default) if default else "")
                gr.Examples(copy.EXAMPLES, inputs=[text], label="Classic teaching sentences")
                build_knowledge_probe(model)
            with gr.Column(scale=4):
                status = gr.Markdown("", elem_id="fill-mask-status")
                filled = gr.Textbox(
                    label="Sentence with the top prediction in place", interactive=False
                )
                # the first screen's chart, in HTML: no Plotly chunk to load (plots.fill_mask_bars_html)
                bars = gr.HTML(label="Top-k probabilities per mask", elem_id="fill-mask-bars", js_on_load=None)
                with gr.Accordion(copy.CHART_ACCORDION, open=False):
                    plot = gr.Plot(label="Top-k probabilities per mask (Plotly)", elem_id="fill-mask-plot")
                table = gr.Dataframe(
                    headers=["mask", "rank", "token", "probability"],
                    label="Predictions",
                    elem_id="fill-mask-table",
                    interactive=False,
                )

        gr.Markdown(causal_copy.CAUSAL_HELP)
        gr.Markdown(causal_copy.GENERATE_HELP)
        with gr.Row():
            with gr.Column(scale=3):
                prompt = gr.Textbox(label="Prompt to continue", value=causal_copy.GENERATE_PROMPT,
                                    max_length=MAX_TEXT_CHARS)
                with gr.Row():
                    steps = gr.Slider(1, 30, value=8, step=1, label="Steps")
                    gen_top_k = gr.Slider(1, 20, value=5, step=1, label="Pick among the top")
                    seed = gr.Number(value=0, precision=0, minimum=0, label="Seed")
                gen_button = gr.Button("Generate with an encoder")
            with gr.Column(scale=4):
                generated = gr.Textbox(label="Generated text", interactive=False)
        gen_steps = gr.Dataframe(label="Every step", interactive=False, wrap=True, elem_id="generation-steps",
                                 column_widths=["6%", "30%", "38%", "8%", "18%"])

        outputs = [table, plot, filled, status, bars]
        gr.on(
            [button.click, text.submit],
            predict,
            inputs=[text, model, top_k, causal],
            outputs=outputs,
            api_name="fill_mask",
            concurrency_limit=FILL_MASK_CONCURRENCY,
            concurrency_id="fill_mask",
        )
        gr.on(
            [text.change, top_k.release, model.change, causal.input],
            predict_live,
            inputs=[text, model, top_k, live, causal],
            outputs=[words, *outputs],
            api_name="fill_mask_live",
            trigger_mode="always_last",
            queue=queue_live_events(),  # unqueued: per-event cost below the forward's (server.py)
            show_progress="minimal",
            show_progress_on=outputs,  # not on the words strip, which a student may be clicking
            concurrency_limit=FILL_MASK_CONCURRENCY,  # when queued (ZeroGPU)
            concurrency_id="fill_mask",
        )
        gr.api(text_segments_api, api_name="text_segments", queue=False)
        words.select(click_word, text, text, api_name="mask_word")
        model.change(model_card, model, card, api_name="model_card", queue=False)
        gr.on([gen_button.click, prompt.submit], generate, [prompt, model, steps, seed, gen_top_k],
              [generated, gen_steps], api_name="generate_left_to_right")
        return LinkTarget("fill-mask", tab, {"text": text, "model": model, "top_k": top_k, "causal": causal},
                          [(predict_live, [text, model, top_k, live, causal], [words, *outputs]),
                           (generate, [prompt, model, steps, seed, gen_top_k], [generated, gen_steps])])
