"""A phone's first screen in Chromium (390 x 844, network blocked): the Fill-mask text box lies
within it without scrolling, under the compact header, the folded link bar and the tabs; the
link bar still opens and writes the link."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from helpers import SLOW_TIMEOUT, screenshot

PHONE = {"width": 390, "height": 844}


@pytest.fixture()
def phone(browser, app_server):
    context = browser.new_context(viewport=PHONE, device_scale_factor=1, is_mobile=True, has_touch=True)
    page = context.new_page()
    page.goto(app_server)
    yield page
    context.close()


def test_the_fill_mask_text_box_is_on_the_first_screen(phone):
    box = phone.get_by_label("Text with masks")
    expect(box).to_be_visible(timeout=SLOW_TIMEOUT)
    expect(phone.locator("#fill-mask-words")).to_contain_text("capital", timeout=SLOW_TIMEOUT)  # laid out
    assert phone.evaluate("window.scrollY") == 0
    bounds = box.bounding_box()
    assert bounds["x"] >= 0 and bounds["x"] + bounds["width"] <= PHONE["width"], bounds
    assert bounds["y"] >= 0 and bounds["y"] + bounds["height"] <= PHONE["height"], bounds
    # every tab's name on screen too (the tab row wraps; none hidden behind a menu)
    tabs = phone.get_by_role("tab").all()
    assert len(tabs) >= 9 and all(t.bounding_box()["y"] + t.bounding_box()["height"] <= bounds["y"] for t in tabs)
    screenshot(phone, "phone-first-screen")


def test_the_folded_link_bar_opens_and_writes_the_link(phone):
    expect(phone.get_by_label("Text with masks")).to_be_visible(timeout=SLOW_TIMEOUT)
    copy = phone.get_by_role("button", name="Copy link to this view", exact=True)
    expect(copy).to_be_hidden()
    phone.get_by_role("button", name="Link to this view").click()
    copy.click()
    link = phone.locator("#view-link textarea, #view-link input").first
    expect(link).to_have_value(re.compile(r"^http://127\.0\.0\.1:\d+/\?tab=fill-mask(&|$)"), timeout=SLOW_TIMEOUT)
