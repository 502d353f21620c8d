"""The Masking lab's views: the token strip (escaped HTML), the loss table, the rates chart.

No Gradio and no model calls here. Every token or user string that reaches a figure is
escaped first: Plotly reads a small HTML subset in labels (``<b>``, ``<a href>``), so a
token such as ``<s>`` or ``<a href=...>`` would otherwise be markup.
"""

from __future__ import annotations

import html

import pandas as pd
import plotly.graph_objects as go



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

