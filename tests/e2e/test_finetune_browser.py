"""The Fine-tuning & search tab in Chromium: train a probe, classify a sentence, search."""

from __future__ import annotations

from playwright.sync_api import expect

from helpers import SLOW_TIMEOUT, screenshot

PROBE_TIMEOUT = 2 * SLOW_TIMEOUT  # the first probe computes the encoder's features for 1,260 sentences


def test_finetune_tab(page):
    page.get_by_role("tab", name="Fine-tuning & search").click()
    page.get_by_role("button", name="Train the head", exact=True).click()
    summary = page.locator("#head-summary")
    expect(summary).to_contain_text("Validation accuracy", timeout=PROBE_TIMEOUT)
    expect(summary).to_contain_text("majority baseline")
    expect(page.locator(".js-plotly-plot .scatterlayer .trace").first).to_be_attached(timeout=PROBE_TIMEOUT)

    page.get_by_label("Classify my sentence").fill('<img src=x onerror="window.__xss=1"> The Congress must act.')
    page.get_by_role("button", name="Classify", exact=True).click()
    expect(page.locator("#head-prediction")).to_contain_text("%", timeout=PROBE_TIMEOUT)
    assert page.locator('img[src="x"]').count() == 0 and page.evaluate("window.__xss") is None

    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.locator("#search-note")).to_contain_text("hits among", timeout=PROBE_TIMEOUT)
    expect(page.get_by_role("gridcell", name="moby-dick").first).to_be_visible(timeout=PROBE_TIMEOUT)
    screenshot(page, "finetune")
    assert page.external_requests == [] and page.dialogs == []


def test_sentiment_head_shows_its_baselines_as_a_table(page):
    page.get_by_role("tab", name="Fine-tuning & search").click()
    page.get_by_label("Task").click()
    page.get_by_role("option", name="sentiment").click()
    page.get_by_role("button", name="Train the head", exact=True).click()
    table = page.locator("#head-summary table")
    expect(table).to_contain_text("word list", timeout=PROBE_TIMEOUT)
    expect(table.get_by_role("cell", name="trained head")).to_be_visible()
    expect(table.get_by_role("cell", name="majority (negative)")).to_be_visible()
    page.get_by_label("Classify my sentence").fill("The concert was anything but <b>dull</b>.")
    page.get_by_role("button", name="Classify", exact=True).click()
    expect(page.locator("#head-prediction")).to_contain_text("positive", timeout=PROBE_TIMEOUT)
    assert page.locator("#head-prediction b", has_text="dull").count() == 0
    screenshot(page, "finetune-sentiment")
    assert page.external_requests == [] and page.dialogs == []
