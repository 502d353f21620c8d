"""Figures and text of the retrieve-then-read view.

No Gradio and no model calls: a ``retrieve_then_read`` result (and the decoder's timed answer,
or None) in, a cost chart, a passages table and Markdown out. User text is escaped.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from ..shell.common import escape

PASSAGE_COLUMNS = ["rank", "span read", "span score", "cosine", "passage", "source"]
PASSAGE_COLUMN_WIDTHS = ["7%", "18%", "10%", "9%", "42%", "14%"]


def cost_parts(result, decoder) -> list[tuple[str, float]]:
    """(part, milliseconds) of one query, the decoder's generation last where it ran."""
    parts = [("encode the question", result.encode_ms), ("search the index", result.search_ms),
             ("read the passages", result.read_ms)]
    if decoder is not None:
        parts.append((f"generate with {decoder.model_key} ({decoder.steps} pieces)", decoder.milliseconds))
    return parts


def cost_chart(result, decoder) -> go.Figure:
    """Milliseconds per part of one query: encode, search, read, and the decoder's generation."""
    parts = cost_parts(result, decoder)
    colours = ["#4c78a8", "#72b7b2", "#54a24b", "#e45756"][:len(parts)]
    fig = go.Figure(go.Bar(x=[ms for _, ms in parts], y=[escape(name) for name, _ in parts], orientation="h",
                           marker_color=colours, text=[f"{ms:,.1f} ms" for _, ms in parts], textposition="auto",
                           hovertemplate="%{y}: %{x:.1f} ms<extra></extra>"))
    fig.update_layout(height=120 + 55 * len(parts), bargap=0.25, margin={"t": 50, "b": 40, "l": 10, "r": 20}, xaxis_title="milliseconds (this query)",
                      yaxis={"autorange": "reversed", "automargin": True},
                      title=escape(f"Cost per query on this machine, now ({result.k} passages read)"))
    return fig


def passages_frame(result) -> pd.DataFrame:
    return pd.DataFrame([{"rank": p.rank, "cosine": round(p.similarity, 3), "source": p.source or "?",
                          "passage": p.text, "span read": p.answer, "span score": round(p.score, 3)}
                         for p in result.passages], columns=PASSAGE_COLUMNS)


def reading_markdown(result, decoder, decoder_missing: str) -> str:
    """The chain in words: the answer, where it was read, each part's cost, the decoder beside it."""
    best = result.passages[result.answer_passage - 1]
    total = result.encode_ms + result.search_ms + result.read_ms
    text = (f"**Answer: {escape(result.answer)}** (span score {result.score:.2f}), read from passage "
            f"{best.rank}: “{escape(best.text)}” ({escape(best.source or '?')}).  \n"
            f"The chain: {escape(result.encoder_key)} embeds the question ({result.encode_ms:,.1f} ms), the index of "
            f"{result.corpus_size:,} passages gives the {result.k} nearest ({result.search_ms:,.2f} ms), the "
            f"reader ({escape(result.reader)}, over {escape(result.reader_model_key)}) reads them "
            f"({result.read_ms:,.1f} ms): {total:,.0f} ms in all.  \n")
    if decoder is None:
        return text + escape(decoder_missing)
    return text + (f"Beside it, {escape(decoder.model_key)} generating {decoder.steps} pieces after the question took "
                   f"{decoder.milliseconds:,.0f} ms and wrote “{escape(decoder.text)}”: a decoder pays one forward "
                   "pass per piece it writes, and answers from what its weights hold, with no passage to point to.")
