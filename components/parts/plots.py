"""Pure builders of the "Which parts matter" tab: the core's results in, figures, tables and
Markdown out. No Gradio and no model calls; every token is escaped."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..shell.common import escape, show_token

BEFORE, AFTER = "#3182bd", "#e6550d"
KNOCKED = "✕"


def _token(text: str) -> str:
    return escape(show_token(text))


def guess_text(guess) -> str:
    return f"“{_token(guess.token)}” ({guess.probability:.4f})"


def _target_line(target, p_before=None, p_after=None) -> str:
    if target is None:
        return ""
    line = f"p(“{_token(target.token)}”)"
    if p_before is not None:
        line += f": {p_before:.4f} with every head, {p_after:.4f} without the chosen ones"
    return line + (f". {escape(target.note)}" if target.note else "")


# --- knock out heads ---------------------------------------------------------------------


def heads_text(pairs) -> str:
    return ", ".join(f"{layer}:{head}" for layer, head in pairs)


def grid_frame(num_layers: int, num_heads: int, pairs) -> pd.DataFrame:
    """The clickable grid: a row per layer, a column per head, ✕ where the head is knocked out."""
    off = set(map(tuple, pairs))
    rows = [[f"layer {l}"] + [KNOCKED if (l, h) in off else "" for h in range(num_heads)] for l in range(num_layers)]
    return pd.DataFrame(rows, columns=["layer"] + [f"head {h}" for h in range(num_heads)])


def ablation_figure(result) -> go.Figure:
    """The first mask's top guesses with every head (left) and with the chosen heads out (right)."""
    mask = result.masks[0]
    fig = make_subplots(rows=1, cols=2, subplot_titles=("every head", "chosen heads knocked out"),
                        shared_yaxes=True)
    for col, guesses, colour in ((1, mask.before, BEFORE), (2, mask.after, AFTER)):
        fig.add_trace(go.Bar(x=[_token(g.token) for g in guesses], y=[g.probability for g in guesses],
                             marker_color=colour, showlegend=False,
                             hovertemplate="%{x}: p = %{y:.4f}<extra></extra>"), row=1, col=col)
    fig.update_yaxes(title_text="probability at the first mask", row=1, col=1)
    fig.update_layout(height=340, margin=dict(l=60, r=20, t=40, b=40))
    return fig


def ablation_markdown(result) -> str:
    knocked = heads_text(result.heads) or "none"
    lines = [f"`{escape(result.model_key)}` ({escape(result.family)}), {result.num_layers} layers × "
             f"{result.num_heads} heads · knocked out ({escape(result.mode)}): {escape(knocked)}"]
    target = _target_line(result.target, result.p_target_before, result.p_target_after)
    if target:
        lines.append(target)
    for mask in result.masks[1:]:
        lines.append(f"Mask at token {mask.position}: “{_token(mask.before[0].token)}” → "
                     f"“{_token(mask.after[0].token)}”")
    return "  \n".join(lines)


def ablation_frame(result) -> pd.DataFrame:
    rows = [{"mask": i + 1, "rank": r + 1, "every head": show_token(b.token), "p": round(b.probability, 5),
             "heads knocked out": show_token(a.token), "p without": round(a.probability, 5)}
            for i, m in enumerate(result.masks) for r, (b, a) in enumerate(zip(m.before, m.after))]
    return pd.DataFrame(rows)


# --- head importance -------------------------------------------------------------------------


def importance_figure(result) -> go.Figure:
    z = result.delta_log_p
    bound = float(np.abs(z).max()) or 1.0
    fig = go.Figure(go.Heatmap(
        z=z, x=[f"head {h}" for h in range(result.num_heads)], y=[f"layer {l}" for l in range(result.num_layers)],
        customdata=result.p_without, colorscale="RdBu_r", zmid=0, zmin=-bound, zmax=bound,
        colorbar=dict(title="Δ log p"),
        hovertemplate="%{y}, %{x}: Δ log p = %{z:+.3f}, p without it = %{customdata:.4f}<extra></extra>"))
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(height=120 + 28 * result.num_layers, margin=dict(l=70, r=20, t=20, b=40))
    return fig


