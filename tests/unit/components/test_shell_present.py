"""components/shell/present.py: the theme's contrast, the inline script's safety, plotly.js served
for the offline chart files, the dark template."""

from __future__ import annotations

import html.parser
import re
import json

import pytest

from components.shell import present


def relative_luminance(hex_colour: str) -> float:
    """WCAG 2.x relative luminance of an sRGB colour written #rrggbb."""
    channels = [int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    high, low = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def resolved(theme, name: str) -> str:
    """A theme variable followed through its ``*reference`` chain to a colour."""
    value = getattr(theme, name)
    while isinstance(value, str) and value.startswith("*"):
        value = getattr(theme, value[1:])
    return {"white": "#ffffff", "black": "#000000"}.get(value, value)


@pytest.mark.parametrize("foreground, background", [
    ("body_text_color_subdued", "background_fill_primary"),   # slider ends, footer links
    ("block_label_text_color", "background_fill_primary"),
    ("color_accent", "background_fill_primary"),              # the selected tab's label
    ("button_primary_text_color", "button_primary_background_fill"),
    ("button_primary_text_color", "button_primary_background_fill_hover"),
    ("button_primary_text_color_dark", "button_primary_background_fill_dark"),
])
def test_theme_text_passes_wcag_aa(foreground, background):
    theme = present.theme()
    assert contrast(resolved(theme, foreground), resolved(theme, background)) >= 4.5


def test_dark_accent_set_by_the_stylesheet_passes_wcag_aa():
    """present.css gives the accent its own dark value (Gradio's theme has none)."""
    theme = present.theme()
    css = present.STYLE.read_text()
    accent = re.search(r"body\.dark \{ --color-accent: var\(--(\w+)-(\d+)\); \}", css)
    assert accent, "present.css sets no dark accent"
    colour = resolved(theme, f"{accent.group(1)}_{accent.group(2)}")
    assert contrast(colour, resolved(theme, "background_fill_primary_dark")) >= 4.5


def test_gradios_default_would_fail_where_the_theme_changes_it():
    """The changes are needed: Gradio's defaults are below 4.5:1 (what axe reported)."""
    import gradio as gr

    default = gr.themes.Default()
    assert contrast(resolved(default, "body_text_color_subdued"), "#ffffff") < 4.5
    assert contrast("#ffffff", resolved(default, "button_primary_background_fill")) < 4.5


def test_contrast_formula_on_known_pairs():
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)  # the classic near-miss


class _Scripts(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.scripts, self._inside = [], False

    def handle_starttag(self, tag, attrs):
        self._inside = tag == "script"
        if self._inside:
            self.scripts.append("")

    def handle_endtag(self, tag):
        self._inside = False

    def handle_data(self, data):
        if self._inside:
            self.scripts[-1] += data


def test_head_is_two_whole_inline_scripts_with_the_configuration():
    parser = _Scripts()
    parser.feed(present.head())
    assert len(parser.scripts) == 2
    prefix = "window.ENCODER_LAB_PRESENT = "
    assert parser.scripts[0].startswith(prefix)
    config = json.loads(parser.scripts[0][len(prefix):].rstrip(";"))
    assert config["plotlyUrl"] == present.PLOTLY_ROUTE
    assert config["text"]["projector"] == "Projector"
    assert parser.scripts[1] == present.SCRIPT.read_text(encoding="utf-8")


def test_script_json_cannot_end_the_script_element():
    hostile = {"token": "</script><script>alert(1)</script><!--"}
    text = present.script_json(hostile)
    assert "<" not in text and ">" not in text
    assert json.loads(text) == hostile


def test_a_script_with_markup_is_refused(monkeypatch, tmp_path):
    bad = tmp_path / "present.js"
    bad.write_text('const s = "</script>";')
    monkeypatch.setattr(present, "SCRIPT", bad)
    with pytest.raises(RuntimeError, match="must not contain"):
        present.head()


def test_dark_template_is_plotlys_own():
    import plotly.io as pio

    template = present.dark_template()
    assert template == pio.templates["plotly_dark"].to_plotly_json()
    assert template["layout"]["paper_bgcolor"] == "rgb(17,17,17)"


def test_plotly_js_is_served_as_the_package_ships_it():
    from pathlib import Path

    import plotly
    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    shipped = (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_bytes()
    client = TestClient(Starlette(routes=present.routes()))
    response = client.get("/" + present.PLOTLY_ROUTE)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/javascript")
    assert response.content == shipped


def test_word_labels_are_written_not_only_coloured():
    """'Classify my sentence' on a per-word task: each word's label is text under it."""
    import numpy as np

    from components.finetune.plots import classification_html
    from models.tasks.classifier import Classification

    result = Classification(
        head_id="h", text="Alice <b>met</b> Bob", kind="token", labels=("Lower", "Upper"),
        probabilities=np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]]),
        predicted=("Upper", "Lower", "Upper"), spans=((0, 5), (6, 16), (17, 20)),
    )
    page = classification_html(result, {"Lower": "#dbe9f6", "Upper": "#fde2c4"})
    words = [(m.group(1), m.group(2)) for m in
             re.finditer(r"<mark [^>]*>(.*?)<sub class='head-label'>(.*?)</sub></mark>", page)]
    assert words == [("Alice", "Upper"), ("&lt;b&gt;met&lt;/b&gt;", "Lower"), ("Bob", "Upper")]


