"""The Attention tab in Chromium with every non-local host blocked (see CHROMIUM_FLAGS):
the heatmap renders, the grid opens a head, the statistics filter, bertviz draws from the
app's own copies of its libraries, and hostile tokens stay text."""

from __future__ import annotations

import numpy as np
from playwright.sync_api import expect

from components.attention import copy as attention_copy
from helpers import SCREENSHOTS, TIMEOUT, open_section, screenshot, settle
from models import AttentionResult, head_statistics, extract_attention, filter_heads, first_capable

HOSTILE = "</script><img src=x onerror=alert(1)>"


def open_tab(page):
    page.get_by_role("tab", name="Attention").click()
    expect(page.locator("#attention-status")).to_contain_text("17 tokens", timeout=TIMEOUT)


def heatmap_title(page):
    return page.locator("#attention-heatmap .gtitle")


def test_heatmap_grid_and_statistics(page):
    open_tab(page)
    # the Plotly heatmap renders (its cells are drawn as an image inside the SVG)
    expect(page.locator("#attention-heatmap .hm image").first).to_be_attached(timeout=TIMEOUT)
    expect(heatmap_title(page)).to_contain_text("layer 0, head 0")
    expect(page.locator("#attention-heatmap")).to_contain_text("8 [SEP] ·A")

    # clicking the grid's cell for layer 3, head 5 opens that head
    grid = page.locator("#attention-grid img")
    expect(grid).to_be_visible(timeout=TIMEOUT)
    natural = grid.evaluate("img => [img.naturalWidth, img.naturalHeight]")
    box = grid.bounding_box()
    x, y = 30 + 5 * 52 + 24, 18 + 3 * 52 + 24  # GridLayout: left 30, top 18, cell 48 + gap 4
    grid.click(position={"x": x * box["width"] / natural[0], "y": y * box["height"] / natural[1]})
    expect(heatmap_title(page)).to_contain_text("layer 3, head 5", timeout=TIMEOUT)
    screenshot(page, "attention-heatmap-grid")

    # the statistics table, then only the heads that look at the previous token
    table = page.locator("#attention-stats")
    expect(table).to_contain_text("→ previous", timeout=TIMEOUT)
    grid_role = table.get_by_role("grid")  # virtualised: count rows by aria-rowcount
    expect(grid_role).to_have_attribute("aria-rowcount", str(1 + 6 * 12))
    # the tab opens on the model chosen by capability (the default MLM here)
    result = extract_attention(first_capable(None, "attention"), "I sat by the river bank.",
                               "I deposited cash at the bank.")
    expected = filter_heads(head_statistics(result), "attend to the previous token")
    assert 0 < len(expected) < 12
    page.get_by_label("attend to the previous token").check()
    expect(grid_role).to_have_attribute("aria-rowcount", str(1 + len(expected)), timeout=TIMEOUT)
    layer, head = expected[0]
    first_row = table.get_by_role("row").nth(1).get_by_role("gridcell")
    expect(first_row.nth(0)).to_have_text(str(layer))
    expect(first_row.nth(1)).to_have_text(str(head))
    screenshot(page, "attention-statistics")

    # rollout mode
    page.get_by_label("rollout").check()
    expect(heatmap_title(page)).to_contain_text("rollout through layers 0–3", timeout=TIMEOUT)

    # sorting as the help says: the header's ⋮ button, then "Sort descending" (a click on the
    # header itself does not sort in this Gradio); a row clicked then opens its own head
    assert "⋮ button of a column's header" in attention_copy.STATS_HELP
    assert "clicking a column header" not in attention_copy.STATS_HELP
    page.get_by_label("all heads", exact=True).check()
    expect(grid_role).to_have_attribute("aria-rowcount", str(1 + 6 * 12), timeout=TIMEOUT)
    header = table.get_by_role("columnheader").filter(has_text="→ previous")
    header.hover()
    header.get_by_role("button", name="Open cell menu").click()
    page.get_by_role("menuitem", name="Sort descending").click()
    stats = head_statistics(result)
    top = np.unravel_index(np.argmax(stats.to_prev), stats.to_prev.shape)
    first_row = table.get_by_role("row").nth(1).get_by_role("gridcell")
    expect(first_row.nth(0)).to_have_text(str(top[0]), timeout=TIMEOUT)
    expect(first_row.nth(1)).to_have_text(str(top[1]))
    first_row.nth(3).click()
    expect(heatmap_title(page)).to_contain_text(f"layer {top[0]}, head {top[1]}", timeout=TIMEOUT)
    assert page.external_requests == [] and page.dialogs == []


def bertviz_frame(page):
    return page.frame_locator("#attention-bertviz iframe")


