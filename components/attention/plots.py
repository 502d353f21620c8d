"""Attention views: Plotly heatmap, the all-layers × all-heads grid image, the statistics
table and bertviz's HTML made safe and offline. No Gradio and no model calls here.

What reaches the browser is bounded: the heatmap and the grid show at most
``VIEW_MAX_TOKENS`` tokens, bertviz at most ``BERTVIZ_MAX_TOKENS`` (it draws every weight
as an SVG line and ships them all as JSON text), and the grid is one small PNG, not
layers × heads plots of float JSON.
"""

from __future__ import annotations

import html
import io
import json
import re
import threading
import unicodedata
import weakref
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from models import HEAD_FILTERS, STAT_NAMES, AttentionResult, HeadStatistics, attention_rollout

from ..shell.common import escape, show_piece

VIEW_MAX_TOKENS = 128  # heatmap and grid: the first 128 tokens of a longer input
BERTVIZ_MAX_TOKENS = 64  # bertviz: JSON text of every weight, one SVG line each
BERTVIZ_DECIMALS = 3  # bertviz draws weights as opacity: 3 decimals are invisible

HEATMAP_MODES = ("head", "mean", "rollout")

# bertviz's JavaScript dependencies are served by the app (``components/shell/vendor.py``).
# bertviz asks a CDN for require.js 2.3.6, d3 5.7.0 and jQuery 2.0.0; the app serves the
# same require.js line (2.3.7, the security fix of 2.3.6), the same d3, and jQuery 3.7.1
# (2.0.0 was never published on npm; bertviz uses only basic jQuery).


# --- shared helpers ---------------------------------------------------------------------


def shown_count(result: AttentionResult, limit: int) -> int:
    """How many tokens a view shows: all of them, or the first ``limit``."""
    return min(len(result.tokens), limit)


def token_labels(result: AttentionResult, n: int) -> list[str]:
    """Unique, escaped axis labels: position, token, and the segment for a pair."""
    pair = result.text_pair is not None
    return [
        f"{i} {escape(show_piece(tok))}" + (f" ·{'AB'[seg]}" if pair else "")
        for i, (tok, seg) in enumerate(zip(result.tokens[:n], result.segment_ids[:n]))
    ]


def truncation_note(result: AttentionResult, limit: int, what: str) -> str:
    """'' when everything is shown, else one plain sentence saying what is cut."""
    t = len(result.tokens)
    if t <= limit:
        return ""
    return (
        f"The input has {t} tokens; {what} shows the first {limit} (rows and columns "
        f"beyond token {limit - 1} are left out, so a shown row may sum to less than 1)."
    )


# --- heatmap ----------------------------------------------------------------------------


def heatmap_matrix(result: AttentionResult, layer: int, head: int | None, mode: str) -> np.ndarray:
    """The (T, T) matrix a heatmap shows: one head, the mean over heads, or the rollout."""
    if mode == "head":
        return result.weights[layer, head]
    if mode == "mean":
        return result.weights[layer].mean(0)
    if mode == "rollout":
        return attention_rollout(result)[layer]
    raise ValueError(f"Unknown heatmap mode {mode!r}; choose one of {', '.join(HEATMAP_MODES)}.")


