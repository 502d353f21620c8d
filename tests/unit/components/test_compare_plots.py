"""Compare tab views: escaped tokens, honest labels, table shapes (small hand-made results)."""

from __future__ import annotations

import dataclasses

from models import BenchmarkResult, CompareTokensResult, SkippedModel, TrainingRecipe, training_recipes
from models.compare.benchmark import BenchmarkPoint
from models.compare.side_by_side import ModelPieces
from models.compare.architecture import architecture_facts
from models.compare.benchmark import PRETRAINED, RANDOM_INIT
from components.compare import plots as views
from models import get_spec

EVIL = "<img src=x onerror=alert(1)>"


def _bench(key: str, weights: str, reason: str = "") -> BenchmarkResult:
    points = tuple(
        BenchmarkPoint(n, 1, n / 10, n / 12, n / 8, 5, n / (n / 10000), 1.5) for n in (64, 128)
    )
    return BenchmarkResult(
        key, key, weights, "cpu", "float32", "sdpa", 10, 512, points, ((1024, "beyond"),), 1, "m", reason
    )


def test_benchmark_notes_say_why_weights_are_random():
    html = views.benchmark_notes_html([_bench("bert-base", RANDOM_INIT, f"offline {EVIL}")], ())
    assert f"{RANDOM_INIT} (real weights unavailable: offline &lt;img" in html and EVIL not in html
    assert "1024 tokens: beyond" in html
    figure = views.benchmark_figure([_bench("bert-base", RANDOM_INIT, "offline")])
    assert figure.data[0].name == f"bert-base ({RANDOM_INIT})"  # the legend stays short


def test_tokens_html_escapes_pieces_and_marks_continuations():
    pieces = ModelPieces("splade-tiny", "WordPiece", ("[CLS]", EVIL, "##ing", "[SEP]"), (EVIL, "##ing"), 2, 1,
                         (False, True))
    html = views.tokens_html(CompareTokensResult("t", (pieces,), ()))
    assert EVIL not in html and "&lt;img src=x" in html
    assert html.count("class='piece'") == 2
    assert "#fde2c8" in html.split("##ing")[0].rsplit("<span", 1)[1]  # the ## piece is orange
    assert "2 pieces, 1 continue a word" in html


def test_tokens_table_has_one_width_per_column_and_fills_the_row():
    """The Compare tab's pieces table: its fixed widths match its columns and add up to 100 %."""
    pieces = ModelPieces("splade-tiny", "WordPiece", ("[CLS]", "walk", "##ing", "[SEP]"), ("walk", "##ing"), 2, 1,
                         (False, True))
    frame = views.tokens_frame(CompareTokensResult("walking", (pieces,), ()))
    assert list(frame.columns) == views.TOKENS_COLUMNS
    assert frame.iloc[0].tolist() == ["splade-tiny", "WordPiece", 2, 1, 4, "walk ##ing"]
    assert len(views.TOKENS_COLUMN_WIDTHS) == len(frame.columns)
    assert sum(float(w.rstrip("%")) for w in views.TOKENS_COLUMN_WIDTHS) == 100


def test_skipped_html_escapes_reasons():
    html = views.skipped_html((SkippedModel("bert-base", EVIL),))
    assert EVIL not in html and "&lt;img" in html and "bert-base" in html
    assert views.skipped_html(()) == ""


def test_benchmark_figure_marks_random_init():
    fig = views.benchmark_figure([_bench("splade-tiny", PRETRAINED), _bench("bert-base", RANDOM_INIT)])
    names = [t.name for t in fig.data]
    assert names == ["splade-tiny", f"bert-base ({RANDOM_INIT})"]
    assert fig.data[0].line.dash == "solid" and fig.data[1].line.dash == "dash"
    assert list(fig.data[1].x) == [64, 128]
    frame = views.benchmark_frame([_bench("bert-base", RANDOM_INIT)])
    assert list(frame["weights"]) == [RANDOM_INIT] * 2


def test_architecture_frame_columns_and_yes_no():
    splade = architecture_facts(get_spec("splade-tiny"))
    no_head = dataclasses.replace(splade, model_key="headless", mlm_head_released=False)
    frame = views.architecture_frame((splade, no_head))
    assert list(frame.columns) == [
        "model", "family", "params (encoder)", "embedding", "layers & norms", "pooler", "MLM head",
        "MLM head released", "layers", "layer weight sets", "hidden", "heads", "FFN", "embedding width",
        "vocab", "tokenizer", "max context", "positions", "activation", "attention",
        "tokenizer kind from", "config",
    ]
    assert list(frame["model"]) == ["splade-tiny", "headless"]
    assert list(frame["MLM head released"]) == ["yes", "no"]  # not True/False
    assert frame["layers"].tolist() == [2, 2]  # splade-tiny is a 2-layer BERT
    assert frame["params (encoder)"].tolist() == [f"{splade.params_total:,}"] * 2 and "," in frame["params (encoder)"][0]


