"""A person in Chromium: type a sentence, run fill-mask, see predictions, click to mask."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from components.fill_mask import copy as fill_mask_copy
from components.shell.present import TRACES, gradio_plotly_chunk, lab_plotly, lab_plotly_route
from helpers import TIMEOUT, screenshot, settle, wait_until
from models import fill_mask
from models.registry.catalogue import default_model_key


def filled_box(page):
    return page.get_by_label("Sentence with the top prediction in place")


def test_fill_mask_end_to_end(page):
    expect(page.get_by_role("heading", name="Encoder Lab")).to_be_visible(timeout=TIMEOUT)
    # the page answers the default example on load
    expect(filled_box(page)).to_have_value(re.compile(r"^The capital of France is \S+\.$"), timeout=TIMEOUT)
    # its bars are HTML: no Plotly chart on the first screen, and Gradio's Plotly chunk is
    # imported afterwards, while the visitor reads (present.js)
    expect(page.locator("#fill-mask-bars table.fm-bars tbody tr")).to_have_count(5)
    assert page.locator(".js-plotly-plot").count() == 0
    chunk = f"/assets/{gradio_plotly_chunk()}"
    wait_until(lambda: page.evaluate("c => performance.getEntriesByType('resource').some(e => e.name.endsWith(c))",
                                     chunk), "Gradio's Plotly chunk imported once the first answer is drawn")
    # served at Gradio's address, the chunk imports the lab's partial plotly.js, not Gradio's full copy
    wait_until(lambda: page.evaluate("() => !!(window.Plotly && window.Plotly.PlotSchema)"), "plotly.js evaluated")
    assert page.evaluate("() => [window.Plotly.version, Object.keys(window.Plotly.PlotSchema.get().traces).sort()]") == [
        lab_plotly()[1], sorted(TRACES)]
    assert page.evaluate("r => performance.getEntriesByType('resource').some(e => e.name.endsWith(r))",
                         "/" + lab_plotly_route())

    text = "The [MASK] sat on the mat."
    page.get_by_label("Text with masks").fill(text)
    page.get_by_role("button", name="Predict", exact=True).click()
    expected = fill_mask(default_model_key(), text, top_k=5)  # the model the page opens on
    top = expected.masks[0].predictions[0].token
    expect(filled_box(page)).to_have_value(f"The {top} sat on the mat.", timeout=TIMEOUT)

    # the table lists the five predictions; the bars (HTML) show them best first, each bar
    # as long as its probability
    table = page.locator("#fill-mask-table")
    for pred in expected.masks[0].predictions:
        expect(table).to_contain_text(pred.token)
    rows = page.locator("#fill-mask-bars table.fm-bars tbody tr")
    expect(rows).to_have_count(5, timeout=TIMEOUT)
    assert rows.locator(".fm-token").all_inner_texts() == [p.token for p in expected.masks[0].predictions]
    assert rows.locator(".fm-p").all_inner_texts() == [f"{p.score:.1%}" for p in expected.masks[0].predictions]
    track = rows.first.locator(".fm-track")
    fraction = track.locator("span").evaluate("e => e.getBoundingClientRect().width") / track.evaluate(
        "e => e.getBoundingClientRect().width")
    assert abs(fraction - expected.masks[0].predictions[0].score) < 0.01
    # the same bars as a Plotly chart, drawn when its accordion opens
    assert page.locator("#fill-mask-plot .js-plotly-plot").count() == 0
    page.get_by_role("button", name=fill_mask_copy.CHART_ACCORDION).click()
    expect(page.locator("#fill-mask-plot .bars path")).to_have_count(5, timeout=TIMEOUT)
    screenshot(page, "fill-mask")

    # click the word "mat" to mask it: the text gains a second mask, predictions follow
    page.locator("#fill-mask-words").get_by_text("mat", exact=True).click()
    expect(page.get_by_label("Text with masks")).to_have_value("The [MASK] sat on the [MASK].")
    expect(filled_box(page)).not_to_contain_text("[MASK]", timeout=TIMEOUT)
    expect(page.locator("#fill-mask-bars table.fm-bars")).to_have_count(2, timeout=TIMEOUT)
    expect(page.locator("#fill-mask-bars caption").nth(1)).to_contain_text("mask 2")
    expect(page.locator("#fill-mask-plot .bars path")).to_have_count(10, timeout=TIMEOUT)
    screenshot(page, "fill-mask-two-masks")

    assert page.external_requests == [], page.external_requests


def test_error_is_shown_readably(page):
    expect(filled_box(page)).not_to_have_value("", timeout=TIMEOUT)
    page.get_by_label("Text with masks").fill("A sentence without any mask.")
    page.get_by_role("button", name="Predict", exact=True).click()
    expect(page.get_by_text("Your text has no mask").first).to_be_visible(timeout=TIMEOUT)
    screenshot(page, "fill-mask-error")


def test_typed_markup_stays_text(page):
    expect(filled_box(page)).not_to_have_value("", timeout=TIMEOUT)
    payload = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script> [MASK] <b>bold</b>'
    page.get_by_label("Text with masks").fill(payload)
    page.get_by_role("button", name="Predict", exact=True).click()
    expect(filled_box(page)).to_have_value(re.compile(r"^<img src=x"), timeout=TIMEOUT)
    settle(page)  # every answer is in and drawn before the page is inspected
    assert page.evaluate("window.__xss") is None
    assert page.dialogs == []
    assert page.locator('img[src="x"]').count() == 0
    assert page.locator("b", has_text="bold").count() == 0
    expect(page.locator("#fill-mask-bars table.fm-bars")).to_have_count(1)  # the answer's bars, as text
    screenshot(page, "fill-mask-markup")


def test_the_browser_keeps_no_history_of_what_was_typed(page):
    """Gradio's run history is off (app.launch_kwargs): after a prediction, nothing in the
    page's localStorage or sessionStorage holds the typed text or a run-history entry."""
    text = "The quiet [MASK] of the library surprised everyone."
    page.get_by_label("Text with masks").fill(text)
    page.get_by_role("button", name="Predict", exact=True).click()
    # the answer is in place (a word piece may join "quiet": "The quietness of ...")
    expect(filled_box(page)).to_have_value(re.compile(r"^The quiet[^\[\]]* of the library surprised everyone\.$"),
                                           timeout=TIMEOUT)
    stored = page.evaluate("""() => [localStorage, sessionStorage].flatMap(
        s => Object.keys(s).map(k => [k, s.getItem(k)]))""")
    assert not [k for k, _ in stored if "run-history" in k], stored
    assert not [k for k, v in stored if "library surprised" in (v or "")], [k for k, _ in stored]
