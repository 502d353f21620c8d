"""The Pre-training tab in Chromium: the recorded run, its snapshots, a live tiny run."""

from __future__ import annotations

from playwright.sync_api import expect

from helpers import screenshot

TIMEOUT = 120_000


def test_watch_and_train_live(page):
    page.get_by_role("tab", name="Pre-training").click()
    expect(page.get_by_role("heading", name="Watch BERT learn")).to_be_visible(timeout=TIMEOUT)
    # the recorded run's curve is drawn, and its first snapshot shows the untrained guesses
    expect(page.locator(".js-plotly-plot .scatterlayer .trace").first).to_be_attached(timeout=TIMEOUT)
    page.get_by_label("0% of training (step 0)").check()
    expect(page.get_by_text("The cat sat on the [MASK].").first).to_be_visible()

    page.get_by_role("button", name="Train a tiny BERT now").click()
    expect(page.get_by_text("Done.")).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_text("Step 150 of 150")).to_be_visible()
    screenshot(page, "pretrain")
    assert page.external_requests == []
