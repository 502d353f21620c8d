"""Plot builders for "Inside one layer": a ForwardSteps (or MLMGradients) in, figures,
tables and Markdown out. No Gradio and no model calls; every token is escaped."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..shell.common import escape, show_token

VIEW_MAX_TOKENS = 96  # rows/columns of tokens drawn
VIEW_MAX_DIMS = 64  # vector dimensions drawn
ROW_DIMS = 2  # value dimensions spelled out in the row table
HIGHLIGHT = "#d62728"
MASKED, UNMASKED, SPECIAL = "#e6550d", "#3182bd", "#969696"


def token_labels(tokens, limit: int = VIEW_MAX_TOKENS) -> list[str]:
    """Unique, escaped labels: position and token."""
    return [f"{i} {escape(show_token(t))}" for i, t in enumerate(tokens[:limit])]


def step_index(result, name: str) -> int:
    names = [s.name for s in result.all_steps]
    return names.index(name) if name in names else 0


def step_choices(result) -> list[tuple[str, str]]:
    """The dropdown's entries: number, title (★ for the family's own steps), name."""
    return [(f"{i}. {'★ ' if s.family else ''}{s.title}", s.name) for i, s in enumerate(result.all_steps, 1)]


def _shape_text(step) -> str:
    return f"{step.shape} = {tuple(int(n) for n in step.value.shape)}"


def step_markdown(result, name: str) -> str:
    """Title, formula, shape and note of one step."""
    index = step_index(result, name)
    step = result.all_steps[index]
    star = f" ★ *{escape(result.family)}*" if step.family else ""
    lines = [f"### Step {index + 1} of {len(result.all_steps)}: {escape(step.title)}{star}",
             f"**Formula:** `{step.formula}`  ",  # the core's own text, never the user's
             f"**Shape:** {escape(_shape_text(step))}"]
    if step.note:
        lines.append(f"\n{escape(step.note)}")
    return "\n".join(lines)


def _finite(matrix: np.ndarray) -> np.ndarray:
    return np.where(np.isfinite(matrix), matrix, np.nan)


def _box(fig, y: int, x_span: int, **where) -> None:
    """Outline the chosen token's row (or column)."""
    fig.add_shape(type="rect", x0=-0.5, x1=x_span - 0.5, y0=y - 0.5, y1=y + 0.5,
                  line=dict(color=HIGHLIGHT, width=2), **where)


