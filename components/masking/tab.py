"""The Masking lab tab: BERT's corruption policy simulated, measured, and scored."""

from __future__ import annotations

import random as _random

import gradio as gr
import pandas as pd

from models import (
    MAX_EPOCHS,
    MAX_TEXT_CHARS,
    TEXTBOOK_LOGITS,
    TEXTBOOK_TARGET,
    compare_policies,
    explain_loss,
    explain_masked_position,
    heldout_sentences,
    list_models,
    masked_lm_loss,
    masking_statistics,
    simulate_masking,
)

from ..shell.common import HEAVY, error_figure, model_choices, quoted, readable_errors, user_error
from ..shell.deep_links import LinkTarget, Section
from ..shell.server import on_gpu
from ..shell.view_cache import cached_view
from ..views import arithmetic_copy, arithmetic_plots
from . import copy
from . import plots
from .objectives import build_pair_section, build_rtd_section

STATS_SENTENCES = 1000
RATE_STEP = 0.05  # the split fields' arrow-key step (Gradio's default, 1, jumps 0 <-> 1)


def _simulate(text, model_key, rate, mask, rand, keep, whole_word, epochs, mode, seed):
    return simulate_masking(model_key, text, float(rate), float(mask), float(rand), float(keep),
                            bool(whole_word), int(epochs), mode == "dynamic", int(seed))


@cached_view()
def run_simulation(text, model_key, rate, mask, rand, keep, whole_word, epochs, mode, seed):
    """The token strips of every epoch (the ``simulate_masking`` API)."""
    with readable_errors("Masking"):
        sim = _simulate(text, model_key, rate, mask, rand, keep, whole_word, epochs, mode, seed)
        counts = [len(e.selected) for e in sim.epochs]
        summary = (
            f"{len(sim.tokens)} tokens ({sum(not s for s in sim.special)} eligible: special tokens are "
            f"never selected); selected per epoch: {', '.join(map(str, counts))}. "
            + ("Dynamic masking: a fresh draw each epoch." if sim.dynamic else
               "Static masking: the same draw every epoch.")
        )
        return plots.token_strip_html(sim), summary


@on_gpu
@cached_view()
def run_loss(text, model_key, rate, mask, rand, keep, whole_word, epochs, mode, seed, epoch):
    """The MLM loss at the selected positions of one epoch (the ``masked_lm_loss`` API)."""
    with readable_errors("The MLM loss"):
        if not 1 <= int(epoch or 0) <= int(epochs):
            raise user_error(f"Choose an epoch between 1 and {int(epochs)}.")
        sim = _simulate(text, model_key, rate, mask, rand, keep, whole_word, epochs, mode, seed)
        loss = masked_lm_loss(model_key, sim, int(epoch) - 1)
        first = loss.positions[0]
        unselected = sum(not s for s in sim.special) - len(loss.positions)
        explain = (
            f"**Loss = {loss.loss:.4f} nats**, the mean of −log p over the {len(loss.positions)} "
            f"selected position(s) only (the {unselected} unselected one(s) cost nothing); "
            f"top-1 accuracy {loss.top1_accuracy:.0%}.  \n"
            f"Worked example, position {first.position}: the model saw {quoted(first.shown)} where "
            f"{quoted(first.original)} was. Its logits at that position go through a softmax over "
            f"the whole vocabulary; p({quoted(first.original)}) = {first.p_original:.6f}, rank "
            f"{first.rank}, so −log p = −ln({first.p_original:.6f}) = {first.nll:.4f} nats."
        )
        return plots.loss_frame(loss), explain


@on_gpu
@cached_view()
def run_arithmetic(text, model_key, rate, mask, rand, keep, whole_word, epochs, mode, seed, epoch,
                   source, position):
    """exp, denominator, p and −ln p at one position (the ``explain_loss`` API)."""
    with readable_errors("The arithmetic"):
        if source == arithmetic_copy.ARITHMETIC_SOURCES[0]:
            result = explain_loss(TEXTBOOK_LOGITS, TEXTBOOK_TARGET)
        else:
            if not 1 <= int(epoch or 0) <= int(epochs):
                raise user_error(f"Choose an epoch between 1 and {int(epochs)}.")
            sim = _simulate(text, model_key, rate, mask, rand, keep, whole_word, epochs, mode, seed)
            chosen = int(position) if position else None  # 0 is [CLS], never selected: "the first"
            result = explain_masked_position(model_key, sim, int(epoch) - 1, chosen)
        return arithmetic_plots.arithmetic_frame(result), arithmetic_plots.arithmetic_text(result)