def test_over_white_is_alpha_compositing():
    from components.shell.common import over_white

    assert over_white((0, 0, 0), 0.5) == (128, 128, 128)
    assert over_white((33, 102, 172), 1.0) == (33, 102, 172)
    assert over_white((33, 102, 172), 0.0) == (255, 255, 255)


@pytest.mark.parametrize("alpha", [0.08, 0.3, 0.5, 0.6, 0.7, 0.8])
def test_attribution_shades_keep_their_text_readable(alpha):
    """Every shade the 'Why this guess' rows use, with the text colour chosen for it,
    passes WCAG AA (checked with this file's own contrast formula)."""
    from components.attribution.plots import NEGATIVE, POSITIVE
    from components.shell.common import over_white, text_colour_on

    for colour in (POSITIVE, NEGATIVE):
        shade = over_white(colour, alpha)
        assert contrast(text_colour_on(shade), "#%02x%02x%02x" % shade) >= 4.5, (colour, alpha)


def test_the_plotly_chunk_the_page_imports_is_the_one_gradios_plot_component_imports():
    """present.js imports ``gradio_plotly_chunk()`` beside Gradio's entry module: it must be
    the file Gradio's own Plot component loads for a Plotly chart (else the page evaluates
    plotly.js twice, or fetches a file that is not there)."""
    from pathlib import Path

    import gradio

    assets = Path(gradio.__file__).parent / "templates" / "frontend" / "assets"
    name = present.gradio_plotly_chunk()
    assert name and (assets / name).is_file()
    plot_chunks = [p for p in assets.glob("Plot-*.js") if f"import(`./{name}`)" in p.read_text(encoding="utf-8")]
    assert plot_chunks, f"no Plot chunk of Gradio imports ./{name}"
    entry = re.search(r'<script type="module"[^>]* src="\./assets/(index-[^"]+\.js)"',
                      (assets.parent / "index.html").read_text(encoding="utf-8"))
    assert entry and (assets / entry.group(1)).is_file()  # present.js finds the chunk beside it
    assert present.page_config()["plotlyChunk"] == name


# --- the lab's plotly.js in Gradio's Plotly chunk ------------------------------------------

def gradios_chunk() -> str:
    from pathlib import Path

    import gradio

    assets = Path(gradio.__file__).parent / "templates" / "frontend" / "assets"
    return (assets / present.gradio_plotly_chunk()).read_text(encoding="utf-8")


def test_the_bundle_is_the_plotly_js_gradio_inlines_with_the_lab_s_trace_types():
    """Same plotly.js release as Gradio's chunk (the figures' JSON is read the same way), and
    the trace types assets/vendor/plotly/index.js registers are the ones TRACES names."""
    bundle, version, traces = present.lab_plotly()
    assert re.search(r"\.version=`" + re.escape(version) + "`", gradios_chunk())
    assert set(traces) == set(present.TRACES)
    index = (present.PLOTLY_DIR / "index.js").read_text(encoding="utf-8")
    registered = set(re.findall(r"require\('plotly\.js/lib/(\w+)'\)", index)) - {"core"}
    assert registered | {"scatter"} == set(present.TRACES)  # scatter comes with the core
    lock = json.loads((present.PLOTLY_DIR / "package-lock.json").read_text(encoding="utf-8"))
    assert lock["packages"]["node_modules/plotly.js"]["version"] == version
    assert len(bundle) < len(gradios_chunk().encode()) / 3


