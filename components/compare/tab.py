"""The Compare tab: layout and event wiring; the work is done by ``models.compare.side_by_side`` and
``models.compare.benchmark``, the views by ``components.compare.plots``."""

from __future__ import annotations

import gradio as gr

from models import (
    DEFAULT_LENGTHS,
    MAX_TEXT_CHARS,
    SPECS,
    architecture_table,
    benchmark_models,
    compare_fill_mask,
    compare_tokens,
    decoder_comparison,
    default_selection,
    encoder_vs_decoder,
    get_device,
    limits_for,
    list_models,
    training_recipes,
    zoo_comparison,
)

from ..shell.common import HEAVY, error_figure, model_choices, readable_errors
from ..shell.deep_links import LinkTarget, Section
from ..shell.server import on_gpu
from ..shell.view_cache import cached_view
from ..views.knowledge import build_compare_knowledge
from . import copy, decoder_plots
from . import plots as views


def registry_models(models) -> list:
    """The registry's own models: operator-added Hub models have no stored config to compare."""
    keys = {spec.key for spec in SPECS}
    return [m for m in models if m.key in keys]


def show_architecture():
    """The architecture table (the ``architecture_table`` API)."""
    with readable_errors("Architecture table"):
        return views.architecture_frame(architecture_table())


@on_gpu
@cached_view()
def run_compare_fill_mask(model_keys, text: str, top_k: float):
    """Side-by-side top-k, agreement, models left out (the ``compare_fill_mask`` API)."""
    with readable_errors("Compare fill-mask"):
        result = compare_fill_mask(model_keys, text, int(top_k))
        return views.fill_mask_frame(result), views.agreement_html(result), views.skipped_html(result.skipped)


@cached_view()
def run_compare_tokens(model_keys, text: str):
    """Each model's pieces, counts, models left out (the ``compare_tokens`` API)."""
    with readable_errors("Compare tokens"):
        result = compare_tokens(model_keys, text)
        return views.tokens_html(result), views.tokens_frame(result), views.skipped_html(result.skipped)


@on_gpu
def run_benchmark(model_keys, lengths, batch_size: float, progress=gr.Progress()):
    """Time vs length chart, timings table, notes (the ``benchmark_forward`` API)."""
    with readable_errors("Benchmark"):
        keys = list(model_keys or [])
        results, refused = benchmark_models(
            keys,
            [int(n) for n in lengths or []],
            int(batch_size),
            on_model=lambda i, key: progress(i / max(len(keys), 1), desc=f"Timing {key}…"),
        )
        return (
            views.benchmark_figure(list(results)),
            views.benchmark_frame(list(results)),
            views.benchmark_notes_html(list(results), refused),
        )


def default_lengths(model_keys) -> list[str]:
    """The lengths the Speed section opens with: ``DEFAULT_LENGTHS``, or where a model chosen by
    default reads fewer tokens, the longest choices that every one of them reads, so each line
    gets its points instead of notes that the lengths were skipped."""
    contexts = {f.model_key: f.max_context for f in architecture_table()}
    shortest = min((contexts[k] for k in model_keys if k in contexts), default=max(DEFAULT_LENGTHS))
    fitting = [n for n in copy.LENGTH_CHOICES if int(n) <= shortest]
    return fitting[-len(DEFAULT_LENGTHS):]


def show_zoo():
    """Learning curves, table and notes of the mini zoo (the ``zoo_comparison`` API)."""
    with readable_errors("Mini zoo comparison"):
        entries = zoo_comparison()
        if not entries:
            return None, None, copy.ZOO_MISSING
        return views.zoo_curves_figure(entries), views.zoo_frame(entries), views.zoo_findings_md(entries)


def show_decoder():
    """The zoo's decoder twin: its learning curve and run (the ``decoder_comparison`` API)."""
    with readable_errors("The zoo's decoder"):
        entries = decoder_comparison()
        if not entries:
            return None, copy.DECODER_MISSING
        return decoder_plots.decoder_curve_figure(entries), decoder_plots.decoder_note(entries)


def show_versus():
    """The measured encoder/decoder table of the mini pair (the ``encoder_vs_decoder`` API)."""
    with readable_errors("Encoder vs decoder"):
        table = encoder_vs_decoder()
        return decoder_plots.versus_frame(table), decoder_plots.versus_md(table)


def knowledge_pair(models) -> list[str]:
    """The two models the knowledge comparison opens with: the default MLM and another one."""
    usable = [m.key for m in models if m.can("mlm") and m.available]
    default = [m.key for m in models if m.default and m.key in usable]
    return (default + [k for k in usable if k not in default])[:2]


