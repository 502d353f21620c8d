"""The Embeddings tab in Chromium: heatmaps and verdict, CSV download, the bank demo."""

from __future__ import annotations

from playwright.sync_api import expect

from helpers import TIMEOUT, open_section, screenshot


def test_embeddings_tab(page):
    page.get_by_role("tab", name="Embeddings").click()
    page.get_by_role("button", name="Compare [CLS], mean and max pooling", exact=True).click()
    summary = page.locator("#embeddings-summary")
    expect(summary).to_contain_text("separates the groups better", timeout=TIMEOUT)
    expect(summary).to_contain_text("24 sentences")
    expect(page.locator(".js-plotly-plot .heatmaplayer")).to_have_count(3, timeout=TIMEOUT)
    expect(page.get_by_role("gridcell", name="mean pooling", exact=True)).to_be_visible()

    with page.expect_download(timeout=TIMEOUT) as info:
        page.get_by_role("button", name="Download the matrices (CSV)", exact=True).click()
    csv = open(info.value.path(), encoding="utf-8").read()
    assert csv.startswith("model,pooling,layer,index,sentence,1,2,")
    assert csv.count("\n") == 3 * 24 + 1

    open_section(page, "One word across the layers")
    expect(page.locator("#word-summary")).to_contain_text("at layer 0", timeout=TIMEOUT)  # on opening it
    page.get_by_role("button", name="Trace the word through the layers", exact=True).click()
    expect(page.locator("#word-summary")).to_contain_text("at layer 0", timeout=TIMEOUT)
    expect(page.locator(".js-plotly-plot .scatterlayer .trace").first).to_be_attached(timeout=TIMEOUT)
    screenshot(page, "embeddings")
    assert page.external_requests == [] and page.dialogs == []


def test_typed_markup_stays_text_and_errors_are_readable(page):
    page.get_by_role("tab", name="Embeddings").click()
    box = page.get_by_label("Sentences, one per line", exact=False)
    box.fill('<img src=x onerror="window.__xss=1"> is here\n<b>bold</b> text')
    page.get_by_role("button", name="Compare [CLS], mean and max pooling", exact=True).click()
    expect(page.locator("#embeddings-summary")).to_contain_text("No separation score", timeout=TIMEOUT)
    assert page.locator('img[src="x"]').count() == 0 and page.evaluate("window.__xss") is None

    box.fill("Only one sentence.")
    page.get_by_role("button", name="Compare [CLS], mean and max pooling", exact=True).click()
    expect(page.get_by_text("give two sentences to compare").first).to_be_visible(timeout=TIMEOUT)
    screenshot(page, "embeddings-error")
    assert page.external_requests == []
