"""Figures and tables of the Embeddings tab: core results in, Plotly figures / DataFrames out.

No Gradio and no model calls. Sentences and words are user text: every one that reaches a
label or a hover goes through ``escape``.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from models import SeparationScore, SimilarityResult, WordInContextResult

from ..shell.common import escape

POOLING_NAMES = {"cls": "[CLS] pooling", "mean": "mean pooling", "max": "max pooling"}
MAX_PAIR_LINES = 10  # more pairs than this: only the mean and the range are drawn


def short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _group_edges(groups: Sequence[int] | None) -> list[float]:
    """Where one group ends and the next begins, between cells (for separator lines)."""
    if not groups:
        return []
    return [i - 0.5 for i in range(1, len(groups)) if groups[i] != groups[i - 1]]


def similarity_heatmaps(results: Sequence[SimilarityResult], groups: Sequence[int] | None = None) -> go.Figure:
    """The cosine matrices side by side, on one colour scale (so their ranges compare)."""
    n = len(results[0].sentences)
    ticks = [str(i + 1) for i in range(n)]
    # Each axis's categories are the numbered sentences (escaped), its tick labels the
    # numbers: a cell's hover reads its row's and column's sentence from the axes, so the
    # figure carries each sentence once per axis, not twice per cell (a 16-sentence default
    # view sent 197 KB of hover text for three heatmaps that way).
    labels = [f"{i + 1}. {escape(short(s))}" for i, s in enumerate(results[0].sentences)]
    low = float(min(r.matrix.min() for r in results))
    fig = make_subplots(
        rows=1, cols=len(results), horizontal_spacing=0.08,
        subplot_titles=[f"{POOLING_NAMES[r.pooling]}, layer {r.layer}" for r in results],
    )
    for col, result in enumerate(results, start=1):
        fig.add_trace(
            go.Heatmap(
                z=result.matrix, x=labels, y=labels, coloraxis="coloraxis",
                hovertemplate="%{y}<br>%{x}<br>cosine %{z:.3f}<extra></extra>",
            ),
            row=1, col=col,
        )
        x, y = ("x", "y") if col == 1 else (f"x{col}", f"y{col}")
        for edge in _group_edges(groups):  # white lines between groups
            line = dict(type="line", line=dict(color="white", width=2))
            fig.add_shape(**line, xref=f"{x} domain", yref=y, x0=0, x1=1, y0=edge, y1=edge)
            fig.add_shape(**line, xref=x, yref=f"{y} domain", x0=edge, x1=edge, y0=0, y1=1)
        fig.update_yaxes(autorange="reversed", scaleanchor=x, tickvals=labels, ticktext=ticks, row=1, col=col)
        fig.update_xaxes(tickvals=labels, ticktext=ticks, row=1, col=col)
    fig.update_layout(
        coloraxis=dict(colorscale="Viridis", cmin=min(low, 0.0), cmax=1.0, colorbar=dict(title="cosine")),
        height=520, template="plotly_white", margin=dict(l=10, r=10, t=50, b=10),
    )
    return fig


SEPARATION_COLUMNS = ["pooling", "within groups", "across groups", "gap", "ROC AUC"]


def separation_frame(scores: dict[str, SeparationScore]) -> pd.DataFrame:
    """One row per pooling: mean cosine within and across groups, the gap, the ROC AUC."""
    rows = []
    for pooling, s in scores.items():
        values = (POOLING_NAMES[pooling], *(round(v, 4) for v in (s.within, s.across, s.gap, s.auc)))
        row = dict(zip(SEPARATION_COLUMNS, values))
        if s.same_topic is not None:
            row["same topic, other group"] = round(s.same_topic, 4)
        if s.unrelated is not None:
            row["unrelated (other topic)"] = round(s.unrelated, 4)
        rows.append(row)
    return pd.DataFrame(rows) if rows else pd.DataFrame(columns=SEPARATION_COLUMNS)


def _csv_safe(text: str) -> str:
    """A cell a spreadsheet will not run as a formula."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def matrix_frame(results: Sequence[SimilarityResult]) -> pd.DataFrame:
    """The matrices for CSV: one row per (pooling, sentence), one column per sentence."""
    n = len(results[0].sentences)
    rows = []
    for result in results:
        for i, sentence in enumerate(result.sentences):
            row = {"model": result.model_key, "pooling": result.pooling, "layer": result.layer,
                   "index": i + 1, "sentence": _csv_safe(sentence)}
            row.update({str(j + 1): float(result.matrix[i, j]) for j in range(n)})
            rows.append(row)
    return pd.DataFrame(rows)


def layer_chart(result: WordInContextResult) -> go.Figure:
    """Cosine between the word's occurrences at each layer (0 = input embeddings)."""
    n = len(result.sentences)
    i, j = np.triu_indices(n, k=1)
    per_pair = result.cosine[:, i, j]  # (L + 1, pairs)
    layers = list(result.layers)
    fig = go.Figure()
    if len(i) <= MAX_PAIR_LINES:
        for k, (a, b) in enumerate(zip(i, j)):
            # User text goes in customdata: in the template itself, "%{...}" would be filled in.
            pair = escape(f"{short(result.sentences[a], 40)} | {short(result.sentences[b], 40)}")
            fig.add_trace(go.Scatter(
                x=layers, y=per_pair[:, k], mode="lines+markers", name=f"sentences {a + 1} & {b + 1}",
                customdata=[pair] * len(layers),
                hovertemplate="%{customdata}<br>layer %{x}: cosine %{y:.3f}<extra></extra>",
            ))
    else:
        fig.add_trace(go.Scatter(x=layers, y=per_pair.min(axis=1), mode="lines", line=dict(width=0),
                                 showlegend=False, hoverinfo="skip"))
        fig.add_trace(go.Scatter(x=layers, y=per_pair.max(axis=1), mode="lines", line=dict(width=0),
                                 fill="tonexty", fillcolor="rgba(76,120,168,0.2)",
                                 name=f"range over {len(i)} pairs", hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=layers, y=result.mean_cosine(), mode="lines+markers", name="mean over pairs",
                             line=dict(color="black", width=3, dash="dot")))
    return by_layer_layout(fig, f"“{result.word}”: cosine between its occurrences, layer by layer", layers, "cosine")


def by_layer_layout(fig: go.Figure, title: str, layers: Sequence[int], y_title: str) -> go.Figure:
    """A chart over the layers (0 = input embeddings): its title (escaped here), axes and legend."""
    fig.update_layout(
        title=escape(title), xaxis=dict(title="layer (0 = input embeddings)", tickmode="array", tickvals=list(layers)),
        yaxis=dict(title=y_title), height=420, template="plotly_white",
        margin=dict(l=10, r=10, t=50, b=10), legend=dict(orientation="h", y=-0.2),
    )
    return fig


def scatter_2d(points: np.ndarray, labels: Sequence[str], title: str) -> go.Figure:
    """A 2-D projection, one labelled point per vector."""
    safe = [escape(short(label, 40)) for label in labels]
    fig = go.Figure(go.Scatter(
        x=points[:, 0], y=points[:, 1], mode="markers+text", text=[str(k + 1) for k in range(len(safe))],
        textposition="top center", customdata=safe, marker=dict(size=12, color="#4c78a8"),
        hovertemplate="%{customdata}<extra></extra>",
    ))
    fig.update_layout(
        title=escape(title), xaxis_title="component 1", yaxis_title="component 2", height=420,
        template="plotly_white", margin=dict(l=10, r=10, t=50, b=10),
    )
    return fig