def importance_markdown(result) -> str:
    z = result.delta_log_p
    worst = np.unravel_index(np.argmin(z), z.shape)
    return (f"Target “{_token(result.target.token)}”: p = {result.p_target:.4f} with every head. "
            f"The head it needs most: layer {worst[0]}, head {worst[1]} "
            f"(Δ log p = {z[worst]:+.3f}, p = {result.p_without[worst]:.4f} without it)."
            + (f"  \n{escape(result.target.note)}" if result.target.note else ""))


def importance_frame(result) -> pd.DataFrame:
    return pd.DataFrame([{"layer": l, "head": h, "delta log p": round(float(result.delta_log_p[l, h]), 5),
                          "p without": round(float(result.p_without[l, h]), 5)}
                         for l in range(result.num_layers) for h in range(result.num_heads)])


# --- logit lens ---------------------------------------------------------------------------------


def _layer_name(layer: int) -> str:
    return "embeddings" if layer == 0 else f"layer {layer}"


def lens_frame(lens) -> pd.DataFrame:
    """A row per layer: its top guess, p(final answer) and its rank, the top-k."""
    answer = show_token(lens.target.token)
    return pd.DataFrame([{
        "read at": _layer_name(row.layer), "top guess": show_token(row.top[0].token),
        "p(top)": round(row.top[0].probability, 4), f"p({answer})": round(row.p_target, 4),
        f"rank of {answer}": row.rank_target, "top guesses": " ".join(show_token(g.token) for g in row.top),
    } for row in lens.layers])


def lens_markdown(lens) -> str:
    first = lens.first_top_layer
    when = (f"the top guess from **{_layer_name(first)}** of {lens.num_layers} on" if first is not None
            else "the top guess only at the end")
    return (f"`{escape(lens.model_key)}`: “{_token(lens.target.token)}” is {when}.  \n"
            f"*Reading a layer:* {escape(lens.reading)}")


def lens_figure(lenses) -> go.Figure:
    """p(each model's final answer) per layer, for one or two models."""
    fig = go.Figure()
    for lens in lenses:
        fig.add_trace(go.Scatter(x=[row.layer for row in lens.layers], y=lens.p_target.tolist(), mode="lines+markers",
                                 name=f"{escape(lens.model_key)}: {_token(lens.target.token)}"))
    fig.update_layout(height=320, margin=dict(l=60, r=20, t=20, b=40), xaxis_title="layer (0 = embeddings)",
                      yaxis_title="p(final answer)", yaxis_range=[0, 1])
    return fig


# --- causal trace -------------------------------------------------------------------------------


def trace_figure(result) -> go.Figure:
    labels = []
    for p in result.positions:
        clean, corrupt = show_token(result.clean_tokens[p]), show_token(result.corrupt_tokens[p])
        labels.append(escape(f"{p} {clean}" if clean == corrupt else f"{p} {clean}/{corrupt}"))
    fig = go.Figure(go.Heatmap(
        z=result.p_patched, x=labels, y=[f"layer {l + 1}" for l in range(result.num_layers)], colorscale="Viridis",
        zmin=0, zmax=max(result.p_clean, float(result.p_patched.max())), colorbar=dict(title="p(target)"),
        hovertemplate="%{y} · token %{x}: p = %{z:.4f}<extra></extra>"))
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(height=140 + 28 * result.num_layers, margin=dict(l=70, r=20, t=20, b=60))
    return fig


def trace_markdown(result) -> str:
    text = (f"Target “{_token(result.target.token)}” at token {result.position}: p = {result.p_clean:.4f} "
            f"in the clean run, {result.p_corrupt:.4f} in the corrupt run.")
    notes = [n for n in (result.target.note, result.note) if n]
    return text + "".join(f"  \n{escape(n)}" for n in notes)


def trace_frame(result) -> pd.DataFrame:
    return pd.DataFrame([{"layer": l + 1, "position": p, "clean token": show_token(result.clean_tokens[p]),
                          "p(target)": round(float(result.p_patched[l, i]), 5)}
                         for l in range(result.num_layers) for i, p in enumerate(result.positions)])