def step_figure(result, name: str) -> go.Figure:
    """One step as a heatmap (token rows) or a bar chart, the chosen token outlined."""
    step = result.all_steps[step_index(result, name)]
    value = np.asarray(step.value, dtype=np.float32)
    n = min(len(result.tokens), VIEW_MAX_TOKENS)
    labels = token_labels(result.tokens, n)
    p = result.position
    title = f"{escape(step.title)}  {escape(_shape_text(step))}"
    fig = go.Figure()
    if value.ndim == 2:
        rows = value[:n]
        if step.shape == "(T, T)":
            columns, x = rows[:, :n], labels
            x_title = "key (token attended to)"
        else:
            columns, x = rows[:, :VIEW_MAX_DIMS], list(range(min(value.shape[1], VIEW_MAX_DIMS)))
            x_title = "dimension" + (f" (first {VIEW_MAX_DIMS} of {value.shape[1]})"
                                     if value.shape[1] > VIEW_MAX_DIMS else "")
        fig.add_trace(go.Heatmap(z=_finite(columns), x=x, y=labels, colorscale="RdBu_r" if columns.min() < 0 else "Blues",
                                 zmid=0 if columns.min() < 0 else None,
                                 hovertemplate="%{y} · %{x}: %{z:.4f}<extra></extra>"))
        if p < n:
            _box(fig, p, len(x), xref="x", yref="y")
        fig.update_yaxes(autorange="reversed", type="category", title="query (token)" if step.shape == "(T, T)" else "token")
        fig.update_xaxes(type="category", title=x_title)
    elif step.name == "head_logits":
        top = np.argsort(value)[::-1][:20]
        fig.add_trace(go.Bar(x=[f"id {int(i)}" for i in top], y=value[top], marker_color=UNMASKED))
        fig.update_xaxes(title="the 20 largest logits (token ids; the top-k step names them)")
    elif step.name == "head_top_k":
        words = [escape(show_token(t)) for t, _ in result.predictions]
        fig.add_trace(go.Bar(x=words, y=value, marker_color=UNMASKED, text=[f"{v:.3f}" for v in value]))
        fig.update_yaxes(title="probability", range=[0, 1])
    elif step.shape == "(T,)":
        colours = [HIGHLIGHT if i == p else UNMASKED for i in range(n)]
        fig.add_trace(go.Bar(x=labels, y=value[:n], marker_color=colours))
        fig.update_xaxes(type="category", title="token")
    else:
        shown = value[:VIEW_MAX_DIMS]
        fig.add_trace(go.Bar(x=list(range(len(shown))), y=shown, marker_color=UNMASKED))
        fig.update_xaxes(title=f"dimension (at token {p})" + (f", first {VIEW_MAX_DIMS} of {len(value)}"
                                                              if len(value) > VIEW_MAX_DIMS else ""))
    fig.update_layout(title=dict(text=title, font=dict(size=14)), template="plotly_white",
                      height=max(320, min(720, 22 * n + 140)) if value.ndim == 2 else 360,
                      margin=dict(l=10, r=10, t=50, b=10))
    return fig


def row_frame(result) -> pd.DataFrame:
    """The chosen token's row of attention, key by key: q·k, ÷√d_head (+ mask), softmax, × values."""
    p = result.position
    names = {s.name for s in result.all_steps}
    raw = result.step("raw_scores").value[p]
    scaled = result.step("scaled_scores").value[p]
    weights = result.step("weights").value[p]
    values = result.step("value").value
    dims = min(ROW_DIMS, values.shape[1])
    frame = {"key": [f"{j} {show_token(t)}" for j, t in enumerate(result.tokens)], "q·k": raw}
    if "deberta_c2c" in names:
        for term in ("c2c", "c2p", "p2c"):
            if f"deberta_{term}" in names:
                frame[term] = result.step(f"deberta_{term}").value[p]
        frame["sum (+ mask)"] = scaled
    else:
        frame[f"÷ {result.scale:.3f} (+ mask)"] = scaled
    frame["softmax"] = weights
    for d in range(dims):
        frame[f"weight × v[{d}]"] = weights * values[:, d]
    table = pd.DataFrame(frame)
    total = {column: "" for column in table.columns}
    total["key"] = "Σ = output of this head"
    total["softmax"] = float(weights.sum())
    weighted = result.step("weighted_values").value[p]
    for d in range(dims):
        total[f"weight × v[{d}]"] = float(weighted[d])
    table = pd.concat([table, pd.DataFrame([total])], ignore_index=True)
    return table.map(lambda v: round(float(v), 5) if isinstance(v, (float, np.floating)) and np.isfinite(v)
                     else ("−∞" if isinstance(v, (float, np.floating)) else v))


def status_markdown(result) -> str:
    token = escape(show_token(result.tokens[result.position]))
    return (f"**{len(result.tokens)} tokens** · `{escape(result.model_key)}` ({escape(result.network)}, "
            f"family {escape(result.family)}) · {result.num_layers} layers × {result.num_heads} heads, "
            f"d_model {result.d_model}, d_head {result.d_head}, d_ff {result.d_ff} · showing layer "
            f"{result.layer}, head {result.head}, token {result.position} “{token}”.  \n"
            + "  \n".join(escape(n) for n in result.notes))


