"""The "Why this guess" tab in Chromium with every non-local host blocked: the shaded
sentence per method, the deletion curves, the table, and hostile text kept as text."""

from __future__ import annotations

from playwright.sync_api import expect

from helpers import SLOW_TIMEOUT, screenshot

HOSTILE = "<img src=x onerror=alert(1)> opened the [MASK]."


def test_explain_a_guess(page):
    page.get_by_role("tab", name="Why this guess").click()
    page.get_by_role("button", name="Explain this guess", exact=True).click()
    status = page.locator("#attribution-status")
    expect(status).to_contain_text("Explaining", timeout=SLOW_TIMEOUT)
    expect(status).to_contain_text("completeness gap")
    rows = page.locator("#attribution-tokens .attribution-row")
    expect(rows).to_have_count(4)
    for name in ("gradient × input", "integrated gradients", "attention rollout", "leave-one-out"):
        expect(page.locator("#attribution-tokens")).to_contain_text(name)
    expect(rows.first).to_contain_text("opened")
    expect(rows.first).to_contain_text("#1")  # ranks readable without colour
    expect(page.locator("#attribution-curves .scatterlayer .trace")).to_have_count(5, timeout=SLOW_TIMEOUT)
    expect(page.locator("#attribution-curves")).to_contain_text("random order")
    expect(page.locator("#attribution-table")).to_contain_text("leave-one-out")
    screenshot(page, "attribution")

    text = page.get_by_label("Text with a mask")
    text.fill(HOSTILE)
    page.get_by_label("gradient × input", exact=True).uncheck()
    page.get_by_label("integrated gradients", exact=True).uncheck()
    page.get_by_role("button", name="Explain this guess", exact=True).click()
    expect(rows).to_have_count(2, timeout=SLOW_TIMEOUT)
    expect(page.locator("#attribution-tokens")).to_contain_text("<", timeout=SLOW_TIMEOUT)
    assert page.locator("#attribution-tokens img").count() == 0
    assert not page.dialogs and not page.external_requests
    screenshot(page, "attribution-hostile")
