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

import json
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

    present.js imports it once the page's first answer is drawn and the page is idle: the
    first screen draws no Plotly chart (its bars are HTML), and the first chart the visitor
    opens would otherwise pay for evaluating the chunk, about a second of the main thread on
    the 2-core machine (one traced run; bench/first_visit.py measures the views).
    """
    import gradio

    found = sorted((Path(gradio.__file__).parent / "templates" / "frontend" / "assets").glob("PlotlyPlot-*.js"))
    return found[0].name if len(found) == 1 else None


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
    """The route that serves plotly.js for the standalone HTML exports."""
    from starlette.responses import Response
    from starlette.routing import Route

    async def serve(request):
        return Response(plotly_js(), media_type="text/javascript; charset=utf-8",
                        headers={"Cache-Control": "public, max-age=86400"})

    return [Route(f"/{PLOTLY_ROUTE}", serve, methods=["GET", "HEAD"])]
