""""Which parts matter" in Chromium with every non-local host blocked: a deep link opens the
knock-out view with its heads; a click on the grid knocks one more out; the logit lens and
the causal trace answer in their sections; typed markup stays text."""

from __future__ import annotations

from urllib.parse import quote, urlencode

from playwright.sync_api import expect

from components.parts import copy
from helpers import SLOW_TIMEOUT as TIMEOUT, open_section, page_tab, screenshot
from models import ablate_heads
from view_checks import wait_computed

KEY, TEXT = "minilm-mlm", "The capital of France is [MASK]."


def test_deep_link_grid_lens_and_trace(page, app_server):
    params = {"tab": "which-parts-matter", "model": KEY, "text": TEXT, "heads": "2:3", "target": "paris"}
    page.goto(app_server + "?" + urlencode(params, quote_via=quote))
    expect(page_tab(page)).to_have_text(copy.TAB_LABEL, timeout=TIMEOUT)
    status = page.locator("#parts-knockout-status")
    core = ablate_heads(KEY, TEXT, [(2, 3)], "paris")
    expect(status).to_contain_text(f"{core.p_target_after:.4f} without the chosen ones", timeout=TIMEOUT)
    panel = page.locator('[role="tabpanel"]:visible').first
    wait_computed(panel, plots=1, tables=2)
    # layer 0, head 1: the grid's first row, third column (the first names the layer)
    page.locator("#parts-grid").get_by_role("row").nth(1).get_by_role("gridcell").nth(2).click()
    expect(panel.get_by_label(copy.HEADS_LABEL)).to_have_value("0:1, 2:3", timeout=TIMEOUT)
    both = ablate_heads(KEY, TEXT, [(0, 1), (2, 3)], "paris")
    expect(status).to_contain_text(f"{both.p_target_after:.4f} without the chosen ones", timeout=TIMEOUT)
    screenshot(page, "which-parts-matter")
    open_section(page, copy.SECTION_LENS)
    page.get_by_role("button", name=copy.LENS_BUTTON).click()
    expect(page.locator("#parts-lens-status")).to_contain_text("is the top guess", timeout=TIMEOUT)
    expect(page.locator("#parts-lens-table")).to_contain_text("embeddings", timeout=TIMEOUT)
    open_section(page, copy.SECTION_TRACE)
    page.get_by_role("button", name=copy.TRACE_BUTTON).click()
    expect(page.locator("#parts-trace-status")).to_contain_text("in the corrupt run", timeout=TIMEOUT)
    assert page.external_requests == [] and page.dialogs == []


def test_typed_markup_stays_text(page, app_server):
    page.goto(app_server + "?tab=which-parts-matter&model=minilm-mlm")
    expect(page_tab(page)).to_have_text(copy.TAB_LABEL, timeout=TIMEOUT)
    panel = page.locator('[role="tabpanel"]:visible').first
    panel.get_by_label("Text with a mask", exact=True).fill('<img src=x onerror="alert(1)"> the [MASK] <b>b</b>')
    panel.get_by_label(copy.TARGET_LABEL, exact=True).fill("<b>x</b>")
    page.get_by_role("button", name=copy.KNOCKOUT_BUTTON).click()
    expect(page.locator("#parts-knockout-status")).to_contain_text("p(", timeout=TIMEOUT)
    assert page.locator("#parts-knockout-status img, #parts-knockout-status b").count() == 0
    assert page.external_requests == [] and page.dialogs == []
