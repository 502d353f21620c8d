"""The storyteller beside the detective: the zoo's decoder curve, the measured encoder/decoder
table, and the decision rule written from it. Core results in, figures, frames and text out;
no Gradio, no model calls; every name that reaches a figure or Markdown is escaped."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from models import DecoderEntry, EncoderVsDecoder, NextTokenResult

from ..shell.common import escape, show_token

# the course's rule: which kind of model each job calls for
DECISION_RULE = ("**The rule of thumb.** Classify, retrieve, tag: an **encoder** (the detective reads the whole "
                 "text, both sides of every word). Continue, chat, translate: a **decoder** (the storyteller "
                 "writes left to right, one piece after another).")
_UNITS = {"training speed": "{:,.0f}", "training FLOPs": "{:,.0f}"}


def decoder_curve_figure(entries: tuple[DecoderEntry, ...]) -> go.Figure:
    """Each decoder's held-out next-piece loss while training (tuning split), its final held-out
    loss (a star) and the word-frequency baseline (dotted)."""
    fig = go.Figure()
    for e in entries:
        x = [p[0] / 1e6 for p in e.curve]
        fig.add_trace(go.Scatter(x=x, y=[p[1] for p in e.curve], mode="lines+markers", name=escape(e.key),
                                 hovertemplate="%{x:.2f} M tokens<br>next-piece loss %{y:.3f} nats<extra></extra>"))
        fig.add_trace(go.Scatter(x=x, y=[p[2] for p in e.curve], mode="lines", name=f"{escape(e.key)}: training loss",
                                 line=dict(dash="dash")))
        if x:
            fig.add_trace(go.Scatter(x=[x[-1]], y=[e.piece_loss], mode="markers", name="★ final, other held-out text",
                                     marker=dict(symbol="star", size=13)))
            fig.add_trace(go.Scatter(x=[0, x[-1]], y=[e.curve_baseline] * 2, mode="lines",
                                     name="word-frequency baseline", line=dict(dash="dot")))
    fig.update_layout(title="The storyteller's learning curve: held-out next-piece loss (lower is better)",
                      template="plotly_white", height=420, margin=dict(l=10, r=10, t=60, b=10),
                      xaxis_title="training tokens seen (millions)", yaxis_title="nats per piece",
                      legend=dict(orientation="h", y=-0.25))
    return fig


def decoder_note(entries: tuple[DecoderEntry, ...]) -> str:
    """Each decoder's run in a line, from its record."""
    lines = []
    for e in entries:
        seen = (f"{e.tokens:,} training tokens" if e.tokens >= 0.99 * e.schedule_tokens else
                f"{e.tokens:,} of its {e.schedule_tokens:,}-token schedule (a checkpoint of the run)")
        lines.append(f"`{escape(e.key)}`, `{escape(e.twin)}`'s decoder twin: {seen}, {e.wall_minutes:.0f} wall "
                     f"minutes ({escape(e.concurrency)}); held-out next-piece loss {e.piece_loss:.2f} nats, "
                     f"{e.baseline_piece_loss - e.piece_loss:.2f} below the word-frequency baseline "
                     f"({e.baseline_piece_loss:.2f}).")
    return "  \n".join(lines)


def _shown(task: str, value: float | None) -> str:
    if value is None:
        return ""
    return _UNITS.get(task, "{:.3f}").format(value)


def versus_frame(table: EncoderVsDecoder) -> pd.DataFrame:
    """One row per task: both figures, the baseline, which is better and who wins."""
    return pd.DataFrame([{
        "task": r.task, "measure": r.measure, "better": r.better,
        f"encoder ({table.encoder_key})": _shown(r.task, r.encoder),
        f"decoder ({table.decoder_key})": _shown(r.task, r.decoder),
        "baseline": _shown(r.task, r.baseline), "baseline is": r.baseline_name,
        "ahead": r.winner, "how": r.how,
    } for r in table.rows])


def versus_md(table: EncoderVsDecoder) -> str:
    """The decision rule with the table's own figures as its evidence."""
    won = {side: [r.task for r in table.rows if r.winner == side and r.baseline is not None]
           for side in ("encoder", "decoder")}
    lines = [DECISION_RULE, "",
             f"Measured here on {escape(table.encoder_key)} (encoder) and {escape(table.decoder_key)} (decoder): "
             f"the encoder is ahead on {', '.join(won['encoder']) or 'no task'}; the decoder on "
             f"{', '.join(won['decoder']) or 'no task'}."]
    for r in table.rows:
        if r.baseline is None:
            continue
        lines.append(f"- **{escape(r.task)}** ({escape(r.measure)}, {r.better} is better): encoder "
                     f"{_shown(r.task, r.encoder)}, decoder {_shown(r.task, r.decoder)}, {escape(r.baseline_name)} "
                     f"{_shown(r.task, r.baseline)}.")
    lines.append(f"\n*{escape(table.note)}*")
    return "\n".join(lines)


def next_token_figure(result: NextTokenResult) -> go.Figure:
    """Horizontal bars of the decoder's likeliest next pieces, best on top (0-100 %)."""
    labels = [f"{k}. {escape(show_token(p.token))}" for k, p in enumerate(result.predictions, start=1)]
    fig = go.Figure(go.Bar(x=[p.score for p in result.predictions][::-1], y=labels[::-1], orientation="h",
                           hovertemplate="%{y}: %{x:.1%}<extra></extra>"))
    fig.update_layout(title=f"{escape(result.model_key)}: the next piece after the text",
                      template="plotly_white", height=300, margin=dict(l=10, r=10, t=50, b=10),
                      xaxis=dict(range=[0, 1], tickformat=".0%"))
    return fig