def attention_heatmap(result: AttentionResult, layer: int, head: int = 0, mode: str = "head") -> go.Figure:
    """Tokens on both axes (query rows, key columns); the weight on hover."""
    n = shown_count(result, VIEW_MAX_TOKENS)
    z = np.ascontiguousarray(heatmap_matrix(result, layer, head, mode)[:n, :n], dtype=np.float32)
    labels = token_labels(result, n)
    what = {
        "head": f"layer {layer}, head {head}",
        "mean": f"layer {layer}, average over its {result.num_heads} heads",
        "rollout": f"attention rollout through layers 0–{layer}",
    }[mode]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=labels,
            y=labels,
            colorscale="Blues",
            zmin=0,
            colorbar=dict(title="weight", thickness=12),
            hovertemplate="query %{y}<br>looks at %{x}<br>weight %{z:.4f}<extra></extra>",
        )
    )
    wide = min(max(map(_label_px, labels), default=0), MAX_LABEL_PX)
    top = int(0.87 * wide) + 70  # the title, the key axis' title, its labels at -60°
    fig.update_layout(
        title=dict(text=f"{escape(result.model_key)}: {what}", font=dict(size=14),
                   x=0.5, xanchor="center", y=1, yref="container", yanchor="top", pad=dict(t=8)),
        # Margins made to hold the labels (key labels at -60°: 0.87 of their length upwards,
        # half of it to the right), so Plotly draws once: with automargin it measured the
        # labels, moved the margins and drew the whole figure again (~100-150 ms of the page's
        # CPU a new 128-token text on the bench's machine)
        xaxis=dict(title="key: the token looked at", type="category", tickangle=-60, side="top",
                   automargin=False),
        yaxis=dict(title="query: the token looking", type="category", autorange="reversed",
                   automargin=False),
        height=min(900, top + 10 + max(200, 12 * n)),  # rows of 12 px, the query title's room
        margin=dict(l=wide + 46, r=max(10, wide // 2 + 4), t=top, b=10),
        template="plotly_white",
    )
    return fig


MAX_LABEL_PX = 220  # the margins grow with the labels up to this (a longer token's label is cut)


def _label_px(label: str) -> int:
    """A tick label's width in pixels at Plotly's 12 px font, from above: 6 px a character
    (5 measured in Chromium), 12 for a wide (CJK) one; escaped labels as the browser shows them."""
    return sum(12 if unicodedata.east_asian_width(c) in "WF" else 6 for c in html.unescape(label))


# --- grid ("model view") ------------------------------------------------------------------


@dataclass(frozen=True)
class GridLayout:
    """Where the cells of the grid image are: for drawing and for mapping a click back."""

    layers: int
    heads: int
    cell: int = 48  # pixels per head map
    gap: int = 4
    left: int = 30  # room for "L0".."L11"
    top: int = 18  # room for "H0".."H11"

    @property
    def width(self) -> int:
        return self.left + self.heads * (self.cell + self.gap)

    @property
    def height(self) -> int:
        return self.top + self.layers * (self.cell + self.gap)

    def origin(self, layer: int, head: int) -> tuple[int, int]:
        return self.left + head * (self.cell + self.gap), self.top + layer * (self.cell + self.gap)

    def cell_at(self, x: float, y: float) -> tuple[int, int] | None:
        """(layer, head) under image pixel (x, y), or None for a margin or a gap."""
        col, dx = divmod(int(x) - self.left, self.cell + self.gap)
        row, dy = divmod(int(y) - self.top, self.cell + self.gap)
        if not (0 <= col < self.heads and 0 <= row < self.layers) or dx >= self.cell or dy >= self.cell:
            return None
        return row, col


def _resample(matrix: np.ndarray, size: int) -> np.ndarray:
    """A (..., T, T) stack of matrices as (..., size, size): block maxima when T > size (a
    thin diagonal stays visible), nearest neighbour when T <= size."""
    t = matrix.shape[-1]
    if t > size:
        starts = (np.arange(size) * t) // size
        return np.maximum.reduceat(np.maximum.reduceat(matrix, starts, axis=-2), starts, axis=-1)
    index = (np.arange(size) * t) // size
    return matrix[..., index[:, None], index[None, :]]


GRID_SHADES = 16  # quantised darkness levels: a small palette PNG


def grid_image(result: AttentionResult):
    """One palette image (PIL) of every layer's and head's map (rows: layers, columns:
    heads), and its ``GridLayout``.

    Darkness is sqrt(weight) in GRID_SHADES steps, so that weak patterns stay visible and
    the PNG stays small; each cell is ``GridLayout.cell`` pixels wide whatever the token
    count, so the image size depends only on the model's shape.
    """
    from PIL import Image, ImageDraw

    layout = GridLayout(result.num_layers, result.num_heads)
    n = shown_count(result, VIEW_MAX_TOKENS)
    top = GRID_SHADES - 1
    cells = _resample(result.weights[:, :, :n, :n], layout.cell)  # (layers, heads, cell, cell)
    shades = np.rint(np.sqrt(np.clip(cells, 0, 1)) * top).astype(np.uint8)
    # every cell followed by its gap (index 0: white), rows of layers and columns of heads
    pitch = layout.cell + layout.gap
    blocks = np.zeros((layout.layers, pitch, layout.heads, pitch), dtype=np.uint8)
    blocks[:, : layout.cell, :, : layout.cell] = shades.transpose(0, 2, 1, 3)
    canvas = np.zeros((layout.height, layout.width), dtype=np.uint8)
    canvas[layout.top :, layout.left :] = blocks.reshape(layout.layers * pitch, layout.heads * pitch)
    image = Image.fromarray(canvas, mode="P")
    blue = np.array([8, 48, 107])  # the darkest colour of Plotly's "Blues"
    palette = [255 - (255 - blue) * level / top for level in range(GRID_SHADES)]
    palette.append(np.array([60, 60, 60]))  # labels
    image.putpalette([int(round(c)) for colour in palette for c in colour])
    draw = ImageDraw.Draw(image)
    for head in range(layout.heads):
        draw.text((layout.origin(0, head)[0] + 2, 3), f"H{head}", fill=GRID_SHADES)
    for layer in range(layout.layers):
        draw.text((2, layout.origin(layer, 0)[1] + layout.cell // 2 - 5), f"L{layer}", fill=GRID_SHADES)
    return image, layout


# zlib's fastest level: 2-4 ms for bert-base's 144 heads where Gradio's default (6) took
# 24-48 ms on every response, for PNGs 10-30 % larger (still ~1/500 of bertviz's page)
PNG_LEVEL = 1
_GRID_PNGS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_GRID_PNGS_LOCK = threading.Lock()


def png_bytes(image) -> bytes:
    """The image as a PNG (what the browser receives for the grid)."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=PNG_LEVEL)
    return buffer.getvalue()


def grid_png(result: AttentionResult) -> bytes:
    """``grid_image`` of a result as PNG bytes, made once per result: results are cached and
    immutable, and every view of a text (any layer, head or mode) sends the same grid."""
    with _GRID_PNGS_LOCK:
        data = _GRID_PNGS.get(result)
    if data is None:
        data = png_bytes(grid_image(result)[0])
        with _GRID_PNGS_LOCK:
            _GRID_PNGS[result] = data
    return data


# --- statistics table ---------------------------------------------------------------------

STAT_COLUMNS = {
    "entropy": "entropy (bits)",
    "entropy_ratio": "entropy / max",
    "to_cls": "→ [CLS]",
    "to_sep": "→ [SEP]",
    "to_self": "→ self",
    "to_prev": "→ previous",
    "to_next": "→ next",
    "max_weight": "max weight",
}


def stats_frame(stats: HeadStatistics, heads: list[tuple[int, int]] | None = None) -> pd.DataFrame:
    """One row per head (or per listed head), values rounded to 3 decimals."""
    records = stats.to_records()
    if heads is not None:
        keep = set(heads)
        records = [r for r in records if (r["layer"], r["head"]) in keep]
    columns = ["layer", "head", *(STAT_COLUMNS[name] for name in STAT_NAMES)]
    rows = [
        [r["layer"], r["head"], *(round(r[name], 3) for name in STAT_NAMES)] for r in records
    ]
    return pd.DataFrame(rows, columns=columns)


def stats_label(stats: HeadStatistics, which: str | None) -> str:
    """The table's label: how many heads it lists and, for a filter, its threshold; when no head
    passes, the highest share any head has (so an empty table says why it is empty)."""
    total = stats.to_self.size
    if which not in HEAD_FILTERS:
        return f"Per-head statistics (all {total} heads)"
    stat, at_least = HEAD_FILTERS[which]
    values = getattr(stats, stat)
    what = "entropy / max" if stat == "entropy_ratio" else "share"
    verb = "are broad" if stat == "entropy_ratio" else which
    passing = int((values >= at_least).sum())
    if passing:
        return f"Per-head statistics: {passing} of {total} heads {verb} ({what} ≥ {at_least:g})"
    layer, head = np.unravel_index(int(np.argmax(values)), values.shape)
    return (f"Per-head statistics: none of the {total} heads {verb} ({what} ≥ {at_least:g}); the highest "
            f"{what} is {float(values.max()):.2f} (layer {layer}, head {head})")


# --- bertviz ------------------------------------------------------------------------------

_SCRIPT_UNSAFE = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def script_safe_json(value) -> str:
    """JSON that cannot end a <script> element or open a comment: <, >, & and the JS line
    separators written as \\u escapes (the same string for JSON.parse and for JS)."""
    text = json.dumps(value)
    return re.sub("[<>&\u2028\u2029]", lambda m: _SCRIPT_UNSAFE[m.group()], text)


def _bertviz_template(view: str) -> list[str]:
    """The text of bertviz's JS around its PYTHON_PARAMS markers."""
    import bertviz

    js = (Path(bertviz.__file__).parent / f"{view}_view.js").read_text()
    pieces = js.split("PYTHON_PARAMS")
    if len(pieces) < 2:
        raise RuntimeError(f"bertviz's {view}_view.js has no PYTHON_PARAMS marker")
    return pieces


def make_script_safe(page: str, view: str) -> str:
    """bertviz's returned HTML with its parameter JSON re-serialised script-safe.

    bertviz writes ``json.dumps(params)`` into a <script> as it is, so a token such as
    ``</script><img src=x onerror=...>`` would end the script and become live HTML. It
    also replaces the marker's second mention, in a JS comment, so the whole JSON is sent
    twice: the comment gets its marker word back (half the bytes).
    """
    pieces = _bertviz_template(view)
    decoder = json.JSONDecoder()
    start = page.index(pieces[0]) + len(pieces[0])
    out = [page[:start]]
    params = None
    for i, piece in enumerate(pieces[1:]):
        value, end = decoder.raw_decode(page, start)
        if params is None:
            params = value
            out.append(script_safe_json(value))
        elif value != params:
            raise RuntimeError("bertviz's HTML changed: its parameter copies differ")
        else:
            out.append("PYTHON_PARAMS")
        if not page.startswith(piece, end):
            raise RuntimeError("bertviz's HTML changed: unexpected text after its parameters")
        start = end + len(piece)
        out.append(piece)
    out.append(page[start:])
    return "".join(out)


def localise_libraries(page: str, lib_urls: dict[str, str]) -> str:
    """Point bertviz's require.js <script> and its require.config paths at our URLs."""
    page, n_script = re.subn(
        r'<script src="[^"]*require[^"]*"></script>',
        lambda _: f'<script src="{html.escape(lib_urls["require"])}"></script>',
        page,
    )
    n_paths = 0
    for name in ("d3", "jquery"):
        url = lib_urls[name].removesuffix(".js")  # require.js adds .js itself
        page, n = re.subn(rf"({name}:\s*)'[^']*'", lambda m: m.group(1) + json.dumps(url), page)
        n_paths += n
    if n_script != 1 or n_paths != 2:
        raise RuntimeError("bertviz's HTML changed: could not point it at the local libraries")
    return page


def bertviz_weights(result: AttentionResult):
    """bertviz's input: one (1, heads, n, n) tensor per layer, n = the shown tokens,
    rounded to BERTVIZ_DECIMALS (float64, so the JSON keeps only those digits)."""
    import torch

    n = shown_count(result, BERTVIZ_MAX_TOKENS)
    w = np.round(result.weights[:, :, :n, :n].astype(np.float64), BERTVIZ_DECIMALS)
    return [torch.from_numpy(w[layer][None]) for layer in range(w.shape[0])], n


# In the view's page: projector mode reaches the sandboxed frame as a message from the app's
# page (assets/present.js answers the frame's question and tells it of every change); the view
# is then zoomed, at most 1.5 times (the projector's type is about that much larger) and no
# wider than the frame, as bertviz draws at fixed pixel sizes.
FRAME_DISPLAY_SCRIPT = """(() => {
  const root = document.documentElement;
  let projector = false;
  function fit() {
    root.style.zoom = "";
    // how far right bertviz drew (its head view's <svg> is 100 % wide: measure what is in it)
    const right = Math.max(0, ...[...document.querySelectorAll("svg")].map((s) => {
      const box = s.getBBox();
      return box.width ? s.getBoundingClientRect().left + box.x + box.width : 0;
    }));
    const zoom = projector ? Math.max(1, Math.min(1.5, right ? (innerWidth - 16) / right : 1.5)) : 1;
    root.style.zoom = projector ? String(zoom) : "";
    if (parent !== window) parent.postMessage({encoderLabDisplay: "zoom", zoom}, "*");  // the frame grows
  }
  addEventListener("message", (e) => {
    if (e.source !== parent || !e.data || e.data.encoderLabDisplay !== "mode") return;
    projector = e.data.projector === true;
    fit();
  });
  const drawn = new MutationObserver(() => {  // bertviz's first drawing sets the view's width
    if (!document.querySelector("svg")) return;
    drawn.disconnect();
    requestAnimationFrame(fit);
  });
  drawn.observe(root, {childList: true, subtree: true});
  if (parent !== window) parent.postMessage({encoderLabDisplay: "ask"}, "*");
})();"""


def bertviz_page(result: AttentionResult, view: str, lib_urls: dict[str, str]) -> str:
    """A whole HTML document with bertviz's head or model view, loading only local files."""
    from bertviz import head_view, model_view

    attention, n = bertviz_weights(result)
    tokens = list(result.tokens[:n])
    b_start = next((i for i, s in enumerate(result.segment_ids[:n]) if s == 1), None)
    if view == "head":
        body = head_view(attention, tokens, sentence_b_start=b_start, html_action="return").data
    elif view == "model":
        body = model_view(
            attention, tokens, sentence_b_start=b_start, display_mode="light", html_action="return"
        ).data
    else:
        raise ValueError(f"Unknown bertviz view {view!r}; choose 'head' or 'model'.")
    body = localise_libraries(make_script_safe(body, view), lib_urls)
    return (
        '<!doctype html><html><head><meta charset="utf-8">'
        "<style>body{margin:8px;background:#fff;color:#111}</style>"
        f"<script>{FRAME_DISPLAY_SCRIPT}</script></head><body>"
        + body
        + "</body></html>"
    )


def iframe(page: str, title: str, height: int = 720) -> str:
    """The page in a sandboxed iframe (scripts run, but in an opaque origin: they cannot
    reach the app), the whole document escaped into the srcdoc attribute."""
    return (
        f'<iframe title="{html.escape(title)}" sandbox="allow-scripts" '
        f'style="width:100%;height:{height}px;border:1px solid #ddd;border-radius:6px" '
        f'srcdoc="{html.escape(page, quote=True)}"></iframe>'
    )


def notice_html(message: str) -> str:
    """A plain, escaped notice in place of a view."""
    return f'<div class="attention-notice" role="status">{html.escape(message)}</div>'