def test_gradios_chunk_imports_the_bundle_instead_of_inlining_plotly_js():
    chunk = present.plotly_chunk().decode()
    original = gradios_chunk()
    assert len(chunk) < 5_000 < 4_000_000 < len(original)
    assert chunk.startswith(f'import"../{present.lab_plotly_route()}";')
    # Gradio's imports and its component's code are kept, reading the bundle's global
    imports = re.match(r'(import[^;]*;)+', original).group(0)
    assert imports in chunk
    assert "={default:window.Plotly}," in chunk and ".default.react(" in chunk
    assert chunk.endswith(original[-400:])
    assert "window.Plotly=" not in chunk and ".version=`" not in chunk


@pytest.mark.parametrize("spoil", ["version", "twice", "end"])
def test_a_chunk_of_another_shape_or_release_is_left_to_gradio(spoil):
    chunk, version = gradios_chunk(), present.lab_plotly()[1]
    if spoil == "version":
        chunk = chunk.replace(f".version=`{version}`", ".version=`9.9.9`", 1)
    elif spoil == "twice":
        start = re.search(r"var \w+=\w+\(\w+\(\(\(\w+,\w+\)=>\{", chunk).start()
        chunk = chunk[:start] + chunk[start:start + 200] + chunk[start:]
    else:
        chunk = chunk.replace("return window.Plotly=", "return window.PlotlyX=", 1)
    assert present.swap_plotly(gradios_chunk(), "../b.js", version) is not None
    assert present.swap_plotly(chunk, "../b.js", version) is None


def plotly_trace_types() -> set[str]:
    """Every trace type plotly knows (its graph_objects' trace classes, lower case)."""
    import plotly.graph_objects as go
    from plotly.basedatatypes import BaseTraceType

    return {name.lower() for name in dir(go)
            if isinstance(getattr(go, name), type) and issubclass(getattr(go, name), BaseTraceType)}


def trace_types_built_by_the_components() -> set[str]:
    """Every trace type the UI's code constructs (go.<Trace>(...), or a dict's "type")."""
    from pathlib import Path

    known, found = plotly_trace_types(), set()
    for path in (Path(present.__file__).resolve().parents[1]).rglob("*.py"):
        code = path.read_text(encoding="utf-8")
        found |= {name.lower() for name in re.findall(r"\bgo\.([A-Z]\w*)\(", code)} & known
        found |= set(re.findall(r"""["']type["']\s*:\s*["'](\w+)["']""", code)) & known
    return found


def test_every_trace_type_the_components_build_is_in_the_bundle():
    built = trace_types_built_by_the_components()
    assert {"scatter", "bar", "heatmap"} <= built  # the scan sees them
    assert built <= set(present.TRACES), built - set(present.TRACES)


def test_the_routes_serve_the_chunk_and_the_bundle():
    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    client = TestClient(Starlette(routes=present.routes()))
    chunk = client.get(f"/assets/{present.gradio_plotly_chunk()}")
    assert chunk.status_code == 200 and chunk.content == present.plotly_chunk()
    assert chunk.headers["content-type"].startswith("text/javascript")
    again = client.get(f"/assets/{present.gradio_plotly_chunk()}", headers={"If-None-Match": chunk.headers["etag"]})
    assert again.status_code == 304
    bundle = client.get("/" + present.lab_plotly_route())
    assert bundle.status_code == 200 and bundle.content == present.lab_plotly()[0]
    assert "immutable" in bundle.headers["cache-control"]


def test_the_operator_can_keep_gradios_own_chunk(monkeypatch):
    """ENCODER_LAB_PLOTLY=gradio: no route for the chunk, so Gradio serves it as shipped."""
    monkeypatch.setenv("ENCODER_LAB_PLOTLY", "gradio")
    present.plotly_chunk.cache_clear()
    try:
        assert present.plotly_chunk() is None
        paths = [route.path for route in present.routes()]
        assert paths == [f"/{present.PLOTLY_ROUTE}"]
    finally:
        monkeypatch.delenv("ENCODER_LAB_PLOTLY")
        present.plotly_chunk.cache_clear()
    assert f"/assets/{present.gradio_plotly_chunk()}" in [route.path for route in present.routes()]


def test_the_bundle_holds_no_cdn_address():
    """plotly.js's config defaults topojsonURL to its CDN; build.mjs makes it a relative path
    (only geo traces read it, and the bundle has none), so the file names no outside host."""
    bundle = present.lab_plotly()[0].decode("utf-8")
    assert not re.search(r"cdn\.|jsdelivr|unpkg", bundle, re.IGNORECASE)
    assert re.search(r'topojsonURL:\{[^}]*dflt:"topojson/"\}', bundle)
