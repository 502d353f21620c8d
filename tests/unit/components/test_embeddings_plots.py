"""Embeddings figure and table builders on small hand-made results (no model), and the
tab's CSV files."""

from __future__ import annotations

import os

import numpy as np
import pytest

from components.embeddings import plots
from components.embeddings.tab import _csv_file
from models import SeparationScore, SimilarityResult, WordInContextResult

SENTENCES = ("<b>bold</b> claim", "=HYPERLINK(\"x\")", "plain %{y}")


def result(pooling: str, scale: float) -> SimilarityResult:
    m = np.array([[1, 0.5, 0.2], [0.5, 1, 0.1], [0.2, 0.1, 1]], dtype=np.float32) * scale
    np.fill_diagonal(m, 1)
    return SimilarityResult("k", SENTENCES, pooling, 6, m)


def test_heatmaps_side_by_side_on_one_scale_with_escaped_hovers():
    fig = plots.similarity_heatmaps([result("cls", 1.0), result("mean", -1.0)], groups=[0, 0, 1])
    assert [t.type for t in fig.data] == ["heatmap", "heatmap"]
    assert fig.layout.coloraxis.cmin == -0.5 and fig.layout.coloraxis.cmax == 1.0
    for t in fig.data:  # each cell's hover: its row's and its column's sentence, escaped
        assert t.hovertemplate.startswith("%{y}<br>%{x}<br>") and t.customdata is None
        assert list(t.x) == list(t.y) == ["1. &lt;b&gt;bold&lt;/b&gt; claim", '2. =HYPERLINK("x")', "3. plain %{y}"]
    for axis in (fig.layout.xaxis, fig.layout.yaxis2):  # the axes show the numbers only
        assert list(axis.ticktext) == ["1", "2", "3"] and list(axis.tickvals) == list(fig.data[0].x)
    assert len(fig.layout.shapes) == 4  # one group edge, two lines per heatmap
    assert [a.text for a in fig.layout.annotations] == ["[CLS] pooling, layer 6", "mean pooling, layer 6"]


def test_matrix_frame_is_wide_and_spreadsheet_safe():
    frame = plots.matrix_frame([result("cls", 1.0), result("mean", 0.5)])
    assert list(frame.columns) == ["model", "pooling", "layer", "index", "sentence", "1", "2", "3"]
    assert frame["pooling"].tolist() == ["cls"] * 3 + ["mean"] * 3
    assert frame["sentence"].iloc[1] == "'=HYPERLINK(\"x\")"
    assert frame.iloc[4][["1", "2", "3"]].tolist() == pytest.approx([0.25, 1.0, 0.05])  # 0.5 x row 2


def test_csv_files_are_named_by_content_and_bounded(tmp_path):
    frames = [plots.matrix_frame([result("cls", scale)]) for scale in (1.0, 0.5, 0.25, 0.125)]
    first = _csv_file(frames[0], tmp_path, keep=2)
    assert _csv_file(frames[0], tmp_path, keep=2) == first  # a repeat: the same file, no new one
    assert len(list(tmp_path.iterdir())) == 1
    with open(first, encoding="utf-8") as f:
        assert "'=HYPERLINK" in f.read()  # the formula-safe cell survives
    os.utime(first, (1, 1))  # distinct ages on any file system: the first is the oldest
    paths = []
    for k, frame in enumerate(frames[1:], start=1):
        paths.append(_csv_file(frame, tmp_path, keep=2))
        os.utime(paths[-1], (k * 1000, k * 1000))
    assert sorted(str(p) for p in tmp_path.iterdir()) == sorted(paths[-2:])  # only the newest 2


def test_separation_frame_columns():
    s = SeparationScore(0.8, 0.2, 0.6, 0.95, 3, 12, same_topic=0.3, unrelated=0.1, auc_unrelated=1.0)
    frame = plots.separation_frame({"cls": s, "mean": s})
    assert frame["pooling"].tolist() == ["[CLS] pooling", "mean pooling"]
    assert frame["gap"].tolist() == [0.6, 0.6] and "unrelated (other topic)" in frame


def word_result(n: int) -> WordInContextResult:
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(n, 3, 4)).astype(np.float32)
    unit = vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)
    cosine = np.einsum("ild,jld->lij", unit, unit)
    return WordInContextResult("k", "<i>w</i>", tuple(f"s{i} <i>w</i> %{{y}}" for i in range(n)),
                               ((0, 1),) * n, (("w",),) * n, (0, 1, 2), vectors, cosine)


def test_layer_chart_lines_per_pair_or_a_band():
    few = plots.layer_chart(word_result(3))
    assert len(few.data) == 4 and few.data[-1].name == "mean over pairs"  # 3 pairs + mean
    unit = word_result(3).vectors / np.linalg.norm(word_result(3).vectors, axis=-1, keepdims=True)
    pairs = [unit[a] @ unit[b].T for a, b in ((0, 1), (0, 2), (1, 2))]  # (3, 3) each: layer x layer
    expected = np.mean([np.diag(p) for p in pairs], axis=0)  # (3,) mean over pairs, layer by layer
    np.testing.assert_allclose(few.data[-1].y, expected, atol=1e-6)
    # Sentences reach the hover as data, never as template: "%{y}" stays text.
    assert all("%{customdata}" in t.hovertemplate and "<i>" not in t.hovertemplate for t in few.data[:3])
    assert few.data[0].customdata[0] == "s0 &lt;i&gt;w&lt;/i&gt; %{y} | s1 &lt;i&gt;w&lt;/i&gt; %{y}"
    assert "<i>" not in few.layout.title.text and "&lt;i&gt;" in few.layout.title.text
    many = plots.layer_chart(word_result(6))  # 15 pairs: a min-max band and the mean
    assert len(many.data) == 3 and "15 pairs" in many.data[1].name


def test_scatter_labels_are_escaped():
    fig = plots.scatter_2d(np.zeros((2, 2)), ["<script>x</script>", "ok"], "<b>t</b>")
    assert list(fig.data[0].customdata) == ["&lt;script&gt;x&lt;/script&gt;", "ok"]
    assert fig.layout.title.text == "&lt;b&gt;t&lt;/b&gt;"