def build_compare_tab() -> LinkTarget:
    """The tab's layout and events; call inside ``gr.Blocks`` and ``gr.Tabs``."""
    models = registry_models(list_models())
    with gr.Tab("Compare", id="compare") as tab:
        gr.Markdown(copy.COMPARE_HELP)
        with gr.Tabs(elem_id="compare-sections"):
            with gr.Tab(copy.SECTION_SAME_INPUT, id="compare-same-input"):
                gr.Markdown(copy.SAME_INPUT_HELP)
                chosen = gr.CheckboxGroup(
                    model_choices(models, need_mlm=True, by_key=True, usable_first=False),
                    value=default_selection(models, "mlm"), label="Models to compare", elem_id="compare-models",
                )
                text = gr.Textbox(label="Text for every model", value=copy.COMPARE_EXAMPLE, lines=2,
                                  max_length=MAX_TEXT_CHARS)
                with gr.Row():
                    top_k = gr.Slider(1, 20, value=5, step=1, label="Top-k")
                    predict = gr.Button("Compare predictions", variant="primary")
                    pieces = gr.Button("Compare tokens")
                skipped = gr.HTML(elem_id="compare-skipped")
                side = gr.Dataframe(label="Top-k per model", elem_id="compare-fill-mask", interactive=False,
                                    wrap=True)
                agreement = gr.HTML(elem_id="compare-agreement")
                tokens_view = gr.HTML(elem_id="compare-tokens")
                tokens_table = gr.Dataframe(label="Pieces per model", elem_id="compare-tokens-table",
                                            interactive=False, wrap=True,
                                            column_widths=views.TOKENS_COLUMN_WIDTHS)
            with gr.Tab(copy.SECTION_KNOWLEDGE, id="compare-knowledge-section") as knowledge_tab:
                knowledge = build_compare_knowledge(models, knowledge_pair(models))
            with gr.Tab(copy.SECTION_ARCHITECTURES, id="compare-architectures"):
                gr.Markdown(copy.ARCHITECTURE_HELP)
                arch = gr.Dataframe(
                    value=show_architecture(), label="Architectures (computed from configs)",
                    elem_id="compare-architecture", interactive=False, wrap=True,
                )
                recompute = gr.Button("Recompute from the configs")
                gr.Markdown(copy.RECIPES_HELP)
                gr.Dataframe(
                    value=views.recipes_frame(training_recipes()), label="Training recipes (papers)",
                    elem_id="compare-recipes", interactive=False, wrap=True,
                )
            with gr.Tab(copy.SECTION_SPEED, id="compare-speed"):
                gr.Markdown(copy.SPEED_HELP)
                encoders = tuple(m for m in models if not m.is_decoder)  # the speed bench times encoders
                timed = default_selection(encoders, "any")
                bench_models = gr.CheckboxGroup(
                    model_choices(encoders, by_key=True, usable_first=False),
                    value=timed,
                    label="Models to time (unavailable ones run random-init: timing only)",
                    elem_id="compare-bench-models",
                )
                with gr.Row():
                    lengths = gr.CheckboxGroup(
                        copy.LENGTH_CHOICES, value=default_lengths(timed), label="Sequence lengths"
                    )
                    batch = gr.Slider(1, limits_for(get_device()).max_batch, value=1, step=1, label="Batch size")
                    run = gr.Button("Time forward passes", variant="primary")
                bench_plot = gr.Plot(error_figure(copy.BENCH_WAITING), label="Forward time vs sequence length",
                                     elem_id="compare-bench-plot")
                bench_notes = gr.HTML(elem_id="compare-bench-notes")
                bench_table = gr.Dataframe(views.benchmark_frame([]), label="Timings", elem_id="compare-bench-table",
                                           interactive=False, wrap=True)
            with gr.Tab(copy.SECTION_ZOO, id="compare-zoo"):
                gr.Markdown(copy.ZOO_HELP)
                zoo_plot_value, zoo_table_value, zoo_notes_value = show_zoo()
                zoo_plot = gr.Plot(value=zoo_plot_value, label="Learning curves of the seven families",
                                   elem_id="compare-zoo-plot")
                zoo_table = gr.Dataframe(value=zoo_table_value, label="Same data, same budget",
                                         elem_id="compare-zoo-table", interactive=False, wrap=True)
                zoo_notes = gr.Markdown(zoo_notes_value, elem_id="compare-zoo-notes")
                zoo_reload = gr.Button("Reload the zoo's records")
                gr.Markdown(copy.DECODER_HELP)
                decoder_plot_value, decoder_notes_value = show_decoder()
                gr.Plot(value=decoder_plot_value, label="The storyteller's learning curve", elem_id="compare-decoder-plot")
                gr.Markdown(decoder_notes_value, elem_id="compare-decoder-notes")
                versus_run = gr.Button("Measure mini-modernbert against mini-decoder")
                versus_table = gr.Dataframe(label="Encoder vs decoder, measured", elem_id="compare-versus-table",
                                            interactive=False, wrap=True)
                versus_notes = gr.Markdown(elem_id="compare-versus-notes")

        zoo_reload.click(show_zoo, None, [zoo_plot, zoo_table, zoo_notes], api_name="zoo_comparison")
        versus_run.click(show_versus, None, [versus_table, versus_notes], api_name="encoder_vs_decoder", **HEAVY)
        recompute.click(show_architecture, None, arch, api_name="architecture_table")
        predict.click(
            run_compare_fill_mask, [chosen, text, top_k], [side, agreement, skipped], api_name="compare_fill_mask"
        )
        pieces.click(
            run_compare_tokens, [chosen, text], [tokens_view, tokens_table, skipped], api_name="compare_tokens"
        )
        run.click(
            run_benchmark, [bench_models, lengths, batch], [bench_plot, bench_table, bench_notes],
            api_name="benchmark_forward", **HEAVY,
        )
        arrival = [(run_compare_fill_mask, [chosen, text, top_k], [side, agreement, skipped]),
                   (run_compare_tokens, [chosen, text], [tokens_view, tokens_table, skipped])]
        sections = [Section(copy.SECTION_KNOWLEDGE.lower(), knowledge_tab, [knowledge])]
        return LinkTarget("compare", tab, {"text": text, "models": chosen}, arrival, sections)
