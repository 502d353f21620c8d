"""The Lessons tab: a guided path through the app's story, one live view per step.

Layout and event wiring only; the copy is in ``copy``, the views' computations in
``views``. Each step's text and its view are joined by slug (``VIEWS``). A step is shown
already computed (its default example is cached per process); its inputs stay editable and
its button recomputes. Models are chosen by capability, so the mini zoo's models are used
once trained.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import gradio as gr

from models import MAX_TEXT_CHARS, SENTENCE_LOSSES, first_capable, list_models

from ..finetune.reading_plots import PASSAGE_COLUMN_WIDTHS
from ..shell.common import api_parameters, escape, readable_errors
from ..shell.deep_links import LinkTarget, model_shape
from ..shell.server import on_gpu
from . import views
from . import before_bert_copy, copy

SLUGS = [s.slug for s in copy.STEPS]
READER_ENCODER = "minilm-l6"  # the shipped span reader's encoder (weights/span-reader), searching too


@dataclass
class StepView:
    """One step's live view: its inputs, outputs, and the function from one to the other."""

    run: object = None  # (*inputs) -> outputs; None while the step waits for a model
    inputs: list = field(default_factory=list)
    outputs: list = field(default_factory=list)
    main_text: object = None  # the input a link's ``text`` fills
    group: object = None
    slug: str = ""  # its step's, set when the view is joined to it


def step_models(models) -> dict[str, str | None]:
    """The model each step runs, chosen by what the step needs."""
    pair = next((m.key for m in sorted(models, key=lambda m: m.pair_head != "nsp")  # NSP first, then SOP
                 if m.available and m.can("pair")), None)
    # the live-training steps: a small encoder trained here (the mini zoo), with an MLM head (a
    # distillation teacher), BERT's first (segment embeddings for the pair step)
    live = next((m.key for m in sorted(models, key=lambda m: m.family != "bert")
                 if m.available and m.miniature and m.can("mlm")), None)
    available = {m.key for m in models if m.available}
    twins = next((m.key for m in models if m.key in available and m.can("mlm") and m.twin in available), None)
    return {
        "twins": twins,  # an encoder whose decoder twin runs here (Lesson 1's pair)
        "live": live,
        "mlm": first_capable(models, "mlm"),
        "any": first_capable(models, "any"),
        "attention": first_capable(models, "attention"),
        "pair": pair,
        "embeddings": first_capable(models, "embeddings") or first_capable(models, "any"),
        "reader": READER_ENCODER if READER_ENCODER in available else None,
    }


def _text(label: str, value: str, lines: int = 1):
    return gr.Textbox(label=label, value=value, lines=lines, max_length=MAX_TEXT_CHARS)


def _bound(run, model_key):
    """``run`` with its model fixed (a step's view), or None when no model can run it."""
    if model_key is None:
        return None
    return lambda *args: run(model_key, *args)


# Each step's view, keyed by its slug (``copy.STEPS`` holds the steps' texts): a function that
# builds its inputs and outputs (in the order ``views`` takes them) inside that step's group.
# A new step is one ``Step`` in ``copy.STEPS`` and one ``@_view`` here, with the same slug.
VIEWS: dict = {}


def _view(slug: str):
    def register(build):
        VIEWS[slug] = build
        return build

    return register


@_view("encoder-vs-decoder")
def _encoder_decoder(keys: dict) -> StepView:
    s = StepView(_bound(views.encoder_decoder, keys["twins"] or keys["mlm"]))
    s.main_text = _text("Text with a [MASK]", copy.ENCODER_DECODER_TEXT)
    s.inputs = [s.main_text]
    with gr.Row():
        s.outputs = [gr.Plot(label="The detective: the encoder fills the blank (both sides)"),
                     gr.Plot(label="The storyteller: its decoder twin gives the next piece (left only)")]
    s.outputs += [gr.Markdown(), gr.Dataframe(label="Encoder vs decoder, measured", interactive=False, wrap=True),
                  gr.Plot(label="Second exhibit: the encoder under a causal mask it never trained with")]
    return s


