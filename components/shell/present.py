"""Presentation: the theme, projector mode, the dark theme's charts, exports (all offline).

The browser side is ``assets/present.js`` (with ``assets/present.css``), put in the page's
<head> by :func:`head`: a "Display" bar on every page toggles projector mode (large type,
thick lines, high contrast; ``?projector=1`` in a link) and the dark theme (``?dark=1``);
every chart gets PNG / SVG / HTML buttons (drawn by Plotly.js in the browser), every table
a CSV button, every bertviz view an HTML button. The standalone HTML files inline their
scripts (plotly.js from :func:`routes`, bertviz's from ``components/shell/vendor.py``), so they
open with no network. The theme's colours pass WCAG AA contrast (checked by the axe audit
in ``tests/e2e/test_present_browser.py``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from functools import lru_cache
from pathlib import Path

from .present_copy import TEXT
from .vendor import ROUTE as VENDOR_ROUTE

ASSETS = Path(__file__).resolve().parents[2] / "assets"
SCRIPT = ASSETS / "present.js"
STYLE = ASSETS / "present.css"
PLOTLY_ROUTE = "export/plotly.js"  # plotly.js for the standalone chart files

FONTS = ["system-ui", "-apple-system", "Segoe UI", "Roboto", "sans-serif"]
MONO_FONTS = ["ui-monospace", "SFMono-Regular", "Menlo", "monospace"]

# Theme colours that pass WCAG AA (4.5:1 for body text) where Gradio's defaults do not:
# grey helper text (slider ends, footer) #9ca3af on white is 2.5:1, neutral-600 is 7.6:1;
# white on orange-500 buttons is 2.8:1, on orange-700 5.2:1.
THEME_COLOURS = {
    "body_text_color_subdued": "*neutral_600",
    "block_label_text_color": "*neutral_700",
    "block_info_text_color": "*neutral_600",
    "input_placeholder_color": "*neutral_500",
    "color_accent": "*primary_700",  # on dark, present.css sets orange-500 (Gradio has no
                                     # dark variant of this one)
    "button_primary_background_fill": "*primary_700",
    "button_primary_background_fill_hover": "*primary_800",
    "button_primary_background_fill_dark": "*primary_700",
    "button_primary_background_fill_hover_dark": "*primary_800",
    "button_primary_text_color": "white",
    "button_primary_text_color_dark": "white",
}


def theme():
    """Gradio's default theme with system fonts (nothing fetched) and AA-contrast colours."""
    import gradio as gr

    return gr.themes.Default(font=FONTS, font_mono=MONO_FONTS).set(**THEME_COLOURS)


@lru_cache(maxsize=1)
def dark_template() -> dict:
    """Plotly's own ``plotly_dark`` template, as the browser applies it to charts on dark."""
    import plotly.io as pio

    return pio.templates["plotly_dark"].to_plotly_json()


def script_json(value) -> str:
    """``value`` as JSON that can sit inside an inline <script> (no "</script>", no "<!--")."""
    return json.dumps(value, separators=(",", ":")).replace("<", "\\u003c").replace(">", "\\u003e")


@lru_cache(maxsize=1)
def gradio_plotly_chunk() -> str | None:
    """The file name of Gradio's own Plotly chunk among its front-end assets (its name carries
    a hash that changes with the Gradio release), or None where none is found.

    Gradio's Plot component imports it for the page's first Plotly chart. As Gradio ships it,
    it inlines the whole of plotly.js (4.6 MB, every trace type), and evaluating it held the
    page's main thread about 1.1 s on the 2-core machine: the view opened meanwhile waited.
    The app serves it with the lab's partial bundle instead (:func:`plotly_chunk`), and
    present.js imports it once the page's first answer is drawn and the page is idle.
    """
    import gradio

    found = sorted((Path(gradio.__file__).parent / "templates" / "frontend" / "assets").glob("PlotlyPlot-*.js"))
    return found[0].name if len(found) == 1 else None


# --- the lab's plotly.js: a partial bundle of the trace types its charts draw ----------------
# Built from plotly.js's own source (``assets/vendor/plotly/``: the entry, the build script,
# the pinned versions; its README says how to rebuild), at the version Gradio's chunk inlines.
# Evaluating it takes about a tenth of the full bundle's time (87-150 against 1,174-1,289 ms
# in Chromium on the 2-core machine: one run, five loads each, alternating). Its first few
# charts draw slower than after the full bundle's evaluation (V8 has not yet compiled
# plotly.js's shared code hot), e.g. the first 138-250 against 104-114 ms.
PLOTLY_DIR = ASSETS / "vendor" / "plotly"
PLOTLY_BUNDLE = PLOTLY_DIR / "plotly-lab.min.js"
TRACES = ("scatter", "bar", "heatmap")  # what assets/vendor/plotly/index.js registers
_BANNER = re.compile(r"/\*! plotly\.js v(\d+\.\d+\.\d+), partial bundle \(([a-z, ]+)\)")
# Gradio's chunk: ``var p=r(f(((e,t)=>{<plotly.js as a UMD module>}))())`` then its component.
# The module ends by setting window.Plotly; the component calls p.default.react(...).
_CHUNK_START = re.compile(r"var (\w+)=\w+\(\w+\(\(\(\w+,\w+\)=>\{\(function\(\w+,\w+\)\{typeof \w+==`object`")
_CHUNK_END = re.compile(r"return window\.Plotly=(\w+),\1\}\)\}\)\)\(\)\),")
_CHUNK_VERSION = re.compile(r"\.version=`(\d+\.\d+\.\d+)`")


