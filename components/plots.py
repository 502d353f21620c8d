"""Pure figure and table builders: core results in, Plotly figures / DataFrames out.

No Gradio and no model calls here. Every token or user string that reaches a figure is
escaped first: Plotly reads a small HTML subset in labels (``<b>``, ``<a href>``), so a
token such as ``<s>`` or ``<a href=...>`` would otherwise be markup.
"""

from __future__ import annotations

import html

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from models import FillMaskResult, ModelInfo


def plot_text(value: str) -> str:
    """A string safe to show as text in a Plotly label, title or hover."""
    return html.escape(value, quote=False)


def show_token(token: str) -> str:
    """A token as a reader should see it: leading/trailing spaces made visible."""
    if token == "":
        return "∅"
    return token.replace(" ", "␣") if token.strip() != token else token


def predictions_frame(result: FillMaskResult) -> pd.DataFrame:
    """One row per (mask, rank): mask number, rank, token, probability."""
    rows = [
        {
            "mask": m.index + 1,
            "rank": rank,
            "token": show_token(p.token),
            "probability": round(p.score, 6),
        }
        for m in result.masks
        for rank, p in enumerate(m.predictions, start=1)
    ]
    return pd.DataFrame(rows, columns=["mask", "rank", "token", "probability"])


def fill_mask_figure(result: FillMaskResult) -> go.Figure:
    """Horizontal bars of the top-k probabilities, one panel per mask, best on top."""
    n = len(result.masks)
    fig = make_subplots(
        rows=n,
        cols=1,
        subplot_titles=[f"mask {m.index + 1} (token position {m.position})" for m in result.masks],
        vertical_spacing=min(0.12, 0.3 / max(n, 1)),
    )
    for row, mask in enumerate(result.masks, start=1):
        labels = [
            f"{rank}. {plot_text(show_token(p.token))}"
            for rank, p in enumerate(mask.predictions, start=1)
        ]
        scores = [p.score for p in mask.predictions]
        fig.add_trace(
            go.Bar(
                x=scores[::-1],
                y=labels[::-1],
                orientation="h",
                text=[f"{s:.1%}" for s in scores[::-1]],
                textposition="auto",
                hovertemplate="%{y}<br>p = %{x:.4f}<extra></extra>",
                marker_color="#4c78a8",
                showlegend=False,
            ),
            row=row,
            col=1,
        )
        fig.update_xaxes(range=[0, max(scores) * 1.15 or 1], tickformat=".1%", row=row, col=1)
        fig.update_yaxes(type="category", row=row, col=1)
    height = 80 + n * (40 + 26 * max(len(m.predictions) for m in result.masks))
    fig.update_layout(
        height=height,
        margin=dict(l=10, r=10, t=40, b=10),
        xaxis_title=None,
        template="plotly_white",
    )
    return fig


def error_figure(message: str) -> go.Figure:
    """A blank figure that shows a message instead of a chart."""
    fig = go.Figure()
    fig.add_annotation(
        text=plot_text(message), showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper"
    )
    fig.update_layout(
        height=160,
        xaxis_visible=False,
        yaxis_visible=False,
        template="plotly_white",
        margin=dict(l=10, r=10, t=10, b=10),
    )
    return fig


def models_frame(models: tuple[ModelInfo, ...]) -> pd.DataFrame:
    """The registry as a table: what each model is, where it comes from, can it run here."""
    return pd.DataFrame(
        [
            {
                "key": m.key,
                "model": m.display_name,
                "family": m.family,
                "fill-mask": "yes" if m.has_mlm_head else "no (no MLM head)",
                "available here": ("yes" if m.available else "no") + (" (default)" if m.default else ""),
                "why": m.availability,
                "provenance": m.provenance,
            }
            for m in models
        ]
    )


def training_figure(steps, loss, eval_steps=(), top1=(), top5=(), title: str = "",
                    stage_starts=()) -> go.Figure:
    """Training loss per step, and held-out top-1 / top-5 accuracy on a second axis.

    ``stage_starts``: steps where a continued run (a new stage) began, drawn as dashed lines.
    """
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(
        go.Scatter(x=list(steps), y=list(loss), mode="lines", name="training loss (nats)",
                   line=dict(color="#4c78a8")),
        secondary_y=False,
    )
    if eval_steps:
        fig.add_trace(
            go.Scatter(x=list(eval_steps), y=list(top1), mode="lines+markers", name="held-out top-1",
                       line=dict(color="#f58518")),
            secondary_y=True,
        )
        fig.add_trace(
            go.Scatter(x=list(eval_steps), y=list(top5), mode="lines+markers", name="held-out top-5",
                       line=dict(color="#54a24b", dash="dot")),
            secondary_y=True,
        )
        fig.update_yaxes(title_text="accuracy", tickformat=".0%", rangemode="tozero", secondary_y=True)
    fig.update_yaxes(title_text="loss (nats)", secondary_y=False)
    fig.update_xaxes(title_text="step")
    for number, step in enumerate(stage_starts, 2):  # after the traces: empty subplots get no line
        fig.add_vline(x=step, line=dict(color="#888", dash="dash", width=1),
                      annotation_text=f"stage {number}", annotation_position="top right")
    fig.update_layout(
        title=plot_text(title) if title else None,
        height=380,
        margin=dict(l=10, r=10, t=50 if title else 20, b=10),
        template="plotly_white",
        legend=dict(orientation="h", y=-0.25),
    )
    return fig


