"""The "Before BERT" step's builders: static against contextual vectors of one word.

Plain data in (``static_vs_contextual``'s result, 2-D points), a figure, a DataFrame or text
out: no Gradio, no model calls. User text reaches the charts only escaped.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..embeddings.plots import by_layer_layout, short
from ..shell.common import escape, quoted, show_piece

SENSE_COLOURS = ("#4c78a8", "#e45756", "#54a24b", "#b279a2", "#f58518", "#72b7b2")


def _colour(sense: int) -> str:
    return SENSE_COLOURS[sense % len(SENSE_COLOURS)]


def sense_layers_figure(result) -> go.Figure:
    """Mean cosine between occurrences of one sense and of different senses, layer by layer,
    beside the static vectors' 1 (one vector per word: every pair of occurrences identical)."""
    layers = list(result.layers)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=layers, y=[1.0] * len(layers), mode="lines", name="static vector (either table)",
                             line=dict(color="#555555", dash="dash", width=2)))
    fig.add_trace(go.Scatter(x=layers, y=result.within, mode="lines+markers", name="same sense",
                             line=dict(color=_colour(0), width=3)))
    fig.add_trace(go.Scatter(x=layers, y=result.across, mode="lines+markers", name="different senses",
                             line=dict(color=_colour(1), width=3)))
    by_layer_layout(fig, f"“{result.word}”: cosine between its occurrences", layers, "mean cosine")
    return fig.update_layout(legend=dict(orientation="h", y=-0.35))  # clear of the axis title in projector type


def sense_scatter(points: np.ndarray, result, layer: int) -> go.Figure:
    """The occurrences' vectors at ``layer`` projected to 2-D, one colour per sense."""
    sense_of = np.asarray(result.sense_of)
    fig = go.Figure()
    for k, sense in enumerate(result.senses):
        rows = np.flatnonzero(sense_of == k)
        fig.add_trace(go.Scatter(
            x=points[rows, 0], y=points[rows, 1], mode="markers+text", name=escape(sense.label),
            text=[str(i + 1) for i in rows], textposition="top center",
            customdata=[escape(short(result.sentences[i], 60)) for i in rows],
            marker=dict(size=13, color=_colour(k)), hovertemplate="%{customdata}<extra></extra>",
        ))
    fig.update_layout(
        title=escape(f"“{result.word}” at layer {layer}: one point per occurrence (PCA)"),
        xaxis_title="component 1", yaxis_title="component 2", height=420, template="plotly_white",
        margin=dict(l=10, r=10, t=50, b=10), legend=dict(orientation="h", y=-0.35),
    )
    return fig


def neighbours_frame(result) -> pd.DataFrame:
    """The nearest words of the word's one static vector, in each table."""
    rows = []
    for rank, (table, w2v) in enumerate(zip(result.table_neighbours, result.word2vec_neighbours), 1):
        rows.append({"rank": rank, f"input table of {result.model_key}": table[0], "cosine (table)": table[1],
                     "word2vec (this corpus)": w2v[0], "cosine (word2vec)": w2v[1]})
    return pd.DataFrame(rows)


def sentences_frame(result) -> pd.DataFrame:
    return pd.DataFrame([{"#": i + 1, "sense": result.senses[k].label, "sentence": s}
                         for i, (s, k) in enumerate(zip(result.sentences, result.sense_of))])


def _cues(result) -> str:
    parts = [f"{quoted(cue)} {value:.2f}" for sense, values in zip(result.senses, result.cue_cosines)
             for cue, value in zip(sense.cues, values) if np.isfinite(value)]
    if not parts:
        return ""
    return f" word2vec's cosine between {quoted(result.word)} and each sense's own words: {', '.join(parts)}."


def before_bert_note(result) -> str:
    last, n = len(result.layers) - 1, len(result.sentences)
    pieces = " + ".join(quoted(show_piece(p)) for p in result.pieces)
    senses = "; ".join(escape(s.label) + (f" (WordNet `{s.synset}`: {escape(s.gloss)})" if s.synset else "")
                       for s in result.senses)
    return (
        f"**Static:** one vector per word. `{result.model_key}`'s input table looks {quoted(result.word)} up as "
        f"{pieces}, the same row in all {n} sentences; word2vec gives it one of its {result.static_words:,} vectors. "
        f"Every pair of occurrences: cosine 1.{_cues(result)}  \n"
        f"**Contextual, layer {last}:** mean cosine **{result.within[-1]:.3f}** between occurrences of the same "
        f"sense, **{result.across[-1]:.3f}** between different senses; the nearest other occurrence has the same "
        f"sense for **{result.same_sense_nearest[-1] * n:.0f} of {n}** (layer 0: {result.same_sense_nearest[0] * n:.0f} "
        f"of {n}).  \nSenses: {senses}."
    )
