""""Inside one layer" in Chromium with every non-local host blocked: a deep link opens the
view with its model, layer, head and step; Previous / Next walk the steps; token text
typed by the user stays text."""

from __future__ import annotations

from urllib.parse import quote, urlencode

from playwright.sync_api import expect

from components.inside import copy
from helpers import SLOW_TIMEOUT as TIMEOUT, page_tab, screenshot
from models import forward_steps
from view_checks import wait_computed

KEY, TEXT = "mini-deberta", "The old mill by the [MASK] turned slowly."


def test_deep_link_opens_the_step_and_walks(page, app_server):
    params = {"tab": "inside-one-layer", "model": KEY, "text": TEXT, "layer": 1, "head": 2, "token": 3,
              "step": "deberta_c2p"}
    page.goto(app_server + "?" + urlencode(params, quote_via=quote))
    expect(page_tab(page)).to_have_text("Inside one layer", timeout=TIMEOUT)
    panel = page.locator('[role="tabpanel"]:visible').first
    expect(panel.get_by_label("Text", exact=True).first).to_have_value(TEXT, timeout=TIMEOUT)
    status, step_text = page.locator("#inside-status"), page.locator("#inside-step-text")
    expect(status).to_contain_text("showing layer 1, head 2, token 3", timeout=TIMEOUT)
    expect(step_text).to_contain_text("Content → position", timeout=TIMEOUT)
    wait_computed(panel, plots=2, tables=1)
    core = forward_steps(KEY, TEXT, None, 1, 2, 3)
    expect(page.locator("#inside-checks")).to_contain_text(core.facts[0], timeout=TIMEOUT)
    names = [s.name for s in core.all_steps]
    after = core.all_steps[names.index("deberta_c2p") + 1].title
    page.get_by_role("button", name="Next →").click()
    expect(step_text).to_contain_text(after, timeout=TIMEOUT)
    # one click at a time, each answered, as a reader steps: Gradio drops a click on a button
    # whose previous click is still running (its default trigger_mode, "once")
    page.get_by_role("button", name="← Previous").click()
    expect(step_text).to_contain_text("Content → position", timeout=TIMEOUT)
    page.get_by_role("button", name="← Previous").click()
    expect(step_text).to_contain_text("Content → content", timeout=TIMEOUT)
    screenshot(page, "inside-one-layer")
    assert page.external_requests == [] and page.dialogs == []


def test_typed_markup_stays_text(page, app_server):
    page.goto(app_server + "?tab=inside-one-layer&model=minilm-mlm")
    expect(page_tab(page)).to_have_text("Inside one layer", timeout=TIMEOUT)
    panel = page.locator('[role="tabpanel"]:visible').first
    box = panel.get_by_label("Text", exact=True).first
    box.fill('<img src=x onerror="alert(1)"> the [MASK] <b>bold</b>')
    panel.get_by_label(copy.TOKEN_LABEL, exact=True).first.fill("1")
    page.get_by_role("button", name=copy.RUN_LABEL).click()
    expect(page.locator("#inside-status")).to_contain_text("token 1 “<”", timeout=TIMEOUT)
    wait_computed(panel, plots=2, tables=1)
    expect(page.locator("#inside-row")).to_contain_text("alert", timeout=TIMEOUT)
    assert page.locator("#inside-status img, #inside-status b, #inside-checks img, #inside-row img").count() == 0
    assert page.external_requests == [] and page.dialogs == []
