"""The "input = token + position + segment" view: core result in, Plotly figure / DataFrame out.

No Gradio and no model calls. Tokens are model output: labels go through ``escape``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from models import InputEmbeddings

from ..shell.common import escape, show_piece

SHOWN_DIMS = 48  # the first dimensions drawn: enough to see the pattern, light to ship
SHOWN_TOKENS = 64


def _parts(result: InputEmbeddings) -> list[tuple[str, np.ndarray]]:
    parts = [("token", result.token), ("position", result.position)]
    if result.segment is not None:
        parts.append(("segment", result.segment))
    parts.append(("= sum (the model's input)", result.total))
    return parts


def input_embeddings_figure(result: InputEmbeddings) -> go.Figure:
    """One heatmap per vector (rows = tokens, columns = the first dimensions), one colour scale."""
    n, d = min(len(result.tokens), SHOWN_TOKENS), min(result.token.shape[1], SHOWN_DIMS)
    labels = [
        f"{i} {escape(show_piece(t))}" + (f" ·{'AB'[s]}" if result.segment_ids and result.text_pair else "")
        for i, (t, s) in enumerate(zip(result.tokens[:n], result.segment_ids or [0] * n))
    ]
    parts = _parts(result)
    top = float(max(np.abs(v[:n, :d]).max() for _, v in parts)) or 1.0
    fig = make_subplots(rows=1, cols=len(parts), shared_yaxes=True, horizontal_spacing=0.02,
                        subplot_titles=[name for name, _ in parts])
    for col, (name, vectors) in enumerate(parts, start=1):
        fig.add_trace(
            go.Heatmap(z=vectors[:n, :d], x=list(range(d)), y=labels, coloraxis="coloraxis",
                       hovertemplate=f"{name}<br>%{{y}}<br>dimension %{{x}}: %{{z:.3f}}<extra></extra>"),
            row=1, col=col,
        )
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(title_text=f"dimension (first {d} of {result.token.shape[1]})")
    fig.update_layout(
        coloraxis=dict(colorscale="RdBu", cmid=0, cmin=-top, cmax=top, colorbar=dict(title="value")),
        height=max(320, 22 * n + 120), template="plotly_white", margin=dict(l=10, r=10, t=50, b=10),
    )
    return fig


def input_embeddings_frame(result: InputEmbeddings) -> pd.DataFrame:
    """Per token: which row of each table it used, each vector's length, the check."""
    norm = lambda v: np.linalg.norm(v, axis=-1)  # noqa: E731
    rows = {
        "position": list(range(len(result.tokens))),
        "token": [show_piece(t) for t in result.tokens],
        "token id": result.token_ids,
        "position row": result.position_ids,
    }
    if result.segment_ids is not None:
        rows["segment row"] = result.segment_ids
    for name, vectors in _parts(result):
        rows[f"|{name.split(' ')[0] if name[0] != '=' else 'sum'}|"] = [round(float(x), 4) for x in norm(vectors)]
    rows["max |sum − model input|"] = [float(x) for x in np.abs(result.total - result.model_input).max(-1)]
    return pd.DataFrame(rows)


def input_embeddings_summary(result: InputEmbeddings) -> str:
    """Markdown: the check of the sum, and what the segment vectors did (model key validated)."""
    lines = [
        f"**{len(result.tokens)} tokens** (`{result.model_key}`). The sum of the vectors equals what the "
        f"model's embedding LayerNorm received to within **{result.max_difference:.1e}** (float rounding): "
        "input = token + position" + (" + segment." if result.segment is not None else
                                      ". This model has **no segment table**.")
    ]
    if result.segment is not None:
        used = sorted(set(result.segment_ids))
        counts = ", ".join(f"segment {'AB'[s] if s < 2 else s}: {result.segment_ids.count(s)} tokens" for s in used)
        lines.append(f"Segment rows used: {counts}.")
        if len(used) > 1:
            a, b = (result.segment[result.segment_ids.index(s)] for s in used[:2])
            cos = float(a @ b / max(np.linalg.norm(a) * np.linalg.norm(b), 1e-12))
            lines.append(f"The two segment vectors differ: cosine {cos:.3f}, lengths "
                         f"{np.linalg.norm(a):.3f} and {np.linalg.norm(b):.3f}.")
        elif result.text_pair and result.segment_rows == 1:
            lines.append("This model's segment table has a single row (type_vocab_size 1, as in the "
                         "RoBERTa family), so both texts add the same segment-A vector: the pair is told "
                         "apart by its separator tokens and positions, not by a segment B.")
        elif result.text_pair:
            lines.append("Both texts add the same segment-A vector: this model's tokenizer gives the "
                         "second text no segment B.")
        else:
            lines.append("One text: every token adds the same segment-A vector. Add a second text to see B.")
    if result.position_ids and result.position_ids[0] != 0:
        lines.append(f"Position rows start at {result.position_ids[0]}, not 0 (RoBERTa reserves the first "
                     "rows for padding).")
    return "  \n".join(lines)