@on_gpu
@cached_view()
def run_compare(text, model_key, rate, whole_word, seed):
    """80/10/10 vs 100 % [MASK] vs all kept on the same selection (``compare_policies`` API)."""
    with readable_errors("The comparison"):
        results = compare_policies(model_key, text, float(rate), int(seed), bool(whole_word))
        return pd.DataFrame(
            [
                {"policy": name, "selected": len(r.positions), "loss (nats)": round(r.loss, 4),
                 "top-1 accuracy": round(r.top1_accuracy, 4)}
                for name, r in results.items()
            ]
        )


def run_statistics(model_key, rate, mask, rand, keep, whole_word, draws, seed):
    """Observed vs configured rates over many draws (the ``masking_statistics`` API)."""
    with readable_errors("The statistics"):
        sentences = heldout_sentences()[:STATS_SENTENCES]
        stats = masking_statistics(model_key, sentences, float(rate), float(mask), float(rand),
                                   float(keep), bool(whole_word), int(draws), int(seed))
        note = (
            f"{stats.sentences} built-in sentences × {stats.draws} draws. Special tokens selected: "
            f"{stats.special_selected}. Observed selection {stats.mean['selected']:.2%} ± "
            f"{stats.std['selected']:.2%} (configured {stats.configured['selected']:.0%})."
        )
        return plots.rates_figure(stats), note


RANDOM_B_WORDS = 40  # the held-out split's longest (60 words) made a 131-token pair with the default A


def random_b(seed: float):
    """A random sentence from the built-in set, for a negative NSP example: one of at most
    ``RANDOM_B_WORDS`` words, so that the app's own pick fits every pair model with a short A."""
    sentences = [s for s in heldout_sentences() if len(s.split()) <= RANDOM_B_WORDS]
    return _random.Random(int(seed or 0)).choice(sentences)


def build_masking_tab() -> LinkTarget:
    """The tab's layout and events: the corruption settings on top, shared by the first three
    sections (sub-tabs: the browser draws only the one on screen); the pair and replaced-token
    objectives in sections of their own."""
    models = list_models()
    with gr.Tab("Masking lab", id="masking") as tab:
        gr.Markdown(copy.MASKING_HELP)
        params = _settings(models)
        text, model, rate, mask, rand, keep, whole_word, epochs, mode, seed = params
        with gr.Tabs(elem_id="masking-sections"):
            with gr.Tab(copy.SECTION_CORRUPT, id="masking-corrupt"):
                simulation = _simulation_section(params)
            with gr.Tab(copy.SECTION_LOSS, id="masking-loss") as loss_tab:
                loss_views = _loss_section(params)
            with gr.Tab(copy.SECTION_STATS, id="masking-stats"):
                _statistics_section([model, rate, mask, rand, keep, whole_word], seed)
            with gr.Tab(copy.SECTION_PAIR, id="masking-pair"):
                build_pair_section(models, random_b)
            with gr.Tab(copy.SECTION_RTD, id="masking-rtd"):
                build_rtd_section(models)
        sections = [Section(copy.SECTION_LOSS.lower(), loss_tab, loss_views)]
        return LinkTarget("masking-lab", tab, {"text": text, "model": model, "rate": rate, "seed": seed},
                          [simulation], sections)


