"""The Pre-training tab's views: a loss curve with held-out accuracy, probe guesses as a table.

No Gradio and no model calls here. Every token or user string that reaches a figure is
escaped first: Plotly reads a small HTML subset in labels (``<b>``, ``<a href>``), so a
token such as ``<s>`` or ``<a href=...>`` would otherwise be markup.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..shell.common import escape, show_token


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
        title=escape(title) if title else None,
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