@lru_cache(maxsize=1)
def lab_plotly() -> tuple[bytes, str, tuple[str, ...]] | None:
    """(the bundle, its plotly.js version, its trace types), or None when it is missing."""
    if not PLOTLY_BUNDLE.is_file():
        return None
    data = PLOTLY_BUNDLE.read_bytes()
    banner = _BANNER.match(data[:200].decode("utf-8", "replace"))
    if banner is None:
        return None
    return data, banner.group(1), tuple(t.strip() for t in banner.group(2).split(","))


def lab_plotly_route() -> str | None:
    """Where the bundle is served (its content's hash in the name: cached for good)."""
    bundle = lab_plotly()
    return None if bundle is None else f"charts/plotly-{hashlib.sha256(bundle[0]).hexdigest()[:12]}.js"


def swap_plotly(chunk: str, bundle_url: str, version: str) -> str | None:
    """Gradio's Plotly chunk ``chunk`` with its inlined plotly.js replaced by an import of
    ``bundle_url`` (which sets ``window.Plotly``); None unless the chunk has exactly the
    expected shape and inlines plotly.js ``version``."""
    starts, ends = list(_CHUNK_START.finditer(chunk)), list(_CHUNK_END.finditer(chunk))
    inlined = _CHUNK_VERSION.search(chunk)
    if len(starts) != 1 or len(ends) != 1 or inlined is None or inlined.group(1) != version:
        return None
    start, end = starts[0], ends[0]
    if not start.start() < inlined.start() < end.start():
        return None
    swapped = (f'import"{bundle_url}";' + chunk[:start.start()] + f"var {start.group(1)}={{default:window.Plotly}},"
               + chunk[end.end():])
    return swapped if "window.Plotly=" not in swapped else None


@lru_cache(maxsize=1)
def plotly_chunk() -> bytes | None:
    """What the app serves at Gradio's Plotly chunk's address: Gradio's chunk with the lab's
    partial bundle in place of its full plotly.js; None (Gradio's own file is served) when the
    bundle is missing, or Gradio's chunk is not the shape or the plotly.js version expected,
    or the operator set ``ENCODER_LAB_PLOTLY=gradio`` (e.g. for a chart type the bundle lacks)."""
    if os.environ.get("ENCODER_LAB_PLOTLY", "lab").strip().lower() == "gradio":
        return None
    name, bundle, route = gradio_plotly_chunk(), lab_plotly(), lab_plotly_route()
    if name is None or bundle is None:
        return None
    import gradio

    chunk = (Path(gradio.__file__).parent / "templates" / "frontend" / "assets" / name).read_text(encoding="utf-8")
    swapped = swap_plotly(chunk, f"../{route}", bundle[1])  # the chunk sits at <root>/assets/
    return None if swapped is None else swapped.encode("utf-8")


def page_config() -> dict:
    """What present.js reads from ``window.ENCODER_LAB_PRESENT``."""
    return {
        "text": TEXT,
        "darkTemplate": dark_template(),
        "plotlyUrl": PLOTLY_ROUTE,
        "vendorPrefix": f"{VENDOR_ROUTE}/",
        "plotlyChunk": gradio_plotly_chunk(),
    }


def head() -> str:
    """The <head> addition: the configuration, then the script (both inline, both local)."""
    code = SCRIPT.read_text(encoding="utf-8")
    for markup in ("</script", "<script", "<!--"):  # would end or derail the inline element
        if markup in code.lower():
            raise RuntimeError(f"{SCRIPT.name} must not contain {markup!r}: write '\\x3C' for '<'")
    return (
        f"<script>window.ENCODER_LAB_PRESENT = {script_json(page_config())};</script>\n"
        f"<script>{code}</script>"
    )


@lru_cache(maxsize=1)
def plotly_js() -> bytes:
    """plotly.js as the installed ``plotly`` package ships it (the same file ``to_html``
    inlines with ``include_plotlyjs=True``)."""
    from plotly.offline import get_plotlyjs

    return get_plotlyjs().encode("utf-8")


def routes() -> list:
    """The routes for plotly.js: the full file for the standalone HTML exports; the lab's
    partial bundle, and Gradio's Plotly chunk importing it in place of its own copy (both
    only when :func:`plotly_chunk` could be made; else Gradio serves its chunk as shipped)."""
    from starlette.responses import Response
    from starlette.routing import Route

    async def serve(request):
        return Response(plotly_js(), media_type="text/javascript; charset=utf-8",
                        headers={"Cache-Control": "public, max-age=86400"})

    found = [Route(f"/{PLOTLY_ROUTE}", serve, methods=["GET", "HEAD"])]
    chunk, name = plotly_chunk(), gradio_plotly_chunk()
    if chunk is None:
        return found

    async def serve_bundle(request):  # its hash is in its name: it never changes
        return Response(lab_plotly()[0], media_type="text/javascript; charset=utf-8",
                        headers={"Cache-Control": "public, max-age=31536000, immutable"})

    etag = '"' + hashlib.sha256(chunk).hexdigest()[:16] + '"'

    async def serve_chunk(request):  # Gradio's name, our content: revalidated on each load
        headers = {"Cache-Control": "no-cache", "ETag": etag}
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers=headers)
        return Response(chunk, media_type="text/javascript; charset=utf-8", headers=headers)

    # before Gradio's own /assets/{path} route: the app's routes are the first the server tries
    return found + [Route(f"/{lab_plotly_route()}", serve_bundle, methods=["GET", "HEAD"]),
                    Route(f"/assets/{name}", serve_chunk, methods=["GET", "HEAD"])]