def frame_screenshot(page, selector: str, name: str) -> None:
    """The iframe itself: a sandboxed frame runs in its own process, which Chromium leaves
    blank in a full-page screenshot."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    frame = page.locator(selector)
    frame.scroll_into_view_if_needed()
    frame.screenshot(path=str(SCREENSHOTS / f"{name}.png"))


def test_bertviz_draws_offline(page):
    open_tab(page)
    open_section(page, "bertviz")
    page.get_by_role("button", name="Draw with bertviz", exact=True).click()
    frame = bertviz_frame(page)
    # the head view: d3 drew an SVG with the tokens as text and the attention lines
    expect(frame.locator("svg").first).to_be_attached(timeout=TIMEOUT)
    expect(frame.locator("svg text", has_text="deposited").first).to_be_attached()
    assert frame.locator("svg line").count() > 0
    frame_screenshot(page, "#attention-bertviz iframe", "attention-bertviz-head")

    page.get_by_label("model view").check()
    expect(frame.locator("svg").first).to_be_attached(timeout=TIMEOUT)
    expect(frame.get_by_text("Layer 0, Head 0")).to_have_count(0)  # until one is clicked
    expect(frame.locator("svg rect").first).to_be_attached(timeout=TIMEOUT)
    frame_screenshot(page, "#attention-bertviz iframe", "attention-bertviz-model")
    assert page.external_requests == [], page.external_requests
    assert page.dialogs == []


FIGURE_BOXES_JS = """
() => {
  const box = e => { const b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
  const one = s => box(document.querySelector('#attention-heatmap ' + s));
  const all = s => [...document.querySelectorAll('#attention-heatmap ' + s)].map(box);
  return {svg: one('.main-svg'), label: one('[data-testid="block-label"]'), title: one('.gtitle'),
          xtitle: one('.g-xtitle'), ytitle: one('.g-ytitle'), xlabels: all('.xtick text'),
          ylabels: all('.ytick text')};
}
"""


def _inside(inner, outer) -> bool:
    return inner[0] >= outer[0] - 1 and inner[1] >= outer[1] - 1 and inner[2] <= outer[2] + 1 and inner[3] <= outer[3] + 1


def _apart(a, b) -> bool:
    return a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1]


def test_heatmap_labels_and_titles_fit_the_figure(page):
    """The heatmap's margins are made from its labels (Plotly draws it once, no automargin):
    for five rows and for long tokens, every label and title is inside the figure, the titles
    do not cover each other, the labels or the panel's own label."""
    open_tab(page)
    cases = [("Bank it.", "", "5 tokens", "1 bank"),  # a short figure: the query title still fits
             ("Antidisestablishmentarianism, naturally.", "", "one text", "##arian"),
             ("Where is the bank?", "Internationalisation by the riverside.", "a pair", "##isation ·B")]
    for text, pair, said, label in cases:
        page.get_by_label("Text", exact=True).fill(text)
        page.get_by_label("Second text (optional: makes a sentence pair)").fill(pair)
        page.get_by_role("button", name="Show attention", exact=True).click()
        expect(page.locator("#attention-status")).to_contain_text(said, timeout=TIMEOUT)
        expect(page.locator("#attention-heatmap .ytick text", has_text=label).first).to_be_attached(timeout=TIMEOUT)
        settle(page)
        boxes = page.evaluate(FIGURE_BOXES_JS)
        labels = boxes["xlabels"] + boxes["ylabels"]
        assert len(boxes["ylabels"]) >= 4, boxes
        for part in [boxes["title"], boxes["xtitle"], boxes["ytitle"], *labels]:
            assert _inside(part, boxes["svg"]), (text, part, boxes["svg"])
        assert _apart(boxes["title"], boxes["label"]) and _apart(boxes["title"], boxes["xtitle"]), boxes
        assert all(_apart(boxes["xtitle"], b) for b in boxes["xlabels"]), boxes
        assert all(_apart(boxes["ytitle"], b) for b in boxes["ylabels"]), boxes
    screenshot(page, "attention-heatmap-long-tokens")
    assert page.external_requests == [] and page.dialogs == []


def test_typed_markup_stays_text(page):
    open_tab(page)
    page.get_by_label("Text", exact=True).fill('The <img src=x onerror="window.__xss=1"> bank.')
    page.get_by_label("Second text (optional: makes a sentence pair)").fill("")
    page.get_by_role("button", name="Show attention", exact=True).click()
    expect(page.locator("#attention-status")).to_contain_text("one text, segment 0", timeout=TIMEOUT)
    open_section(page, "bertviz")
    page.get_by_role("button", name="Draw with bertviz", exact=True).click()
    texts = bertviz_frame(page).locator("svg text")
    expect(texts.filter(has_text="bank").first).to_be_attached(timeout=TIMEOUT)
    assert {"<", ">", "="} <= set(texts.all_text_contents())  # WordPiece: '<', 'im', '##g', ...
    assert page.locator('img[src="x"]').count() == 0
    assert bertviz_frame(page).locator('img[src="x"]').count() == 0
    assert page.evaluate("window.__xss") is None
    assert page.dialogs == [] and page.external_requests == []


def test_a_script_ending_token_cannot_break_out_of_bertviz(page):
    """WordPiece splits '</script>' apart, so a hand-made result carries the whole token
    into bertviz's JSON; the page built by the app's own builders is put in the live app."""
    from components.attention import plots
    from components.shell.vendor import library_urls

    tokens = ("[CLS]", HOSTILE, "</script>", "&lt;b&gt;", "[SEP]")
    t = len(tokens)
    weights = np.full((1, 2, t, t), 1 / t, dtype=np.float32)
    result = AttentionResult("hand-made", "x", None, tokens, tuple(range(t)), (0,) * t, "single text",
                             (1, 0, 0, 0, 1), (0,), (4,), weights, "eager")
    urls = library_urls()
    assert urls is not None, "assets/vendor: bertviz's libraries are missing or altered"
    frame_html = plots.iframe(plots.bertviz_page(result, "head", urls), "hand-made bertviz")
    open_tab(page)
    open_section(page, "bertviz")
    page.evaluate("html => document.querySelector('#attention-bertviz').insertAdjacentHTML('beforeend', html)",
                  frame_html)
    frame = page.frame_locator('iframe[title="hand-made bertviz"]')
    texts = frame.locator("svg text")
    expect(texts.first).to_be_attached(timeout=TIMEOUT)
    shown = texts.all_text_contents()
    assert HOSTILE in shown and "</script>" in shown and "&lt;b&gt;" in shown
    assert frame.locator("img").count() == 0
    settle(page)  # the page has painted twice since: an onerror handler would have run
    assert page.dialogs == [], page.dialogs
    frame_screenshot(page, 'iframe[title="hand-made bertviz"]', "attention-bertviz-hostile-token")


def test_the_attention_bench_measures_a_paint_on_the_running_app(app_server):
    """bench.attention_view's browser half as `python -m bench.attention_view` runs it: a
    process of its own (no pytest on the path), its own Chromium launched with the shared
    flags, two short texts on the running app, each paint timed from the click to the heatmap
    and grid drawn. It used to import the flags from this folder's conftest, which only
    pytest can import, and no test ran it: the bench crashed there."""
    import json
    import subprocess
    import sys

    from helpers import REPO

    script = (
        "import json, sys\n"
        "from bench import attention_view as A\n"
        "from tests.helpers import CHROMIUM_FLAGS\n"
        "assert A.CHROMIUM_FLAGS is CHROMIUM_FLAGS\n"
        "texts = [A.text_of(24, salt=f'Bench{i}.') for i in range(2)]\n"
        "print(json.dumps(A.measure_paint(sys.argv[1], texts, tokens=24)))\n"
    )
    done = subprocess.run([sys.executable, "-c", script, app_server], cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    paint = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(paint) == {f"{when} {stat}" for when in ("cold", "warm") for stat in ("median", "min", "max")}
    assert paint["cold min"] <= paint["cold median"] <= paint["cold max"]
    assert all(0 < ms < 60_000 for ms in paint.values()), paint
    assert paint["cold max"] >= paint["cold median"] and paint["warm max"] >= paint["warm median"]


BLOCK_LABELS_JS = """() => {
  const box = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const g = document.querySelector('#attention-grid'), h = document.querySelector('#attention-heatmap');
  const label = (e) => e.querySelector('label, [data-testid=block-label]');
  return {gridLabel: box(label(g)), grid: box(g.querySelector('img')),
          plotLabel: box(label(h)), title: box(h.querySelector('.gtitle'))};
}"""


def test_block_labels_cover_neither_the_grid_nor_the_heatmap_title(page):
    """The grid's and the heatmap's block labels float over their blocks' tops: the grid image
    (its H0.. column labels) and the heatmap's title start below them, on a laptop and a phone."""
    open_tab(page)
    for width, height in ((1280, 800), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.locator("#attention-grid").scroll_into_view_if_needed()
        expect(page.locator("#attention-grid img")).to_be_visible(timeout=TIMEOUT)
        expect(heatmap_title(page)).to_contain_text("layer 0, head 0", timeout=TIMEOUT)
        settle(page)
        boxes = page.evaluate(BLOCK_LABELS_JS)
        assert boxes["grid"][1] >= boxes["gridLabel"][3] - 1, (width, boxes)
        assert _apart(boxes["title"], boxes["plotLabel"]), (width, boxes)
        screenshot(page, f"attention-block-labels-{width}")
