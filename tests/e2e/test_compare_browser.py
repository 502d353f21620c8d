"""The Compare tab in Chromium: computed architecture table, side-by-side predictions and
pieces, models left out with why, and the time-vs-length chart."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from helpers import SLOW_TIMEOUT, open_section, screenshot
from models import default_selection, list_models


def test_compare_tab(page):
    page.get_by_role("tab", name="Compare").click()
    first_model = default_selection(None, "mlm")[0]
    expect(page.locator("#compare-fill-mask")).to_contain_text(first_model, timeout=SLOW_TIMEOUT)  # on arrival
    assert page.locator("#compare-architecture").count() == 0  # a section not opened is not drawn
    open_section(page, "Architectures and recipes")
    arch = page.locator("#compare-architecture")
    expect(arch).to_contain_text("modernbert-base", timeout=SLOW_TIMEOUT)
    expect(arch).to_contain_text("149,014,272")  # ModernBERT-base, counted on the meta device
    expect(page.locator("#compare-recipes")).to_contain_text("arXiv:1907.11692")

    # same input, several models
    open_section(page, "Same input")
    text = page.get_by_label("Text for every model")
    text.fill("She opened the [MASK] and walked into the room.")
    page.get_by_role("button", name="Compare predictions", exact=True).click()
    side = page.locator("#compare-fill-mask")
    chosen = default_selection(None, "mlm")  # offline: the mini zoo
    expect(side).to_contain_text(chosen[0], timeout=SLOW_TIMEOUT)
    for key in chosen[1:]:
        expect(side).to_contain_text(key)
    expect(page.locator("#compare-agreement")).to_contain_text("Mask 1")
    screenshot(page, "compare-fill-mask")

    # markup typed in the text stays text
    text.fill('The <img src=x onerror="window.__xss=1"> capital of France is [MASK].')
    page.get_by_role("button", name="Compare predictions", exact=True).click()
    expect(page.locator("#compare-agreement")).to_contain_text("onerror", timeout=SLOW_TIMEOUT)

    page.get_by_role("button", name="Compare tokens", exact=True).click()
    expect(page.locator("#compare-tokens")).to_contain_text("WordPiece", timeout=SLOW_TIMEOUT)
    expect(page.locator("#compare-tokens .piece").first).to_be_attached()
    assert page.locator('img[src="x"]').count() == 0 and page.evaluate("window.__xss") is None

    # what two models know: computed as the section opens
    open_section(page, "What they know")
    expect(page.locator("#compare-knowledge-summary")).to_contain_text("in the top 5", timeout=SLOW_TIMEOUT)
    expect(page.locator("#compare-knowledge")).to_contain_text("capital of France")

    # time two small models only (keeps the test short on a CPU)
    open_section(page, "Speed vs length")
    group = page.locator("#compare-bench-models")
    encoders = tuple(m for m in list_models() if not m.is_decoder)  # the speed bench times encoders only
    for key in default_selection(encoders, "any"):  # what the tab opens with
        # the key, then a space: "mini-bert (…)", not "mini-bert-nsp (…)"
        group.get_by_role("checkbox", name=re.compile(rf"^{re.escape(key)}(?=\s|$)")).uncheck()
    expect(group.get_by_role("checkbox", name=re.compile(r"^mini-decoder\b"))).to_have_count(0)
    group.get_by_role("checkbox", name="splade-tiny").check()
    page.get_by_role("button", name="Time forward passes", exact=True).click()
    expect(page.locator("#compare-bench-table")).to_contain_text("pretrained weights", timeout=SLOW_TIMEOUT)
    expect(page.locator("#compare-bench-plot .js-plotly-plot .scatterlayer .trace").first).to_be_attached(timeout=SLOW_TIMEOUT)
    expect(page.locator("#compare-bench-notes")).to_contain_text("Peak memory")
    screenshot(page, "compare-benchmark")
    assert page.external_requests == [] and page.dialogs == []
