"""The Fill-mask tab's views: a result in, a DataFrame, HTML bars or a Plotly figure out.

No Gradio and no model calls here. Every token or user string that reaches a figure is
escaped first: Plotly reads a small HTML subset in labels (``<b>``, ``<a href>``), so a
token such as ``<s>`` or ``<a href=...>`` would otherwise be markup.
"""

from __future__ import annotations

import json
from functools import lru_cache

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from models import FillMaskResult

from ..shell.common import escape, show_token


COLUMNS = ["mask", "rank", "token", "probability"]


def predictions_table(result: FillMaskResult | None) -> dict:
    """The table as rows, ``{"headers": COLUMNS, "data": [[mask, rank, token, probability], ...]}``:
    what ``gr.Dataframe`` sends for ``predictions_frame`` (a test compares), without pandas.
    No result: the headers and no rows."""
    return {
        "headers": list(COLUMNS),
        "data": [[m.index + 1, rank, show_token(p.token), round(p.score, 6)]
                 for m in (result.masks if result else ()) for rank, p in enumerate(m.predictions, start=1)],
    }


def predictions_frame(result: FillMaskResult) -> pd.DataFrame:
    """One row per (mask, rank): mask number, rank, token, probability."""
    return pd.DataFrame(predictions_table(result)["data"], columns=COLUMNS)


def fill_mask_figure(result: FillMaskResult) -> go.Figure:
    """Horizontal bars of the top-k probabilities, one panel per mask, best on top, every
    panel on the same 0-100 % axis.

    Built as plain dicts on a layout that plotly validated once per panel count
    (``_panels``): validating a fresh ``make_subplots`` figure and its template took
    ~20 ms a call, more than the model (bench/classroom.py's profile), for the same JSON.
    """
    return go.Figure(_figure(result), _validate=False)


def fill_mask_figure_json(result: FillMaskResult) -> str:
    """``fill_mask_figure(result).to_json()``, the same JSON (a test compares), without the
    figure object: ``go.Figure`` deep-copies the layout and its template on every call, 4-7 %
    of the server's samples under a burst of live requests (bench/classroom.py --mode burst)."""
    return json.dumps(_figure(result), separators=(",", ":"))


def _figure(result: FillMaskResult) -> dict:
    """The figure as plain dicts: ``{"data": [...], "layout": {...}}``."""
    n = len(result.masks)
    skeleton = _panels(n)
    layout = dict(skeleton)
    layout["annotations"] = [
        {**note, "text": f"mask {m.index + 1} (token position {m.position})"}
        for note, m in zip(skeleton["annotations"], result.masks)
    ]
    data = []
    for row, mask in enumerate(result.masks, start=1):
        labels = [
            f"{rank}. {escape(show_token(p.token))}"
            for rank, p in enumerate(mask.predictions, start=1)
        ]
        scores = [p.score for p in mask.predictions]
        axis = "" if row == 1 else str(row)
        data.append({
            "type": "bar",
            "x": scores[::-1],
            "y": labels[::-1],
            "orientation": "h",
            "text": [f"{s:.1%}" for s in scores[::-1]],
            "textposition": "auto",
            "hovertemplate": "%{y}<br>p = %{x:.4f}<extra></extra>",
            "marker": {"color": BAR_COLOUR},
            "showlegend": False,
            "xaxis": f"x{axis}",
            "yaxis": f"y{axis}",
        })
        # one probability scale, 0 to 100 %, for every mask, as the HTML bars: a panel scaled to its
        # own best would draw 17 % as long as another's 71 %
        layout[f"xaxis{axis}"] = {**skeleton[f"xaxis{axis}"], "range": [0, 1]}
    layout["height"] = 80 + n * (40 + 26 * max(len(m.predictions) for m in result.masks))
    return {"data": data, "layout": layout}


BAR_COLOUR = "#4c78a8"


def fill_mask_bars_html(result: FillMaskResult) -> str:
    """The top-k probabilities as bars in HTML: one table per mask, best first.

    The first screen's chart. A Plotly chart there made the page load Gradio's Plotly chunk
    (4.6 MB) at once, about a second of the browser's main thread on the 2-core machine
    before the chart and the next click (one traced run); the Plotly figure stays in a
    closed accordion below, drawn when opened. A bar's length is the probability itself
    (0 to 100 %), not scaled to the best one. Tokens are escaped: a token such as
    ``<s>`` or one a user typed stays text.
    """
    tables = []
    for mask in result.masks:
        rows = "".join(
            f'<tr><td class="fm-rank">{rank}.</td><td class="fm-token">{escape(show_token(p.token))}</td>'
            f'<td><div class="fm-p"><span class="fm-track" aria-hidden="true"><span style="width:{100 * p.score:.1f}%">'
            f'</span></span>{p.score:.1%}</div></td></tr>'
            for rank, p in enumerate(mask.predictions, start=1))
        tables.append(
            f'<table class="fm-bars"><caption>mask {mask.index + 1} (token position {mask.position})</caption>'
            '<thead><tr><th scope="col">rank</th><th scope="col">token</th><th scope="col">probability</th></tr></thead>'
            f"<tbody>{rows}</tbody></table>")
    return "".join(tables)


@lru_cache(maxsize=None)
def _panels(n: int) -> dict:
    """The layout of ``n`` stacked panels (axes, title slots, template), as plotly builds it."""
    fig = make_subplots(
        rows=n,
        cols=1,
        subplot_titles=[f"mask {i + 1}" for i in range(n)],
        vertical_spacing=min(0.12, 0.3 / max(n, 1)),
    )
    fig.update_xaxes(tickformat=".1%")
    fig.update_yaxes(type="category")
    fig.update_layout(margin=dict(l=10, r=10, t=40, b=10), xaxis_title=None, template="plotly_white")
    return fig.to_plotly_json()["layout"]