def probes_frame(probes) -> pd.DataFrame:
    """Probe sentences and the model's top guesses: [(sentence, [(token, p), ...])]."""
    return pd.DataFrame(
        [
            {
                "sentence": sentence,
                "top guesses": ", ".join(f"{show_token(t.strip()) or t} ({p:.1%})" for t, p in top),
            }
            for sentence, top in probes
        ],
        columns=["sentence", "top guesses"],
    )


FATE_STYLE = {  # colour and a text cue: colour is never the only signal
    "not selected": ("#ffffff", ""),
    "[MASK]": ("#f4a261", "MASK"),
    "random": ("#e76f51", "RANDOM"),
    "kept": ("#8ecae6", "KEPT"),
}


def token_strip_html(simulation) -> str:
    """Each epoch as a row of tokens, each marked with its fate (escaped HTML)."""
    meaning = {
        "not selected": "not selected (no loss here)",
        "[MASK]": "selected, replaced by the mask token",
        "random": "selected, replaced by a random token",
        "kept": "selected, left unchanged (still predicted)",
    }
    legend = " ".join(
        f'<span class="tok" style="background:{c}">'
        + (f"<small class='cue'>{cue}</small>" if cue else "") + f"{html.escape(meaning[name])}</span>"
        for name, (c, cue) in FATE_STYLE.items()
    )
    rows = []
    for epoch in simulation.epochs:
        cells = []
        for token, shown, fate in zip(simulation.tokens, epoch.shown_tokens, epoch.fates):
            colour, cue = FATE_STYLE[fate]
            label = html.escape(token)
            if fate == "[MASK]":
                label = f"{html.escape(shown)}<small> ({html.escape(token)})</small>"
            elif fate == "random":
                label = f"{html.escape(shown)}<small> (was {html.escape(token)})</small>"
            title = html.escape(f"{token}: {fate}" + (f", shown as {shown}" if shown != token else ""), quote=True)
            badge = f"<small class='cue'>{cue}</small>" if cue else ""
            cells.append(f'<span class="tok" style="background:{colour}" title="{title}">{badge}{label}</span>')
        n = len(epoch.selected)
        rows.append(
            f'<div class="strip"><b>epoch {epoch.epoch + 1}</b> ({n} selected) ' + "".join(cells) + "</div>"
        )
    return f'<div class="masking-lab"><div class="legend">Legend: {legend}</div>' + "".join(rows) + "</div>"


def loss_frame(loss) -> pd.DataFrame:
    """Per selected position: original, what the model saw, p(original), rank, -log p."""
    return pd.DataFrame(
        [
            {
                "position": p.position,
                "original": p.original,
                "model saw": p.shown,
                "fate": p.fate,
                "p(original)": round(p.p_original, 6),
                "rank": p.rank,
                "-log p (nats)": round(p.nll, 4),
                "model's top guess": p.top_guess,
            }
            for p in loss.positions
        ]
    )


def rates_figure(stats) -> go.Figure:
    """Configured vs observed selection and replacement rates, with the spread across draws."""
    names = ["selected", "[MASK]", "random", "kept"]
    labels = ["selected (of eligible tokens)", "[MASK] (of selected)", "random (of selected)", "kept (of selected)"]
    fig = go.Figure()
    fig.add_trace(go.Bar(x=labels, y=[stats.configured[n] for n in names], name="configured", marker_color="#bab0ac"))
    fig.add_trace(
        go.Bar(
            x=labels, y=[stats.mean[n] for n in names], name=f"observed (mean ± sd over {stats.draws} draws)",
            error_y=dict(type="data", array=[stats.std[n] for n in names]), marker_color="#4c78a8",
        )
    )
    fig.update_layout(barmode="group", yaxis_tickformat=".0%", height=360, template="plotly_white",
                      margin=dict(l=10, r=10, t=30, b=10), legend=dict(orientation="h", y=1.12))
    return fig