def checks_markdown(result) -> str:
    lines = ["| check | against | max abs error | tolerance | |", "|---|---|---|---|---|"]
    for c in result.checks:
        lines.append(f"| {escape(c.name)} | {escape(c.against)} | {c.max_abs_error:.2e} | {c.tolerance:.0e} | "
                     f"{'✓' if c.ok else '✗'} |")
    facts = [f"- ★ {escape(f)}" for f in result.facts]
    predictions = ", ".join(f"{escape(show_token(t))} {p:.3f}" for t, p in result.predictions)
    extra = [f"\n**Top {len(result.predictions)} at token {result.position}:** {predictions}"] if predictions else []
    return "\n".join(lines + ([""] + facts if facts else []) + extra)


def norms_figure(result) -> go.Figure:
    n = min(len(result.tokens), VIEW_MAX_TOKENS)
    labels = token_labels(result.tokens, n)
    layers = ["embeddings"] + [f"layer {i}" for i in range(result.layer_norms.shape[0] - 1)]
    fig = go.Figure(go.Heatmap(z=result.layer_norms[:, :n], x=labels, y=layers, colorscale="Viridis",
                               hovertemplate="%{y} · %{x}: ‖h‖ = %{z:.3f}<extra></extra>"))
    fig.update_xaxes(type="category", title="token")
    fig.update_yaxes(type="category", autorange="reversed")
    fig.add_shape(type="rect", x0=result.position - 0.5, x1=result.position + 0.5, y0=-0.5,
                  y1=len(layers) - 0.5, line=dict(color=HIGHLIGHT, width=2))
    fig.update_layout(title=dict(text="‖hidden state‖ per token and layer", font=dict(size=14)),
                      template="plotly_white", height=300, margin=dict(l=10, r=10, t=50, b=10))
    return fig


def gradient_figure(grads) -> go.Figure:
    labels = token_labels(grads.inputs, VIEW_MAX_TOKENS)
    n = len(labels)
    colours = [MASKED if i in grads.masked else SPECIAL if grads.special[i] else UNMASKED for i in range(n)]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.12, subplot_titles=(
        "‖∂loss / ∂ input embedding‖", "‖∂loss / ∂ logits‖ at each position (0 where not masked)"))
    fig.add_trace(go.Bar(x=labels, y=grads.embedding_grad_norms[:n], marker_color=colours,
                         hovertemplate="%{x}: %{y:.4g}<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Bar(x=labels, y=grads.logit_grad_norms[:n], marker_color=colours,
                         hovertemplate="%{x}: %{y:.4g}<extra></extra>"), row=2, col=1)
    fig.update_xaxes(type="category")
    fig.update_layout(showlegend=False, template="plotly_white", height=460, margin=dict(l=10, r=10, t=40, b=10))
    return fig


def gradient_markdown(grads) -> str:
    masked = ", ".join(f"{i} “{escape(show_token(grads.tokens[i]))}”" for i in grads.masked)
    unmasked = list(grads.unmasked)
    top = max(float(grads.logit_grad_norms[i]) for i in unmasked) if unmasked else 0.0
    token = escape(show_token(grads.tokens[grads.fd_position]))
    return (
        f"Masked: {masked}. Loss (transformers' own MLM loss, mean over the masked positions): "
        f"**{grads.loss:.4f}**.  \n"
        f"Mean ‖∂loss/∂e‖: masked **{grads.masked_mean_norm:.4g}**, unmasked **{grads.unmasked_mean_norm:.4g}** "
        f"(not zero: the unmasked tokens are read as context).  \n"
        f"Largest ‖∂loss/∂logits‖ at an unmasked position: **{top:.1g}** (their own predictions are not in the loss).  \n"
        f"Finite-difference check at token {grads.fd_position} “{token}”, dimension {grads.fd_dim}: autograd "
        f"**{grads.fd_autograd:.6g}**, (loss(e+ε) − loss(e−ε)) / 2ε with ε = {grads.fd_eps:g}: "
        f"**{grads.fd_estimate:.6g}** (relative difference {grads.fd_relative_error:.1e})."
    )