@_view(before_bert_copy.SLUG)
def _before_bert(keys: dict) -> StepView:
    s = StepView(_bound(views.before_bert, keys["mlm"]))
    with gr.Row():
        s.main_text = gr.Textbox(label=before_bert_copy.WORD_LABEL, value=before_bert_copy.WORD,
                                 info=before_bert_copy.WORD_INFO, max_length=MAX_TEXT_CHARS)
        sentences = gr.Textbox(label=before_bert_copy.SENTENCES_LABEL, info=before_bert_copy.SENTENCES_INFO, value="",
                               lines=2, max_length=MAX_TEXT_CHARS, placeholder=before_bert_copy.SENTENCES_PLACEHOLDER)
    s.inputs = [s.main_text, sentences]
    with gr.Row():
        with gr.Column(scale=2):
            gr.Markdown(before_bert_copy.TIMELINE)
        with gr.Column(scale=3):  # the two charts, as tall as the timeline beside them
            s.outputs = [gr.Plot(label="Static vs contextual: cosine between the word's occurrences"),
                         gr.Plot(label="The last layer's vectors of the word, one point per sentence")]
    s.outputs += [gr.Dataframe(label="Nearest words of the one static vector", interactive=False),
                  gr.Dataframe(label="The sentences, by sense", interactive=False, wrap=True), gr.Markdown()]
    return s


@_view("tokens-embeddings")
def _tokens_embeddings(keys: dict) -> StepView:
    s = StepView(_bound(views.tokens_embeddings, keys["any"]))
    s.main_text = _text("Text", copy.EMBEDDINGS_TEXT)
    s.inputs = [s.main_text, _text("Second text (optional)", "")]
    s.outputs = [gr.Plot(label="Token + position + segment, per token"),
                 gr.Dataframe(label="Rows used and vector lengths", interactive=False), gr.Markdown()]
    return s


def _one_head(run, model_key: str | None, label: str, text: str, plot: str, layer=lambda n: min(2, n - 1)) -> StepView:
    """A step whose view takes a text, a layer and a head (sliders fitted to the model)."""
    s = StepView(_bound(run, model_key))
    s.main_text = _text(label, text)
    layers, heads = model_shape(model_key) if model_key else (12, 12)
    with gr.Row():
        s.inputs = [s.main_text, gr.Slider(0, layers - 1, value=layer(layers), step=1, label="Layer"),
                    gr.Slider(0, heads - 1, value=0, step=1, label="Head")]
    s.outputs = [gr.Plot(label=plot), gr.Markdown()]
    return s


@_view("attention")
def _attention(keys: dict) -> StepView:
    return _one_head(views.attention, keys["attention"], "Text", copy.ATTENTION_TEXT, "Attention weights of one head")


@_view("knock-out-a-head")
def _knock_out_a_head(keys: dict) -> StepView:
    return _one_head(views.knock_out_head, keys["mlm"], "Text with a [MASK]", copy.KNOCK_OUT_TEXT,
                     "The blank, before and after", layer=lambda n: n - 1)


@_view("answer-across-layers")
def _answer_across_layers(keys: dict) -> StepView:
    s = StepView(_bound(views.answer_across_layers, keys["mlm"]))
    s.main_text = _text("Text with a [MASK]", copy.LAYERS_TEXT)
    s.inputs = [s.main_text]
    s.outputs = [gr.Plot(label="p(final answer) per layer"),
                 gr.Dataframe(label="Every layer through the MLM head", interactive=False), gr.Markdown()]
    return s


@_view("masking")
def _masking(keys: dict) -> StepView:
    s = StepView(_bound(views.masking, keys["mlm"]))
    s.main_text = _text("Text to corrupt", copy.MASKING_TEXT, 2)
    with gr.Row():
        s.inputs = [s.main_text, gr.Slider(0, 1, value=0.15, step=0.01, label="Selection rate"),
                    gr.Number(value=0, precision=0, minimum=0, label="Seed")]
    s.outputs = [gr.HTML(), gr.Markdown()]
    return s


@_view("mlm-loss")
def _mlm_loss(keys: dict) -> StepView:
    s = StepView(_bound(views.mlm_loss, keys["mlm"]))
    s.main_text = _text("Text", copy.MASKING_TEXT, 2)
    s.inputs = [s.main_text, gr.Number(value=0, precision=0, minimum=0, label="Seed")]
    s.outputs = [gr.Dataframe(label="Selected positions", interactive=False),
                 gr.Dataframe(label="Softmax at the first selected position, step by step", interactive=False),
                 gr.Markdown()]
    return s


@_view("nsp")
def _sentence_pair(keys: dict) -> StepView:
    s = StepView(_bound(views.sentence_pair, keys["pair"]))
    s.main_text = _text("Sentence A", copy.NSP_A)
    s.inputs = [s.main_text, _text("Sentence B", copy.NSP_B)]
    s.outputs = [gr.Dataframe(label="The pair and its contrast", interactive=False), gr.Markdown()]
    return s


@_view("variants")
def _variants(keys: dict) -> StepView:
    s = StepView(views.variants)
    s.main_text = _text("A masked sentence for every miniature", copy.VARIANTS_TEXT)
    s.inputs = [s.main_text]
    s.outputs = [gr.Plot(label="Learning curves"),
                 gr.Dataframe(label="Same data, same budget", interactive=False, wrap=True),
                 gr.Dataframe(label="Top 3 per model", interactive=False, wrap=True), gr.Markdown()]
    return s


