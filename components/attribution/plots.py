"""Pure builders of the "Why this guess" tab: attribution results in, HTML / figures out.

No Gradio and no model calls. Every token is escaped before it reaches HTML or a figure.
"""

from __future__ import annotations

import html

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from models import AttributionResult, DeletionCurve

from ..shell.common import escape, over_white, show_token, text_colour_on
from .copy import METHOD_LABELS

POSITIVE, NEGATIVE = (33, 102, 172), (230, 97, 1)  # blue: pushes p(target) up; orange: down
RANDOM_COLOUR = "#888888"
METHOD_COLOURS = {
    "gradient_x_input": "#1b9e77",
    "integrated_gradients": "#7570b3",
    "attention_rollout": "#d95f02",
    "leave_one_out": "#e7298a",
}
_CELL = ("display:inline-block;margin:0.1em 0.12em;padding:0.05em 0.3em;border-radius:4px;"
         "text-align:center;font-family:ui-monospace,monospace;color:#111;vertical-align:top;")


def label(method: str) -> str:
    return METHOD_LABELS.get(method, method)


def _strengths(result: AttributionResult) -> np.ndarray:
    """Scores of the candidate tokens divided by the row's largest magnitude (-1..1)."""
    scores = np.array([s if c else 0.0 for s, c in zip(result.scores, result.candidates)])
    top = np.abs(scores).max() if scores.size else 0.0
    return scores / top if top > 0 else scores


def _cell(token: str, score: float, strength: float, rank: int | None, candidate: bool) -> str:
    text = html.escape(show_token(token))
    if not candidate:
        style = _CELL + "border:1px dashed #999;background:#eeeeee;color:#555;"
        return f'<span style="{style}" title="not scored">{text}<br><small>·</small></span>'
    alpha = 0.08 + 0.72 * abs(strength)
    shade = over_white(POSITIVE if strength >= 0 else NEGATIVE, alpha)  # opaque: same on dark
    style = _CELL + f"border:1px solid #999;background:rgb{shade};color:{text_colour_on(shade)};"
    badge = f"<b>#{rank}</b> " if rank is not None else ""
    title = html.escape(f"{token}: {score:+.4f}", quote=True)
    return f'<span style="{style}" title="{title}">{badge}{text}<br><small>{score:+.3f}</small></span>'


def attribution_html(results: list[AttributionResult]) -> str:
    """The sentence once per method, each token shaded by its score (escaped HTML)."""
    rows = []
    for result in results:
        ranks = {position: k for k, position in enumerate(result.ranking()[:3], start=1)}
        strengths = _strengths(result)
        cells = "".join(
            _cell(token, score, float(strength), ranks.get(i), candidate)
            for i, (token, score, strength, candidate) in enumerate(
                zip(result.tokens, result.scores, strengths, result.candidates)
            )
        )
        rows.append(
            '<div class="attribution-row" style="margin:0.5em 0;line-height:1.3">'
            f'<div><b>{html.escape(label(result.method))}</b></div>{cells}</div>'
        )
    up, down = over_white(POSITIVE, 0.6), over_white(NEGATIVE, 0.6)
    legend = (
        f'<span style="{_CELL}background:rgb{up};color:{text_colour_on(up)}">raises p(target)</span>'
        f'<span style="{_CELL}background:rgb{down};color:{text_colour_on(down)}">lowers p(target)</span>'
        f'<span style="{_CELL}border:1px dashed #999;background:#eee">not scored (special token or mask)</span>'
        " <small>shade: the score over the row's largest; #1–#3: the three highest</small>"
    )
    return f'<div class="attribution">{legend}{"".join(rows)}</div>'


def scores_frame(results: list[AttributionResult]) -> pd.DataFrame:
    """One row per token: position, token, then each method's score (blank if not scored)."""
    if not results:
        return pd.DataFrame(columns=["position", "token"])
    first = results[0]
    frame = pd.DataFrame({"position": range(len(first.tokens)), "token": [show_token(t) for t in first.tokens]})
    for result in results:
        frame[label(result.method)] = [
            round(s, 5) if c else None for s, c in zip(result.scores, result.candidates)
        ]
    return frame


