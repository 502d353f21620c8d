"""The Class tab's pictures and files: the class's bars beside the model's, the status, the CSV
(plain data in, figures and text out; no Gradio, no model calls)."""

from __future__ import annotations

import html
import math
import time

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..shell.common import escape, quoted

CLASS_COLOUR = "#c2410c"  # orange-700: 5.2:1 on white
MODEL_COLOUR = "#1d4ed8"  # blue-700
MAX_BARS = 12


def board_html(code: str) -> str:
    """The round's code, large enough to read from the back of a room."""
    return (f'<div class="class-board"><span class="class-board-label">Round code</span>'
            f'<span class="class-code">{html.escape(code)}</span></div>')


def round_figure(results, reveal: bool) -> go.Figure:
    """The class's guesses (share of students, most frequent first); with ``reveal``, the
    model's top-k beside them on the same scale."""
    total = max(results.students - results.hidden_students, 1)
    words = list(results.counts)[:MAX_BARS]
    shares = [results.counts[w] / total for w in words]
    columns = 2 if reveal else 1
    fig = make_subplots(rows=1, cols=columns, horizontal_spacing=0.18,
                        subplot_titles=["The class" + (f" ({results.students} students)"), "The model"][:columns])
    fig.add_trace(go.Bar(x=shares, y=[escape(w) for w in words], orientation="h", marker_color=CLASS_COLOUR, name="class",
                         text=[str(results.counts[w]) for w in words], textposition="auto",
                         hovertemplate="%{y}: %{x:.0%} of the class<extra></extra>"), row=1, col=1)
    if reveal:
        top = results.model_top[:MAX_BARS]
        fig.add_trace(go.Bar(x=[p.score for p in top], y=[escape(p.token.strip()) for p in top], orientation="h",
                             marker_color=MODEL_COLOUR, name="model",
                             hovertemplate="%{y}: p = %{x:.3f}<extra></extra>"), row=1, col=2)
    for col in range(1, columns + 1):
        fig.update_yaxes(autorange="reversed", type="category", row=1, col=col)
        fig.update_xaxes(tickformat=".0%", rangemode="tozero", row=1, col=col)
    fig.update_layout(showlegend=False, height=120 + 32 * max(len(words), MAX_BARS if reveal else 3, 3),
                      margin=dict(l=10, r=10, t=40, b=30))
    return fig


def status_markdown(results, reveal: bool) -> str:
    """How many have answered, the round's state; with ``reveal``, the loss lesson."""
    ends = time.strftime("%H:%M UTC", time.gmtime(results.expires_at))
    state = {"open": f"open until {ends}", "closed": "closed", "expired": f"ended at {ends}"}[results.state]
    lines = [f"**{results.students}** {'student has' if results.students == 1 else 'students have'} answered. "
             f"Round **{results.code}** is {state}."]
    if results.hidden_students:
        lines.append(f"{results.hidden_students} hidden from the screen (still counted).")
    if reveal:
        lines.append(loss_markdown(results))
    return "\n\n".join(lines)


def loss_markdown(results) -> str:
    best = results.model_top[0]
    lines = [f"The model's first choice: {quoted(best.token.strip())} (p = {best.score:.3f})."]
    if results.favourite is not None:
        rank = (f"the model's choice number **{results.favourite_rank}**" if results.favourite_rank
                else "outside the model's vocabulary")
        lines.append(f"The class's favourite, {quoted(results.favourite)}, is {rank}.")
    if results.mean_nll is not None:
        lines.append(f"The class's average −log p: **{results.mean_nll:.2f}** nats over "
                     f"{results.scored_students} students: the masked-LM loss of your answers "
                     f"(the model's own first choice scores {-_log(best.score):.2f}).")
    if results.out_of_vocabulary:
        lines.append(f"{len(results.out_of_vocabulary)} guess(es) outside the vocabulary: counted, with no "
                     "probability.")
    return " ".join(lines)


def round_frame(results) -> pd.DataFrame:
    """One row per shown guess of the class, then the model's top-k: what the CSV export holds."""
    rows = [{"source": "class", "word": g.guess, "students": g.students, "pieces": " ".join(g.pieces),
             "model_probability": g.probability, "minus_log_p": g.nll, "model_rank": g.rank}
            for g in results.guesses]
    rows += [{"source": "model", "word": p.token.strip(), "students": results.counts.get(p.token.strip(), 0),
              "pieces": p.raw_token, "model_probability": p.score, "minus_log_p": -_log(p.score), "model_rank": rank}
             for rank, p in enumerate(results.model_top, 1)]
    return pd.DataFrame(rows, columns=["source", "word", "students", "pieces", "model_probability",
                                       "minus_log_p", "model_rank"])


def _log(p: float) -> float:
    return math.log(max(p, 1e-45))