def test_recipes_frame_marks_figures_not_transcribed():
    recipe = TrainingRecipe(
        model="X", applies_to=("a", "b"), paper_title="T", paper_authors="Ann Lee, Bo Chen",
        paper_year=2020, arxiv="2001.00001", data="web", data_size="1 GB", objective="MLM",
        nsp="no", masking=None, masking_rate="15 %", distillation="no", batch_size=None,
        steps="10", sequence_length=None, notes="",
    )
    row = views.recipes_frame((recipe,)).iloc[0]
    assert row["registry keys"] == "a, b" and row["data"] == "web (1 GB)"
    assert [row["masking"], row["batch size"], row["sequence length"]] == ["not transcribed"] * 3
    assert row["masking rate"] == "15 %" and row["steps"] == "10"
    assert row["paper"] == "Ann Lee et al. (2020). T. arXiv:2001.00001"
    assert all("arXiv:" in c for c in views.recipes_frame(training_recipes())["paper"])


def _records() -> dict:
    import json

    from models.registry.zoo_entries import ZOO_KEYS, zoo_folder

    return {k: json.loads((zoo_folder(k) / "record.json").read_text()) for k in ZOO_KEYS}


def test_zoo_curves_show_score_and_training_loss_against_tokens():
    """Two panels over the same tokens: the score (top) and each record's training loss (bottom)."""
    from models import zoo_comparison

    entries = zoo_comparison()
    records = _records()
    figure = views.zoo_curves_figure(entries)
    with_baseline = [e for e in entries if "unigram" in records[e.key]]
    assert len(figure.data) == 3 * len(entries) + len(with_baseline)
    for e in with_baseline:  # the word-frequency baseline on the curve's own words: flat, in the family's colour
        (flat,) = [t for t in figure.data if t.legendgroup == "baseline" and t.hovertemplate.startswith(e.key)]
        same_words = records[e.key].get("unigram_tuning_split") or records[e.key]["unigram"]
        assert list(flat.y) == [100 * same_words["word_top1"]] * 2
        assert list(flat.x) == [0, records[e.key]["curve"][-1]["tokens"] / 1e6] and flat.yaxis == "y"
    assert sum(bool(t.showlegend) for t in figure.data if t.legendgroup == "baseline") == min(1, len(with_baseline))
    for e in entries:  # the table's score (the final model on the other held-out words): a star at the curve's end
        (star,) = [t for t in figure.data if t.legendgroup == "final" and t.hovertemplate.startswith(e.key)]
        assert list(star.y) == [100 * records[e.key]["heldout"]["word_top1"]]
        assert list(star.x) == [records[e.key]["curve"][-1]["tokens"] / 1e6] and star.yaxis == "y"
    top_title = figure.layout.annotations[0].text
    if all("tuning_split" in r for r in records.values()):  # the curves' words named, not called the table's
        words = {r["curve"][-1]["words"] for r in records.values()}
        assert "tuning split" in top_title and f"{min(words):,}" in top_title
    assert not top_title.startswith("held-out")
    for e in entries:
        score, loss = [t for t in figure.data if t.legendgroup == e.key]
        curve = records[e.key]["curve"]
        assert list(score.x) == list(loss.x) == [p["tokens"] / 1e6 for p in curve]
        assert list(score.y) == [100 * p["word_top1"] for p in curve]
        assert list(loss.y) == [p["train_loss"] for p in curve]
        assert (score.yaxis, loss.yaxis) == ("y", "y2") and score.line.color == loss.line.color
        assert loss.showlegend is False  # one legend entry per family


def test_zoo_frame_has_tokens_per_second_and_whose_score():
    from models import zoo_comparison

    frame = views.zoo_frame(zoo_comparison()).set_index("model")
    for key, r in _records().items():
        assert frame.loc[key, "tokens/s"] == f"{round(r['tokens'] / (60 * r['wall_minutes'])):,}"
        assert frame.loc[key, "training tokens"] == f"{r['tokens']:,}"  # thousands separated
        assert frame.loc[key, "training TFLOPs"] == round(r["flops"] / 1e12, 1)
        generator = r["parameters"].get("generator")
        width = r["config"]["shape"]["electra_generator_hidden"]
        assert frame.loc[key, "score of"] == (f"its {width}-wide generator" if generator else "the model")
    assert frame.loc["mini-electra", "score of"].endswith("generator")
    with_baseline = {k: r for k, r in _records().items() if "unigram" in r}
    if with_baseline:  # the baseline's row: the mean of the families' word-frequency scores
        scores = [100 * r["unigram"]["word_top1"] for r in with_baseline.values()]
        assert frame.loc["word-frequency baseline", "held-out whole-word top-1 %"] == round(sum(scores) / len(scores), 1)
        for key, r in with_baseline.items():
            assert frame.loc[key, "loss per masked piece"] == round(r["heldout"]["piece_loss"], 2)