def deletion_figure(curves: list[DeletionCurve]) -> go.Figure:
    """p(target) against the share of tokens removed: one line per method, random dashed."""
    fig = go.Figure()
    for curve in curves:
        x = np.linspace(0, 1, len(curve.attributed))
        fig.add_trace(go.Scatter(
            x=x, y=curve.attributed, mode="lines+markers",
            name=f"{label(curve.method)} (area {curve.area:+.3f})",
            line=dict(color=METHOD_COLOURS.get(curve.method)),
            customdata=["(none)"] + [escape(show_token(curve.tokens[i])) for i in curve.order],
            hovertemplate="removed up to: %{customdata}<br>p = %{y:.4f}<extra></extra>",
        ))
    if curves:
        reference = curves[0]
        fig.add_trace(go.Scatter(
            x=np.linspace(0, 1, len(reference.random)), y=reference.random, mode="lines",
            name=f"random order (mean of {reference.random_orders})",
            line=dict(color=RANDOM_COLOUR, dash="dash"),
        ))
        target = escape(show_token(reference.target_token))
        title = (f"Deletion check: p(“{target}”) as tokens are replaced by "
                 f"{escape(reference.replacement)}, highest score first")
    else:
        title = "Deletion check"
    fig.update_layout(
        title=dict(text=title, font=dict(size=14)),
        xaxis_title="share of tokens removed",
        yaxis_title="p(target)",
        yaxis_rangemode="tozero",
        template="plotly_white",
        height=420,
        margin=dict(l=10, r=10, t=50, b=10),
        legend=dict(orientation="h", y=-0.2),
    )
    return fig


# Below these, a probability or a deletion area is too small to judge anything by: a gap of
# 0.00005 in p is negligible whatever p moved by, and an area under 0.001 shows as +0.000 or +0.001.
NEGLIGIBLE_P, NEGLIGIBLE_GAP, NEGLIGIBLE_AREA = 1e-3, 5e-5, 1e-3


def status_markdown(results: list[AttributionResult], curves: list[DeletionCurve]) -> str:
    """What was explained, integrated gradients' baseline and completeness, the best method."""
    if not results:
        return ""
    first = results[0]
    target = html.escape(show_token(first.target_token), quote=False)
    unlikely = first.target_probability < NEGLIGIBLE_P
    lines = [
        f"Explaining **“{target}”** at mask {first.mask_index + 1} (token position "
        f"{first.mask_position}): p = {first.target_probability:.4f} on your text, "
        f"{sum(first.candidates)} words scored, `{first.model_key}`."
    ]
    if unlikely:
        lines.append(
            f"⚠️ The model gives “{target}” almost no probability at this mask (p = "
            f"{first.target_probability:.1e}): there is next to nothing to explain, so the scores "
            "and the deletion check say little here. Leave the target empty for the model's top "
            "guess, or pick a likelier word.")
    for result in results:
        if result.method == "integrated_gradients":
            total = sum(result.scores)
            lines.append(
                f"Integrated gradients ({result.n_steps} steps), baseline: {html.escape(result.baseline)} "
                f"(p = {result.baseline_probability:.4f}). The scores sum to {total:+.4f} against "
                f"p(text) − p(baseline) = {result.target_probability - result.baseline_probability:+.4f}: "
                f"completeness gap {result.completeness_delta:+.5f}."
            )
            change = abs(result.target_probability - result.baseline_probability)
            gap = abs(result.completeness_delta)
            if gap > 0.05 * change and gap > NEGLIGIBLE_GAP:
                lines.append("⚠️ The gap is over 5 % of that difference: raise the steps for "
                             "integrated gradients you can trust here.")
    if curves:
        best = max(curves, key=lambda c: c.area)
        if best.area >= NEGLIGIBLE_AREA:
            lines.append(f"Deletion check: **{label(best.method)}** held up best here (area {best.area:+.3f}).")
        elif unlikely:
            lines.append("Deletion check: p(target) has almost nothing to lose, so every area is about 0 "
                         "and no method stands out.")
        else:
            lines.append(f"Deletion check: no method beat random deletion by an area of {NEGLIGIBLE_AREA} "
                         f"or more on this input (best: {label(best.method)}, {best.area:+.4f}).")
    return "  \n".join(lines)
