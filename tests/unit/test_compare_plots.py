"""Compare tab views: escaped tokens, honest labels, table shapes (small hand-made results)."""

from __future__ import annotations

from models import (
    BenchmarkPoint,
    BenchmarkResult,
    CompareTokensResult,
    ModelPieces,
    SkippedModel,
    architecture_table,
    training_recipes,
)
from models.benchmark import PRETRAINED, RANDOM_INIT
from components import compare_plots as views

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
    pieces = ModelPieces("splade-tiny", "WordPiece", ("[CLS]", EVIL, "##ing", "[SEP]"), (EVIL, "##ing"), 2, 1)
    html = views.tokens_html(CompareTokensResult("t", (pieces,), ()))
    assert EVIL not in html and "&lt;img src=x" in html
    assert html.count("class='piece'") == 2
    assert "#fde2c8" in html.split("##ing")[0].rsplit("<span", 1)[1]  # the ## piece is orange
    assert "2 pieces, 1 continue a word" in html


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


def test_architecture_and_recipes_frames():
    facts = architecture_table()
    frame = views.architecture_frame(facts)
    assert list(frame["model"]) == [f.model_key for f in facts]
    assert list(frame["params (encoder)"]) == [f.params_total for f in facts]
    recipes = views.recipes_frame(training_recipes())
    assert all("arXiv:" in c for c in recipes["paper"])