@_view("pooling-retrieval")
def _pooling_retrieval(keys: dict) -> StepView:
    s = StepView(_bound(views.pooling_retrieval, keys["embeddings"]))
    s.main_text = _text("Sentences (a blank line starts a new group)", copy.POOLING_SENTENCES, 8)
    with gr.Row():
        s.inputs = [s.main_text, _text("Search query", copy.SEARCH_QUERY),
                    gr.Radio(["mean", "cls"], value="mean", label="Pooling for search")]
    s.outputs = [gr.Plot(label="Cosine similarity: [CLS] (left), mean (right)"),
                 gr.Dataframe(label="How well each pooling separates the groups", interactive=False),
                 gr.Dataframe(label="Search hits", interactive=False, wrap=True), gr.Markdown()]
    return s


@_view("fine-tuning")
def _fine_tuning(keys: dict) -> StepView:
    s = StepView(_bound(views.fine_tuning, keys["embeddings"]))
    s.main_text = _text("Classify my sentence", copy.HEAD_SENTENCE)
    s.inputs = [gr.Textbox(value=copy.HEAD_TASK, visible=False), s.main_text]
    s.outputs = [gr.Plot(label="Training and held-out accuracy"), gr.Markdown(), gr.HTML()]
    return s


@_view("sentence-encoder")
def _sentence_encoder(keys: dict) -> StepView:
    s = StepView(_bound(views.sentence_encoder, keys["live"]))
    s.main_text = _text("Your sentences (a blank line starts a new group)", copy.SENTENCE_GROUPS, 7)
    with gr.Row():
        s.inputs = [s.main_text, gr.Radio(list(SENTENCE_LOSSES), value="triplet", label="Loss"),
                    gr.Number(value=0.5, precision=2, minimum=0, maximum=4, label="Margin"),
                    gr.Number(value=copy.SENTENCE_STEPS, precision=0, minimum=1, maximum=1000, label="Steps"),
                    gr.Number(value=0, precision=0, minimum=0, label="Seed")]
    s.outputs = [gr.Plot(label="Loss per step"), gr.Plot(label="Held-out similarity, before and after"),
                 gr.Markdown()]
    return s


@_view("sentence-pairs")
def _sentence_pairs(keys: dict) -> StepView:
    s = StepView(_bound(views.sentence_pair_head, keys["live"]))
    s.main_text = _text("A", copy.PAIR_A)
    s.inputs = [gr.Textbox(value=copy.PAIR_TASK, visible=False), s.main_text,
                _text("B", copy.PAIR_B)]
    s.outputs = [gr.Plot(label="Pair head: training and held-out accuracy"), gr.Markdown(), gr.HTML()]
    return s


@_view("span-head")
def _span_head(keys: dict) -> StepView:
    s = StepView(_bound(views.span_head, keys["live"]))
    s.main_text = _text("Question", copy.SPAN_QUESTION)
    s.inputs = [s.main_text, _text("Context", copy.SPAN_CONTEXT, 2),
                gr.Number(value=copy.SPAN_STEPS, precision=0, minimum=1, maximum=2000, label="Training steps")]
    s.outputs = [gr.Plot(label="P(start) and P(end) per context token"), gr.HTML(), gr.Markdown()]
    return s


@_view("retrieve-then-read")
def _retrieve_then_read(keys: dict) -> StepView:
    s = StepView(_bound(views.retrieve_then_read, keys["reader"]))
    s.main_text = _text("Question", copy.READING_QUESTION)
    s.inputs = [s.main_text, gr.Slider(1, 10, value=3, step=1, label="Passages read (k)")]
    s.outputs = [gr.Markdown(), gr.Dataframe(label="Passages found and read", interactive=False, wrap=True,
                                column_widths=PASSAGE_COLUMN_WIDTHS),
                 gr.Plot(label="Cost per query, each part")]
    return s


@_view("distillation")
def _distillation(keys: dict) -> StepView:
    s = StepView(_bound(views.distillation, keys["live"]))
    s.main_text = gr.Number(value=copy.DISTILL_STEPS, precision=0, minimum=1, maximum=2000,
                            label="Steps per student")
    with gr.Row():
        s.inputs = [s.main_text, gr.Slider(0.05, 1, value=0.5, step=0.05, label="alpha (soft-target share)"),
                    gr.Slider(0.5, 10, value=2, step=0.5, label="Temperature")]
    s.outputs = [gr.Plot(label="Both students"), gr.Markdown()]
    return s


