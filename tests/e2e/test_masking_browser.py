"""The Masking lab in Chromium: strips with a legend, the loss, the rates chart."""

from __future__ import annotations

from playwright.sync_api import expect

from helpers import TIMEOUT, screenshot


def test_masking_lab(page):
    page.get_by_role("tab", name="Masking lab").click()
    page.get_by_label("Text to corrupt").fill('The <img src=x onerror="window.__xss=1"> bank of the river.')
    page.get_by_role("button", name="Simulate masking", exact=True).click()
    strips = page.locator(".masking-lab .strip")
    expect(strips).to_have_count(3, timeout=TIMEOUT)
    expect(page.locator(".masking-lab .legend")).to_contain_text("replaced by a random token")
    assert page.locator('img[src="x"]').count() == 0 and page.evaluate("window.__xss") is None

    page.get_by_role("button", name="Compute the MLM loss", exact=True).click()
    expect(page.get_by_text("Worked example")).to_be_visible(timeout=TIMEOUT)
    page.get_by_role("button", name="Measure the rates", exact=True).click()
    expect(page.get_by_text("Special tokens selected: 0")).to_be_visible(timeout=TIMEOUT)
    expect(page.locator(".js-plotly-plot .bars path").first).to_be_attached()
    screenshot(page, "masking-lab")
    assert page.external_requests == [] and page.dialogs == []