def _settings(models) -> list:
    """The text, the model and the corruption policy (the first three sections' inputs)."""
    usable = [m for m in models if m.available]
    mlm_default = next((m.key for m in models if m.default), usable[0].key if usable else None)
    with gr.Row():
        with gr.Column(scale=3):
            text = gr.Textbox(label="Text to corrupt", value=copy.MASKING_EXAMPLE, lines=3,
                              max_length=MAX_TEXT_CHARS)
            model = gr.Dropdown(model_choices(usable, need_mlm=True), value=mlm_default,
                                label="Model (its tokenizer cuts the pieces; its MLM head scores the loss: "
                                      "one marked (no MLM head) only cuts)")
        with gr.Column(scale=2):
            rate = gr.Slider(0, 1, value=0.15, step=0.01, label="Selection rate")
            with gr.Row():
                mask = gr.Number(value=0.8, minimum=0, maximum=1, step=RATE_STEP, label="→ [MASK]")
                rand = gr.Number(value=0.1, minimum=0, maximum=1, step=RATE_STEP, label="→ random")
                keep = gr.Number(value=0.1, minimum=0, maximum=1, step=RATE_STEP, label="→ kept")
            with gr.Row():
                whole_word = gr.Checkbox(value=False, label="Whole-word masking")
                mode = gr.Radio(["static", "dynamic"], value="dynamic", label="Across epochs")
            with gr.Row():
                epochs = gr.Slider(1, MAX_EPOCHS, value=3, step=1, label="Epochs")
                seed = gr.Number(value=0, precision=0, label="Seed")  # bounds: the core's own named check
    return [text, model, rate, mask, rand, keep, whole_word, epochs, mode, seed]


def _simulation_section(params: list) -> tuple:
    """The token strips, epoch by epoch; returns the section's view (computed on arrival)."""
    simulate = gr.Button("Simulate masking", variant="primary")
    summary = gr.Markdown()
    strips = gr.HTML(label="What the model sees, epoch by epoch", elem_id="masking-strips")
    simulate.click(run_simulation, params, [strips, summary], api_name="simulate_masking")
    return run_simulation, params, [strips, summary]


def _loss_section(params: list) -> list:
    """The loss at the selected positions, the three policies, and the softmax's arithmetic at
    one position; returns the section's views (computed when it is opened)."""
    text, model, rate, _, _, _, whole_word, _, _, seed = params
    gr.Markdown(copy.LOSS_HELP)
    with gr.Row():
        epoch = gr.Number(value=1, precision=0, label="Epoch to score")  # bounds: checked by name below
        score = gr.Button("Compute the MLM loss")
        compare = gr.Button("Compare 80/10/10, 100 % [MASK], all kept")
    explain = gr.Markdown()
    loss_table = gr.Dataframe(
        headers=["position", "original", "model saw", "fate", "p(original)", "rank", "-log p (nats)",
                 "model's top guess"],
        label="Selected positions", interactive=False,
    )
    compare_table = gr.Dataframe(
        headers=["policy", "selected", "loss (nats)", "top-1 accuracy"],
        label="Same text, same selection, three policies", interactive=False,
    )
    score.click(run_loss, params + [epoch], [loss_table, explain], api_name="masked_lm_loss")

    gr.Markdown(arithmetic_copy.ARITHMETIC_HELP)
    with gr.Row():
        source = gr.Radio(arithmetic_copy.ARITHMETIC_SOURCES, value=arithmetic_copy.ARITHMETIC_SOURCES[0],
                          label="Explain")
        position = gr.Number(value=0, precision=0,  # bounds: the core's named check
                             label="Token position, for a real position (0: the first selected one)")
        show = gr.Button("Show the arithmetic")
    arithmetic_text = gr.Markdown(elem_id="arithmetic-text")
    arithmetic_table = gr.Dataframe(label="Softmax, step by step", interactive=False,
                                    elem_id="arithmetic-table")
    show.click(run_arithmetic, params + [epoch, source, position], [arithmetic_table, arithmetic_text],
               api_name="explain_loss")
    compare_inputs = [text, model, rate, whole_word, seed]
    compare.click(run_compare, compare_inputs, compare_table, api_name="compare_policies")
    return [
        (run_loss, params + [epoch], [loss_table, explain]),
        (run_arithmetic, params + [epoch, source, position], [arithmetic_table, arithmetic_text]),
        (run_compare, compare_inputs, compare_table),
    ]


def _statistics_section(policy: list, seed) -> None:
    """Observed vs configured rates over many draws (on request: a longer job)."""
    gr.Markdown(copy.STATS_HELP)
    with gr.Row():
        draws = gr.Slider(10, 1000, value=200, step=10, label="Draws")
        measure = gr.Button("Measure the rates")
    stats_note = gr.Markdown()
    stats_plot = gr.Plot(error_figure(copy.STATS_WAITING), label="Configured vs observed rates")
    measure.click(run_statistics, policy + [draws, seed], [stats_plot, stats_note],
                  api_name="masking_statistics", **HEAVY)