def test_zoo_findings_say_which_families_left_the_word_frequency_plateau():
    """The closing note is written from the records: a family counts as learnt when its loss
    per masked piece is at least 1 nat below its word-frequency baseline on the same words."""
    from models import zoo_comparison

    entries = zoo_comparison()
    note = views.zoo_findings_md(entries)
    records = _records()
    learnt_part, _, stuck_part = note.partition("Still on or near it")
    for key, r in records.items():
        if "unigram" not in r:
            continue
        gap = r["unigram"]["piece_loss"] - r["heldout"]["piece_loss"]
        assert f"**{key}** ({100 * r['heldout']['word_top1']:.1f} %, {gap:+.2f} nats)" in (
            learnt_part if gap >= 1.0 else stuck_part)
    for key, r in records.items():
        if r.get("pair_heldout"):
            assert f"{key} {100 * r['pair_heldout']['accuracy']:.1f} %" in note
        reference = f"a bag-of-words order model on the same pairs {100 * r.get('pair_reference', {}).get('accuracy', 0):.1f} %"
        assert (reference in note) == bool(r.get("pair_reference"))  # SOP's reference (`scripts.zoo heads sop`), from the record


def test_zoo_findings_name_the_families_that_began_with_the_locality_start():
    import dataclasses

    from models import zoo_comparison
    from models.registry.zoo_entries import TABLE_FAMILIES

    entries = zoo_comparison()
    records = _records()
    started = [k for k, r in records.items() if k in TABLE_FAMILIES and r["config"].get("position_init") == "local"]
    note = views.zoo_findings_md(entries)
    assert ("began with the locality start" in note) == bool(started)
    # whichever zoo ships: the sentence names exactly the entries flagged, in their order
    flagged = tuple(dataclasses.replace(e, locality_start=e.key in ("mini-bert", "mini-albert")) for e in entries)
    assert "mini-bert, mini-albert (a learnt absolute position table) began with the locality start" in \
        views.zoo_findings_md(flagged)
    assert "ALBERT's embedding mapping norm-preserving" in views.zoo_findings_md(flagged)
    only_bert = tuple(dataclasses.replace(e, locality_start=e.key == "mini-bert") for e in entries)
    assert "ALBERT's embedding mapping" not in views.zoo_findings_md(only_bert)  # named only when it began so
    assert "locality start" not in views.zoo_findings_md(
        tuple(dataclasses.replace(e, locality_start=False) for e in entries))


def test_zoo_findings_say_how_the_tuning_search_ran():
    """The search is described from each record's tuning block: its grid, tokens per trial, and
    whether each trial was the opening of its own full run (the search's prefix search)."""
    import dataclasses

    from models import zoo_comparison
    from models.registry.zoo_entries import search_of

    prefix = {"grid": "lr=5e-4,1e-3 dropout=0", "trial_tokens": 1_250_000, "search_kind": "prefix"}
    assert search_of(prefix) == ("lr=5e-4,1e-3 dropout=0, 1,250,000 tokens per trial, each trial the opening "
                                 "of its own full run (the chosen one went on)")
    older = {"grid": "lr=1e-3", "trial_tokens": 500_000}  # records written before the prefix search
    assert search_of(older) == "lr=1e-3, 500,000 tokens per trial, each trial from scratch on a schedule of its own"
    assert search_of(None) == ""
    entries = tuple(dataclasses.replace(e, tuning="lr 0.001", tuning_search=search_of(prefix))
                    for e in zoo_comparison())
    assert f"Each family got the same tuning search ({search_of(prefix)}); chosen: mini-bert lr 0.001" in \
        views.zoo_findings_md(entries)
    mixed = (dataclasses.replace(entries[0], tuning_search=search_of(older)),) + entries[1:]
    assert "The families' tuning searches differ (each card gives its own); chosen:" in views.zoo_findings_md(mixed)


def _built(build) -> dict:
    """The page's components as built, by elem_id or label: their initial config."""
    import gradio as gr

    with gr.Blocks() as demo, gr.Tabs():
        build()
    found = {}
    for c in demo.config["components"]:
        props = c.get("props", {})
        for name in (props.get("elem_id"), props.get("label")):
            if name:
                found[name] = props
    return found


def test_speed_defaults_time_every_default_model_at_every_default_length():
    """Each default length is one every model checked by default reads (offline: the mini zoo,
    128 tokens), so no line opens with skipped lengths; the empty Timings table has its columns."""
    from components.compare.tab import build_compare_tab

    page = _built(build_compare_tab)
    models, lengths = page["compare-bench-models"]["value"], [int(n) for n in page["Sequence lengths"]["value"]]
    assert models and len(lengths) >= 3
    for key in models:
        assert max(lengths) <= architecture_facts(get_spec(key)).max_context, key
    empty = page["compare-bench-table"]["value"]
    assert empty["headers"] == list(views.benchmark_frame([]).columns) and "median ms" in empty["headers"]
    assert empty["data"] == []


def test_pretraining_probe_table_opens_with_its_column_names():
    from components.pretrain.tab import build_pretrain_tab

    empty = _built(build_pretrain_tab)["Its guesses on probe sentences"]["value"]
    assert empty["headers"] == ["sentence", "top guesses"] and empty["data"] == []