def joined_steps(steps=copy.STEPS, builders=None) -> list:
    """Each step with the function that builds its view, joined by slug; a step without a view
    or a view without a step is an error that names it."""
    builders = VIEWS if builders is None else builders
    slugs = [s.slug for s in steps]
    unviewed = [s for s in slugs if s not in builders]
    unstepped = [s for s in builders if s not in slugs]
    if unviewed or unstepped or len(set(slugs)) < len(slugs):
        raise ValueError(f"Lesson steps and views do not match: steps without a view {unviewed}, "
                         f"views without a step {unstepped}, slugs {slugs}")
    return [(step, builders[step.slug]) for step in steps]


def _step(slug: str) -> int:
    return SLUGS.index(slug) if slug in SLUGS else 0


def previous_step(slug: str) -> str:
    return SLUGS[max(_step(slug) - 1, 0)]


def next_step(slug: str) -> str:
    return SLUGS[min(_step(slug) + 1, len(SLUGS) - 1)]


def step_text(slug: str, waiting: bool = False) -> str:
    step = copy.STEPS[_step(slug)]
    text = f"### Step {_step(slug) + 1} of {len(SLUGS)}: {step.title}\n{step.text}"
    if waiting:
        text += "\n\n" + copy.WAITING.format(what=copy.LIVE_NEEDS if slug in copy.LIVE_STEPS else copy.NEEDS)
    return text + f"\n\n**Try this:** {step.try_this}"


def build_lessons_tab() -> LinkTarget:
    """The tab's layout and events; call inside ``gr.Blocks`` and ``gr.Tabs``."""
    keys = step_models(list_models())
    with gr.Tab(copy.TAB_LABEL, id="lessons") as tab:
        gr.Markdown(copy.INTRO)
        with gr.Row():
            back = gr.Button("← Previous", scale=1, interactive=False)
            step = gr.Dropdown([(f"{i}. {s.title}", s.slug) for i, s in enumerate(copy.STEPS, 1)],
                               value=SLUGS[0], label="Step", scale=4, elem_id="lesson-step")
            forward = gr.Button("Next →", scale=1)
        body = gr.Markdown(step_text(SLUGS[0]), elem_id="lesson-text")
        step_views = []
        for i, (lesson, build) in enumerate(joined_steps()):
            # a class, not an id: Gradio puts a group's elem_id on two nested elements
            with gr.Group(visible=i == 0, elem_classes=[f"lesson-{lesson.slug}"]) as group:
                view = build(keys)
                view.slug = lesson.slug
                view.group = group
                button = gr.Button("Recompute", variant="primary")
                with gr.Accordion(f"Check yourself: {lesson.question}", open=False):
                    gr.Markdown(lesson.answer)
            step_views.append(view)
            if view.run is not None:
                gr.on([button.click, view.main_text.submit], _runner(view), view.inputs, view.outputs,
                      api_visibility="private", trigger_mode="always_last")

        all_inputs = [c for v in step_views for c in v.inputs]
        all_outputs = [c for v in step_views for c in v.outputs]
        back.click(previous_step, step, step, api_visibility="private", queue=False)
        forward.click(next_step, step, step, api_visibility="private", queue=False)
        show = api_parameters(show_step(step_views), ["slug", *(
            f"{v.slug}_{getattr(c, 'label', None) or type(c).__name__}" for v in step_views for c in v.inputs)])
        inputs = [step, *all_inputs]
        outputs = [body, back, forward, *[v.group for v in step_views], *all_outputs]
        step.change(show, inputs, outputs, api_name="lesson_step", trigger_mode="always_last")
    return LinkTarget("lessons", tab, {"lesson": step}, [(show, inputs, outputs)])


def _runner(view: StepView):
    @on_gpu
    def run(*args):
        with readable_errors(f"Lesson step “{view.slug}”"):
            return view.run(*args)

    return run


def show_step(step_views: list[StepView]):
    """The handler that shows one step (text, buttons, its group) computed on its inputs."""
    sizes = [len(v.inputs) for v in step_views]

    @on_gpu
    def show(slug, *values):
        index = _step(slug)
        view = step_views[index]
        start = sum(sizes[:index])
        waiting = view.run is None
        if waiting:
            results = (gr.skip(),) * len(view.outputs)
        else:
            with readable_errors(f"Lesson step “{escape(view.slug)}”"):
                results = tuple(view.run(*values[start:start + sizes[index]]))
        updates = [step_text(slug, waiting), gr.update(interactive=index > 0),
                   gr.update(interactive=index < len(SLUGS) - 1)]
        updates += [gr.update(visible=i == index) for i in range(len(step_views))]
        for i, v in enumerate(step_views):
            updates += list(results) if i == index else [gr.skip()] * len(v.outputs)
        return tuple(updates)

    return show
