"""Projector mode, exports and accessibility in Chromium, every non-local host blocked.

- projector mode enlarges the rendered type (toggle and ``?projector=1``), charts follow, and
  so do the bertviz views in their sandboxed frames;
- every kind of export gives a file that opens: PNG (decoded by PIL, not blank), SVG
  (parsed, drawn paths), CSV (pandas, equal to the table on screen), standalone HTML
  (opened from disk in this blocked browser: drawn, nothing requested from outside);
- axe-core (the pinned npm tarball committed in tests/e2e/axe/, injected into the page)
  finds no serious or critical violation on any tab;
- the main flow works from the keyboard alone.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import urlparse

import pandas as pd
import pytest
from PIL import Image
from playwright.sync_api import expect

from components.fill_mask import copy as fill_mask_copy
from components.lessons import copy as lessons_copy
from helpers import ARTIFACTS, TIMEOUT, open_section, screenshot, sections_of, settle, wait_until

AXE_DIR = Path(__file__).resolve().parent / "axe"
TABS = ["Fill-mask", "Lessons", "Why this guess", "Masking lab", "Attention", "Inside one layer", "Embeddings", "Compare",
        "Pre-training", "Fine-tuning & search", "Models", "Class"]

# Serious / critical axe findings that cannot be fixed from this app, as (rule id, CSS
# selector of the node). Empty: every finding is fixed (theme colours, the grid image's alt
# text, present.js's repairs of Gradio's markup, present.css for the dark theme's chips and for
# a text output while it computes).
AXE_ALLOWED: set[tuple[str, str]] = set()


def prose_font_px(page) -> float:
    return float(page.locator(".prose p").first.evaluate("e => parseFloat(getComputedStyle(e).fontSize)"))


def label_font_px(page, label: str) -> float:
    return float(page.get_by_label(label).evaluate("e => parseFloat(getComputedStyle(e).fontSize)"))


FILL_MASK_CHART = "Top-k probabilities per mask (Plotly)"  # the fill-mask chart's label


def chart(page, label: str = FILL_MASK_CHART):
    """The Plotly chart of the block labelled ``label``, and that block."""
    block = page.locator(".block").filter(has=page.locator('[data-testid="block-label"]', has_text=label))
    return block.locator(".js-plotly-plot"), block


def chart_layout(page, key: str, label: str = FILL_MASK_CHART):
    return chart(page, label)[0].evaluate(f"gd => gd._fullLayout.{key}")


def wait_for_chart(page, label: str = FILL_MASK_CHART) -> None:
    if label == FILL_MASK_CHART:  # below the first screen's HTML bars, in an accordion: opened as a user does
        expect(page.locator("#fill-mask-bars table.fm-bars").first).to_be_attached(timeout=TIMEOUT)
        if chart(page, label)[0].count() == 0:
            page.get_by_role("button", name=fill_mask_copy.CHART_ACCORDION).click()
    expect(chart(page, label)[0].locator(".main-svg").first).to_be_attached(timeout=TIMEOUT)
    settle(page)


# --- projector mode ------------------------------------------------------------------------

def test_projector_toggle_enlarges_type_and_charts(page):
    wait_for_chart(page)
    toggle = page.get_by_role("button", name="Projector")
    expect(toggle).to_have_attribute("aria-pressed", "false")
    before = (prose_font_px(page), label_font_px(page, "Text with masks"), chart_layout(page, "font.size"))

    toggle.click()
    expect(toggle).to_have_attribute("aria-pressed", "true")
    wait_until(lambda: chart_layout(page, "font.size") >= 20, "the chart's projector font")
    after = (prose_font_px(page), label_font_px(page, "Text with masks"), chart_layout(page, "font.size"))
    assert all(a >= 1.4 * b for a, b in zip(after, before)), (before, after)
    screenshot(page, "projector-on")

    # a line chart: its lines at least 4 px wide (Plotly's default: 2)
    open_tab(page, "Pre-training")
    curve, _ = chart(page, "Loss and held-out accuracy over training")
    expect(curve.locator(".scatterlayer .trace").first).to_be_attached(timeout=TIMEOUT)
    widths = "gd => gd._fullData.filter(t => t.type === 'scatter').map(t => t.line.width)"
    wait_until(lambda: min(curve.evaluate(widths)) >= 4, "thick lines in projector mode")
    screenshot(page, "projector-lines")

    toggle.click()  # and back
    expect(toggle).to_have_attribute("aria-pressed", "false")
    wait_until(lambda: max(curve.evaluate(widths)) == 2, "Plotly's own line width again")
    open_tab(page, "Fill-mask")
    wait_until(lambda: chart_layout(page, "font.size") == before[2], "the chart's own font again")
    assert prose_font_px(page) == before[0]
    assert page.external_requests == []


def test_projector_link_parameter_and_dark_theme(page, app_server):
    wait_for_chart(page)
    plain = prose_font_px(page)

    page.goto(app_server + "?projector=1")
    wait_for_chart(page)
    expect(page.get_by_role("button", name="Projector")).to_have_attribute("aria-pressed", "true")
    assert prose_font_px(page) >= 1.4 * plain
    wait_until(lambda: chart_layout(page, "font.size") >= 20, "the chart's projector font")

    # the dark theme: Gradio's dark colours, charts on Plotly's dark template
    page.get_by_role("button", name="Dark").click()
    expect(page.locator("body")).to_have_class(re.compile(r"\bdark\b"))
    wait_until(lambda: chart_layout(page, "paper_bgcolor") == "rgb(17,17,17)",  # plotly_dark's paper
               "the chart on the dark template")
    screenshot(page, "projector-dark")
    assert page.external_requests == []


def test_projector_chips_have_black_borders_in_the_masking_lab_and_its_lesson(page, app_server):
    """The masking strip's chips: 2 px black borders in projector mode, in the tab and in the
    Lessons step that shows it (Gradio's scoped copy of style.css is more specific than an
    unscoped rule: session 6 found the lesson's chips still 1 px grey)."""
    def borders(scope):
        chip = page.locator(f"{scope} .masking-lab .tok").first
        expect(chip).to_be_visible(timeout=TIMEOUT)
        return chip.evaluate("e => [getComputedStyle(e).borderTopWidth, getComputedStyle(e).borderTopColor]")

    page.goto(app_server + "?projector=1")
    page.get_by_role("tab", name="Masking lab").click()
    page.get_by_role("button", name="Simulate masking", exact=True).click()
    assert borders("#masking-strips") == ["2px", "rgb(0, 0, 0)"]
    page.get_by_role("tab", name="Lessons", exact=True).click()
    for number, step in enumerate(lessons_copy.STEPS, 1):
        if step.slug == "masking":
            break
        page.get_by_role("button", name="Next →", exact=True).click()
        expect(page.locator("#lesson-text")).to_contain_text(f"Step {number + 1} of", timeout=TIMEOUT)
    assert borders(".lesson-masking") == ["2px", "rgb(0, 0, 0)"]
    page.get_by_role("button", name="Projector").click()  # off again: the page's own 1 px grey
    expect(page.get_by_role("button", name="Projector")).to_have_attribute("aria-pressed", "false")
    assert borders(".lesson-masking") == ["1px", "rgb(153, 153, 153)"]
    assert page.external_requests == []


def test_dark_heatmap_scale_stays_readable(page):
    """Attention's 'Blues' starts at white, which glares on dark: there it becomes Viridis,
    whose low end is dark; its hover still gives each weight as text."""
    page.get_by_role("tab", name="Attention").click()
    heat = page.locator("#attention-heatmap .js-plotly-plot")
    expect(heat.locator(".hm image").first).to_be_attached(timeout=TIMEOUT)
    settle(page)
    low_colour = "gd => gd._fullData[0].colorscale[0][1]"
    assert heat.evaluate(low_colour) == "rgb(247,251,255)"  # Blues starts near white
    page.get_by_role("button", name="Dark").click()
    wait_until(lambda: heat.evaluate(low_colour) == "#440154", "Viridis on dark")  # its first colour
    assert "weight %{z" in heat.evaluate("gd => gd._fullData[0].hovertemplate")
    screenshot(page, "attention-dark")


def rendered_text_px(frame_locator, frame) -> dict:
    """A token of the bertviz view as the page shows it: its height on screen (bounding box,
    zoom included), its own font size, and the frame's height."""
    token = frame_locator.locator("svg text").first
    return {"text": token.bounding_box()["height"],
            "font": float(token.evaluate("e => parseFloat(getComputedStyle(e).fontSize)")),
            "frame": frame.bounding_box()["height"]}


@pytest.mark.parametrize("view", ["head", "model"])
def test_projector_enlarges_the_bertviz_views(page, view):
    """bertviz draws in its own sandboxed frame at fixed pixel sizes: projector mode reaches it
    (a message), the view zooms and its frame grows; the model view stays within the frame."""
    open_tab(page, "Attention")
    settle(page)
    open_section(page, "bertviz")
    if view != "head":
        page.get_by_role("radio", name=f"{view} view", exact=True).check()
    page.get_by_role("button", name="Draw with bertviz", exact=True).click()
    frame_locator = page.frame_locator("#attention-bertviz iframe")
    frame = page.locator("#attention-bertviz iframe")
    expect(frame).to_have_attribute("title", f"bertviz {view} view", timeout=TIMEOUT)
    expect(frame_locator.locator("svg text").first).to_be_attached(timeout=TIMEOUT)
    settle(page)
    before = rendered_text_px(frame_locator, frame)

    # the head view (about 350 px wide) zooms 1.5 times; the model view (about 1,000 px) as
    # much as the frame's width allows (at this 1,400 px window, about 1.2 times)
    needed = 1.4 if view == "head" else 1.1
    toggle = page.get_by_role("button", name="Projector")
    toggle.click()
    grown = wait_until(lambda: (lambda a: a if a["text"] >= needed * before["text"] else None)(
        rendered_text_px(frame_locator, frame)), "the bertviz view zoomed")
    assert grown["font"] == before["font"]  # bertviz's own size: the zoom makes the difference
    assert grown["frame"] >= needed * before["frame"]  # and the frame grows with it
    width = frame_locator.locator("html").evaluate("e => [e.scrollWidth, innerWidth]")
    assert width[0] <= width[1], width  # nothing cut off at the right: no sideways scrolling
    screenshot(page, f"projector-bertviz-{view}")

    toggle.click()
    wait_until(lambda: rendered_text_px(frame_locator, frame) == before, "the view at its own size again")
    assert page.external_requests == []


# --- exports -------------------------------------------------------------------------------

def download(page, button, folder: Path):
    """Click ``button``; the file it downloads, saved under the name the page gave it (a
    browser opens a file from disk by its extension), and that name."""
    with page.expect_download(timeout=TIMEOUT) as info:
        button.click()
    name = info.value.suggested_filename
    path = folder / name
    info.value.save_as(path)
    return path, name


def open_offline(browser, path: Path):
    """A downloaded HTML file opened from disk in this browser (hosts blocked), with every
    request it makes and every request that fails recorded."""
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page.requests, page.failed = [], []
    page.on("request", lambda r: page.requests.append(r.url))
    page.on("requestfailed", lambda r: page.failed.append(r.url))
    page.goto(path.as_uri())
    return context, page


def external(urls):
    return [u for u in urls if urlparse(u).scheme not in ("file", "data", "blob", "about")]


def test_chart_exports_png_svg_html(page, browser, tmp_path):
    wait_for_chart(page)
    plot, _ = chart(page)
    group = page.get_by_role("group", name=f"Export: {FILL_MASK_CHART}")
    bars = plot.locator(".bars path").count()
    assert bars > 0

    png, name = download(page, group.get_by_role("button", name="Download this chart as PNG"), tmp_path)
    assert name.endswith(".png")
    image = Image.open(png)
    image.load()
    assert image.width > 100 and image.height > 100
    colours = image.convert("RGB").getcolors(maxcolors=1_000_000)
    assert colours is not None and len(colours) > 10  # drawn, not one flat colour

    svg, name = download(page, group.get_by_role("button", name="Download this chart as SVG"), tmp_path)
    assert name.endswith(".svg")
    tree = ET.parse(svg).getroot()
    assert tree.tag == "{http://www.w3.org/2000/svg}svg"
    paths = [p for p in tree.iter("{http://www.w3.org/2000/svg}path") if p.get("d")]
    assert len(paths) >= bars

    html, name = download(page, group.get_by_role("button", name="Download this chart as a standalone HTML file"), tmp_path)
    assert name.endswith(".html")
    context, offline = open_offline(browser, html)
    try:
        expect(offline.locator(".js-plotly-plot .bars path")).to_have_count(bars, timeout=TIMEOUT)
        offline.screenshot(path=str(ARTIFACTS / "screenshots" / "export-chart-html.png"))
        assert external(offline.requests) == [] and offline.failed == []
    finally:
        context.close()
    assert page.external_requests == []


def visible_rows(table) -> list[list[str]]:
    """The rows the page shows (the first: the headers), as the cells' text."""
    rows = table.get_by_role("row")
    return [rows.nth(i).get_by_role("gridcell").all_inner_texts() for i in range(1, rows.count())]


@pytest.mark.parametrize("tab, selector, rows", [
    ("Fill-mask", "#fill-mask-table", None),
    ("Attention", "#attention-stats", 6 * 12),  # virtualised: not every row is in the page
])
def test_table_csv_matches_the_table_on_screen(page, tab, selector, rows, tmp_path):
    page.get_by_role("tab", name=tab).click()
    table = page.locator(selector)
    expect(table.locator("tbody tr").first).to_be_attached(timeout=TIMEOUT)
    settle(page)
    grid = table.get_by_role("grid")
    count = int(grid.get_attribute("aria-rowcount")) - 1
    assert rows is None or count == rows
    heads = table.locator("thead th[role='columnheader']").evaluate_all("ths => ths.map(t => t.title)")

    table.get_by_role("gridcell").first.click()  # a selected cell: still the whole table
    path, name = download(page, page.locator(f"{selector} .el-export").get_by_role("button", name="Download this table as CSV"), tmp_path)
    assert name.endswith(".csv")
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    assert list(frame.columns) == heads
    assert len(frame) == count
    shown = visible_rows(table)
    assert shown, "no rows on screen"
    on_screen = pd.DataFrame(shown, columns=heads)
    pd.testing.assert_frame_equal(frame.head(len(on_screen)), on_screen, check_dtype=False)


def test_heatmap_and_bertviz_as_standalone_html(page, browser, tmp_path):
    page.get_by_role("tab", name="Attention").click()
    expect(page.locator("#attention-heatmap .hm image").first).to_be_attached(timeout=TIMEOUT)
    settle(page)
    heatmap = page.locator("#attention-heatmap .el-export")
    html, _ = download(page, heatmap.get_by_role("button", name="Download this chart as a standalone HTML file"), tmp_path)
    context, offline = open_offline(browser, html)
    try:
        expect(offline.locator(".js-plotly-plot .hm image").first).to_be_attached(timeout=TIMEOUT)
        expect(offline.locator(".js-plotly-plot")).to_contain_text("[SEP]")
        assert external(offline.requests) == [] and offline.failed == []
    finally:
        context.close()

    open_section(page, "bertviz")
    page.get_by_role("button", name="Draw with bertviz").click()
    expect(page.frame_locator("#attention-bertviz iframe").locator("svg text").first).to_be_attached(timeout=TIMEOUT)
    view = page.locator("#attention-bertviz .el-export")
    html, name = download(page, view.get_by_role("button", name="Download this view as a standalone HTML file"), tmp_path)
    assert name.endswith(".html")
    text = html.read_text(encoding="utf-8")
    assert 'src="vendor/' not in text and '"vendor/' not in text  # every script inlined
    context, offline = open_offline(browser, html)
    try:
        # the head view: d3 drew the tokens as SVG text and the attention as lines
        expect(offline.locator("svg text", has_text="deposited").first).to_be_attached(timeout=TIMEOUT)
        assert offline.locator("svg line").count() > 0
        offline.screenshot(path=str(ARTIFACTS / "screenshots" / "export-bertviz-html.png"))
        assert external(offline.requests) == [] and offline.failed == []
    finally:
        context.close()
    assert page.external_requests == []


# --- accessibility -------------------------------------------------------------------------

def axe_source() -> str:
    """axe.min.js from the committed tarball, checked against the lock's sha512 first."""
    lock = json.loads((AXE_DIR / "package-lock.json").read_text())["packages"]["node_modules/axe-core"]
    data = (AXE_DIR / f"axe-core-{lock['version']}.tgz").read_bytes()
    algorithm, digest = lock["integrity"].split("-", 1)
    assert hashlib.new(algorithm, data).digest() == base64.b64decode(digest), "axe-core tarball altered"
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        return archive.extractfile("package/axe.min.js").read().decode("utf-8")


def serious_violations(page) -> list[dict]:
    result = page.evaluate("() => axe.run(document, {resultTypes: ['violations']})")
    found = []
    for rule in result["violations"]:
        if rule["impact"] not in ("serious", "critical"):
            continue
        for node in rule["nodes"]:
            selector = " ".join(map(str, node["target"]))
            if (rule["id"], selector) not in AXE_ALLOWED:
                found.append({"rule": rule["id"], "impact": rule["impact"], "node": selector,
                              "why": node.get("failureSummary", "")[:200]})
    return found


def open_tab(page, name: str) -> None:
    """Click the tab ``name``; with large type some tabs move into Gradio's "More tabs" menu."""
    expect(page.get_by_role("tab", name="Fill-mask")).to_be_visible(timeout=TIMEOUT)  # the page is up
    tab = page.get_by_role("tab", name=name, exact=True)
    if tab.count() == 0:
        page.get_by_role("button", name="More tabs").click()
        tab = page.get_by_role("button", name=name, exact=True)
    tab.click()


# The tabs' own actions the audit also runs (quick ones: no training, no benchmark), each
# as "Section › button" where the button is in one of the tab's further sections (sub-tabs).
ACTIONS = {
    "Fill-mask": ["Generate with an encoder"],
    "Why this guess": ["Explain this guess"],
    "Masking lab": ["Simulate masking", "The MLM loss › Compute the MLM loss", "The MLM loss › Show the arithmetic",
                    "Sentence pairs › Score the pair", "Replaced tokens › Detect replaced tokens"],
    "Attention": ["bertviz › Draw with bertviz", "Token + position + segment › Show token + position + segment"],
    "Embeddings": ["Compare [CLS], mean and max pooling",
                   "One word across the layers › Trace the word through the layers"],
    "Compare": ["Compare predictions", "Compare tokens"],
    "Fine-tuning & search": ["Search"],
}


def wait_drawn(page) -> None:
    """Until no view is still computing. Gradio dims an output that waits for its answer to
    20 % opacity under its loading indicator: the audit reads the views as drawn."""
    busy = page.locator('.pending, [data-testid="status-tracker"]:not(.hide)')
    wait_until(lambda: busy.count() == 0, "every view drawn", timeout_s=300)
    # then until the outputs' fade back from the loading state has finished (a CSS transition:
    # mid-way, text is still part-transparent) and the export bars are drawn
    page.wait_for_function(
        "() => document.getAnimations().every(a => !(a instanceof CSSTransition) || a.playState !== 'running')",
        timeout=60_000)
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")


def audit_lessons(page, report: dict) -> None:
    """The Lessons tab step by step (each step's view computed as it is shown)."""
    for number, step in enumerate(lessons_copy.STEPS, 1):
        if number > 1:
            page.get_by_role("button", name="Next →", exact=True).click()
        expect(page.locator("#lesson-text")).to_contain_text(f"Step {number} of {len(lessons_copy.STEPS)}",
                                                             timeout=TIMEOUT)
        settle(page)
        wait_drawn(page)
        report[f"Lessons step {number} ({step.slug})"] = serious_violations(page)


def audit_every_tab(page, query: str, actions: bool) -> dict:
    page.goto(page.url.split("?")[0] + query)
    expect(page.get_by_role("tab", name="Fill-mask")).to_be_visible(timeout=TIMEOUT)
    settle(page)
    page.add_script_tag(content=axe_source())
    report = {}
    for tab in TABS:
        open_tab(page, tab)
        settle(page)
        if tab == "Lessons":
            audit_lessons(page, report)
            continue
        wait_drawn(page)
        report[tab] = serious_violations(page)
        for section in sections_of(tab)[1:]:  # each section as it opens (its views computed then)
            open_section(page, section)
            settle(page)
            wait_drawn(page)
            report[f"{tab} › {section}"] = serious_violations(page)
        for action in ACTIONS.get(tab, []) if actions else []:
            section, _, label = action.rpartition(" › ")
            if section or sections_of(tab):  # a button of the first section: open it again
                open_section(page, section or sections_of(tab)[0])
            page.get_by_role("button", name=label, exact=True).click()
            settle(page)
            wait_drawn(page)
            report[f"{tab} after {label}"] = serious_violations(page)
    return report


@pytest.mark.parametrize("query, actions", [
    ("", True),                      # as the tabs open, and after their main actions
    ("?dark=1", False),
    ("?projector=1", False),
    ("?projector=1&dark=1", False),
], ids=["light", "dark", "projector", "projector-dark"])
def test_axe_finds_no_serious_violation_on_any_tab(page, query, actions):
    report = audit_every_tab(page, query, actions)
    name = "axe-report" + query.replace("?", "-").replace("&", "-").replace("=1", "")
    (ARTIFACTS / f"{name}.json").write_text(json.dumps(report, indent=1))
    screenshot(page, name)
    assert all(not found for found in report.values()), json.dumps(report, indent=1)
    assert page.external_requests == []


# In the page: select the tab, and the moment the summary's loading indicator shows (the
# summary still empty: its block is computed on arrival), measure the block and audit it.
AUDIT_WHILE_LOADING = """async ([tab, block]) => {
  const loading = () => {
    const tracker = document.querySelector(block + ' > [data-testid="status-tracker"]');
    return tracker && !tracker.classList.contains("hide") ? tracker : null;
  };
  const shown = new Promise((done) => {
    const seen = new MutationObserver(() => { if (loading()) { seen.disconnect(); done(); } });
    seen.observe(document.body, {attributes: true, attributeFilter: ["class"], childList: true, subtree: true});
  });
  [...document.querySelectorAll('[role="tab"]')].find((t) => t.innerText.trim() === tab).click();
  await shown;
  const target = document.querySelector(block);
  const found = {empty: !target.querySelector('[data-testid="markdown"]').innerText.trim(),
                 overflow: getComputedStyle(target).overflowY,
                 scrolls: target.scrollHeight - target.clientHeight,
                 height: target.clientHeight, indicator: loading().getBoundingClientRect().height};
  const result = await axe.run(target, {runOnly: ["scrollable-region-focusable"]});
  found.violations = result.violations.length;
  found.stillLoading = Boolean(loading());
  return found;
}"""


def test_a_summary_while_it_computes_is_no_scroll_box(page):
    """Gradio puts its loading indicator inside a Markdown block that scrolls (`overflow: auto`):
    an empty summary computing on arrival became a scroll box with nothing to focus in it
    (axe: scrollable-region-focusable). While the indicator shows, the block holds it unscrolled."""
    expect(page.get_by_role("tab", name="Embeddings")).to_be_visible(timeout=TIMEOUT)
    settle(page)
    page.add_script_tag(content=axe_source())
    found = page.evaluate(AUDIT_WHILE_LOADING, ["Embeddings", "#embeddings-summary"])
    report = json.dumps(found)
    assert found["empty"], report  # measured in the state the audit had met: nothing computed yet
    assert found["overflow"] == "visible" or found["scrolls"] <= 0, report
    assert found["height"] >= found["indicator"] - 1, report  # the indicator fits in the block
    if found["stillLoading"]:  # axe ran on that state (the answer can come back meanwhile)
        assert found["violations"] == 0, report
    settle(page)
    wait_drawn(page)
    expect(page.locator("#embeddings-summary")).to_contain_text("sentences")


def focused(page) -> dict:
    return page.evaluate(
        "() => { const e = document.activeElement; return {tag: e.tagName, role: e.getAttribute('role'), "
        "label: e.labels && e.labels[0] ? e.labels[0].innerText : '', text: (e.innerText || '').trim()}; }")


def tab_until(page, wanted, what: str, presses: int = 80) -> None:
    for _ in range(presses):
        page.keyboard.press("Tab")
        if wanted(focused(page)):
            return
    pytest.fail(f"Tab never reached {what}")


@pytest.mark.parametrize("tab, box, button, answer", [
    ("Fill-mask", "Text with masks", "Predict", "#fill-mask-status"),
    ("Embeddings", "Sentences, one per line", "Compare [CLS], mean and max pooling", "#embeddings-summary"),
])
def test_main_flow_by_keyboard_alone(page, tab, box, button, answer):
    """From the top of the page, keys only: Tab to the tab and Enter, Tab to the text box,
    type, Tab to the button, Enter: the answer appears."""
    expect(page.get_by_role("tab", name="Fill-mask")).to_be_visible(timeout=TIMEOUT)
    settle(page)
    page.locator("body").focus()
    if tab != "Fill-mask":
        tab_until(page, lambda f: f["role"] == "tab" and f["text"] == tab, f"the {tab} tab")
        page.keyboard.press("Enter")
        expect(page.get_by_role("tab", name=tab)).to_have_attribute("aria-selected", "true")
    tab_until(page, lambda f: f["tag"] == "TEXTAREA" and box in f["label"], f"the box “{box}”")
    page.keyboard.press("ControlOrMeta+a")
    text = ("Paris is the [MASK] of France." if tab == "Fill-mask"
            else "A cat sat on the mat.\nA kitten rested on the rug.\nStocks fell sharply today.")
    page.keyboard.type(text)
    expect(page.get_by_label(box)).to_have_value(text)
    settle(page)  # fill-mask also answers as one types: let that finish first
    joins = []
    page.on("request", lambda r: joins.append(r.url) if "/queue/join" in r.url else None)
    tab_until(page, lambda f: f["tag"] == "BUTTON" and f["text"] == button, f"the button “{button}”")
    page.keyboard.press("Enter")
    settle(page)
    assert joins, "Enter on the button sent nothing"
    if tab == "Fill-mask":
        expect(page.get_by_label("Sentence with the top prediction in place")).to_have_value(
            re.compile(r"^Paris is the \S+ of France\.$"), timeout=TIMEOUT)
    else:
        expect(page.locator(answer)).to_contain_text("3 sentences", timeout=TIMEOUT)
    screenshot(page, f"keyboard-{tab.lower()}")
    assert page.external_requests == []
