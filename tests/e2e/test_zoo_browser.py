"""The mini zoo in Chromium: the pair heads and ELECTRA's view in the Masking lab, the
"Same data, same budget" section in Compare, a miniature in Fill-mask and Attention."""

from __future__ import annotations

from playwright.sync_api import expect

from helpers import TIMEOUT, open_section, screenshot


def test_masking_lab_heads_open_computed(page):
    page.get_by_role("tab", name="Masking lab").click()
    open_section(page, "Sentence pairs")
    expect(page.locator("#masking-pair-answer")).to_contain_text("P(IsNext)", timeout=TIMEOUT)
    expect(page.locator("#masking-pair-answer")).to_contain_text("held-out pairs")
    open_section(page, "Replaced tokens")
    tokens = page.locator("#masking-rtd-view .rtd-token")
    expect(tokens.first).to_be_visible(timeout=TIMEOUT)
    page.get_by_label("Sentence", exact=True).fill('The <b onmouseover="window.__x=1">chef</b> sang.')
    page.get_by_role("button", name="Detect replaced tokens", exact=True).click()
    # the markup's words arrive as token text (mini-electra's WordPiece keeps "window" whole
    # and has no piece for "<", which shows as [UNK]); no element, no handler runs
    expect(page.locator("#masking-rtd-view")).to_contain_text("window", timeout=TIMEOUT)
    expect(page.locator("#masking-rtd-view")).to_contain_text("che")
    assert page.locator("#masking-rtd-view b").count() == 0 and page.evaluate("window.__x") is None
    page.locator("#masking-rtd-view").scroll_into_view_if_needed()
    screenshot(page, "masking-rtd")
    assert page.external_requests == [] and page.dialogs == []


def test_compare_same_budget_section(page):
    page.get_by_role("tab", name="Compare").click()
    open_section(page, "Mini zoo")
    plot = page.locator("#compare-zoo-plot .js-plotly-plot")
    expect(plot).to_be_visible(timeout=TIMEOUT)
    expect(page.locator("#compare-zoo-plot")).to_contain_text("mini-modernbert")
    expect(page.locator("#compare-zoo-table")).to_contain_text("mini-electra")
    expect(page.locator("#compare-zoo-plot")).to_contain_text("training loss")  # the second panel
    expect(page.locator("#compare-zoo-table")).to_contain_text("tokens/s")
    plot.scroll_into_view_if_needed()
    screenshot(page, "compare-zoo")
    assert page.external_requests == []
