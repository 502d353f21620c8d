"""The Pre-training tab in Chromium: the recorded run, its snapshots, a live tiny run."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from helpers import REPO, SLOW_TIMEOUT, screenshot

TRAINING_TIMEOUT = 900_000


def test_watch_and_train_live(page):
    page.get_by_role("tab", name="Pre-training").click()
    expect(page.get_by_role("heading", name="Watch BERT learn")).to_be_visible(timeout=SLOW_TIMEOUT)
    # the recorded run's curve is drawn, and its first snapshot shows the untrained guesses
    expect(page.locator(".js-plotly-plot .scatterlayer .trace").first).to_be_attached(timeout=SLOW_TIMEOUT)
    page.get_by_label(re.compile(r"0% of training \(step 0[,)]")).check()
    expect(page.get_by_text("The cat sat on the [MASK].").first).to_be_visible()
    # a run continued in stages marks where each later stage began
    if re.search(r'"stage": 2', (REPO / "weights" / "minilm-mlm" / "log.jsonl").read_text()):
        expect(page.get_by_text(re.compile(r"It ran in \d stages"))).to_be_visible()
        expect(page.locator(".js-plotly-plot .annotation-text", has_text="stage 2")).to_be_attached()

    page.get_by_role("button", name="Train a tiny BERT now", exact=True).click()
    # a bound on a hang, not a speed requirement: on a busy CPU 150 steps can take minutes
    expect(page.get_by_text("Done.")).to_be_visible(timeout=TRAINING_TIMEOUT)
    expect(page.get_by_text("Step 150 of 150")).to_be_visible()
    screenshot(page, "pretrain")
    assert page.external_requests == []
