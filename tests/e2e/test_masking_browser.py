"""The Masking lab in Chromium: its sections as sub-tabs under the shared settings; the strips
with a legend, the loss (computed when its section opens), the rates chart; the page far
shorter than the lab's whole content."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from components.masking import copy
from helpers import TIMEOUT, open_section, screenshot, sections_of


def test_masking_lab(page):
    page.get_by_role("tab", name="Masking lab").click()
    assert sections_of("Masking lab") == [copy.SECTION_CORRUPT, copy.SECTION_LOSS, copy.SECTION_STATS,
                                          copy.SECTION_PAIR, copy.SECTION_RTD]
    for name in sections_of("Masking lab"):
        expect(page.get_by_role("tab", name=name, exact=True)).to_be_visible(timeout=TIMEOUT)
    page.get_by_label("Text to corrupt").fill('The <img src=x onerror="window.__xss=1"> bank of the river.')
    page.get_by_role("button", name="Simulate masking", exact=True).click()
    strips = page.locator(".masking-lab .strip")
    expect(strips).to_have_count(3, timeout=TIMEOUT)
    expect(page.locator(".masking-lab .legend")).to_contain_text("replaced by a random token")
    assert page.locator('img[src="x"]').count() == 0 and page.evaluate("window.__xss") is None
    # one section on the page at a time (5,351 px tall at 1280 wide as one page)
    assert page.evaluate("document.documentElement.scrollHeight") < 3000

    open_section(page, copy.SECTION_LOSS)  # its views computed on opening, from the settings above
    expect(page.locator("#arithmetic-table")).to_contain_text("cat ← target", timeout=TIMEOUT)
    page.get_by_role("button", name="Compute the MLM loss", exact=True).click()
    expect(page.get_by_text("Worked example")).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_label("Text to corrupt")).to_have_value(re.compile("bank of the river"))  # above the sections
    open_section(page, copy.SECTION_STATS)
    page.get_by_role("button", name="Measure the rates", exact=True).click()
    expect(page.get_by_text("Special tokens selected: 0")).to_be_visible(timeout=TIMEOUT)
    expect(page.locator(".js-plotly-plot .bars path").first).to_be_attached()
    screenshot(page, "masking-lab")
    assert page.external_requests == [] and page.dialogs == []
